"""Produce and fetch errors a client can cause, with the codes a Kafka broker returns."""
import json
import struct

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import newer_librdkafka
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


# --- per-record errors (KIP-467) -------------------------------------------------------------

INVALID_RECORD = 87
KEYLESS = [3, 10, 17, 24, 40, 55, 61, 78, 90, 99]  # 10 of 100 records have no key


def compacted_topic(broker, topic):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[
        topic].result(timeout=20)


def keyed_batch_with_keyless(count, keyless):
    keys = [None if i in keyless else b"k%d" % i for i in range(count)]
    return kw.batch([b"v%d" % i for i in range(count)], keys=keys)


def produce_raw(port, version, topic, records):
    with connect(port) as s:
        s.sendall(kafka_request(0, version, 42, kw.produce_v3(topic, 0, records)))
        frame = read_frame(s)
    assert struct.unpack(">i", frame[:4])[0] == 42
    return frame[4:]


def test_keyless_records_in_a_compacted_topic_are_named_in_record_errors(broker):
    # compat: LogValidator refuses the whole batch with INVALID_RECORD and lists each keyless
    # record (batch_index, message); the partition's error_message is the exception's.
    compacted_topic(broker, "compacted-kip467")
    body = produce_raw(broker.kafka_port, 8, "compacted-kip467",
                       keyed_batch_with_keyless(100, KEYLESS))
    [p] = kw.parse_produce_v8_response(body)
    assert p["error_code"] == INVALID_RECORD
    assert p["base_offset"] == -1
    per_record = ("Compacted topic cannot accept message without key in topic partition "
                  "compacted-kip467-0")
    assert p["record_errors"] == [(i, per_record) for i in KEYLESS]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{per_record}')" for i in KEYLESS[:3])
    assert p["error_message"] == (
        "One or more records have been rejected due to 10 record errors in total, and only "
        f"showing the first three errors at most: [{shown}]")
    # Nothing of the batch was stored: a keyed batch starts at offset 0.
    [ok] = kw.parse_produce_v8_response(
        produce_raw(broker.kafka_port, 8, "compacted-kip467", keyed_batch_with_keyless(5, [])))
    assert (ok["error_code"], ok["base_offset"], ok["record_errors"], ok["error_message"]) == \
        (0, 0, [], None)


def test_keyless_records_before_produce_v8_fail_the_batch_alone(broker):
    compacted_topic(broker, "compacted-v7")
    body = produce_raw(broker.kafka_port, 7, "compacted-v7", keyed_batch_with_keyless(10, [2]))
    assert kw.parse_produce_v3_response(body)[0][2] == INVALID_RECORD


# Produces 100 records (KEYLESS without a key) to a compacted topic in one batch; prints each
# record's delivery error code (0 when delivered).
DELIVERY_SCRIPT = """
import json, sys
import confluent_kafka
from confluent_kafka import Producer
bootstrap, topic, keyless = sys.argv[1], sys.argv[2], set(json.loads(sys.argv[3]))
p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 500, "batch.num.messages": 1000,
              "message.timeout.ms": 20000})
codes = [None] * 100
def report(i):
    def cb(err, msg):
        codes[i] = 0 if err is None else err.code()
    return cb
for i in range(100):
    p.produce(topic, value=b"v%d" % i, key=None if i in keyless else b"k%d" % i,
              partition=0, on_delivery=report(i))
assert p.flush(30) == 0
print(json.dumps({"libversion": confluent_kafka.libversion()[0], "codes": codes}))
"""


def test_confluent_kafka_delivery_reports_name_the_keyless_records(broker):
    # librdkafka 2.4+ reads record_errors: the records named fail with INVALID_RECORD, the
    # others with _INVALID_DIFFERENT_RECORD (-138, "part of a batch which had invalid records").
    if not newer_librdkafka.available():
        pytest.skip("node-rdkafka's librdkafka 2.12 not built (scripts/install-deps)")
    compacted_topic(broker, "compacted-dr")
    out = newer_librdkafka.run(DELIVERY_SCRIPT, broker.bootstrap, "compacted-dr",
                               json.dumps(KEYLESS))
    expected = [INVALID_RECORD if i in KEYLESS else -138 for i in range(100)]
    assert out["codes"] == expected
