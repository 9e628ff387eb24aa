"""python3-confluent-kafka 1.7.0 (librdkafka 2.0.2): admin, bulk acks=all produce, consume by
assign/seek, every compression codec."""
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic


def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def wait_all(futures, timeout=30):
    return {k: f.result(timeout=timeout) for k, f in futures.items()}


def test_admin_create_describe_alter_delete(broker):
    a = admin(broker)
    wait_all(a.create_topics([
        NewTopic("orders", num_partitions=3, replication_factor=1,
                 config={"retention.ms": "3600000", "cleanup.policy": "delete"}),
        NewTopic("compacted", num_partitions=1, replication_factor=1,
                 config={"cleanup.policy": "compact"}),
    ]))
    md = a.list_topics(timeout=10)
    assert len(md.topics["orders"].partitions) == 3
    assert len(md.topics["compacted"].partitions) == 1

    res = ConfigResource("topic", "orders")
    configs = wait_all(a.describe_configs([res]))[res]
    assert configs["retention.ms"].value == "3600000"
    assert configs["max.message.bytes"].value == "1048588"
    assert not configs["retention.ms"].is_default
    assert configs["segment.bytes"].is_default

    # AlterConfigs replaces the topic's whole override set.
    res.set_config("retention.ms", "7200000")
    wait_all(a.alter_configs([res]))
    configs = wait_all(a.describe_configs([ConfigResource("topic", "orders")]))
    assert list(configs.values())[0]["retention.ms"].value == "7200000"

    wait_all(a.create_partitions([NewPartitions("orders", 5)]))
    assert len(a.list_topics(timeout=10).topics["orders"].partitions) == 5

    wait_all(a.delete_topics(["orders"], operation_timeout=10))
    assert "orders" not in a.list_topics(timeout=10).topics
    assert "compacted" in a.list_topics(timeout=10).topics


def error_code_of(fn):
    with pytest.raises(KafkaException) as e:
        fn()
    return e.value.args[0].code()


def test_admin_errors_are_kafka_errors(broker):
    a = admin(broker)
    wait_all(a.create_topics([NewTopic("dup", 1, 1)]))
    assert error_code_of(lambda: wait_all(a.create_topics([NewTopic("dup", 1, 1)]))) == \
        KafkaError.TOPIC_ALREADY_EXISTS
    assert error_code_of(lambda: wait_all(a.create_topics([NewTopic("bad/name", 1, 1)]))) == \
        KafkaError.TOPIC_EXCEPTION
    assert error_code_of(lambda: wait_all(a.create_topics(
        [NewTopic("cfg", 1, 1, config={"no.such.config": "1"})]))) == KafkaError.INVALID_CONFIG
    assert error_code_of(lambda: wait_all(a.create_topics(
        [NewTopic("cfg", 1, 1, config={"retention.ms": "soon"})]))) == KafkaError.INVALID_CONFIG
    assert error_code_of(lambda: wait_all(a.create_topics([NewTopic("rf", 1, 3)]))) == \
        KafkaError.INVALID_REPLICATION_FACTOR
    assert error_code_of(lambda: wait_all(a.create_topics([NewTopic("zero", 0, 1)]))) == \
        KafkaError.INVALID_PARTITIONS
    # Cannot shrink, cannot grow an unknown topic, cannot delete what does not exist.
    assert error_code_of(lambda: wait_all(a.create_partitions([NewPartitions("dup", 1)]))) == \
        KafkaError.INVALID_PARTITIONS
    assert error_code_of(lambda: wait_all(a.create_partitions([NewPartitions("nope", 3)]))) == \
        KafkaError.UNKNOWN_TOPIC_OR_PART
    assert error_code_of(lambda: wait_all(a.delete_topics(["never-existed"],
                                                          operation_timeout=10))) == \
        KafkaError.UNKNOWN_TOPIC_OR_PART
    assert "cfg" not in a.list_topics(timeout=10).topics


def produce_numbered(broker, topic, count, partitions, **conf):
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5,
                  **conf})
    acked = []
    errors = []

    def on_delivery(err, msg):
        if err:
            errors.append(err)
        else:
            acked.append((msg.partition(), msg.offset(), msg.value()))

    for i in range(count):
        while True:
            try:
                p.produce(topic, value=b"%08d" % i, key=b"k%d" % i, partition=i % partitions,
                          on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
        if i % 1000 == 0:
            p.poll(0)
    remaining = p.flush(120)
    assert remaining == 0
    assert errors == []
    return acked


def consume_assigned(broker, topic, partitions, expected, timeout=120):
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "assign-reader",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        msg = c.poll(1.0)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.append((msg.partition(), msg.offset(), msg.value()))
    c.close()
    return got


def test_acks_all_100k_records_across_six_partitions_read_back_by_assign(broker):
    a = admin(broker)  # keep the handle alive until the futures complete
    wait_all(a.create_topics([NewTopic("bulk", num_partitions=6, replication_factor=1)]))
    acked = produce_numbered(broker, "bulk", 100000, 6)
    assert len(acked) == 100000
    got = consume_assigned(broker, "bulk", 6, 100000)
    assert sorted(got) == sorted(acked)
    # Offsets are dense per partition and values arrive in order within a partition.
    for p in range(6):
        mine = [g for g in got if g[0] == p]
        assert [o for _, o, _ in mine] == list(range(len(mine)))
        values = [int(v) for _, _, v in mine]
        assert values == sorted(values)


def test_seek_reads_from_the_requested_offset(broker):
    produce_numbered(broker, "seekable", 100, 1)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "seeker",
                  "enable.auto.commit": False})
    c.assign([TopicPartition("seekable", 0, 60)])
    msg = None
    deadline = time.monotonic() + 30
    while msg is None and time.monotonic() < deadline:
        msg = c.poll(1.0)
    assert msg is not None and msg.error() is None
    assert msg.offset() == 60 and msg.value() == b"%08d" % 60
    c.close()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(broker, codec):
    topic = "compressed-" + codec
    acked = produce_numbered(broker, topic, 5000, 1, **{"compression.type": codec})
    got = consume_assigned(broker, topic, 1, 5000)
    assert [v for _, _, v in got] == [v for _, _, v in acked]
