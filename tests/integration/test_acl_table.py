"""The same ACL gives the same answer on every front (issue 25): one table of rows
(principal, ACLs granted, operation, resource type, resource name, expected) run against one
running sluice on each front with the client a user of that front runs:

  kafka     confluent-kafka Producer / Consumer / AdminClient, SASL SCRAM-SHA-256
  rest_v2   requests, HTTP Basic (REST Proxy v2)     rest_v3  the same on the v3 routes
  ws        the WebSocket /ws (ws_support), Basic    sse      GET .../events, Basic
  sqs       boto3 with SigV4 keys                    console  the console's /v1 routes, Basic

Each test is one (row, front) pair, with an id such as `alice-WRITE-topic:orders-sqs`: the
front's action that needs the row's operation on the row's resource runs as the row's principal
and must give the row's answer, a denial in the front's own form (Kafka's TOPIC / GROUP /
CLUSTER_AUTHORIZATION_FAILED, REST 403 with error_code 40301, a WebSocket error frame with code
40301, SSE 403 before the stream, SQS AccessDenied) naming that operation and resource, or
success. A front with no action that needs that operation on that resource type says so in
ACTIONS below, with the reason, and its pairs are reported as skipped with that reason.

What the table tests is the decision, not each front's action list (test_acl_matrix.py has
those). Some actions need a second right besides the row's (a REST v2 consumer and an SQS receive
read topic t through the group t, a Kafka commit to group g names topic g, an HTTP produce to a
missing topic writes it): the row's grants include that second right, so the row's own resource
decides. ACLs are added with `sluice acls add` on the data dir before the server starts; the
server then has the union of every row's grants.
"""
import base64
import json
import subprocess
import tempfile
import time
import uuid
from collections import namedtuple

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from harness import Sluice, sluice_binary
from rest_support import V2, V2_JSON
from sasl_support import users
from ws_support import WsClient

FRONTS = ("kafka", "rest_v2", "rest_v3", "ws", "sse", "sqs", "console")
ALLOW, DENY = "allow", "deny"
CLUSTER = "kafka-cluster"  # the cluster resource's name, as in Kafka
REGION = "us-east-1"
USERS = ("alice", "bob", "carol", "dave", "erin", "root")  # root is the super user

# A grant is "[User:* ]allow|deny OPERATION TYPE[:NAME]": the row's principal unless the grant
# names User:*; NAME ending in `*` (other than `*` itself) is a PREFIXED pattern of what comes
# before it, `*` alone the LITERAL wildcard; the cluster has no NAME.
Row = namedtuple("Row", "principal grants operation resource_type resource_name expected why")

