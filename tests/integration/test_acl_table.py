"""The same ACL gives the same answer on every front (issue 25). One table, TABLE, of rows
(principal, ACLs granted, operation, resource type, resource name, expected answer) runs against
one sluice on each front, with the client a user of that front runs:

  kafka     confluent-kafka Producer, Consumer and AdminClient over SASL SCRAM-SHA-256
            (kafka-python's admin for the ACL APIs, which confluent-kafka 1.7 lacks)
  rest_v2   requests with HTTP Basic on the REST Proxy v2 routes; rest_v3: on the v3 routes
  ws        the WebSocket /ws (ws_support.WsClient) with Basic
  sse       GET /topics/{t}/events and its v3 twin with Basic (requests, streamed)
  sqs       Debian's boto3 (the Query protocol) with SigV4 keys
  sqs_json  the AWS JSON 1.0 protocol of the newer SDKs, signed by botocore's SigV4Auth
  console   the console's /v1 routes with Basic

Each test is one (row, front) pair, with an id such as `alice-WRITE-topic:orders-sqs`: the
front's action that needs the row's operation on the row's resource runs as the row's principal
and must give the row's answer: success, or a denial in the front's own form (Kafka's TOPIC /
GROUP / CLUSTER_AUTHORIZATION_FAILED, REST and the console 403 with error_code 40301, a
WebSocket error frame with code 40301, SSE 403 before the stream, SQS AccessDenied) that names
the row's operation and resource. Where an action has two routes (REST v2's produce, SSE's v2
and v3 streams), both run and must agree. A front with no action that needs that operation on
that resource type says why in ACTIONS, and its pairs are reported as skipped with that reason.

The table tests the decision on every front, not each front's list of actions
(test_acl_matrix.py, test_acls_sasl.py). Some actions need a second right besides the row's:
a REST v2 consumer and an SQS receive read topic t as the group t (a queue's group is named as
the queue), a Kafka commit to group g and the WebSocket and SSE group reads read topic g, a
produce of the HTTP fronts to a missing topic (auto-creation) also writes it. The row's grants
include that second right, so that the row's own resource decides. The server has the union of
every row's grants, added with `sluice acls add` before it starts; root is its super user.

Run: cd tests/integration && SLUICE_BIN=.../sluice /usr/bin/python3 -m pytest -q test_acl_table.py
(about 25 s; `-rs` lists the pairs that have no action, with the reason).
"""
import json
import time
import uuid
from collections import namedtuple

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ConfigResource, NewPartitions, NewTopic

from kafka import KafkaAdminClient
from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, ResourcePattern
from kafka.admin import ResourcePatternFilter, ResourceType as KPResourceType
from kafka.admin.acl_resource import ACLResourcePatternType
from kafka.errors import ClusterAuthorizationFailedError, NoError

from acl_table_support import (Denied, Fronts, http_outcome, kafka_denial, kafka_error,
                               password, same_answer, sqs_json_outcome, sqs_query_outcome,
                               start_server, ws_outcome)
from harness import upstream_rerun_mode
from rest_support import V2, V2_JSON

FRONTS = ("kafka", "rest_v2", "rest_v3", "ws", "sse", "sqs", "sqs_json", "console")
ALLOW, DENY = "allow", "deny"
CLUSTER = "kafka-cluster"  # the cluster resource's name, as in Kafka
USERS = ("alice", "bob", "carol", "dave", "erin", "root")
SUPER_USER = "root"

# A grant is "[User:* ]allow|deny OPERATION TYPE[:NAME][ from HOST]" (acl_table_support.
# grant_flags): the row's principal's unless it names User:*; NAME ending in `*` is a PREFIXED
# pattern, `*` alone the LITERAL wildcard; the host is `*` unless given (every client here
# comes from 127.0.0.1; HTTP requests claim 10.9.9.9 in X-Forwarded-For). `super.users` stands
# for root's place in that setting. A name with `{front}` is the front's own topic (a CREATE or
# DELETE changes it); a CREATE on the cluster creates the topic `<prefix of the row's WRITE
# grant>c-<front>`.
Row = namedtuple("Row", "principal grants operation resource_type resource_name expected why")

