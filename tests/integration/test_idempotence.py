"""Idempotent producers through a connection-cutting proxy: librdkafka (python3-confluent-kafka)
and kafkajs send 50000 numbered records while a loopback proxy cuts their connection every few
hundred kilobytes; every record must be stored exactly once, in order. Also DescribeProducers
and the producer-id rules over the raw protocol."""
import os
import subprocess

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, consume_to_end
from tcp_proxy import CuttingProxy

HERE = os.path.dirname(os.path.abspath(__file__))
COUNT = 50000


@pytest.fixture
def proxied():
    """sluice advertising a cutting proxy's address, so every client connection crosses it."""
    proxy = CuttingProxy(cut_every_bytes=300_000)
    s = Sluice(args=["--advertise-kafka", f"127.0.0.1:{proxy.port}"]).start()
    proxy.start(s.kafka_port)
    try:
        yield s, proxy
    finally:
        proxy.close()
        s.close()


def create_topic(bootstrap, name, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)


def read_values(bootstrap, topic, timeout=120):
    """Every value stored in partition 0 of `topic`, up to its high watermark: a record stored
    twice is read twice."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-" + topic,
                  "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    try:
        return consume_to_end(c, topic, 1, timeout)
    finally:
        c.close()


def check_exactly_once_in_order(values):
    numbers = [int(v.split(b"-")[0]) for v in values]
    assert len(numbers) == COUNT, f"{len(numbers)} records stored for {COUNT} sent"
    assert numbers == list(range(COUNT)), "records out of order or duplicated"


def test_librdkafka_idempotent_producer_through_cuts(proxied):
    s, proxy = proxied
    create_topic(s.bootstrap, "idem-rdk")
    p = Producer({"bootstrap.servers": f"127.0.0.1:{proxy.port}", "enable.idempotence": True,
                  "linger.ms": 5, "batch.num.messages": 200, "message.timeout.ms": 120000,
                  "retry.backoff.ms": 20, "reconnect.backoff.ms": 10,
                  "reconnect.backoff.max.ms": 200, "log_level": 0})
    errors = []
    for i in range(COUNT):
        while True:
            try:
                p.produce("idem-rdk", value=b"%08d-" % i + b"x" * 200,
                          on_delivery=lambda err, msg: err and errors.append(err))
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(120) == 0
    assert not errors, errors[:3]
    assert proxy.cuts >= 10, f"the proxy cut only {proxy.cuts} connections"
    proxy.cutting = False
    check_exactly_once_in_order(read_values(s.bootstrap, "idem-rdk"))


def test_kafkajs_idempotent_producer_through_cuts(proxied):
    s, proxy = proxied
    create_topic(s.bootstrap, "idem-js")
    r = subprocess.run(["node", os.path.join(HERE, "js", "idempotent_kafkajs.js"),
                        f"127.0.0.1:{proxy.port}", "idem-js", str(COUNT)],
                       capture_output=True, text=True, timeout=300, cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert proxy.cuts >= 10, f"the proxy cut only {proxy.cuts} connections"
    proxy.cutting = False
    check_exactly_once_in_order(read_values(s.bootstrap, "idem-js"))
