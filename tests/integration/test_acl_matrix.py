"""One ACL set on every front (issue 12): with authorizer.enabled=true, http.authentication=basic
and sqs.authentication=sigv4, alice may WRITE topic a and READ topic b (and READ the groups she
uses: the REST consumer group "g", the WebSocket group "ws" and the queues' groups, named as the
queues). For a, b and c each front action gives the expected allow or deny: REST v2 and v3
produce, topic GET and listings, consumer instance records, WebSocket subscribe and produce, SSE,
SQS with boto3 and the message move tasks (cancelling one needs what starting it needed).
admin (a super user) passes all; a DENY for alice on a beats her ALLOW."""
import base64
import subprocess
import tempfile

import boto3
import botocore.auth
import pytest
import requests
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from harness import Sluice, sluice_binary, wait_for
from rest_support import V2_JSON, Rest
from sasl_support import users
from ws_support import WsClient

PASSWORDS = {"alice": "alice-Secret-1", "admin": "admin-Secret-9"}
KEYS = {"alice": ("AKIAALICE0000000TEST", "alice/Secret+Key0123456789abcdefghijkl"),
        "admin": ("AKIAADMIN0000000TEST", "admin/Secret+Key0123456789abcdefghijkl")}
REGION = "us-east-1"


def acls(*args):
    return subprocess.run([sluice_binary(), "acls"] + list(args), capture_output=True, text=True,
                          timeout=30)


def add_acl(data_dir, permission, principal, operation, kind, name):
    """`sluice acls add` on the stopped server's data dir."""
    r = acls("add", "--data-dir", data_dir, f"--{permission}-principal", principal,
             "--operation", operation, f"--{kind}", name)
    assert r.returncode == 0, r.stdout + r.stderr


def allow_alice(data_dir):
    add_acl(data_dir, "allow", "User:alice", "Write", "topic", "a")
    add_acl(data_dir, "allow", "User:alice", "Read", "topic", "b")
    for g in ["g", "ws", "a", "b", "c"]:
        add_acl(data_dir, "allow", "User:alice", "Read", "group", g)


@pytest.fixture(scope="module")
def broker():
    d = tempfile.TemporaryDirectory(prefix="sluice-acl-matrix-")
    for name, password in PASSWORDS.items():
        r = users("set", name, "--data-dir", d.name, stdin=password + "\n")
        assert r.returncode == 0, r.stderr
        key_id, secret = KEYS[name]
        r = users("set", name, "--data-dir", d.name, "--aws-access-key-id", key_id,
                  stdin=secret + "\n")
        assert r.returncode == 0, r.stderr
    allow_alice(d.name)
    s = Sluice(data_dir=d.name, sqs=True, settings={
        "authorizer.enabled": "true", "super.users": "User:admin",
        "http.authentication": "basic", "sqs.authentication": "sigv4"})
    s.start()
    admin = sqs(s, "admin")
    for q in ["a", "b", "c"]:
        admin.create_queue(QueueName=q)
    # One record in each topic, for the reads that are allowed.
    for t in ["a", "b", "c"]:
        r = rest(s, "admin").post("/topics/" + t, {"records": [{"value": {"t": t}}]}, V2_JSON)
        assert r.status_code == 200, r.text
    yield s
    s.close()
    d.cleanup()


def basic(user):
    return "Basic " + base64.b64encode(f"{user}:{PASSWORDS[user]}".encode()).decode()


def rest(broker, user):
    r = Rest(broker)
    r.s.headers["Authorization"] = basic(user)
    return r


def sqs(broker, user):
    key_id, secret = KEYS[user]
    return boto3.client("sqs", endpoint_url=broker.sqs_url, region_name=REGION,
                        aws_access_key_id=key_id, aws_secret_access_key=secret,
                        config=Config(retries={"max_attempts": 1}, read_timeout=60,
                                      connect_timeout=10))


def queue_url(broker, name):
    return f"{broker.sqs_url}/000000000000/{name}"


