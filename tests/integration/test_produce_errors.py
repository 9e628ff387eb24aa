"""Produce and fetch errors a client can cause, with the codes a Kafka broker returns."""
import struct

from harness import Sluice, connect, kafka_request, read_frame
import kafka_wire as kw

CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_REQUIRED_ACKS = 21
INVALID_TOPIC_EXCEPTION = 17


def produce(port, topic, partition, records, acks=1):
    with connect(port) as s:
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
        s.sendall(kafka_request(0, 3, 1, kw.produce_v3("fire", 0, kw.batch([b"a"]), acks=0)))
        s.sendall(kafka_request(18, 0, 2))
        frame = read_frame(s)
    assert struct.unpack(">i", frame[:4])[0] == 2  # the produce sent nothing back
    res = produce(broker.kafka_port, "fire", 0, kw.batch([b"b"]))
    assert res[0][3] == 1
