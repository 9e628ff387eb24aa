"""Clients that speak old protocol versions: message format v0/v1 produce is converted to v2 on
append, and old Fetch versions get down-converted message sets."""
import os
import shutil
import subprocess
import tempfile
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("api_version,fmt", [((0, 9), "magic 0"), ((0, 10, 1), "magic 1")])
def test_kafka_python_pinned_to_old_versions(broker, api_version, fmt):
    topic = "legacy-%d" % len(api_version)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version,
                             acks=1, linger_ms=5)
    futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
               for i in range(300)]
    producer.flush(30)
    offsets = [f.get(timeout=30).offset for f in futures]
    assert offsets == list(range(300)), fmt
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, api_version=api_version,
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek(TopicPartition(topic, 0), 100)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 200 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            got.extend((r.offset, r.key, r.value) for r in records)
    consumer.close()
    assert got == [(i, b"k%d" % i, b"v%d" % i) for i in range(100, 300)], fmt


def test_v2_records_read_by_a_v0_fetch(broker):
    # Written by a modern client (v2 batches, headers) and read with Fetch v1 (magic 0).
    subprocess.run(["kcat", "-b", broker.bootstrap, "-t", "mixed", "-P", "-p", "0", "-K:",
                    "-H", "h=1"], input="".join(f"a{i}:b{i}\n" for i in range(50)), text=True,
                   check=True, timeout=60, capture_output=True)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, api_version=(0, 9),
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    consumer.assign([TopicPartition("mixed", 0)])
    consumer.seek_to_beginning()
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 50 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            got.extend((r.offset, r.key, r.value) for r in records)
    consumer.close()
    assert got == [(i, b"a%d" % i, b"b%d" % i) for i in range(50)]