def assert_forbidden(r):
    assert r.status_code == 403, r.text
    assert r.json()["error_code"] == 40301, r.text
    assert "Not authorized" in r.json()["message"]


def sqs_code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "ok"


# --- REST Proxy ----------------------------------------------------------------------------------
def test_rest_v2_produce_needs_write(broker):
    r = rest(broker, "alice")
    assert r.post("/topics/a", {"records": [{"value": 1}]}, V2_JSON).status_code == 200
    for t in ["b", "c"]:
        assert_forbidden(r.post("/topics/" + t, {"records": [{"value": 1}]}, V2_JSON))
        assert_forbidden(r.post(f"/topics/{t}/partitions/0", {"records": [{"value": 1}]},
                                V2_JSON))


def test_rest_v3_produce_needs_write(broker):
    r = rest(broker, "alice")
    cid = r.get("/v3/clusters").json()["data"][0]["cluster_id"]
    body = {"value": {"type": "JSON", "data": 1}}
    ok = r.post(f"/v3/clusters/{cid}/topics/a/records", body, "application/json")
    assert ok.status_code == 200, ok.text
    assert ok.json()["error_code"] == 200, ok.text
    for t in ["b", "c"]:
        assert_forbidden(r.post(f"/v3/clusters/{cid}/topics/{t}/records", body,
                                "application/json"))


def test_topic_get_and_listings_show_only_described_topics(broker):
    r = rest(broker, "alice")
    assert sorted(r.get("/topics").json()) == ["a", "b"]
    cid = r.get("/v3/clusters").json()["data"][0]["cluster_id"]
    names = [t["topic_name"] for t in r.get(f"/v3/clusters/{cid}/topics").json()["data"]]
    assert sorted(names) == ["a", "b"]
    for t in ["a", "b"]:
        assert r.get("/topics/" + t).status_code == 200
        assert r.get(f"/v3/clusters/{cid}/topics/{t}").status_code == 200
        assert r.get(f"/topics/{t}/partitions").status_code == 200
    assert_forbidden(r.get("/topics/c"))
    assert_forbidden(r.get(f"/v3/clusters/{cid}/topics/c"))
    assert_forbidden(r.get("/topics/c/partitions/0/offsets"))
    assert {"a", "b", "c"} <= set(rest(broker, "admin").get("/topics").json())


def consumer_records(r, group, topic):
    made = r.post(f"/consumers/{group}", {"name": "i-" + topic, "format": "json",
                                          "auto.offset.reset": "earliest"})
    if made.status_code != 200:
        return made
    base = f"/consumers/{group}/instances/i-{topic}"
    try:
        sub = r.post(base + "/subscription", {"topics": [topic]})
        if sub.status_code != 204:
            return sub
        for _ in range(20):  # bounded: the first polls may come back empty while joining
            got = r.get(base + "/records?timeout=1000", headers={"Accept": V2_JSON})
            if got.status_code != 200 or got.json():
                return got
        return got
    finally:
        r.delete(base)


def test_consumer_instance_reads_need_read_topic_and_group(broker):
    r = rest(broker, "alice")
    got = consumer_records(r, "g", "b")
    assert got.status_code == 200, got.text
    assert [m["value"] for m in got.json()] == [{"t": "b"}]
    # Subscribing to c needs DESCRIBE on c; reading a needs READ on a (she may only WRITE it).
    assert_forbidden(consumer_records(r, "g", "c"))
    assert_forbidden(consumer_records(r, "g", "a"))
    # A group she may not read.
    assert_forbidden(r.post("/consumers/other", {"name": "x", "format": "json"}))
    got = consumer_records(rest(broker, "admin"), "other", "c")
    assert got.status_code == 200 and got.json(), got.text


# --- WebSocket and SSE ---------------------------------------------------------------------------
def ws(broker, user):
    return WsClient(broker.http_port, headers=[f"Authorization: {basic(user)}"])


