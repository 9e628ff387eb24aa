"""Raw Metadata, FindCoordinator and DescribeCluster requests at any version, and decoders of
the broker addresses in their responses (tests of the Kafka proxy: every host:port a client
can get must be the gateway's). Encodings follow Kafka's message definitions; flexible
versions (KIP-482) use kafka_wire's compact helpers."""
import struct

from harness import kafka_request, read_frame
from kafka_wire import NO_TAGS, FlexReader, compact_array, compact_string

API_VERSIONS, METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 18, 3, 10, 60
# First flexible versions.
FLEX = {METADATA: 9, FIND_COORDINATOR: 3, DESCRIBE_CLUSTER: 0, API_VERSIONS: 3}


def exchange(sock, api_key, version, body, correlation_id):
    """Sends one request, returns the response body (after the response header)."""
    flex = version >= FLEX[api_key]
    sock.sendall(kafka_request(api_key, version, correlation_id, body, flexible_header=flex))
    frame = read_frame(sock)
    (corr,) = struct.unpack_from(">i", frame, 0)
    assert corr == correlation_id, (corr, correlation_id)
    r = FlexReader(frame, 4)
    if flex and api_key != API_VERSIONS:
        r.tags()  # response header v1
    return frame[r.pos:]


def api_versions(sock):
    """{api_key: (min, max)} and the error code, from ApiVersions v0."""
    body = exchange(sock, API_VERSIONS, 0, b"", 1)
    r = FlexReader(body)
    error = r.int16()
    out = {}
    for _ in range(r.int32()):
        key, lo, hi = r.int16(), r.int16(), r.int16()
        out[key] = (lo, hi)
    return error, out


def _string(r, flex):
    if flex:
        return r.compact_string()
    n = r.int16()
    if n < 0:
        return None
    s = r.data[r.pos:r.pos + n].decode()
    r.pos += n
    return s


def _array_len(r, flex):
    return r.uvarint() - 1 if flex else r.int32()


def metadata_request(version, topics):
    flex = version >= 9
    if flex:
        items = []
        for t in topics:
            item = (b"\x00" * 16 if version >= 10 else b"") + compact_string(t) + NO_TAGS
            items.append(item)
        body = compact_array(items)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(
            struct.pack(">h", len(t)) + t.encode() for t in topics)
    if version >= 4:
        body += b"\x00"  # allow_auto_topic_creation
    if 8 <= version <= 10:
        body += b"\x00"  # include_cluster_authorized_operations
    if version >= 8:
        body += b"\x00"  # include_topic_authorized_operations
    if flex:
        body += NO_TAGS
    return body


def metadata_brokers(version, body):
    """[(node_id, host, port)] of a Metadata response body."""
    flex = version >= 9
    r = FlexReader(body)
    if version >= 3:
        r.int32()  # throttle_time_ms
    out = []
    for _ in range(_array_len(r, flex)):
        node = r.int32()
        host = _string(r, flex)
        port = r.int32()
        if version >= 1:
            _string(r, flex)  # rack
        if flex:
            r.tags()
        out.append((node, host, port))
    return out


def find_coordinator_request(version, key, key_type=0):
    if version >= 4:
        return struct.pack(">b", key_type) + compact_array([compact_string(key)]) + NO_TAGS
    if version == 3:
        return compact_string(key) + struct.pack(">b", key_type) + NO_TAGS
    body = struct.pack(">h", len(key)) + key.encode()
    if version >= 1:
        body += struct.pack(">b", key_type)
    return body


def find_coordinator_addresses(version, body):
    """[(error_code, node_id, host, port)] of a FindCoordinator response body."""
    flex = version >= 3
    r = FlexReader(body)
    if version >= 1:
        r.int32()  # throttle_time_ms
    if version >= 4:
        out = []
        for _ in range(_array_len(r, True)):
            _string(r, True)  # key
            node, host, port = r.int32(), _string(r, True), r.int32()
            error = r.int16()
            _string(r, True)  # error_message
            r.tags()
            out.append((error, node, host, port))
        return out
    error = r.int16()
    if version >= 1:
        _string(r, flex)  # error_message
    node, host, port = r.int32(), _string(r, flex), r.int32()
    return [(error, node, host, port)]


def describe_cluster_request(version):
    body = b"\x00"  # include_cluster_authorized_operations
    if version >= 1:
        body += b"\x01"  # endpoint_type: brokers
    if version >= 2:
        body += b"\x00"  # include_fenced_brokers
    return body + NO_TAGS


def describe_cluster_brokers(version, body):
    """[(broker_id, host, port)] of a DescribeCluster response body."""
    r = FlexReader(body)
    r.int32()  # throttle_time_ms
    r.int16()  # error_code
    r.compact_string()  # error_message
    if version >= 1:
        r.int8()  # endpoint_type
    r.compact_string()  # cluster_id
    r.int32()  # controller_id
    out = []
    for _ in range(_array_len(r, True)):
        node, host, port = r.int32(), r.compact_string(), r.int32()
        r.compact_string()  # rack
        if version >= 2:
            r.bool()  # is_fenced
        r.tags()
        out.append((node, host, port))
    return out