TABLE = [
    # Row(principal, ACLs granted (that decide the row),
    #     operation, resource type, resource name, expected, what the row shows)
    Row("alice", ["allow Write topic:orders"],
        "WRITE", "topic", "orders", ALLOW, "a literal ALLOW"),
    Row("alice", ["allow Write topic:orders", "allow Read group:orders"],
        "READ", "topic", "orders", DENY, "WRITE is not READ"),
    Row("alice", ["allow Write topic:orders"],
        "DESCRIBE", "topic", "orders", ALLOW, "WRITE implies DESCRIBE"),
    Row("alice", ["allow Write topic:orders"],
        "DESCRIBE_CONFIGS", "topic", "orders", DENY, "WRITE does not imply DESCRIBE_CONFIGS"),
    Row("alice", ["allow Write topic:orders"],
        "ALTER_CONFIGS", "topic", "orders", DENY, "no ALTER_CONFIGS granted"),
    Row("alice", ["allow Write topic:orders"],
        "DELETE", "topic", "orders", DENY, "no DELETE granted"),
    Row("alice", ["allow Read topic:logs-*", "allow Read group:logs-*"],
        "READ", "topic", "logs-app", ALLOW, "a PREFIXED pattern"),
    Row("alice", ["allow Read topic:logs-*", "allow Read group:logs-*"],
        "READ", "group", "logs-app", ALLOW, "a PREFIXED pattern on a group"),
    Row("alice", ["allow Write topic:tmp-*"],
        "CREATE", "topic", "tmp-{front}", DENY, "WRITE on a missing topic does not create it"),
    Row("alice", ["allow Read topic:vault",
                  "allow Read group:vault",
                  "User:* deny Read topic:vault"],
        "READ", "topic", "vault", DENY, "a DENY for User:* beats a user's own ALLOW"),
    Row("alice", ["allow Write topic:tmp-*"],
        "CREATE", "cluster", CLUSTER, DENY, "no CREATE anywhere"),
    Row("alice", ["allow Write topic:hosted from 127.0.0.1"],
        "WRITE", "topic", "hosted", ALLOW, "an ACL for the client's host"),
    Row("alice", ["allow Write topic:orders"],
        "ALTER", "topic", "orders", DENY, "no ALTER granted"),
    Row("bob", ["allow Describe topic:*"],
        "DESCRIBE", "topic", "ledger", ALLOW, "the `*` resource"),
    Row("bob", ["allow Describe topic:*"],
        "WRITE", "topic", "orders", DENY, "`*` grants only what it names"),
    Row("bob", ["allow Create topic:new-*", "allow Write topic:new-*"],
        "CREATE", "topic", "new-{front}", ALLOW, "CREATE on a PREFIXED topic pattern"),
    Row("bob", ["allow Write topic:hosted from 10.9.9.9"],
        "WRITE", "topic", "hosted", DENY,
        "an ACL for another host (the one HTTP requests name in X-Forwarded-For)"),
    Row("carol", ["allow All topic:ledger", "deny Write topic:ledger"],
        "WRITE", "topic", "ledger", DENY, "a DENY beats an ALLOW"),
    Row("carol", ["allow All topic:ledger", "deny Write topic:ledger"],
        "DESCRIBE", "topic", "ledger", ALLOW, "the DENY names WRITE only"),
    Row("carol", ["allow All topic:ledger"],
        "ALTER_CONFIGS", "topic", "ledger", ALLOW, "ALL covers ALTER_CONFIGS"),
    Row("carol", ["allow All topic:ledger"],
        "DESCRIBE_CONFIGS", "topic", "ledger", ALLOW, "ALL covers DESCRIBE_CONFIGS"),
    Row("carol", ["allow All topic:ledger"],
        "READ", "group", "ledger", DENY, "a topic's ALL is not its group's"),
    Row("carol", ["allow All topic:ledger"],
        "DESCRIBE", "group", "ledger", DENY, "a topic's ALL is not its group's"),
    Row("carol", ["allow All topic:ledger"],
        "DESCRIBE_CONFIGS", "cluster", CLUSTER, DENY, "a topic's ALL is not the cluster's"),
    Row("carol", ["allow All topic:ledger"],
        "ALTER_CONFIGS", "cluster", CLUSTER, DENY, "a topic's ALL is not the cluster's"),
    Row("carol", ["allow All topic:ledger"],
        "ALTER", "topic", "ledger", ALLOW, "ALL covers ALTER"),
    Row("dave", ["User:* allow Read topic:public", "User:* allow Read group:public",
                 "User:* allow Describe topic:dlq-all"],
        "READ", "topic", "public", ALLOW, "the User:* principal"),
    Row("dave", ["User:* allow Read topic:public", "User:* allow Read group:public"],
        "READ", "group", "public", ALLOW, "the User:* principal on a group"),
    Row("dave", ["User:* allow Read topic:public", "User:* allow Read group:public"],
        "DESCRIBE", "group", "public", ALLOW, "User:*'s READ implies DESCRIBE"),
    Row("dave", ["User:* allow Read topic:public"],
        "WRITE", "topic", "public", DENY, "User:* grants only what it names"),
    Row("dave", [],
        "WRITE", "topic", "orders", DENY, "a principal with no ACL"),
    Row("dave", [],
        "DESCRIBE", "topic", "orders", DENY, "a principal with no ACL"),
    Row("erin", ["allow Read group:orders"],
        "DESCRIBE", "topic", "orders", DENY, "a group's READ is not its topic's DESCRIBE"),
    Row("erin", ["allow Create cluster", "allow Write topic:erin-*"],
        "CREATE", "cluster", CLUSTER, ALLOW, "CREATE on the cluster creates any topic"),
    Row("root", ["super.users"],
        "WRITE", "topic", "ledger", ALLOW, "a super user (carol's DENY is hers)"),
    Row("root", ["super.users"],
        "DELETE", "topic", "scratch-{front}", ALLOW, "a super user"),
    Row("root", ["super.users"],
        "DESCRIBE_CONFIGS", "cluster", CLUSTER, ALLOW, "a super user"),
    Row("dave", [],
        "DESCRIBE", "cluster", CLUSTER, DENY, "a principal with no ACL lists no users or ACLs"),
    Row("bob", ["allow Describe cluster"],
        "DESCRIBE", "cluster", CLUSTER, ALLOW, "DESCRIBE on the cluster lists users and ACLs"),
    Row("bob", ["allow Describe cluster"],
        "ALTER", "cluster", CLUSTER, DENY, "DESCRIBE is not ALTER"),
    Row("erin", ["allow Alter cluster"],
        "ALTER", "cluster", CLUSTER, ALLOW, "ALTER on the cluster changes users and ACLs"),
    Row("erin", ["allow Alter cluster"],
        "DESCRIBE", "cluster", CLUSTER, ALLOW, "ALTER implies DESCRIBE"),
]

# The topics (queues of the same name, one record each) the server starts with, and the groups
# with a committed offset.
TOPICS = ("orders", "logs-app", "ledger", "public", "hosted", "vault", "scratch-kafka",
          "scratch-rest_v3", "scratch-sqs", "scratch-sqs_json")