def test_websocket_subscribe_and_produce(broker):
    with ws(broker, "alice") as c:
        c.send({"op": "subscribe", "id": "s-c", "topics": ["c"], "from": "earliest"})
        m, _ = c.recv_op("error")
        assert m["id"] == "s-c" and m["code"] == 40301, m
        c.send({"op": "subscribe", "id": "s-a", "topics": ["a"], "from": "earliest"})
        m, _ = c.recv_op("error")
        assert m["id"] == "s-a" and m["code"] == 40301, m
        c.send({"op": "produce", "id": "p-b", "topic": "b", "value": "x"})
        m, _ = c.recv_op("error")
        assert m["id"] == "p-b" and m["code"] == 40301, m
        # The session stays open: allowed ops still work.
        c.send({"op": "produce", "id": "p-a", "topic": "a", "value": "x"})
        m, _ = c.recv_op("ack")
        assert m["id"] == "p-a", m
        # Its own group: the REST consumer of test_consumer_instance_reads_* committed group
        # g's offset of b past the only record, so a member of g would wait for none.
        c.send({"op": "subscribe", "id": "s-b", "topics": ["b"], "from": "earliest",
                "group": "ws"})
        m, _ = c.recv_op("subscribed")
        assert m["id"] == "s-b", m
        m, _ = c.recv_op("records")
    with ws(broker, "admin") as c:
        c.send({"op": "subscribe", "id": "s-c", "topics": ["c"], "from": "earliest"})
        c.recv_op("subscribed")
        c.send({"op": "produce", "id": "p-c", "topic": "c", "value": "x"})
        c.recv_op("ack")


def sse_status(broker, user, path):
    with requests.get(broker.http_url + path, stream=True, timeout=30,
                      headers={"Authorization": basic(user)}) as r:
        if r.status_code != 200:
            return r.status_code, r.json()
        assert r.headers["content-type"] == "text/event-stream"
        return 200, None


def test_sse_needs_read_topic_and_group(broker):
    assert sse_status(broker, "alice", "/topics/b/events?from=earliest&limit=1")[0] == 200
    assert sse_status(broker, "alice",
                      "/topics/b/events?from=earliest&limit=1&group=g")[0] == 200
    for path in ["/topics/a/events?limit=1", "/topics/c/events?limit=1",
                 "/topics/b/events?limit=1&group=other"]:
        status, body = sse_status(broker, "alice", path)
        assert status == 403 and body["error_code"] == 40301, (path, body)
    assert sse_status(broker, "admin", "/topics/c/events?from=earliest&limit=1")[0] == 200


# --- SQS -----------------------------------------------------------------------------------------
def test_sqs_actions_map_onto_topic_and_group(broker):
    c = sqs(broker, "alice")
    a, b, cq = (queue_url(broker, n) for n in "abc")
    assert sqs_code(lambda: c.send_message(QueueUrl=a, MessageBody="m")) == "ok"
    assert sqs_code(lambda: c.send_message(QueueUrl=b, MessageBody="m")) == "AccessDenied"
    assert sqs_code(lambda: c.send_message(QueueUrl=cq, MessageBody="m")) == "AccessDenied"
    assert sqs_code(lambda: c.send_message_batch(
        QueueUrl=b, Entries=[{"Id": "1", "MessageBody": "m"}])) == "AccessDenied"
    assert sqs_code(lambda: c.receive_message(QueueUrl=a)) == "AccessDenied"
    assert sqs_code(lambda: c.receive_message(QueueUrl=cq)) == "AccessDenied"
    sqs(broker, "admin").send_message(QueueUrl=b, MessageBody="for alice")
    got = c.receive_message(QueueUrl=b, WaitTimeSeconds=5, MaxNumberOfMessages=10)["Messages"]
    assert got
    for m in got:
        c.delete_message(QueueUrl=b, ReceiptHandle=m["ReceiptHandle"])
    assert sqs_code(lambda: c.get_queue_attributes(QueueUrl=a, AttributeNames=["All"])) == "ok"
    assert sqs_code(lambda: c.get_queue_attributes(QueueUrl=b, AttributeNames=["All"])) == "ok"
    assert sqs_code(lambda: c.get_queue_attributes(QueueUrl=cq, AttributeNames=["All"])) == \
        "AccessDenied"
    assert sqs_code(lambda: c.get_queue_url(QueueName="c")) == "AccessDenied"
    assert sqs_code(lambda: c.create_queue(QueueName="d")) == "AccessDenied"
    assert sqs_code(lambda: c.delete_queue(QueueUrl=b)) == "AccessDenied"
    assert sqs_code(lambda: c.purge_queue(QueueUrl=a)) == "AccessDenied"
    names = sorted(u.rsplit("/", 1)[1] for u in c.list_queues().get("QueueUrls", []))
    assert names == ["a", "b"]