# fmt: off
TABLE = [
    # principal grants                                      operation  type   name   expected
    Row("alice", ["allow Write topic:orders"],               "WRITE",    "topic", "orders", ALLOW,
        "a literal ALLOW"),
    Row("alice", ["allow Write topic:orders", "allow Read group:orders"],
                                                             "READ",     "topic", "orders", DENY,
        "WRITE is not READ"),
    Row("alice", ["allow Write topic:orders"],               "DESCRIBE", "topic", "orders", ALLOW,
        "WRITE implies DESCRIBE"),
    Row("alice", ["allow Write topic:orders"],       "DESCRIBE_CONFIGS", "topic", "orders", DENY,
        "WRITE does not imply DESCRIBE_CONFIGS"),
    Row("alice", ["allow Write topic:orders"],          "ALTER_CONFIGS", "topic", "orders", DENY,
        "no ALTER_CONFIGS granted"),
    Row("alice", ["allow Write topic:orders"],               "DELETE",   "topic", "orders", DENY,
        "no DELETE granted"),
    Row("alice", ["allow Read topic:logs-*", "allow Read group:logs-*"],
                                                             "READ",     "topic", "logs-app", ALLOW,
        "a PREFIXED pattern"),
    Row("alice", ["allow Read topic:logs-*", "allow Read group:logs-*"],
                                                             "READ",     "group", "logs-app", ALLOW,
        "a PREFIXED pattern on a group"),
    Row("alice", ["allow Write topic:tmp-*"],                "CREATE",   "topic", "tmp-{front}", DENY,
        "WRITE on a missing topic does not create it"),
    Row("bob",   ["allow Describe topic:*"],                 "DESCRIBE", "topic", "ledger", ALLOW,
        "the `*` resource"),
    Row("bob",   ["allow Describe topic:*"],                 "WRITE",    "topic", "orders", DENY,
        "`*` grants only what it names"),
    Row("bob",   ["allow Create topic:new-*", "allow Write topic:new-*"],
                                                             "CREATE",   "topic", "new-{front}", ALLOW,
        "CREATE on a PREFIXED topic pattern"),
    Row("dave",  ["User:* allow Read topic:public", "User:* allow Read group:public"],
                                                             "READ",     "topic", "public", ALLOW,
        "the User:* principal"),
    Row("dave",  ["User:* allow Read topic:public", "User:* allow Read group:public"],
                                                             "READ",     "group", "public", ALLOW,
        "the User:* principal on a group"),
    Row("dave",  ["User:* allow Read topic:public", "User:* allow Read group:public"],
                                                             "DESCRIBE", "group", "public", ALLOW,
        "User:*'s READ implies DESCRIBE"),
    Row("dave",  ["User:* allow Read topic:public"],         "WRITE",    "topic", "public", DENY,
        "User:* grants only what it names"),
    Row("dave",  [],                                         "WRITE",    "topic", "orders", DENY,
        "a principal with no ACL"),
    Row("dave",  [],                                         "DESCRIBE", "topic", "orders", DENY,
        "a principal with no ACL"),
    Row("carol", ["allow All topic:ledger", "deny Write topic:ledger"],
                                                             "WRITE",    "topic", "ledger", DENY,
        "a DENY beats an ALLOW"),
    Row("carol", ["allow All topic:ledger", "deny Write topic:ledger"],
                                                             "DESCRIBE", "topic", "ledger", ALLOW,
        "the DENY names WRITE only"),
    Row("carol", ["allow All topic:ledger"],            "ALTER_CONFIGS", "topic", "ledger", ALLOW,
        "ALL covers ALTER_CONFIGS"),
    Row("carol", ["allow All topic:ledger"],         "DESCRIBE_CONFIGS", "topic", "ledger", ALLOW,
        "ALL covers DESCRIBE_CONFIGS"),
    Row("carol", ["allow All topic:ledger"],                 "READ",     "group", "ledger", DENY,
        "a topic's ALL is not its group's"),
    Row("carol", ["allow All topic:ledger"],                 "DESCRIBE", "group", "ledger", DENY,
        "a topic's ALL is not its group's"),
    Row("carol", ["allow All topic:ledger"],         "DESCRIBE_CONFIGS", "cluster", CLUSTER, DENY,
        "a topic's ALL is not the cluster's"),
    Row("carol", ["allow All topic:ledger"],            "ALTER_CONFIGS", "cluster", CLUSTER, DENY,
        "a topic's ALL is not the cluster's"),
    Row("erin",  ["allow Create cluster", "allow Write topic:erin-*"],
                                                             "CREATE",   "cluster", CLUSTER, ALLOW,
        "CREATE on the cluster creates any topic"),
    Row("alice", ["allow Write topic:tmp-*"],                "CREATE",   "cluster", CLUSTER, DENY,
        "no CREATE anywhere"),
    Row("root",  ["super.users"],                            "WRITE",    "topic", "ledger", ALLOW,
        "a super user (carol's DENY is hers)"),
    Row("root",  ["super.users"],                            "DELETE",   "topic", "scratch-{front}", ALLOW,
        "a super user"),
    Row("root",  ["super.users"],                    "DESCRIBE_CONFIGS", "cluster", CLUSTER, ALLOW,
        "a super user"),
]
# fmt: on

# The topics (and queues of the same name, one record each) the server starts with.
TOPICS = ("orders", "logs-app", "ledger", "public", "scratch-kafka", "scratch-sqs")
GROUPS = ("public", "ledger")  # groups with a committed offset, for DESCRIBE group