GROUPS = ("public", "ledger")
# A dead-letter queue everyone may describe, named by the RedrivePolicy of these queues: which
# of them it shows as its sources is a DESCRIBE of each.
DEAD_LETTER = "dlq-all"
SOURCES = ("orders", "ledger")


def resource_name(row, front):
    return row.resource_name.format(front=front)


def created_topic(row, front):
    """The topic a CREATE row's action makes."""
    if row.resource_type != "cluster":
        return resource_name(row, front)
    prefixes = [g.split(":", 1)[1][:-1] for g in row.grants
                if g.startswith("allow Write topic:") and g.endswith("*")]
    assert len(prefixes) == 1, row
    return f"{prefixes[0]}c-{front}"


def target_topic(row, front):
    """The topic a produce writes: the row's, or the one a CREATE makes."""
    return created_topic(row, front) if row.operation == "CREATE" else resource_name(row, front)


def denial_text(row, front):
    """What every denial with words says: the refused operation and resource (a CREATE names
    the topic it would have made, as Kafka's CreateTopics answers TOPIC_AUTHORIZATION_FAILED
    also when it was the cluster's CREATE that was missing)."""
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


@pytest.fixture(scope="module")
def fronts():
    grants = [(row.principal, g) for row in TABLE for g in row.grants if g != "super.users"]
    server, data_dir = start_server(USERS, grants, SUPER_USER)
    ctx = Fronts(server)
    try:
        for t in TOPICS:
            ctx.sqs(SUPER_USER).create_queue(QueueName=t)
            r = ctx.rest(SUPER_USER).post("/topics/" + t, json.dumps({"records": [{"value": t}]}),
                                          headers={"Content-Type": V2_JSON})
            assert r.status_code == 200, r.text
        ctx.sqs(SUPER_USER).create_queue(QueueName=DEAD_LETTER)
        for t in SOURCES:
            ctx.sqs(SUPER_USER).set_queue_attributes(
                QueueUrl=ctx.queue_url(t), Attributes={"RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": f"arn:aws:sqs:us-east-1:000000000000:{DEAD_LETTER}",
                     "maxReceiveCount": "1000"})})
        for g in GROUPS:
            c = Consumer(ctx.kafka_config(SUPER_USER, **{"group.id": g,
                                                          "enable.auto.commit": False}))
            try:
                c.commit(offsets=[TopicPartition(g, 0, 1)], asynchronous=False)
            finally:
                c.close()
        yield ctx
    finally:
        ctx.close()
        server.close()
        data_dir.cleanup()


# --- the Kafka front ------------------------------------------------------------------------------
# An action takes (fronts, row, front), returns when the front allowed it, raises Denied when the
# front refused in its own form and fails on any other answer.

def kafka_produce(ctx, row, front):
    errors = []
    p = ctx.producer(row.principal)
    p.produce(resource_name(row, front), b"v", partition=0,
              on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(15) == 0
    kafka_denial(errors[0], KafkaError.TOPIC_AUTHORIZATION_FAILED)


def kafka_fetch(ctx, row, front):
    """Fetch by assignment (no group join, no commit) until the first record or error."""
    topic = resource_name(row, front)
    c = Consumer(ctx.kafka_config(row.principal, **{"group.id": "unused-" + row.principal,
                                                    "enable.auto.commit": False}))
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is None:
                continue
            if m.error() is None:
                return
            if m.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                continue  # librdkafka looks up the unused group's coordinator: not the Fetch
            kafka_denial(m.error(), KafkaError.TOPIC_AUTHORIZATION_FAILED)
            raise AssertionError(m.error())
        raise AssertionError("no record and no error within 15 s")
    finally:
        c.close()


def kafka_metadata(ctx, row, front):
    """Metadata naming the topic."""
    topic = resource_name(row, front)
    md = ctx.admin(row.principal).list_topics(topic=topic, timeout=10)
    kafka_denial(md.topics[topic].error, KafkaError.TOPIC_AUTHORIZATION_FAILED)


def kafka_admin_result(futures, row):
    for f in futures.values():
        try:
            f.result(timeout=15)
        except KafkaException as e:
            kafka_denial(kafka_error(e), kafka_denial_code(row))


def kafka_create_topics(ctx, row, front):
    kafka_admin_result(ctx.admin(row.principal).create_topics(
        [NewTopic(created_topic(row, front), 1, 1)], request_timeout=15), row)


def kafka_delete_topics(ctx, row, front):
    kafka_admin_result(ctx.admin(row.principal).delete_topics(
        [resource_name(row, front)], request_timeout=15), row)


def kafka_create_partitions(ctx, row, front):
    """CreatePartitions with validate_only: the topic keeps its one partition."""
    kafka_admin_result(ctx.admin(row.principal).create_partitions(
        [NewPartitions(resource_name(row, front), 2)], validate_only=True,
        request_timeout=15), row)


def kafka_describe_configs(ctx, row, front):
    res = (ConfigResource("broker", "0") if row.resource_type == "cluster"
           else ConfigResource("topic", resource_name(row, front)))
    kafka_admin_result(ctx.admin(row.principal).describe_configs([res], request_timeout=15), row)


def kafka_alter_configs(ctx, row, front):
    if row.resource_type == "cluster":
        res = ConfigResource("broker", "0", set_config={"log.retention.ms": "604800000"})
    else:
        res = ConfigResource("topic", resource_name(row, front),
                             set_config={"retention.ms": "604800000"})
    kafka_admin_result(ctx.admin(row.principal).alter_configs([res], request_timeout=15), row)


def kafka_python_admin(ctx, user):
    """kafka-python's admin (confluent-kafka 1.7 has no ACL calls) as `user`, SCRAM-SHA-256."""
    return KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{ctx.server.sasl_port}",
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                            sasl_plain_username=user, sasl_plain_password=password(user),
                            request_timeout_ms=15000)