def json_request(broker, user, action, body):
    """An AWS JSON 1.0 request signed with botocore's own signer."""
    import json
    req = AWSRequest(method="POST", url=broker.sqs_url + "/", data=json.dumps(body),
                     headers={"Content-Type": "application/x-amz-json-1.0",
                              "X-Amz-Target": "AmazonSQS." + action})
    botocore.auth.SigV4Auth(Credentials(*KEYS[user]), "sqs", REGION).add_auth(req)
    p = req.prepare()
    return requests.request(p.method, p.url, headers=dict(p.headers), data=p.body, timeout=30)


def test_sqs_denials_in_both_protocols(broker):
    r = json_request(broker, "alice", "SendMessage",
                     {"QueueUrl": queue_url(broker, "c"), "MessageBody": "m"})
    assert r.status_code == 400, r.text
    assert r.json()["__type"].endswith("AccessDeniedException"), r.text
    assert r.headers["x-amzn-query-error"] == "AccessDenied;Sender"
    ok = json_request(broker, "alice", "SendMessage",
                      {"QueueUrl": queue_url(broker, "a"), "MessageBody": "m"})
    assert ok.status_code == 200, ok.text
    with pytest.raises(ClientError) as e:
        sqs(broker, "alice").send_message(QueueUrl=queue_url(broker, "c"), MessageBody="m")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_admin_passes_everything(broker):
    c = sqs(broker, "admin")
    url = queue_url(broker, "c")
    c.send_message(QueueUrl=url, MessageBody="m")
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]
    names = sorted(u.rsplit("/", 1)[1] for u in c.list_queues().get("QueueUrls", []))
    assert {"a", "b", "c"} <= set(names)
    r = rest(broker, "admin")
    assert r.post("/topics/c", {"records": [{"value": 1}]}, V2_JSON).status_code == 200
    assert r.get("/topics/c").status_code == 200
    assert r.get("/v1/queues").status_code == 200
    # The console's listings show alice what she may describe, as ListQueues does.
    mine = rest(broker, "alice").get("/v1/queues")
    assert mine.status_code == 200
    assert sorted(q["name"] for q in mine.json()["queues"]) == ["a", "b"]
    groups = rest(broker, "alice").get("/v1/groups")
    assert groups.status_code == 200
    assert all(g["group_id"] in ("g", "ws", "a", "b", "c") for g in groups.json()["groups"])


def test_deny_beats_allow(broker):
    broker.stop()
    add_acl(broker.data_dir, "deny", "User:alice", "Write", "topic", "a")
    broker.start()
    assert_forbidden(rest(broker, "alice").post("/topics/a", {"records": [{"value": 1}]},
                                                V2_JSON))
    assert sqs_code(lambda: sqs(broker, "alice").send_message(
        QueueUrl=queue_url(broker, "a"), MessageBody="m")) == "AccessDenied"
    with ws(broker, "alice") as c:
        c.send({"op": "produce", "id": "p-a", "topic": "a", "value": "x"})
        m, _ = c.recv_op("error")
        assert m["code"] == 40301, m
    # Her READ on b is untouched.
    assert sqs_code(lambda: sqs(broker, "alice").get_queue_attributes(
        QueueUrl=queue_url(broker, "b"))) == "ok"


