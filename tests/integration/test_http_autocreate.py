"""Every produce path of the HTTP front creates a missing topic as a Kafka producer's first
Metadata does (issue 24, item 14): REST v2 (POST /topics/{t} and .../partitions/{p}), REST v3
(POST .../records, whole and streamed) and the WebSocket produce op, with num.partitions
partitions, when auto.create.topics.enable is true; with it false they answer 404 (40401; v3
40403, its code for an unknown topic) and create nothing. GETs, SSE and subscriptions create
nothing. With ACLs, creating needs CREATE on the topic or the cluster (403 40301 otherwise),
as Kafka's auto-creation does. Real clients: requests, the raw WebSocket client, AdminClient.
"""
import base64
import subprocess
import tempfile

import pytest
import requests
from confluent_kafka.admin import AdminClient

from harness import Sluice, sluice_binary
from rest_support import V2_BINARY, Rest, b64
from sasl_support import users
from ws_support import WsClient


def topics(server):
    """Every topic and its partition count (Metadata for all topics creates none)."""
    md = AdminClient({"bootstrap.servers": server.bootstrap}).list_topics(timeout=30)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def cluster_id(rest):
    return rest.get("/v3/clusters").json()["data"][0]["cluster_id"]


def v3_post(rest, cid, topic, body, chunked=False):
    url = f"{rest.base}/v3/clusters/{cid}/topics/{topic}/records"
    data = body.encode()
    if chunked:
        data = iter([data])  # requests sends an iterator with Transfer-Encoding: chunked
    return rest.s.post(url, data=data, headers={"Content-Type": "application/json"}, timeout=30)


RECORD = '{"value": {"type": "STRING", "data": "x"}}'


def ws_produce(server, topic, headers=()):
    with WsClient(server.http_port, headers=headers) as c:
        c.send({"op": "produce", "id": 1, "topic": topic, "value": "v"})
        return c.recv()


def test_every_produce_path_creates_a_missing_topic_as_the_setting_says():
    with Sluice(settings={"num.partitions": 3}) as s:
        rest = Rest(s)
        r = rest.post("/topics/v2-new", {"records": [{"value": b64("a")}]}, V2_BINARY)
        assert r.status_code == 200, r.text
        assert r.json()["offsets"][0]["error_code"] is None
        r = rest.post("/topics/v2-part/partitions/2", {"records": [{"value": b64("a")}]},
                      V2_BINARY)
        assert r.status_code == 200 and r.json()["offsets"][0]["partition"] == 2, r.text
        cid = cluster_id(rest)
        r = v3_post(rest, cid, "v3-new", RECORD)
        assert r.status_code == 200 and r.json()["error_code"] == 200, r.text
        r = v3_post(rest, cid, "v3-streamed", RECORD + RECORD, chunked=True)
        assert r.status_code == 200, r.text
        assert r.text.count('"error_code":200') == 2, r.text
        ack = ws_produce(s, "ws-new")
        assert ack["op"] == "ack" and ack["topic"] == "ws-new", ack
        made = topics(s)
        for t in ("v2-new", "v2-part", "v3-new", "v3-streamed", "ws-new"):
            assert made.get(t) == 3, (t, made)
        assert "auto-created topic 'v2-new' with 3 partitions for http" in s.log_text()

        # Reads and subscriptions create nothing.
        for path in ("/topics/ghost", "/topics/ghost/partitions",
                     "/topics/ghost/partitions/0/offsets", f"/v3/clusters/{cid}/topics/ghost",
                     "/topics/ghost/events"):
            assert rest.get(path).status_code == 404, path
        with WsClient(s.http_port) as c:
            c.send({"op": "subscribe", "id": "s", "topics": ["ghost"]})
            assert c.recv()["code"] == 40401
        r = rest.post("/consumers/g", {"name": "c"})
        assert r.status_code == 200, r.text
        assert rest.post("/consumers/g/instances/c/subscription",
                         {"topics": ["ghost"]}).status_code == 204
        rest.get("/consumers/g/instances/c/records?timeout=500", headers={"Accept": V2_BINARY})
        assert "ghost" not in topics(s)

    # With auto-creation off, a missing topic is 404 on every produce path.
    with Sluice(settings={"auto.create.topics.enable": "false"}) as s:
        rest = Rest(s)
        r = rest.post("/topics/off-v2", {"records": [{"value": b64("a")}]}, V2_BINARY)
        assert r.status_code == 404 and r.json()["error_code"] == 40401, r.text
        r = v3_post(rest, cluster_id(rest), "off-v3", RECORD)
        assert r.status_code == 404 and r.json()["error_code"] == 40403, r.text
        e = ws_produce(s, "off-ws")
        assert e == {"op": "error", "id": 1, "code": 40401, "message": "Topic not found."}
        assert not {"off-v2", "off-v3", "off-ws"} & set(topics(s))