def nobodys_acl(name):
    """A harmless ACL the ALTER actions create and delete: READ on a topic nobody uses."""
    return ACL(principal="User:nobody", host="*", operation=ACLOperation.READ,
               permission_type=ACLPermissionType.ALLOW,
               resource_pattern=ResourcePattern(KPResourceType.TOPIC, name))


def kafka_describe_acls(ctx, row, front):
    """DescribeAcls (DESCRIBE on the cluster)."""
    admin = kafka_python_admin(ctx, row.principal)
    try:
        admin.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                      permission_type=ACLPermissionType.ANY,
                                      resource_pattern=ResourcePatternFilter(
                                          KPResourceType.ANY, None, ACLResourcePatternType.ANY)))
    except ClusterAuthorizationFailedError as e:
        raise Denied([type(e).__name__])
    finally:
        admin.close()


def kafka_create_and_delete_acls(ctx, row, front):
    """CreateAcls, then DeleteAcls of that ACL (ALTER on the cluster, each)."""
    admin = kafka_python_admin(ctx, row.principal)
    acl = nobodys_acl(f"acl-table-{uuid.uuid4().hex[:8]}")

    def create():
        failed = admin.create_acls([acl])["failed"]
        if failed:
            assert failed[0][1] is ClusterAuthorizationFailedError, failed  # a class
            raise Denied([failed[0][1].__name__])

    def delete():
        (_, _, error), = admin.delete_acls([ACLFilter(
            principal=acl.principal, host="*", operation=acl.operation,
            permission_type=acl.permission_type, resource_pattern=acl.resource_pattern)])
        if error is not NoError:
            assert error is ClusterAuthorizationFailedError, error
            raise Denied([error.__name__])

    try:
        same_answer(create, delete)
    finally:
        admin.close()


