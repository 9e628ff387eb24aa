"""Consumer groups with JavaScript clients: kafkajs 2.2.4 (three consumers, one leaving, admin
group calls) and node-rdkafka 3.6.1 built on librdkafka 2.12 (group.protocol=consumer, the
KIP-848 protocol with server-side assignment; and the classic protocol with
cooperative-sticky)."""
import os
import subprocess

import re

import pytest
import requests

from harness import Sluice

HERE = os.path.dirname(os.path.abspath(__file__))
JS = os.path.join(HERE, "js")


def run_js(script, *args, timeout=240):
    r = subprocess.run(["node", os.path.join(JS, script), *args], capture_output=True, text=True,
                       timeout=timeout, cwd=JS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def have_node_rdkafka():
    return os.path.exists(os.path.join(JS, "node_modules", "node-rdkafka", "build", "Release",
                                       "node-librdkafka.node"))


def requests_of(broker, api):
    metrics = requests.get(f"{broker.http_url}/metrics", timeout=10).text
    m = re.search(r'sluice_kafka_requests_total\{api="%s"\} (\d+)' % api, metrics)
    return int(m.group(1)) if m else 0


@pytest.fixture
def fast_broker():
    s = Sluice(settings={"group.initial.rebalance.delay.ms": "300",
                         "group.consumer.heartbeat.interval.ms": "500",
                         "group.consumer.session.timeout.ms": "10000"}).start()
    try:
        yield s
    finally:
        s.close()


def test_kafkajs_group(fast_broker):
    run_js("groups_kafkajs.js", fast_broker.bootstrap)


@pytest.mark.skipif(not have_node_rdkafka(), reason="node-rdkafka not built (scripts/install-deps)")
def test_node_rdkafka_group_protocol_consumer(fast_broker):
    run_js("groups_rdkafka.js", fast_broker.bootstrap, "consumer")
    # The KIP-848 protocol was used, not the classic one.
    assert requests_of(fast_broker, "ConsumerGroupHeartbeat") > 0
    assert requests_of(fast_broker, "JoinGroup") == 0


@pytest.mark.skipif(not have_node_rdkafka(), reason="node-rdkafka not built (scripts/install-deps)")
def test_node_rdkafka_cooperative_sticky(fast_broker):
    run_js("groups_rdkafka.js", fast_broker.bootstrap, "classic")
