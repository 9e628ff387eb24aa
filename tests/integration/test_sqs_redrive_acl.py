"""Writes into another queue on a user's behalf need that user's WRITE on it (issue 24, item 2).

With authorizer.enabled=true, sqs.authentication=sigv4 and http.authentication=basic, alice may
configure and read queue "a" (ALTER_CONFIGS, READ, and READ on its group), create queue "c",
write the dead-letter queue "own" and ALTER the dead-letter queue "dl"; she has no right on
"secret", nor on "src" (whose RedrivePolicy, set by admin, names "dl"). Through boto3 and the
console's /v1 routes:

- a RedrivePolicy naming "secret" is refused at SetQueueAttributes and CreateQueue
  (AccessDenied), so receiving past maxReceiveCount cannot write there; one naming "own" is
  accepted and the receives move the message there;
- a message move task from "dl" back to its source queues needs WRITE on "src", through SQS
  (StartMessageMoveTask) and the console (POST /v1/queues/dl/redrive), and WRITE on a given
  destination through the console;
- a move task without a destination moves a message back only to a queue whose RedrivePolicy
  names the dead-letter queue: a forged `sqs:dlq-source` header (any producer to the topic can
  write one) naming another queue fails the task, and that queue gets nothing.
"""
import base64
import json
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
from sasl_support import users

PASSWORDS = {"alice": "alice-Secret-1", "admin": "admin-Secret-9"}
KEYS = {"alice": ("AKIAALICE0000000TEST", "alice/Secret+Key0123456789abcdefghijkl"),
        "admin": ("AKIAADMIN0000000TEST", "admin/Secret+Key0123456789abcdefghijkl")}
REGION = "us-east-1"