def group_consumer_outcome(ctx, row, front, act,
                           code=KafkaError.GROUP_AUTHORIZATION_FAILED):
    """Runs act(consumer, outcome) with a consumer of group g. librdkafka reports the
    coordinator lookup's GROUP_AUTHORIZATION_FAILED (FindCoordinator needs DESCRIBE group) only
    as an error event, and a commit or committed() sent meanwhile waits for a coordinator (a
    commit then holds close() for 45 s): so `act` runs once 1.5 s passed without that event.
    `act` (or the commit callback) appends its result, None or a KafkaError, to `outcome`;
    a group's denial is GROUP_AUTHORIZATION_FAILED, a partition's `code`."""
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
        assert outcome, "no answer within 15 s"
        if outcome[0] is not None and outcome[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
            raise Denied([outcome[0].name()])
        kafka_denial(outcome[0], code)
    finally:
        c.close()


def kafka_commit(ctx, row, front):
    """OffsetCommit as a simple (non-member) commit to group g of topic g's partition 0: READ
    group g and READ topic g (a topic row: the row's topic and its group of the same name)."""
    name = resource_name(row, front)

    def commit(c, outcome):
        c.commit(offsets=[TopicPartition(name, 0, 1)], asynchronous=True)

    group_consumer_outcome(ctx, row, front, commit, KafkaError.TOPIC_AUTHORIZATION_FAILED)


def kafka_fetch_and_commit(ctx, row, front):
    """A consumer's two reads of topic t: Fetch, and committing its offset (as group t)."""
    same_answer(lambda: kafka_fetch(ctx, row, front), lambda: kafka_commit(ctx, row, front))


def kafka_committed(ctx, row, front):
    """OffsetFetch of group g for topic g's partition 0 (Consumer.committed). librdkafka's
    DescribeGroups (AdminClient.list_groups) leaves a group it may not describe out of its
    answer instead of reporting the error, so it cannot show a denial."""
    group = resource_name(row, front)

    def committed(c, outcome):
        try:
            outcome.append(c.committed([TopicPartition(group, 0)], timeout=10)[0].error)
        except KafkaException as e:
            outcome.append(kafka_error(e))

    group_consumer_outcome(ctx, row, front, committed)


# --- REST Proxy v2 and v3 -------------------------------------------------------------------------
def rest_v2_produce(ctx, row, front):
    """POST /topics/{t}, and POST /topics/{t}/partitions/0 (a CREATE: the first only)."""
    r = ctx.rest(row.principal)
    topic = target_topic(row, front)
    body = json.dumps({"records": [{"value": 1}]})
    headers = {"Content-Type": V2_JSON}
    calls = [lambda: http_outcome(r.post("/topics/" + topic, body, headers=headers))]
    if row.operation != "CREATE":
        calls.append(lambda: http_outcome(r.post(f"/topics/{topic}/partitions/0", body,
                                                 headers=headers)))
    same_answer(*calls)


def rest_v2_consume(ctx, row, front):
    """A consumer instance of group t assigned partition 0 of topic t: reading its records and
    committing an offset of t, the REST Proxy's two reads of a topic (each a Fetch and an
    OffsetCommit with READ topic on the Kafka front), must agree."""
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
        same_answer(
            lambda: http_outcome(r.get(base + "/records?timeout=500",
                                       headers={"Accept": V2_JSON})),
            lambda: http_outcome(r.post(base + "/offsets", json.dumps(
                {"offsets": [{"topic": topic, "partition": 0, "offset": 0}]}),
                headers={"Content-Type": V2})))
    finally:
        r.delete(base, headers={"Content-Type": V2})


def rest_v2_topic(ctx, row, front):
    """GET /topics/{t} and .../partitions; when the principal may be a consumer of group t
    (READ group t), also that consumer's committed offset of t (GET .../offsets, an
    OffsetFetch: DESCRIBE topic t on the Kafka front)."""
    r = ctx.rest(row.principal)
    topic = resource_name(row, front)
    calls = [lambda: http_outcome(r.get("/topics/" + topic)),
             lambda: http_outcome(r.get(f"/topics/{topic}/partitions"))]
    name = "i-" + uuid.uuid4().hex[:8]
    made = r.post(f"/consumers/{topic}", json.dumps({"name": name, "format": "json"}),
                  headers={"Content-Type": V2})
    base = f"/consumers/{topic}/instances/{name}"
    if made.status_code == 200:
        calls.append(lambda: http_outcome(r.get(base + "/offsets", data=json.dumps(
            {"partitions": [{"topic": topic, "partition": 0}]}),
            headers={"Content-Type": V2})))
    else:
        assert made.status_code == 403, made.text
    try:
        same_answer(*calls)
    finally:
        if made.status_code == 200:
            r.delete(base, headers={"Content-Type": V2})


def rest_v2_consumer_instance(ctx, row, front):
    """POST /consumers/{g}: a consumer instance of group g (deleted again)."""
    group = resource_name(row, front)
    r = ctx.rest(row.principal)
    name = "i-" + uuid.uuid4().hex[:8]
    http_outcome(r.post(f"/consumers/{group}", json.dumps({"name": name, "format": "json"}),
                        headers={"Content-Type": V2}))
    r.delete(f"/consumers/{group}/instances/{name}", headers={"Content-Type": V2})


def rest_v3_produce(ctx, row, front):
    r = ctx.rest(row.principal).post(
        f"/v3/clusters/{ctx.cluster_id()}/topics/{target_topic(row, front)}/records",
        json.dumps({"value": {"type": "JSON", "data": 1}}),
        headers={"Content-Type": "application/json"})
    http_outcome(r)
    assert r.json()["error_code"] == 200, r.text


def rest_v3_topic(ctx, row, front):
    r = ctx.rest(row.principal)
    base = f"/v3/clusters/{ctx.cluster_id()}/topics/{resource_name(row, front)}"
    same_answer(lambda: http_outcome(r.get(base)),
                lambda: http_outcome(r.get(base + "/partitions")))


def rest_v3_delete_topic(ctx, row, front):
    """DELETE .../topics/{t} (Kafka's DeleteTopics)."""
    r = ctx.rest(row.principal)
    http_outcome(r.delete(f"/v3/clusters/{ctx.cluster_id()}/topics/{resource_name(row, front)}"),
                 ok=(204,))


def rest_v3_grow_topic(ctx, row, front):
    """PATCH .../topics/{t} to one partition, what it has (CreatePartitions' ALTER; the backend
    then refuses a count that is no increase: 400 past the ACL)."""
    r = ctx.rest(row.principal)
    http_outcome(r.s.patch(r.base + f"/v3/clusters/{ctx.cluster_id()}/topics/"
                           f"{resource_name(row, front)}", json={"partitions_count": 1},
                           timeout=20), ok=(400,))


def rest_v3_topic_configs(ctx, row, front):
    """GET .../topics/{t}/configs, .../configs/retention.ms and .../default-configs."""
    r = ctx.rest(row.principal)
    topic = f"/v3/clusters/{ctx.cluster_id()}/topics/{resource_name(row, front)}"
    same_answer(lambda: http_outcome(r.get(topic + "/configs")),
                lambda: http_outcome(r.get(topic + "/configs/retention.ms")),
                lambda: http_outcome(r.get(topic + "/default-configs")))


def rest_v3_alter_topic_configs(ctx, row, front):
    """POST .../configs:alter (validate only) and PUT .../configs/retention.ms."""
    r = ctx.rest(row.principal)
    base = f"/v3/clusters/{ctx.cluster_id()}/topics/{resource_name(row, front)}/configs"
    same_answer(
        lambda: http_outcome(r.post(base + ":alter", json.dumps(
            {"data": [{"name": "retention.ms", "value": "604800000"}], "validate_only": True}),
            headers={"Content-Type": "application/json"}), ok=(204,)),
        lambda: http_outcome(r.s.put(r.base + base + "/retention.ms",
                                     json={"value": "604800000"}, timeout=20),
                             ok=(204,)))


def rest_v3_group(ctx, row, front):
    """GET .../consumer-groups/{g} and its lags: the group exists once its committed offset
    does, so an allowed caller gets 200 or, for a group never used, 404 past the ACL."""
    r = ctx.rest(row.principal)
    base = f"/v3/clusters/{ctx.cluster_id()}/consumer-groups/{resource_name(row, front)}"
    same_answer(lambda: http_outcome(r.get(base), ok=(200, 404)),
                lambda: http_outcome(r.get(base + "/lags"), ok=(200, 404)))


def rest_v3_acls(ctx, row, front):
    http_outcome(ctx.rest(row.principal).get(f"/v3/clusters/{ctx.cluster_id()}/acls"))


def rest_v3_create_and_delete_acl(ctx, row, front):
    """POST .../acls, then DELETE .../acls with that ACL as the filter."""
    r = ctx.rest(row.principal)
    acl = {"resource_type": "TOPIC", "resource_name": f"acl-table-{uuid.uuid4().hex[:8]}",
           "pattern_type": "LITERAL", "principal": "User:nobody", "host": "*",
           "operation": "READ", "permission": "ALLOW"}
    url = f"/v3/clusters/{ctx.cluster_id()}/acls"
    same_answer(lambda: http_outcome(r.post(url, json.dumps(acl), headers={
                    "Content-Type": "application/json"}), ok=(201,)),
                lambda: http_outcome(r.delete(url, params=acl)))


def rest_v3_broker_configs(ctx, row, front):
    r = ctx.rest(row.principal)
    http_outcome(r.get(f"/v3/clusters/{ctx.cluster_id()}/brokers/0/configs"))


# --- WebSocket and SSE ----------------------------------------------------------------------------
def ws_produce(ctx, row, front):
    ws_outcome(ctx, row.principal,
               {"op": "produce", "id": "p", "topic": target_topic(row, front), "value": "x"},
               "ack")


def ws_subscribe(ctx, row, front):
    """Subscribes to topic t; a group row subscribes to topic g as group g."""
    name = resource_name(row, front)
    message = {"op": "subscribe", "id": "s", "topics": [name], "from": "earliest"}
    if row.resource_type == "group":
        message["group"] = name
    ws_outcome(ctx, row.principal, message, "subscribed")


def sse_events(ctx, row, front):
    """Both SSE routes: /topics/{t}/events and /v3/clusters/{c}/topics/{t}/events."""
    name = resource_name(row, front)
    query = "?from=earliest&limit=1" + ("&group=" + name if row.resource_type == "group" else "")
    session = ctx.rest(row.principal).s

    def stream(path):
        with session.get(ctx.server.http_url + path + query, stream=True, timeout=20) as r:
            http_outcome(r)
            assert r.headers["content-type"] == "text/event-stream"

    same_answer(lambda: stream(f"/topics/{name}/events"),
                lambda: stream(f"/v3/clusters/{ctx.cluster_id()}/topics/{name}/events"))


# --- SQS: each action once per protocol -----------------------------------------------------------
def sqs_action(action, queue_param, ok_codes=(), **params):
    """An SQS action on the row's queue (`queue_param` "QueueUrl" or "QueueName"; a CREATE's
    queue is the topic it makes), through boto3 (front sqs) or the JSON protocol (sqs_json).
    `ok_codes`: the handler's errors that come only past the ACL. `{front}` in a string
    parameter becomes the front's name."""
    def run(ctx, row, front):
        name = created_topic(row, front) if row.operation == "CREATE" else resource_name(row,
                                                                                         front)
        args = {k: v.format(front=front) if isinstance(v, str) else v
                for k, v in params.items()}
        args.update({queue_param: name if queue_param == "QueueName"
                     else ctx.queue_url(name)})
        if front == "sqs":
            method = "".join("_" + ch.lower() if ch.isupper() else ch for ch in action)[1:]
            sqs_query_outcome(lambda: getattr(ctx.sqs(row.principal), method)(**args), ok_codes)
        else:
            sqs_json_outcome(ctx.sqs_json(row.principal, action, args), ok_codes)
    run.__name__ = "sqs_" + action
    return run


sqs_send = sqs_action("SendMessage", "QueueUrl", MessageBody="m")
sqs_receive = sqs_action("ReceiveMessage", "QueueUrl", WaitTimeSeconds=0, VisibilityTimeout=0)
sqs_attributes = sqs_action("GetQueueAttributes", "QueueUrl", AttributeNames=["All"])
sqs_set_attributes = sqs_action("SetQueueAttributes", "QueueUrl",
                                Attributes={"VisibilityTimeout": "30"})
sqs_create = sqs_action("CreateQueue", "QueueName")
sqs_delete = sqs_action("DeleteQueue", "QueueUrl")
sqs_add_permission = sqs_action("AddPermission", "QueueUrl", Label="table-{front}",
                                AWSAccountIds=["000000000000"], Actions=["SendMessage"])
# DeleteMessage needs READ on the queue's group only; a made-up receipt handle then answers
# ReceiptHandleIsInvalid, past the ACL.
sqs_delete_message = sqs_action("DeleteMessage", "QueueUrl", ok_codes=("ReceiptHandleIsInvalid",),
                                ReceiptHandle="not-a-handle")


# --- the console ----------------------------------------------------------------------------------
def listed_as_source(names, queue):
    """A listing of a dead-letter queue's sources: the queue absent is that listing's denial."""
    if queue not in names:
        raise Denied([f"{queue} not among the sources (Not authorized to DESCRIBE topic {queue}.)"])


def sqs_describe(ctx, row, front):
    """GetQueueAttributes of q; for a queue that sends to DEAD_LETTER, also whether
    ListDeadLetterSourceQueues of DEAD_LETTER names it (as ListQueues, only to who may
    DESCRIBE it)."""
    queue = resource_name(row, front)
    calls = [lambda: sqs_attributes(ctx, row, front)]
    if queue in SOURCES:
        def sources():
            if front == "sqs":
                # An empty list has no member in the Query protocol's XML: boto3 then
                # leaves the key out.
                urls = ctx.sqs(row.principal).list_dead_letter_source_queues(
                    QueueUrl=ctx.queue_url(DEAD_LETTER)).get("queueUrls", [])
            else:
                r = ctx.sqs_json(row.principal, "ListDeadLetterSourceQueues",
                                 {"QueueUrl": ctx.queue_url(DEAD_LETTER)})
                assert r.status_code == 200, r.text
                urls = r.json()["queueUrls"]
            listed_as_source([u.rsplit("/", 1)[1] for u in urls], queue)
        calls.append(sources)
    same_answer(*calls)


def console_queue(ctx, row, front):
    """GET /v1/queues/{q}; for a queue that sends to DEAD_LETTER, also whether DEAD_LETTER's
    view names it among its dead_letter_sources."""
    r = ctx.rest(row.principal)
    queue = resource_name(row, front)
    calls = [lambda: http_outcome(r.get("/v1/queues/" + queue))]
    if queue in SOURCES:
        def sources():
            view = r.get("/v1/queues/" + DEAD_LETTER)
            assert view.status_code == 200, view.text
            listed_as_source(view.json()["dead_letter_sources"], queue)
        calls.append(sources)
    same_answer(*calls)


def console_group(ctx, row, front):
    http_outcome(ctx.rest(row.principal).get("/v1/groups/" + resource_name(row, front)))


def console_redrive(ctx, row, front):
    """A redrive of queue q without a destination: ALTER q, and WRITE on the queues whose
    RedrivePolicy names q (none here), so the handler answers that q is no dead-letter queue."""
    r = ctx.rest(row.principal).post(f"/v1/queues/{resource_name(row, front)}/redrive", "{}",
                                     headers={"Content-Type": "application/json"})
    http_outcome(r, ok=(400,))
    assert "not a dead-letter queue" in r.json()["message"], r.text


def console_users(ctx, row, front):
    """The users and the partition sizes (DescribeLogDirs): DESCRIBE on the cluster each; over
    a gateway also the ACLs it enforces."""
    r = ctx.rest(row.principal)
    calls = [lambda: http_outcome(r.get("/v1/console/users")),
             lambda: http_outcome(r.get("/v1/console/partition-sizes"))]
    if upstream_rerun_mode():
        calls.append(lambda: http_outcome(r.get("/v1/console/gateway-acls")))
    same_answer(*calls)


def console_change_users(ctx, row, front):
    """A user created, given a new password and deleted (POST, PUT, DELETE /v1/console/users):
    ALTER on the cluster each, as Kafka's AlterUserScramCredentials; over a gateway also an
    ACL of the gateway's own added and removed (POST, DELETE /v1/console/gateway-acls)."""
    r = ctx.rest(row.principal)
    name = f"u-{uuid.uuid4().hex[:8]}"
    headers = {"Content-Type": "application/json"}
    calls = [
        lambda: http_outcome(r.post("/v1/console/users", json.dumps(
            {"name": name, "password": "first-Secret-1"}), headers=headers), ok=(201,)),
        lambda: http_outcome(r.put("/v1/console/users/" + name, json.dumps(
            {"password": "second-Secret-2"}), headers=headers)),
        lambda: http_outcome(r.delete("/v1/console/users/" + name, headers=headers),
                             ok=(204,))]
    if upstream_rerun_mode():
        acl = {"resource_type": "TOPIC", "resource_name": name, "pattern_type": "LITERAL",
               "principal": "User:" + name, "host": "*", "operation": "READ",
               "permission": "ALLOW"}
        query = "&".join(f"{k}={v}" for k, v in acl.items())
        calls += [
            lambda: http_outcome(r.post("/v1/console/gateway-acls", json.dumps(acl),
                                        headers=headers), ok=(201,)),
            lambda: http_outcome(r.delete("/v1/console/gateway-acls?" + query, data="{}",
                                          headers=headers))]
    same_answer(*calls)


# --- which action of each front asks what ---------------------------------------------------------
def no(reason):
    return "no action: " + reason


SSE_ONLY_READS = no("SSE only streams a topic")
WS_ONLY_STREAMS = no("the WebSocket session only produces and subscribes")
REST_NONE = no("no REST Proxy route needs it")
SQS_NO_BROKER = no("SQS has no broker settings")


def sqs_both(action):
    return {"sqs": action, "sqs_json": action}


def sqs_neither(reason):
    return {"sqs": no(reason), "sqs_json": no(reason)}


ACTIONS = {
    ("WRITE", "topic"): {
        "kafka": kafka_produce, "rest_v2": rest_v2_produce, "rest_v3": rest_v3_produce,
        "ws": ws_produce, "sse": SSE_ONLY_READS, **sqs_both(sqs_send),
        "console": no("the console writes only by a redrive (ALTER)")},
    ("READ", "topic"): {
        "kafka": kafka_fetch_and_commit, "rest_v2": rest_v2_consume,
        "rest_v3": no("sluice's REST v3 has no consumer"), "ws": ws_subscribe,
        "sse": sse_events, **sqs_both(sqs_receive),
        "console": no("the console shows queues and groups, never records")},
    ("DESCRIBE", "topic"): {
        "kafka": kafka_metadata, "rest_v2": rest_v2_topic, "rest_v3": rest_v3_topic,
        "ws": WS_ONLY_STREAMS, "sse": SSE_ONLY_READS, **sqs_both(sqs_describe),
        "console": console_queue},
    ("ALTER", "topic"): {
        "kafka": kafka_create_partitions, "rest_v2": REST_NONE, "rest_v3": rest_v3_grow_topic,
        "ws": WS_ONLY_STREAMS, "sse": SSE_ONLY_READS, **sqs_both(sqs_add_permission),
        "console": console_redrive},
    ("DESCRIBE_CONFIGS", "topic"): {
        "kafka": kafka_describe_configs, "rest_v2": REST_NONE,
        "rest_v3": rest_v3_topic_configs, "ws": WS_ONLY_STREAMS,
        "sse": SSE_ONLY_READS,
        **sqs_neither("GetQueueAttributes (the queue's settings and counts) asks DESCRIBE"),
        "console": no("GET /v1/queues/{q} (settings and counts) asks DESCRIBE")},
    ("ALTER_CONFIGS", "topic"): {
        "kafka": kafka_alter_configs, "rest_v2": REST_NONE,
        "rest_v3": rest_v3_alter_topic_configs, "ws": WS_ONLY_STREAMS,
        "sse": SSE_ONLY_READS, **sqs_both(sqs_set_attributes),
        "console": no("the console changes no queue attributes")},
    ("DELETE", "topic"): {
        "kafka": kafka_delete_topics, "rest_v2": REST_NONE,
        "rest_v3": rest_v3_delete_topic, "ws": WS_ONLY_STREAMS,
        "sse": SSE_ONLY_READS, **sqs_both(sqs_delete),
        "console": no("the console's purge (DELETE topic q) empties a queue: its refusal "
                      "is checked in test_console_auth, not on the table's queues")},
    ("CREATE", "topic"): {
        "kafka": kafka_create_topics, "rest_v2": rest_v2_produce, "rest_v3": rest_v3_produce,
        "ws": ws_produce, "sse": no("SSE never creates a topic"), **sqs_both(sqs_create),
        "console": no("the console creates nothing")},
    ("READ", "group"): {
        "kafka": kafka_commit, "rest_v2": rest_v2_consumer_instance,
        "rest_v3": no("sluice's REST v3 has no consumer"), "ws": ws_subscribe,
        "sse": sse_events, **sqs_both(sqs_delete_message),
        "console": no("the console's offset reset (READ group g) is checked in "
                      "test_console_auth")},
    ("DESCRIBE", "group"): {
        "kafka": kafka_committed,
        "rest_v2": no("GET .../offsets needs a consumer instance, which READ group makes"),
        "rest_v3": rest_v3_group, "ws": WS_ONLY_STREAMS,
        "sse": SSE_ONLY_READS, **sqs_neither("no action describes a queue's group alone"),
        "console": console_group},
    ("DESCRIBE_CONFIGS", "cluster"): {
        "kafka": kafka_describe_configs, "rest_v2": REST_NONE, "rest_v3": rest_v3_broker_configs,
        "ws": WS_ONLY_STREAMS, "sse": SSE_ONLY_READS, **sqs_neither("SQS has no broker settings"),
        "console": no("the console shows no broker settings")},
    ("ALTER_CONFIGS", "cluster"): {
        "kafka": kafka_alter_configs, "rest_v2": REST_NONE, "rest_v3": REST_NONE,
        "ws": WS_ONLY_STREAMS, "sse": SSE_ONLY_READS, **sqs_neither("SQS has no broker settings"),
        "console": no("the console changes no broker settings")},
    ("DESCRIBE", "cluster"): {
        "kafka": kafka_describe_acls, "rest_v2": REST_NONE, "rest_v3": rest_v3_acls,
        "ws": WS_ONLY_STREAMS, "sse": SSE_ONLY_READS,
        **sqs_neither("SQS has no users or ACLs to list"), "console": console_users},
    ("ALTER", "cluster"): {
        "kafka": kafka_create_and_delete_acls, "rest_v2": REST_NONE,
        "rest_v3": rest_v3_create_and_delete_acl, "ws": WS_ONLY_STREAMS, "sse": SSE_ONLY_READS,
        **sqs_neither("SQS changes no users or ACLs"), "console": console_change_users},
}
# CREATE on the cluster is asked by the actions that create a topic (Kafka's rule: CREATE on the
# cluster, else CREATE on the topic).
ACTIONS[("CREATE", "cluster")] = dict(ACTIONS[("CREATE", "topic")])


# Pairs where a front disagrees with the others today, each with the bug: they must fail (strict),
# so that the fix removes them from here.
KNOWN_DISAGREEMENTS = {}  # (case id: why), for a disagreement found and not yet fixed


def cases():
    for row in TABLE:
        for front in FRONTS:
            action = ACTIONS[(row.operation, row.resource_type)][front]
            name = f"{row.resource_type}:{resource_name(row, front)}"
            case = f"{row.principal}-{row.operation}-{name}-{front}"
            marks = () if callable(action) else pytest.mark.skip(reason=action)
            if case in KNOWN_DISAGREEMENTS:
                marks = pytest.mark.xfail(strict=True, reason=KNOWN_DISAGREEMENTS[case])
            if upstream_rerun_mode() and action in (console_queue, console_redrive):
                marks = pytest.mark.skip(reason="upstream mode: the gateway serves no queues "
                                         "(SQS over a cluster is issue 28)")
            if upstream_rerun_mode() and action in (kafka_describe_acls,
                                                    kafka_create_and_delete_acls):
                marks = pytest.mark.skip(reason="upstream mode: with the authorizer on the "
                                         "proxy offers no ACL APIs (gateway/proxy/"
                                         "request_acls.h names no resources in them)")
            yield pytest.param(row, front, marks=marks, id=case)


@pytest.mark.parametrize("row,front", list(cases()))
def test_acl_table(fronts, row, front):
    action = ACTIONS[(row.operation, row.resource_type)][front]
    try:
        action(fronts, row, front)
        got = ALLOW
    except Denied as d:
        got = DENY
        if front != "kafka":  # Kafka's denial is an error code, checked by the action
            for text in d.texts:
                assert denial_text(row, front) in text, (text, row.why)
    assert got == row.expected, f"{row.why}: {front} answered {got}, the table says {row.expected}"


def test_every_pair_has_an_action_or_a_reason():
    ids = {p.id for p in cases()}
    assert set(KNOWN_DISAGREEMENTS) <= ids, set(KNOWN_DISAGREEMENTS) - ids
    for key, fronts in ACTIONS.items():
        assert set(fronts) == set(FRONTS), (key, sorted(fronts))
        for front, action in fronts.items():
            assert callable(action) or action.startswith("no action: "), (key, front, action)
    for row in TABLE:
        assert (row.operation, row.resource_type) in ACTIONS, row
        assert row.principal in USERS, row
