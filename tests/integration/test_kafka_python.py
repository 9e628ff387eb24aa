"""kafka-python 2.0.2: version probing, produce/consume round trip, admin calls."""
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic


def test_produce_consume_round_trip(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="kp-admin")
    admin.create_topics([NewTopic("kp-topic", num_partitions=2, replication_factor=1)])
    assert "kp-topic" in admin.list_topics()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5)
    futures = [producer.send("kp-topic", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
               for i in range(2000)]
    producer.flush(60)
    metas = [f.get(timeout=30) for f in futures]
    assert all(m.offset >= 0 for m in metas)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10000)
    consumer.assign([TopicPartition("kp-topic", 0), TopicPartition("kp-topic", 1)])
    consumer.seek_to_beginning()
    got = {}
    deadline = time.monotonic() + 60
    while len(got) < 2000 and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=1000).items():
            for r in records:
                got[r.key] = (tp.partition, r.value)
    consumer.close()
    assert len(got) == 2000
    for i in range(2000):
        assert got[b"k%d" % i] == (i % 2, b"v%d" % i)


def test_admin_calls(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="kp-admin")
    admin.create_topics([NewTopic("kp-admin-topic", num_partitions=1, replication_factor=1,
                                  topic_configs={"retention.ms": "60000"})])
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-admin-topic")])
    text = str(res)
    assert "retention.ms" in text and "60000" in text
    admin.create_partitions({"kp-admin-topic": NewPartitions(total_count=4)})
    meta = admin.describe_topics(["kp-admin-topic"])
    assert len(meta[0]["partitions"]) == 4
    cluster = admin.describe_cluster()
    assert len(cluster["brokers"]) == 1
    admin.delete_topics(["kp-admin-topic"])
    assert "kp-admin-topic" not in admin.list_topics()
    admin.close()