def add_acl(data_dir, principal, operation, kind, name):
    r = subprocess.run([sluice_binary(), "acls", "add", "--data-dir", data_dir,
                        "--allow-principal", principal, "--operation", operation,
                        f"--{kind}", name], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def broker():
    d = tempfile.TemporaryDirectory(prefix="sluice-redrive-acl-")
    for name, password in PASSWORDS.items():
        assert users("set", name, "--data-dir", d.name, stdin=password + "\n").returncode == 0
        key_id, secret = KEYS[name]
        r = users("set", name, "--data-dir", d.name, "--aws-access-key-id", key_id,
                  stdin=secret + "\n")
        assert r.returncode == 0, r.stderr
    for op in ("AlterConfigs", "Read", "Describe"):
        add_acl(d.name, "User:alice", op, "topic", "a")
    add_acl(d.name, "User:alice", "Read", "group", "a")
    add_acl(d.name, "User:alice", "Create", "topic", "c")
    add_acl(d.name, "User:alice", "Write", "topic", "own")
    add_acl(d.name, "User:alice", "Alter", "topic", "dl")
    s = Sluice(data_dir=d.name, sqs=True, settings={
        "authorizer.enabled": "true", "super.users": "User:admin",
        "http.authentication": "basic", "sqs.authentication": "sigv4"})
    s.start()
    admin = sqs(s, "admin")
    for q in ("a", "secret", "own", "dl", "victim"):
        admin.create_queue(QueueName=q)
    admin.create_queue(QueueName="src", Attributes={"RedrivePolicy": policy("dl", 1)})
    yield s
    s.close()
    d.cleanup()


def sqs(broker, user):
    key_id, secret = KEYS[user]
    return boto3.client("sqs", endpoint_url=broker.sqs_url, region_name=REGION,
                        aws_access_key_id=key_id, aws_secret_access_key=secret,
                        config=Config(retries={"max_attempts": 1}, read_timeout=60,
                                      connect_timeout=10))


def arn(name):
    return f"arn:aws:sqs:{REGION}:000000000000:{name}"


def url(broker, name):
    return f"{broker.sqs_url}/000000000000/{name}"


def json_request(broker, user, action, body):
    """An AWS JSON 1.0 request signed by botocore (Debian's boto3 has no move-task calls)."""
    req = AWSRequest(method="POST", url=broker.sqs_url + "/", data=json.dumps(body),
                     headers={"Content-Type": "application/x-amz-json-1.0",
                              "X-Amz-Target": "AmazonSQS." + action})
    botocore.auth.SigV4Auth(Credentials(*KEYS[user]), "sqs", REGION).add_auth(req)
    p = req.prepare()
    r = requests.request(p.method, p.url, headers=dict(p.headers), data=p.body, timeout=30)
    return r.json(), (None if r.status_code == 200 else r.json()["__type"].split("#")[-1])


def move_tasks(broker, queue):
    out, err = json_request(broker, "admin", "ListMessageMoveTasks",
                            {"SourceArn": arn(queue), "MaxResults": 10})
    assert err is None, out
    return out.get("Results", [])


def policy(dlq, max_receives):
    return json.dumps({"deadLetterTargetArn": arn(dlq), "maxReceiveCount": str(max_receives)})


def code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "ok"


def depth(broker, queue):
    attrs = sqs(broker, "admin").get_queue_attributes(
        QueueUrl=url(broker, queue), AttributeNames=["ApproximateNumberOfMessages",
                                                     "ApproximateNumberOfMessagesNotVisible"])
    return sum(int(v) for v in attrs["Attributes"].values())


def receive_past_max(broker, user, queue):
    """Receives the queue's one message twice (visibility 0): past a maxReceiveCount of 1."""
    c = sqs(broker, user)
    for _ in range(3):
        c.receive_message(QueueUrl=url(broker, queue), VisibilityTimeout=0, WaitTimeSeconds=1)


def test_redrive_policy_needs_write_on_its_dead_letter_queue(broker):
    alice = sqs(broker, "alice")
    assert code(lambda: alice.set_queue_attributes(
        QueueUrl=url(broker, "a"), Attributes={"RedrivePolicy": policy("secret", 1)})) == \
        "AccessDenied"
    assert code(lambda: alice.create_queue(
        QueueName="c", Attributes={"RedrivePolicy": policy("secret", 1)})) == "AccessDenied"
    # Nothing names "secret": receiving a's message again and again moves nothing there.
    sqs(broker, "admin").send_message(QueueUrl=url(broker, "a"), MessageBody="private")
    receive_past_max(broker, "alice", "a")
    assert depth(broker, "secret") == 0
    attrs = alice.get_queue_attributes(QueueUrl=url(broker, "a"), AttributeNames=["All"])
    assert "RedrivePolicy" not in attrs["Attributes"]
    assert not any(u.endswith("/c") for u in sqs(broker, "admin").list_queues()["QueueUrls"])
    # To a queue she may write, the policy is accepted.
    alice.set_queue_attributes(QueueUrl=url(broker, "a"),
                               Attributes={"RedrivePolicy": policy("own", 1)})
    # The policy was authorized when set: the receives (by alice, who may not READ "own")
    # move what exceeds maxReceiveCount into it.
    wait_for(lambda: receive_past_max(broker, "alice", "a") or depth(broker, "own") >= 1, 30,
             "a message moved into own")
    alice.set_queue_attributes(QueueUrl=url(broker, "a"), Attributes={"RedrivePolicy": ""})


def console(broker, user):
    s = requests.Session()
    s.auth = (user, PASSWORDS[user])
    return s


def test_move_task_back_to_sources_needs_write_on_them(broker):
    # alice may ALTER dl but not WRITE src, where the task would put dl's messages back.
    assert json_request(broker, "alice", "StartMessageMoveTask",
                        {"SourceArn": arn("dl")})[1] == "AccessDeniedException"
    r = console(broker, "alice").post(broker.http_url + "/v1/queues/dl/redrive", json={},
                                      timeout=30)
    assert r.status_code == 403 and "WRITE topic src" in r.json()["message"], r.text
    # A destination needs WRITE too, on the console as on SQS.
    r = console(broker, "alice").post(broker.http_url + "/v1/queues/dl/redrive",
                                      json={"destination": "secret"}, timeout=30)
    assert r.status_code == 403 and "WRITE topic secret" in r.json()["message"], r.text
    # To a destination alice may write, both pass the ACLs.
    r = console(broker, "alice").post(broker.http_url + "/v1/queues/dl/redrive",
                                      json={"destination": "own"}, timeout=30)
    assert r.status_code == 202, r.text


def test_move_task_does_not_follow_a_forged_source_header(broker):
    wait_for(lambda: all(t["Status"] != "RUNNING" for t in move_tasks(broker, "dl")), 30,
             "dl's tasks to end")
    # A record written to dl's topic (REST v2 here; any Kafka producer can) with the header a
    # dead-letter move writes, naming a queue that does not redrive into dl.
    r = console(broker, "admin").post(
        broker.http_url + "/topics/dl",
        data=json.dumps({"records": [{"value": base64.b64encode(b"forged").decode(),
                                      "headers": [{"name": "sqs:dlq-source",
                                                   "value": base64.b64encode(
                                                       arn("victim").encode()).decode()}]}]}),
        headers={"Content-Type": "application/vnd.kafka.binary.v2+json"}, timeout=30)
    assert r.status_code == 200, r.text
    wait_for(lambda: depth(broker, "dl") >= 1, 30, "the forged message in dl")
    started, err = json_request(broker, "admin", "StartMessageMoveTask", {"SourceArn": arn("dl")})
    assert err is None, started
    handle = started["TaskHandle"]

    def ended():
        for t in move_tasks(broker, "dl"):
            if t["TaskHandle"] == handle and t["Status"] != "RUNNING":
                return t
        return None
    task = wait_for(ended, 30, "the move task to end")
    assert task["Status"] == "FAILED", task
    assert "does not name" in task["FailureReason"] and arn("victim") in task["FailureReason"]
    assert depth(broker, "victim") == 0
