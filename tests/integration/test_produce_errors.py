"""Produce and fetch errors a client can cause, with the codes a Kafka broker returns."""
import struct

from harness import Sluice, connect, kafka_request, read_frame
import kafka_wire as kw

CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
RECORD_LIST_TOO_LARGE = 18
INVALID_REQUIRED_ACKS = 21
INVALID_TOPIC_EXCEPTION = 17


def metadata_v1(topic):
    """A Metadata v1 request for one topic: what a client sends before producing to it, and
    what creates it when auto.create.topics.enable is on (Kafka never creates on Produce)."""
    t = topic.encode()
    return struct.pack(">i", 1) + struct.pack(">h", len(t)) + t


def produce(port, topic, partition, records, acks=1):
    with connect(port) as s:
        s.sendall(kafka_request(3, 1, 41, metadata_v1(topic)))
        read_frame(s)
        s.sendall(kafka_request(0, 3, 42, kw.produce_v3(topic, partition, records, acks=acks)))
        frame = read_frame(s)
    assert struct.unpack(">i", frame[:4])[0] == 42
    return kw.parse_produce_v3_response(frame[4:])


def test_valid_batch_is_appended(broker):
    res = produce(broker.kafka_port, "errs", 0, kw.batch([b"a", b"b", b"c"]))
    assert res == [("errs", 0, 0, 0)]
    res = produce(broker.kafka_port, "errs", 0, kw.batch([b"d"]))
    assert res == [("errs", 0, 0, 3)]


def test_bad_crc_is_corrupt_message_and_nothing_is_stored(broker):
    produce(broker.kafka_port, "crc", 0, kw.batch([b"ok"]))
    res = produce(broker.kafka_port, "crc", 0, kw.batch([b"x", b"y"], corrupt_crc=True))
    assert res[0][2] == CORRUPT_MESSAGE
    res = produce(broker.kafka_port, "crc", 0, kw.batch([b"next"]))
    assert res[0][3] == 1  # the corrupt batch took no offsets


def test_truncated_batch_is_corrupt_message(broker):
    b = kw.batch([b"hello", b"world"])
    res = produce(broker.kafka_port, "trunc", 0, b[:-3])
    assert res[0][2] == CORRUPT_MESSAGE


def test_batch_over_max_message_bytes_is_message_too_large():
    s = Sluice(settings={"message.max.bytes": "2000"}).start()
    try:
        res = produce(s.kafka_port, "big", 0, kw.batch([b"x" * 5000]))
        assert res[0][2] == MESSAGE_TOO_LARGE
        res = produce(s.kafka_port, "big", 0, kw.batch([b"x" * 100]))
        assert res[0][2] == 0
    finally:
        s.close()


def test_batch_larger_than_a_segment_is_record_list_too_large():
    # compat: Kafka answers RECORD_LIST_TOO_LARGE for a batch no segment can hold, and keeps
    # MESSAGE_TOO_LARGE for one above max.message.bytes.
    s = Sluice(settings={"log.segment.bytes": "1024"}).start()
    try:
        res = produce(s.kafka_port, "segments", 0, kw.batch([b"x" * 3000]))
        assert res[0][2] == RECORD_LIST_TOO_LARGE
        res = produce(s.kafka_port, "segments", 0, kw.batch([b"x" * 100]))
        assert res[0][2] == 0
    finally:
        s.close()


def test_invalid_acks(broker):
    res = produce(broker.kafka_port, "acks", 0, kw.batch([b"a"]), acks=5)
    assert res[0][2] == INVALID_REQUIRED_ACKS


def test_unknown_partition_and_invalid_topic(broker):
    produce(broker.kafka_port, "onepart", 0, kw.batch([b"a"]))
    assert produce(broker.kafka_port, "onepart", 7, kw.batch([b"a"]))[0][2] == \
        UNKNOWN_TOPIC_OR_PARTITION
    assert produce(broker.kafka_port, "bad name!", 0, kw.batch([b"a"]))[0][2] in (
        UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION)


def test_unknown_topic_without_auto_create():
    s = Sluice(settings={"auto.create.topics.enable": "false"}).start()
    try:
        assert produce(s.kafka_port, "nope", 0, kw.batch([b"a"]))[0][2] == \
            UNKNOWN_TOPIC_OR_PARTITION
    finally:
        s.close()


def test_acks_zero_gets_no_response_but_is_stored(broker):
    with connect(broker.kafka_port) as s:
        s.sendall(kafka_request(3, 1, 0, metadata_v1("fire")))
        read_frame(s)
        s.sendall(kafka_request(0, 3, 1, kw.produce_v3("fire", 0, kw.batch([b"a"]), acks=0)))
        s.sendall(kafka_request(18, 0, 2))
        frame = read_frame(s)
    assert struct.unpack(">i", frame[:4])[0] == 2  # the produce sent nothing back
    res = produce(broker.kafka_port, "fire", 0, kw.batch([b"b"]))
    assert res[0][3] == 1


def produce_v3_topics(topics, acks=-1, timeout_ms=10000):
    """A Produce v3 body with several topics, one partition each: [(topic, partition, batch)]."""
    body = struct.pack(">hhi", -1, acks, timeout_ms) + struct.pack(">i", len(topics))
    for topic, partition, records in topics:
        t = topic.encode()
        body += struct.pack(">h", len(t)) + t + struct.pack(">ii", 1, partition)
        body += struct.pack(">i", len(records)) + records
    return body


def init_producer_id_v0(s):
    s.sendall(kafka_request(22, 0, 7, struct.pack(">hi", -1, 60000)))
    frame = read_frame(s)
    _throttle, error, producer_id, epoch = struct.unpack(">ihqh", frame[4:20])
    assert error == 0
    return producer_id, epoch


def test_produce_never_creates_a_topic_so_pipelined_appends_keep_their_order(broker):
    """A produce naming an unknown topic answers at once and creates nothing: with the old
    create-on-produce, the first request below suspended while it created 'born-here', the
    second request's append (sequence 1) overtook the first's (sequence 0), and the idempotent
    producer got OUT_OF_ORDER_SEQUENCE_NUMBER."""
    with connect(broker.kafka_port) as s:
        s.sendall(kafka_request(3, 1, 1, metadata_v1("ordered")))
        read_frame(s)
        pid, epoch = init_producer_id_v0(s)
        first = produce_v3_topics([("born-here", 0, kw.batch([b"x"])),
                                   ("ordered", 0, kw.producer_batch([b"a"], pid, epoch, 0))])
        second = produce_v3_topics([("ordered", 0, kw.producer_batch([b"b"], pid, epoch, 1))])
        third = produce_v3_topics([("ordered", 0, kw.producer_batch([b"c"], pid, epoch, 2))])
        # Pipelined: all three are sent before the first answer is read.
        s.sendall(kafka_request(0, 3, 10, first) + kafka_request(0, 3, 11, second) +
                  kafka_request(0, 3, 12, third))
        answers = [read_frame(s) for _ in range(3)]
        s.sendall(kafka_request(3, 1, 13, struct.pack(">i", -1)))  # every topic
        listing = read_frame(s)
    results = [kw.parse_produce_v3_response(f[4:]) for f in answers]
    assert [struct.unpack(">i", f[:4])[0] for f in answers] == [10, 11, 12]
    assert results[0] == [("born-here", 0, UNKNOWN_TOPIC_OR_PARTITION, -1), ("ordered", 0, 0, 0)]
    assert results[1] == [("ordered", 0, 0, 1)]
    assert results[2] == [("ordered", 0, 0, 2)]
    assert b"born-here" not in listing