def resource_name(row, front):
    """The row's resource on `front`: a CREATE or DELETE needs a topic of its own per front."""
    return row.resource_name.format(front=front)


def created_topic(row, front):
    """The topic a CREATE row makes (a CREATE on the cluster makes one named after the
    principal, the prefix its WRITE grant names)."""
    if row.resource_type == "cluster":
        return f"{'erin' if row.principal == 'erin' else 'tmp'}-c-{front}"
    return resource_name(row, front)


# --- the server ----------------------------------------------------------------------------------
def password(user):
    return f"{user}-Secret-25"


def aws_key(user):
    return (f"AKIA{user.upper():0<16}"[:20], f"{user}/Secret+Key0123456789abcdefghijklmno")


def parse_grant(principal, grant):
    """`sluice acls add` flags of one grant."""
    if grant.startswith("User:* "):
        principal, grant = "User:*", grant[len("User:* "):]
    else:
        principal = "User:" + principal
    permission, operation, resource = grant.split()
    flags = [f"--{permission}-principal", principal, "--operation", operation]
    kind, _, name = resource.partition(":")
    if kind == "cluster":
        return flags + ["--cluster"]
    if name.endswith("*") and name != "*":
        return flags + [f"--{kind}", name[:-1], "--resource-pattern-type", "prefixed"]
    return flags + [f"--{kind}", name, "--resource-pattern-type", "literal"]


def all_grants():
    out = []
    for row in TABLE:
        for g in row.grants:
            if g != "super.users":
                flags = parse_grant(row.principal, g)
                if flags not in out:
                    out.append(flags)
    return out


