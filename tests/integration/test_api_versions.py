"""ApiVersions over a raw socket: the contract every client starts with."""
import struct

from harness import connect, kafka_request, read_frame


def parse_v0(body):
    error, count = struct.unpack(">hi", body[:6])
    apis = {}
    pos = 6
    for _ in range(count):
        key, lo, hi = struct.unpack(">hhh", body[pos:pos + 6])
        apis[key] = (lo, hi)
        pos += 6
    return error, apis


def test_v0_lists_apis(broker):
    with connect(broker.kafka_port) as s:
        s.sendall(kafka_request(18, 0, 7))
        frame = read_frame(s)
    corr = struct.unpack(">i", frame[:4])[0]
    assert corr == 7
    error, apis = parse_v0(frame[4:])
    assert error == 0
    assert apis[18] == (0, 4)
    assert 3 in apis  # Metadata


def test_v3_flexible_request_is_answered(broker):
    body = b"\x05kcat\x061.7.1\x00"  # compact strings + empty tag section
    with connect(broker.kafka_port) as s:
        s.sendall(kafka_request(18, 3, 9, body, flexible_header=True))
        frame = read_frame(s)
    # Response header stays v0 (no tag byte); body is flexible: error, compact array.
    corr, error = struct.unpack(">ih", frame[:6])
    assert corr == 9 and error == 0
    assert frame[6] > 1  # compact array length + 1


def test_too_new_version_gets_v0_error_with_our_list(broker):
    with connect(broker.kafka_port) as s:
        s.sendall(kafka_request(18, 42, 11, b"\x00", flexible_header=True))
        frame = read_frame(s)
    corr = struct.unpack(">i", frame[:4])[0]
    assert corr == 11
    error, apis = parse_v0(frame[4:])
    assert error == 35  # UNSUPPORTED_VERSION
    assert apis[18] == (0, 4)


def test_pipelined_requests_are_answered_in_order(broker):
    with connect(broker.kafka_port) as s:
        s.sendall(b"".join(kafka_request(18, v % 3, 100 + v) for v in range(50)))
        corrs = [struct.unpack(">i", read_frame(s)[:4])[0] for _ in range(50)]
    assert corrs == [100 + v for v in range(50)]


def test_identical_ranges_on_every_connection(broker):
    seen = []
    for _ in range(3):
        with connect(broker.kafka_port) as s:
            s.sendall(kafka_request(18, 0, 1))
            seen.append(parse_v0(read_frame(s)[4:])[1])
    assert seen[0] == seen[1] == seen[2]
