"""Topic names up to Kafka's limit of 249 characters work end to end: CreateTopics, produce,
consume, CreatePartitions, AlterConfigs, a kill -9 and a restart on the same data, the REST
Proxy, DeleteTopics. "<name>.topic" of a 249-character name is 255 bytes, the most a file name
may have; its temporary file must not take the name's length plus ".tmp". A 250-character name
is INVALID_TOPIC_EXCEPTION before anything touches the disk. (SQS queue names stop at 80
characters: the SQS front cannot name such a topic.)"""
import os

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from harness import Sluice, consume_to_end
from rest_support import V2, V2_BINARY, Rest, b64, unb64


def name_of(length, tag):
    return (tag + "." + "x" * length)[:length - 1] + "z"


def create(admin, topic, partitions, config=None):
    for f in admin.create_topics([NewTopic(topic, partitions, 1,
                                           config=config or {})]).values():
        f.result(timeout=30)


def produce(s, topic, values, partition=None):
    p = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0, "acks": "all"})
    for v in values:
        if partition is None:
            p.produce(topic, v)
        else:
            p.produce(topic, v, partition=partition)
    assert p.flush(30) == 0


def read_all(s, topic, partitions):
    c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "long-names",
                  "enable.auto.commit": False})
    try:
        return sorted(consume_to_end(c, topic, partitions, 30))
    finally:
        c.close()


@pytest.mark.parametrize("length", [246, 249])
def test_a_long_name_is_created_written_read_and_survives_a_crash(length):
    topic = name_of(length, f"long{length}")
    assert len(topic) == length
    s = Sluice().start()
    try:
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        # One character more is refused before anything touches the disk.
        with pytest.raises(KafkaException) as e:
            create(admin, "y" * 250, 1)
        assert e.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
        assert not [n for n in os.listdir(s.data_dir) if n.startswith("y")]
        create(admin, topic, 2)
        values = [f"v{i}".encode() for i in range(20)]
        produce(s, topic, values)
        assert read_all(s, topic, 2) == sorted(values)
        # Each change rewrites the topic file through its temporary file.
        for f in admin.create_partitions([NewPartitions(topic, 12)]).values():
            f.result(timeout=30)
        for f in admin.alter_configs([ConfigResource(
                "topic", topic, set_config={"retention.ms": "86400000"})]).values():
            f.result(timeout=30)
        produce(s, topic, [b"last"], partition=11)
        names = os.listdir(os.path.join(s.data_dir, "topics"))
        assert topic + ".topic" in names and not [n for n in names if n.endswith(".tmp")]
        assert os.path.isdir(os.path.join(s.data_dir, topic + "-11"))
        s.kill()
        s.start()
        admin = AdminClient({"bootstrap.servers": s.bootstrap})  # the new port
        md = admin.list_topics(topic=topic, timeout=10)
        assert md.topics[topic].error is None
        assert len(md.topics[topic].partitions) == 12
        assert read_all(s, topic, 12) == sorted(values + [b"last"])
        cfg = admin.describe_configs([ConfigResource("topic", topic)])
        entries = list(cfg.values())[0].result(timeout=30)
        assert entries["retention.ms"].value == "86400000"
        for f in admin.delete_topics([topic]).values():
            f.result(timeout=30)
        assert not os.path.exists(os.path.join(s.data_dir, "topics", topic + ".topic"))
    finally:
        s.close()


def test_a_producers_first_metadata_creates_a_249_character_topic():
    topic = name_of(249, "auto")
    s = Sluice().start()
    try:
        produce(s, topic, [b"a", b"b"])
        assert read_all(s, topic, 1) == [b"a", b"b"]
        s.restart()
        assert read_all(s, topic, 1) == [b"a", b"b"]
    finally:
        s.close()


def test_the_rest_proxy_writes_and_reads_a_249_character_topic():
    topic = name_of(249, "rest")
    s = Sluice().start()
    try:
        create(AdminClient({"bootstrap.servers": s.bootstrap}), topic, 1)
        rest = Rest(s)
        r = rest.post(f"/topics/{topic}", {"records": [{"value": b64("over http")}]},
                      content_type=V2_BINARY)
        assert r.status_code == 200, r.text
        assert r.json()["offsets"][0]["error_code"] is None
        r = rest.get(f"/topics/{topic}")
        assert r.status_code == 200 and r.json()["name"] == topic
        r = rest.post("/consumers/long", {"name": "c", "format": "binary",
                                          "auto.offset.reset": "earliest"})
        assert r.status_code == 200, r.text
        base = "/consumers/long/instances/c"
        assert rest.post(base + "/assignments",
                         {"partitions": [{"topic": topic, "partition": 0}]}).status_code == 204
        got = []
        for _ in range(20):
            r = rest.get(base + "/records", headers={"Accept": V2_BINARY})
            assert r.status_code == 200, r.text
            got += [unb64(m["value"]) for m in r.json()]
            if got:
                break
        assert got == [b"over http"]
        rest.delete(base, headers={"Content-Type": V2})
    finally:
        s.close()