@pytest.fixture(scope="module")
def server():
    d = tempfile.TemporaryDirectory(prefix="sluice-acl-table-")
    for user in USERS:
        r = users("set", user, "--data-dir", d.name, stdin=password(user) + "\n")
        assert r.returncode == 0, r.stderr
        key_id, secret = aws_key(user)
        r = users("set", user, "--data-dir", d.name, "--aws-access-key-id", key_id,
                  stdin=secret + "\n")
        assert r.returncode == 0, r.stderr
    for flags in all_grants():
        r = subprocess.run([sluice_binary(), "acls", "add", "--data-dir", d.name, *flags],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, (flags, r.stderr)
    s = Sluice(data_dir=d.name, sqs=True, args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
               settings={"authorizer.enabled": "true", "super.users": "User:root",
                         "http.authentication": "basic", "sqs.authentication": "sigv4"})
    s.start()
    line = s._find_line("listening:")
    s.sasl_port = int(line.split("kafka_sasl_plaintext=")[1].split()[0].rsplit(":", 1)[1])
    ctx = Fronts(s)
    try:
        root_sqs = ctx.sqs("root")
        for t in TOPICS:
            root_sqs.create_queue(QueueName=t)
            r = ctx.rest("root").post("/topics/" + t, json.dumps({"records": [{"value": t}]}),
                                      headers={"Content-Type": V2_JSON})
            assert r.status_code == 200, r.text
        for g in GROUPS:
            c = Consumer(ctx.kafka_config("root", **{"group.id": g,
                                                     "enable.auto.commit": False}))
            try:
                c.commit(offsets=[TopicPartition(g, 0, 1)], asynchronous=False)
            finally:
                c.close()
        yield ctx
    finally:
        s.close()
        d.cleanup()


class Fronts:
    """One sluice's fronts, with a client per user where a client can be kept."""

    def __init__(self, server):
        self.server = server
        self._sessions = {}
        self._sqs = {}
        self._producers = {}
        self._admins = {}
        self._cluster_id = None

    def kafka_config(self, user, **extra):
        cfg = {"bootstrap.servers": f"127.0.0.1:{self.server.sasl_port}",
               "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
               "sasl.username": user, "sasl.password": password(user)}
        cfg.update(extra)
        return cfg

    def producer(self, user):
        if user not in self._producers:
            self._producers[user] = Producer(self.kafka_config(
                user, **{"message.timeout.ms": 10000, "linger.ms": 0}))
        return self._producers[user]

    def admin(self, user):
        if user not in self._admins:
            self._admins[user] = AdminClient(self.kafka_config(user))
        return self._admins[user]

    def rest(self, user):
        if user not in self._sessions:
            s = requests.Session()
            s.headers["Authorization"] = basic(user)
            self._sessions[user] = s
        return RestSession(self.server.http_url, self._sessions[user])

    def sqs(self, user):
        if user not in self._sqs:
            key_id, secret = aws_key(user)
            self._sqs[user] = boto3.client(
                "sqs", endpoint_url=self.server.sqs_url, region_name=REGION,
                aws_access_key_id=key_id, aws_secret_access_key=secret,
                config=Config(retries={"max_attempts": 1}, read_timeout=20, connect_timeout=10))
        return self._sqs[user]

    def queue_url(self, name):
        return f"{self.server.sqs_url}/000000000000/{name}"

    def cluster_id(self):
        if self._cluster_id is None:
            r = self.rest("root").get("/v3/clusters")
            self._cluster_id = r.json()["data"][0]["cluster_id"]
        return self._cluster_id


class RestSession:
    def __init__(self, base, session):
        self.base, self.s = base, session

    def get(self, path, **kw):
        return self.s.get(self.base + path, timeout=20, **kw)

    def post(self, path, data=b"", **kw):
        return self.s.post(self.base + path, data=data, timeout=20, **kw)

    def delete(self, path, **kw):
        return self.s.delete(self.base + path, timeout=20, **kw)


def basic(user):
    return "Basic " + base64.b64encode(f"{user}:{password(user)}".encode()).decode()


# --- what a denial looks like on each front ------------------------------------------------------
def denial_text(row, front):
    """The words every text-bearing front's denial carries: the operation and resource the
    authorizer refused (a CREATE names the topic it would have made, as Kafka's CreateTopics
    answers TOPIC_AUTHORIZATION_FAILED even for the cluster's CREATE)."""
    if row.operation == "CREATE":
        return f"CREATE topic {created_topic(row, front)}."
    if row.resource_type == "cluster":
        return f"{row.operation} the cluster."
    return f"{row.operation} {row.resource_type} {resource_name(row, front)}."


def kafka_denial_code(row):
    if row.operation == "CREATE" or row.resource_type == "topic":
        return KafkaError.TOPIC_AUTHORIZATION_FAILED
    if row.resource_type == "group":
        return KafkaError.GROUP_AUTHORIZATION_FAILED
    return KafkaError.CLUSTER_AUTHORIZATION_FAILED


class Denied(Exception):
    """The front refused, in its own form; `text` is what it said."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text


def http_outcome(r, ok=(200,)):
    """REST and console: 403 with error_code 40301 is a denial; `ok` statuses pass."""
    if r.status_code == 403:
        body = r.json()
        assert body["error_code"] == 40301, r.text
        raise Denied(body["message"])
    assert r.status_code in ok, (r.status_code, r.text)


def kafka_error(e):
    """The KafkaError of a failed admin future or client call."""
    return e.args[0] if isinstance(e, KafkaException) else e


def sqs_outcome(call, ok_codes=()):
    try:
        call()
    except ClientError as e:
        code = e.response["Error"]["Code"]
        if code == "AccessDenied":
            raise Denied(e.response["Error"]["Message"]) from None
        assert code in ok_codes, (code, e.response["Error"]["Message"])


def ws_outcome(ctx, user, message, ok_op):
    with WsClient(ctx.server.http_port, headers=[f"Authorization: {basic(user)}"],
                  timeout=20) as c:
        c.send(message)
        while True:
            m = c.recv()
            if m.get("id") != message["id"]:
                continue  # records of an allowed subscription, ...
            if m["op"] == "error":
                assert m["code"] == 40301, m
                raise Denied(m["message"])
            assert m["op"] == ok_op, m
            return


# --- the fronts' actions: (operation, resource type) -> front -> action or why none ---------------
# An action takes (fronts, row, front) and returns when the front allowed it; it raises Denied
# when the front refused in its own form, and fails on anything else.

def kafka_produce(ctx, row, front):
    topic = resource_name(row, front)
    errors = []
    p = ctx.producer(row.principal)
    p.produce(topic, b"v", partition=0, on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(15) == 0
    if errors[0] is not None:
        assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors[0]
        raise Denied(errors[0].name())


def kafka_fetch(ctx, row, front):
    """Fetch by assignment (no group: READ topic only) until the first record or error."""
    topic = resource_name(row, front)
    c = Consumer(ctx.kafka_config(row.principal, **{"group.id": "unused-" + row.principal,
                                                    "enable.auto.commit": False}))
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is None:
                return
            if m.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                continue  # librdkafka looks for the unused group's coordinator: not the Fetch
            assert m.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, m.error()
            raise Denied(m.error().name())
        raise AssertionError("no record and no error within 15 s")
    finally:
        c.close()


def kafka_metadata(ctx, row, front):
    topic = resource_name(row, front)
    md = ctx.admin(row.principal).list_topics(topic=topic, timeout=10)
    err = md.topics[topic].error
    if err is not None:
        assert err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
        raise Denied(err.name())


def kafka_admin_result(futures, row):
    for f in futures.values():
        try:
            f.result(timeout=15)
        except KafkaException as e:
            err = kafka_error(e)
            assert err.code() == kafka_denial_code(row), err
            raise Denied(err.name()) from None


def kafka_create_topics(ctx, row, front):
    kafka_admin_result(ctx.admin(row.principal).create_topics(
        [NewTopic(created_topic(row, front), 1, 1)], request_timeout=15), row)


def kafka_delete_topics(ctx, row, front):
    kafka_admin_result(ctx.admin(row.principal).delete_topics(
        [resource_name(row, front)], request_timeout=15), row)


def kafka_describe_configs(ctx, row, front):
    kind = "broker" if row.resource_type == "cluster" else "topic"
    name = "0" if kind == "broker" else resource_name(row, front)
    kafka_admin_result(ctx.admin(row.principal).describe_configs(
        [ConfigResource(kind, name)], request_timeout=15), row)


def kafka_alter_configs(ctx, row, front):
    if row.resource_type == "cluster":
        res = ConfigResource("broker", "0", set_config={"log.retention.ms": "604800000"})
    else:
        res = ConfigResource("topic", resource_name(row, front),
                             set_config={"retention.ms": "604800000"})
    kafka_admin_result(ctx.admin(row.principal).alter_configs([res], request_timeout=15), row)


def group_consumer_outcome(ctx, row, front, act):
    """Runs act(consumer, outcome) with a consumer of group g. librdkafka reports the
    coordinator lookup's GROUP_AUTHORIZATION_FAILED (FindCoordinator needs DESCRIBE group) only
    as an error event, and a commit or committed() sent meanwhile waits for a coordinator (a
    commit then holds close() for 45 s): so `act` runs once 1.5 s passed without that event.
    `act` appends its result (None or a KafkaError) to `outcome`, or returns after polling."""
    outcome = []

    def on_commit(err, partitions):
        outcome.append(err if err is not None else partitions[0].error)

    c = Consumer(ctx.kafka_config(row.principal, **{
        "group.id": resource_name(row, front), "enable.auto.commit": False,
        "on_commit": on_commit}))
    try:
        for seconds, acting in ((1.5, False), (15, True)):
            if acting:
                act(c, outcome)
            deadline = time.monotonic() + seconds
            while not outcome and time.monotonic() < deadline:
                m = c.poll(0.05)
                if m is not None and m.error() is not None:
                    outcome.append(m.error())
            if outcome:
                break
        assert outcome, "no result within 15 s"
        if outcome[0] is not None:
            assert outcome[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED, outcome[0]
            raise Denied(outcome[0].name())
    finally:
        c.close()


def kafka_commit(ctx, row, front):
    """OffsetCommit as a simple (non-member) commit to group g, of topic g's partition 0."""
    group = resource_name(row, front)

    def commit(c, outcome):
        c.commit(offsets=[TopicPartition(group, 0, 1)], asynchronous=True)

    group_consumer_outcome(ctx, row, front, commit)


def kafka_committed(ctx, row, front):
    """OffsetFetch of group g, of topic g's partition 0 (Consumer.committed). librdkafka's
    DescribeGroups (AdminClient.list_groups) drops a group it may not describe from its answer
    instead of reporting the error, so it cannot show a denial."""
    group = resource_name(row, front)

    def committed(c, outcome):
        try:
            got = c.committed([TopicPartition(group, 0)], timeout=10)
            outcome.append(got[0].error)
        except KafkaException as e:
            outcome.append(kafka_error(e))

    group_consumer_outcome(ctx, row, front, committed)


def rest_v2_produce(ctx, row, front):
    topic = created_topic(row, front) if row.operation == "CREATE" else resource_name(row, front)
    http_outcome(ctx.rest(row.principal).post(
        "/topics/" + topic, json.dumps({"records": [{"value": 1}]}),
        headers={"Content-Type": V2_JSON}))


def rest_v2_consume(ctx, row, front):
    """A consumer instance of group t assigned partition 0 of topic t, reading it."""
    topic = resource_name(row, front)
    r = ctx.rest(row.principal)
    name = "i-" + uuid.uuid4().hex[:8]
    http_outcome(r.post(f"/consumers/{topic}", json.dumps(
        {"name": name, "format": "json", "auto.offset.reset": "earliest"}),
        headers={"Content-Type": V2}))
    base = f"/consumers/{topic}/instances/{name}"
    try:
        http_outcome(r.post(base + "/assignments", json.dumps(
            {"partitions": [{"topic": topic, "partition": 0}]}),
            headers={"Content-Type": V2}), ok=(204,))
        http_outcome(r.get(base + "/records?timeout=500", headers={"Accept": V2_JSON}))
    finally:
        r.delete(base, headers={"Content-Type": V2})


def rest_v2_topic(ctx, row, front):
    http_outcome(ctx.rest(row.principal).get("/topics/" + resource_name(row, front)))


def rest_v2_consumer_instance(ctx, row, front):
    group = resource_name(row, front)
    r = ctx.rest(row.principal)
    name = "i-" + uuid.uuid4().hex[:8]
    http_outcome(r.post(f"/consumers/{group}", json.dumps({"name": name, "format": "json"}),
                        headers={"Content-Type": V2}))
    r.delete(f"/consumers/{group}/instances/{name}", headers={"Content-Type": V2})


def rest_v3_produce(ctx, row, front):
    topic = created_topic(row, front) if row.operation == "CREATE" else resource_name(row, front)
    r = ctx.rest(row.principal).post(
        f"/v3/clusters/{ctx.cluster_id()}/topics/{topic}/records",
        json.dumps({"value": {"type": "JSON", "data": 1}}),
        headers={"Content-Type": "application/json"})
    http_outcome(r)
    assert r.json()["error_code"] == 200, r.text


def rest_v3_topic(ctx, row, front):
    http_outcome(ctx.rest(row.principal).get(
        f"/v3/clusters/{ctx.cluster_id()}/topics/{resource_name(row, front)}"))


def ws_produce(ctx, row, front):
    topic = created_topic(row, front) if row.operation == "CREATE" else resource_name(row, front)
    ws_outcome(ctx, row.principal, {"op": "produce", "id": "p", "topic": topic, "value": "x"},
               "ack")


def ws_subscribe(ctx, row, front):
    name = resource_name(row, front)
    message = {"op": "subscribe", "id": "s", "topics": [name], "from": "earliest"}
    if row.resource_type == "group":
        message["group"] = name
    ws_outcome(ctx, row.principal, message, "subscribed")


def sse_events(ctx, row, front):
    name = resource_name(row, front)
    path = f"/topics/{name}/events?from=earliest&limit=1"
    if row.resource_type == "group":
        path += "&group=" + name
    with ctx.rest(row.principal).s.get(ctx.server.http_url + path, stream=True,
                                       timeout=20) as r:
        http_outcome(r)
        assert r.headers["content-type"] == "text/event-stream"


def sqs_send(ctx, row, front):
    sqs_outcome(lambda: ctx.sqs(row.principal).send_message(
        QueueUrl=ctx.queue_url(resource_name(row, front)), MessageBody="m"))


def sqs_receive(ctx, row, front):
    sqs_outcome(lambda: ctx.sqs(row.principal).receive_message(
        QueueUrl=ctx.queue_url(resource_name(row, front)), WaitTimeSeconds=0,
        VisibilityTimeout=0))


def sqs_attributes(ctx, row, front):
    sqs_outcome(lambda: ctx.sqs(row.principal).get_queue_attributes(
        QueueUrl=ctx.queue_url(resource_name(row, front)), AttributeNames=["All"]))


def sqs_set_attributes(ctx, row, front):
    sqs_outcome(lambda: ctx.sqs(row.principal).set_queue_attributes(
        QueueUrl=ctx.queue_url(resource_name(row, front)),
        Attributes={"VisibilityTimeout": "30"}))


def sqs_create(ctx, row, front):
    sqs_outcome(lambda: ctx.sqs(row.principal).create_queue(
        QueueName=created_topic(row, front)))


def sqs_delete(ctx, row, front):
    sqs_outcome(lambda: ctx.sqs(row.principal).delete_queue(
        QueueUrl=ctx.queue_url(resource_name(row, front))))


def sqs_delete_message(ctx, row, front):
    """DeleteMessage needs READ on the queue's group only; a made-up receipt handle then
    answers ReceiptHandleIsInvalid, past the ACL."""
    sqs_outcome(lambda: ctx.sqs(row.principal).delete_message(
        QueueUrl=ctx.queue_url(resource_name(row, front)), ReceiptHandle="not-a-handle"),
        ok_codes=("ReceiptHandleIsInvalid",))


def console_queue(ctx, row, front):
    http_outcome(ctx.rest(row.principal).get("/v1/queues/" + resource_name(row, front)))


def console_group(ctx, row, front):
    http_outcome(ctx.rest(row.principal).get("/v1/groups/" + resource_name(row, front)))


NO_WRITE_SSE = "none: SSE only reads"
NO_V3_CONSUME = "none: REST v3 has no consumer"
NO_WS_ADMIN = "none: the WebSocket session only produces and subscribes"
NO_SSE_ADMIN = "none: SSE only streams a topic"
NO_CONSOLE_WRITE = "none: the console changes queues only by redrive (ALTER)"
NO_REST_ADMIN = "none: the REST Proxy has no route that needs it"

ACTIONS = {
    ("WRITE", "topic"): {
        "kafka": kafka_produce, "rest_v2": rest_v2_produce, "rest_v3": rest_v3_produce,
        "ws": ws_produce, "sse": NO_WRITE_SSE, "sqs": sqs_send, "console": NO_CONSOLE_WRITE},
    ("READ", "topic"): {
        "kafka": kafka_fetch, "rest_v2": rest_v2_consume, "rest_v3": NO_V3_CONSUME,
        "ws": ws_subscribe, "sse": sse_events, "sqs": sqs_receive,
        "console": "none: the console shows queues and groups, never records"},
    ("DESCRIBE", "topic"): {
        "kafka": kafka_metadata, "rest_v2": rest_v2_topic, "rest_v3": rest_v3_topic,
        "ws": NO_WS_ADMIN, "sse": NO_SSE_ADMIN, "sqs": sqs_attributes, "console": console_queue},
    ("DESCRIBE_CONFIGS", "topic"): {
        "kafka": kafka_describe_configs, "rest_v2": NO_REST_ADMIN,
        "rest_v3": "none: sluice's REST v3 has no configs routes", "ws": NO_WS_ADMIN,
        "sse": NO_SSE_ADMIN,
        "sqs": "none: GetQueueAttributes asks DESCRIBE (the queue's counts), not DESCRIBE_CONFIGS",
        "console": "none: GET /v1/queues/{q} asks DESCRIBE"},
    ("ALTER_CONFIGS", "topic"): {
        "kafka": kafka_alter_configs, "rest_v2": NO_REST_ADMIN,
        "rest_v3": "none: sluice's REST v3 has no configs routes", "ws": NO_WS_ADMIN,
        "sse": NO_SSE_ADMIN, "sqs": sqs_set_attributes,
        "console": "none: the console does not change queue attributes"},
    ("DELETE", "topic"): {
        "kafka": kafka_delete_topics, "rest_v2": NO_REST_ADMIN,
        "rest_v3": "none: sluice's REST v3 does not delete topics", "ws": NO_WS_ADMIN,
        "sse": NO_SSE_ADMIN, "sqs": sqs_delete, "console": "none: the console deletes nothing"},
    ("CREATE", "topic"): {
        "kafka": kafka_create_topics, "rest_v2": rest_v2_produce, "rest_v3": rest_v3_produce,
        "ws": ws_produce, "sse": "none: SSE never creates a topic", "sqs": sqs_create,
        "console": "none: the console creates nothing"},
    ("READ", "group"): {
        "kafka": kafka_commit, "rest_v2": rest_v2_consumer_instance, "rest_v3": NO_V3_CONSUME,
        "ws": ws_subscribe, "sse": sse_events, "sqs": sqs_delete_message,
        "console": "none: the console only describes groups"},
    ("DESCRIBE", "group"): {
        "kafka": kafka_committed,
        "rest_v2": "none: GET .../offsets needs a consumer instance, which READ group makes",
        "rest_v3": "none: sluice's REST v3 has no consumer-group routes", "ws": NO_WS_ADMIN,
        "sse": NO_SSE_ADMIN, "sqs": "none: a queue's group is never described alone",
        "console": console_group},
    ("DESCRIBE_CONFIGS", "cluster"): {
        "kafka": kafka_describe_configs, "rest_v2": NO_REST_ADMIN, "rest_v3": NO_REST_ADMIN,
        "ws": NO_WS_ADMIN, "sse": NO_SSE_ADMIN, "sqs": "none: SQS has no broker settings",
        "console": "none: the console shows no broker settings"},
    ("ALTER_CONFIGS", "cluster"): {
        "kafka": kafka_alter_configs, "rest_v2": NO_REST_ADMIN, "rest_v3": NO_REST_ADMIN,
        "ws": NO_WS_ADMIN, "sse": NO_SSE_ADMIN, "sqs": "none: SQS has no broker settings",
        "console": "none: the console changes no broker settings"},
}
# CREATE on the cluster is asked by the same actions as CREATE on a topic (Kafka's rule:
# CREATE on the cluster, else on the topic), with a topic name of the row's own.
ACTIONS[("CREATE", "cluster")] = dict(ACTIONS[("CREATE", "topic")])


def row_id(row, front):
    return f"{row.principal}-{row.operation}-{row.resource_type}:{resource_name(row, front)}-{front}"


def cases():
    for row in TABLE:
        for front in FRONTS:
            action = ACTIONS[(row.operation, row.resource_type)][front]
            marks = () if callable(action) else pytest.mark.skip(reason=action)
            yield pytest.param(row, front, id=row_id(row, front), marks=marks)


@pytest.mark.parametrize("row,front", list(cases()))
def test_acl_table(server, row, front):
    action = ACTIONS[(row.operation, row.resource_type)][front]
    try:
        action(server, row, front)
        got = ALLOW
    except Denied as d:
        got = DENY
        if front != "kafka":  # Kafka's denial is its error code, checked by the action
            assert denial_text(row, front) in d.text, (d.text, row.why)
    assert got == row.expected, f"{row.why}: {front} answered {got}"


def test_every_pair_has_an_action_or_a_reason():
    for row in TABLE:
        fronts = ACTIONS[(row.operation, row.resource_type)]
        assert set(fronts) == set(FRONTS), (row, sorted(fronts))
        for front, action in fronts.items():
            assert callable(action) or action.startswith("none: "), (row, front, action)