def arn(name):
    return f"arn:aws:sqs:{REGION}:000000000000:{name}"


def test_message_move_tasks(broker):
    # Runs after test_deny_beats_allow (DENY WRITE on a): alice gets ALTER on queue m.
    broker.stop()
    add_acl(broker.data_dir, "allow", "User:alice", "Alter", "topic", "m")
    broker.start()
    sqs(broker, "admin").create_queue(QueueName="m")

    def code(user, action, body):
        r = json_request(broker, user, action, body)
        return "ok" if r.status_code == 200 else r.json()["__type"].split("#")[-1]
    # The destination needs WRITE: alice may not write c (nor a, whose WRITE is now denied).
    for dest in ("c", "a"):
        assert code("alice", "StartMessageMoveTask",
                    {"SourceArn": arn("m"), "DestinationArn": arn(dest)}) == \
            "AccessDeniedException"
    # The source needs ALTER: alice has none on b.
    assert code("alice", "StartMessageMoveTask", {"SourceArn": arn("b")}) == \
        "AccessDeniedException"
    # Past the ACLs, the handler decides (m is no dead-letter queue of anything, or it moves).
    assert code("alice", "StartMessageMoveTask", {"SourceArn": arn("m")}) != \
        "AccessDeniedException"
    assert code("admin", "StartMessageMoveTask",
                {"SourceArn": arn("m"), "DestinationArn": arn("c")}) != "AccessDeniedException"
    # A handle of no task names no queue: cancelling it needs ALTER on the cluster.
    assert code("alice", "CancelMessageMoveTask", {"TaskHandle": "nope"}) == \
        "AccessDeniedException"
    assert code("admin", "CancelMessageMoveTask", {"TaskHandle": "nope"}) != \
        "AccessDeniedException"


def test_cancel_message_move_task_needs_what_starting_it_needed(broker):
    # alice gets ALTER on the dead-letter queue md and WRITE on its source ms (where a task
    # without a destination writes), none on md2 (nor WRITE on c).
    broker.stop()
    add_acl(broker.data_dir, "allow", "User:alice", "Alter", "topic", "md")
    add_acl(broker.data_dir, "allow", "User:alice", "Write", "topic", "ms")
    broker.start()
    admin = sqs(broker, "admin")
    for dlq, source in (("md", "ms"), ("md2", "ms2")):
        admin.create_queue(QueueName=dlq)
        admin.create_queue(QueueName=source, Attributes={
            "RedrivePolicy": '{"deadLetterTargetArn":"%s","maxReceiveCount":"1"}' % arn(dlq)})

    def start(source, destination=None):
        body = {"SourceArn": arn(source)}
        if destination:
            body["DestinationArn"] = arn(destination)
        r = json_request(broker, "admin", "StartMessageMoveTask", body)
        assert r.status_code == 200, r.text
        # The queue is empty: the task ends at once, and stays listed (and checked by ACLs).
        wait_for(lambda: json_request(broker, "admin", "ListMessageMoveTasks",
                                      {"SourceArn": arn(source)}).json()["Results"][0]
                 ["Status"] != "RUNNING", 30, "the move task of " + source + " to end")
        return r.json()["TaskHandle"]

    def cancel(user, handle):
        r = json_request(broker, user, "CancelMessageMoveTask", {"TaskHandle": handle})
        return r.json()["__type"].split("#")[-1]
    to_source = start("md")
    to_c = start("md", "c")
    of_md2 = start("md2")
    # ALTER on the source and WRITE on its source queue pass (the task has ended: the
    # handler's ResourceNotFound)...
    assert cancel("alice", to_source) == "ResourceNotFoundException"
    # ...WRITE on the destination is needed as it was to start it, and ALTER on the source.
    assert cancel("alice", to_c) == "AccessDeniedException"
    assert cancel("alice", of_md2) == "AccessDeniedException"
    for handle in (to_source, to_c, of_md2):
        assert cancel("admin", handle) == "ResourceNotFoundException"
