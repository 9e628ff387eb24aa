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


def batch(values, base_timestamp=1_700_000_000_000, corrupt_crc=False):
    recs = b"".join(record(i, None, v) for i, v in enumerate(values))
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