PASSWORDS = {"alice": "alice-Secret-1", "bob": "bob-Secret-22"}


def add_acl(data_dir, principal, operation, *resource):
    r = subprocess.run([sluice_binary(), "acls", "add", "--data-dir", data_dir,
                        "--allow-principal", principal, "--operation", operation] +
                       list(resource), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture
def secured():
    d = tempfile.TemporaryDirectory(prefix="sluice-autocreate-acl-")
    for user, password in PASSWORDS.items():
        assert users("set", user, "--data-dir", d.name, stdin=password + "\n").returncode == 0
    # alice: WRITE on w-* (CREATE only on w-ok); bob: WRITE on b-new and CREATE on the cluster.
    add_acl(d.name, "User:alice", "Write", "--topic", "w-", "--resource-pattern-type",
            "prefixed")
    add_acl(d.name, "User:alice", "Create", "--topic", "w-ok")
    add_acl(d.name, "User:bob", "Write", "--topic", "b-new")
    add_acl(d.name, "User:bob", "Create", "--cluster")
    s = Sluice(data_dir=d.name, settings={
        "authorizer.enabled": "true", "super.users": "User:ANONYMOUS",
        "http.authentication": "basic"}).start()
    try:
        yield s
    finally:
        s.close()
        d.cleanup()


def basic(user):
    return "Basic " + base64.b64encode(f"{user}:{PASSWORDS[user]}".encode()).decode()


def as_user(server, user):
    r = Rest(server)
    r.s.headers["Authorization"] = basic(user)
    return r


def test_creating_needs_create_on_the_topic_or_the_cluster(secured):
    alice = as_user(secured, "alice")
    body = {"records": [{"value": b64("a")}]}
    r = alice.post("/topics/w-denied", body, V2_BINARY)
    assert r.status_code == 403 and r.json()["error_code"] == 40301, r.text
    assert "CREATE topic w-denied" in r.json()["message"]
    r = v3_post(alice, cluster_id(alice), "w-denied", RECORD)
    assert r.status_code == 403 and r.json()["error_code"] == 40301, r.text
    e = ws_produce(secured, "w-denied", headers=[f"Authorization: {basic('alice')}"])
    assert e["op"] == "error" and e["code"] == 40301 and "CREATE" in e["message"], e
    assert "w-denied" not in topics(secured)
    # CREATE on the topic, or on the cluster, lets the produce create it.
    assert alice.post("/topics/w-ok", body, V2_BINARY).status_code == 200
    r = as_user(secured, "bob").post("/topics/b-new", body, V2_BINARY)
    assert r.status_code == 200, r.text
    made = topics(secured)
    assert "w-ok" in made and "b-new" in made
    # WRITE is still checked first: no WRITE, no creation, whatever CREATE allows.
    r = as_user(secured, "bob").post("/topics/b-other", body, V2_BINARY)
    assert r.status_code == 403 and "WRITE topic b-other" in r.json()["message"], r.text
    assert "b-other" not in topics(secured)
    assert requests.get(secured.http_url + "/healthz", timeout=10).status_code == 200
