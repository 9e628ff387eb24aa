"""Hand-built Kafka requests for tests that need exact control of the bytes: v2 record batches
(with CRC-32C) and Produce v3 / Fetch v4 bodies, plus their response parsers."""
import struct


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def varint(n):
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record(offset_delta, key, value, ts_delta=0):
    body = b"\x00" + varint(ts_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(0)  # no headers
    return varint(len(body)) + body


def batch(values, base_timestamp=1_700_000_000_000, corrupt_crc=False, keys=None):
    """A v2 record batch of `values`; `keys` (same length, None for no key) or none keyed."""
    keys = keys if keys is not None else [None] * len(values)
    recs = b"".join(record(i, k, v) for i, (k, v) in enumerate(zip(keys, values)))
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, base_timestamp, base_timestamp,
                            -1, -1, -1, len(values)) + recs
    crc = crc32c(after_crc)
    if corrupt_crc:
        crc ^= 1
    header_rest = struct.pack(">ib", 0, 2) + struct.pack(">I", crc)  # leader epoch, magic, crc
    length = len(header_rest) + len(after_crc)
    return struct.pack(">qi", 0, length) + header_rest + after_crc


def produce_v3(topic, partition, records_bytes, acks=1, timeout_ms=10000):
    t = topic.encode()
    body = struct.pack(">hhi", -1, acks, timeout_ms)
    body += struct.pack(">i", 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">i", 1) + struct.pack(">i", partition)
    body += struct.pack(">i", len(records_bytes)) + records_bytes
    return body


def parse_produce_v3_response(body):
    """[(topic, partition, error_code, base_offset)] from a Produce v3 response body."""
    out = []
    pos = 0
    (n_topics,) = struct.unpack_from(">i", body, pos)
    pos += 4
    for _ in range(n_topics):
        (ln,) = struct.unpack_from(">h", body, pos)
        pos += 2
        name = body[pos:pos + ln].decode()
        pos += ln
        (n_parts,) = struct.unpack_from(">i", body, pos)
        pos += 4
        for _ in range(n_parts):
            idx, err, base, _append_time = struct.unpack_from(">ihqq", body, pos)
            pos += 22
            out.append((name, idx, err, base))
    return out


def _nullable_string(body, pos):
    (ln,) = struct.unpack_from(">h", body, pos)
    pos += 2
    if ln < 0:
        return None, pos
    return body[pos:pos + ln].decode(), pos + ln


def parse_produce_v8_response(body):
    """[{topic, partition, error_code, base_offset, record_errors: [(batch_index, message)],
    error_message}] from a Produce v8 response body (KIP-467's per-record errors)."""
    out = []
    pos = 0
    (n_topics,) = struct.unpack_from(">i", body, pos)
    pos += 4
    for _ in range(n_topics):
        (ln,) = struct.unpack_from(">h", body, pos)
        pos += 2
        name = body[pos:pos + ln].decode()
        pos += ln
        (n_parts,) = struct.unpack_from(">i", body, pos)
        pos += 4
        for _ in range(n_parts):
            idx, err, base, _append_time, _log_start = struct.unpack_from(">ihqqq", body, pos)
            pos += 30
            (n_errors,) = struct.unpack_from(">i", body, pos)
            pos += 4
            errors = []
            for _ in range(max(n_errors, 0)):
                (batch_index,) = struct.unpack_from(">i", body, pos)
                message, pos = _nullable_string(body, pos + 4)
                errors.append((batch_index, message))
            message, pos = _nullable_string(body, pos)
            out.append({"topic": name, "partition": idx, "error_code": err, "base_offset": base,
                        "record_errors": errors, "error_message": message})
    (_throttle,) = struct.unpack_from(">i", body, pos)
    assert pos + 4 == len(body), "trailing bytes in the Produce v8 response"
    return out


# --- idempotent/transactional batches and flexible-version encoding (KIP-482) ----------------

def producer_batch(values, producer_id, producer_epoch, base_sequence, transactional=False,
                   base_timestamp=1_700_000_000_000):
    """A v2 record batch carrying a producer id, epoch and base sequence; attributes bit 4
    marks it transactional."""
    recs = b"".join(record(i, None, v) for i, v in enumerate(values))
    attributes = 0x10 if transactional else 0
    after_crc = struct.pack(">hiqqqhii", attributes, len(values) - 1, base_timestamp,
                            base_timestamp, producer_id, producer_epoch, base_sequence,
                            len(values)) + recs
    header_rest = struct.pack(">ib", 0, 2) + struct.pack(">I", crc32c(after_crc))
    length = len(header_rest) + len(after_crc)
    return struct.pack(">qi", 0, length) + header_rest + after_crc


def uvarint(n):
    """Unsigned varint (lengths and tags of flexible versions)."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(s):
    """COMPACT_NULLABLE_STRING / COMPACT_STRING: uvarint length + 1 (0 = null), UTF-8 bytes."""
    if s is None:
        return b"\x00"
    b = s.encode()
    return uvarint(len(b) + 1) + b


def compact_bytes(b):
    """COMPACT_NULLABLE_BYTES (also COMPACT_RECORDS)."""
    if b is None:
        return b"\x00"
    return uvarint(len(b) + 1) + b


def compact_array(items):
    """A compact array of already-encoded items."""
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = b"\x00"


class FlexReader:
    """Reads a response body field by field; compact types as in flexible versions."""

    def __init__(self, data, pos=0):
        self.data = data
        self.pos = pos

    def _unpack(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def int8(self):
        return self._unpack(">b")

    def int16(self):
        return self._unpack(">h")

    def int32(self):
        return self._unpack(">i")

    def int64(self):
        return self._unpack(">q")

    def bool(self):
        return self.int8() != 0

    def uvarint(self):
        n = shift = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7

    def compact_string(self):
        n = self.uvarint()
        if n == 0:
            return None
        s = self.data[self.pos:self.pos + n - 1].decode()
        self.pos += n - 1
        return s

    def compact_array(self, item):
        """[item(self) for each element], or None for a null array."""
        n = self.uvarint()
        if n == 0:
            return None
        return [item(self) for _ in range(n - 1)]

    def tags(self):
        """The tagged-field section as {tag: raw bytes}."""
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            out[tag] = self.data[self.pos:self.pos + size]
            self.pos += size
        return out

    def at_end(self):
        return self.pos == len(self.data)
