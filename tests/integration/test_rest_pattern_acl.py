"""A REST v2 topic_pattern subscription matches only the topics its subscriber may DESCRIBE, as
a Kafka consumer's Metadata shows it only those (issue 24, item 7).

With authorizer.enabled=true and http.authentication=basic, alice may READ the group "gp" and
DESCRIBE and READ the topics "metrics-a" and "metrics-late-ok" (made after she subscribed);
"metrics-b" and "metrics-late-secret" match her pattern but are not hers. The Kafka listener's
anonymous principal is a super user here, so that the test makes topics with AdminClient. Her
GET .../subscription lists only hers, her records come only from them, and after sluice
restarts the stored instance keeps to the same topics.
"""
import base64
import subprocess
import tempfile
import time

import pytest

from harness import Sluice, sluice_binary, wait_for
from rest_support import V2_BINARY, Rest, create_topic
from sasl_support import users

PASSWORD = "alice-Secret-1"
SETTINGS = {"authorizer.enabled": "true", "super.users": "User:ANONYMOUS",
            "http.authentication": "basic", "group.initial.rebalance.delay.ms": "0"}


def add_acl(data_dir, operation, kind, name):
    r = subprocess.run([sluice_binary(), "acls", "add", "--data-dir", data_dir,
                        "--allow-principal", "User:alice", "--operation", operation,
                        f"--{kind}", name], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture
def server():
    d = tempfile.TemporaryDirectory(prefix="sluice-pattern-acl-")
    assert users("set", "alice", "--data-dir", d.name, stdin=PASSWORD + "\n").returncode == 0
    add_acl(d.name, "Read", "group", "gp")
    for t in ("metrics-a", "metrics-late-ok"):
        add_acl(d.name, "Read", "topic", t)
    s = Sluice(data_dir=d.name, settings=SETTINGS).start()
    try:
        yield s
    finally:
        s.close()
        d.cleanup()


def alice(server):
    r = Rest(server)
    r.s.headers["Authorization"] = "Basic " + base64.b64encode(
        f"alice:{PASSWORD}".encode()).decode()
    return r


def produce(server, topic, value):
    """As the super user, through Kafka (the HTTP front needs a login)."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": server.bootstrap})
    p.produce(topic, value.encode())
    assert p.flush(30) == 0


def subscription(rest, path):
    r = rest.get(path + "/subscription")
    assert r.status_code == 200, r.text
    return sorted(r.json()["topics"])


def records_until(rest, path, want, timeout=30):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        r = rest.get(path + "/records?timeout=1000", headers={"Accept": V2_BINARY})
        assert r.status_code == 200, r.text
        got += r.json()
    return got


def test_pattern_matches_only_described_topics(server):
    for t in ("metrics-a", "metrics-b"):
        create_topic(server, t, 1)
    rest = alice(server)
    r = rest.post("/consumers/gp", {"name": "p", "auto.offset.reset": "earliest"})
    assert r.status_code == 200, r.text
    path = "/consumers/gp/instances/p"
    r = rest.post(path + "/subscription", {"topic_pattern": "metrics-.*"})
    assert r.status_code == 204, r.text
    for t in ("metrics-a", "metrics-b"):
        produce(server, t, t)
    wait_for(lambda: subscription(rest, path) == ["metrics-a"], 30,
             "the pattern to match metrics-a only")
    got = records_until(rest, path, 1)
    assert [g["topic"] for g in got] == ["metrics-a"]

    # Topics made after the subscription: matched by the same rule.
    for t in ("metrics-late-ok", "metrics-late-secret"):
        create_topic(server, t, 1)
        produce(server, t, t)
    wait_for(lambda: subscription(rest, path) == ["metrics-a", "metrics-late-ok"], 30,
             "the pattern to match metrics-late-ok too")
    got = records_until(rest, path, 1)
    assert [g["topic"] for g in got] == ["metrics-late-ok"]
    # Nothing of the other topics comes later either.
    assert rest.get(path + "/records?timeout=1500", headers={"Accept": V2_BINARY}).json() == []

    # A restored instance keeps to what alice may DESCRIBE.
    server.stop()
    server.start()
    rest = alice(server)
    wait_for(lambda: subscription(rest, path) == ["metrics-a", "metrics-late-ok"], 30,
             "the restored pattern subscription")
    produce(server, "metrics-b", "after")
    produce(server, "metrics-a", "after")
    got = records_until(rest, path, 1)
    assert [(g["topic"], base64.b64decode(g["value"])) for g in got] == [
        ("metrics-a", b"after")]
