"""Users, ACLs, quotas and AWS keys shared by a fleet of upstream-mode gateways: they live in
the compacted topic _sluice_security of the cluster, `sluice users|acls|quotas ... --upstream`
edit it, and every gateway tails it. A native sluice plays the cluster; two gateways (HTTP basic
authentication and the authorizer on; the first also serves SQS with SigV4) run for the whole
file. A user added through the command logs in through both (and with SCRAM through a third
gateway's Kafka proxy); an ACL granted and revoked applies
on both within a bounded wait; a gateway started later, or restarted after kill -9, has the same
state as soon as it is ready (plus its data dir's own entries, which apply to it alone)."""
import base64
import json
import subprocess
import time
import uuid

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness import sluice_binary, wait_for
from rest_support import V2, V2_JSON
from upstream_support import (Gateway, NativeUpstream, kcat_produce, proxy_kafka_args,
                              unreachable_bootstrap, wait_ready)

SETTINGS = {"http.authentication": "basic", "authorizer.enabled": "true",
            "super.users": "User:sqs-admin"}
APPLIED_WITHIN = 10  # seconds: the bound of every wait for a change to reach a gateway
TOPIC = "shared-acl-topic"


def command(kind, *args, bootstrap, stdin=None, timeout=60):
    """`sluice KIND ARGS... --upstream BOOTSTRAP`: the CompletedProcess."""
    return subprocess.run([sluice_binary(), kind] + list(args) + ["--upstream", bootstrap],
                          input=stdin, capture_output=True, text=True, timeout=timeout)


def ok(r):
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.fixture(scope="module")
def fleet():
    up = NativeUpstream().start()
    gateways = []
    try:
        admin = AdminClient({"bootstrap.servers": up.bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)
        first = Gateway(up.bootstrap, settings=dict(SETTINGS, **{"sqs.authentication": "sigv4"}),
                        args=["--sqs", "127.0.0.1:0"])
        gateways.append(first)
        first.start(timeout=60)
        second = Gateway(up.bootstrap, settings=SETTINGS)
        gateways.append(second)
        second.start(timeout=60)
        for gw in gateways:
            wait_ready(gw, timeout=60)
        yield up, gateways
    finally:
        for gw in gateways:
            gw.close()
        up.close()


def basic(user, password):
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def topics_status(gw, user, password):
    return requests.get(gw.http_url + "/topics", headers=basic(user, password),
                        timeout=30).status_code


def produce_status(gw, user, password, topic=TOPIC):
    body = {"records": [{"value": {"n": 1}}]}
    r = requests.post(f"{gw.http_url}/topics/{topic}", data=json.dumps(body), timeout=30,
                      headers=dict(basic(user, password), **{"Content-Type": V2_JSON,
                                                             "Accept": V2}))
    return r.status_code


def wait_status(gateways, probe, want, what):
    """Waits (bounded) until probe(gw) == want on every gateway; returns the seconds taken."""
    began = time.monotonic()
    for gw in gateways:
        wait_for(lambda: probe(gw) == want, APPLIED_WITHIN, f"{what} on {gw.http_url}",
                 interval=0.05)
    return time.monotonic() - began


def security_records(bootstrap):
    """Every (key, value) of _sluice_security, read straight from the cluster."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "shared-security-reader",
                  "enable.auto.commit": False})
    try:
        low, high = c.get_watermark_offsets(TopicPartition("_sluice_security", 0), timeout=30)
        c.assign([TopicPartition("_sluice_security", 0, low)])
        got = []
        deadline = time.monotonic() + 30
        while (not got or got[-1][2] < high - 1) and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and not m.error():
                got.append((m.key().decode(), m.value() and m.value().decode(), m.offset()))
        return [(k, v) for k, v, _ in got]
    finally:
        c.close()


def test_the_gateways_are_ready_once_they_read_the_shared_state(fleet):
    _, gateways = fleet
    for gw in gateways:
        gw.wait_log("_sluice_security: caught up at offset")


def test_a_user_added_with_the_command_logs_in_through_both_gateways(fleet):
    up, gateways = fleet
    for gw in gateways:
        assert topics_status(gw, "alice", "alice-Secret-1") == 401
    began = time.monotonic()
    r = ok(command("users", "set", "alice", bootstrap=up.bootstrap, stdin="alice-Secret-1\n"))
    assert "created user alice" in r.stdout
    took = wait_status(gateways, lambda gw: topics_status(gw, "alice", "alice-Secret-1"), 200,
                       "alice to log in")
    assert time.monotonic() - began < 30, took
    assert topics_status(gateways[1], "alice", "wrong") == 401
    # The cluster holds salted credentials, never the password; each gateway's data dir none.
    records = dict(security_records(up.bootstrap))
    assert "scram-sha-512=" in records["user:alice"]
    assert "alice-Secret-1" not in json.dumps(records)
    listed = ok(command("users", "list", bootstrap=up.bootstrap)).stdout.split("\n")
    assert "alice" in listed


def test_an_acl_granted_and_revoked_through_the_command_applies_on_both(fleet):
    up, gateways = fleet
    ok(command("users", "set", "writer", bootstrap=up.bootstrap, stdin="writer-Secret-3\n"))
    wait_status(gateways, lambda gw: topics_status(gw, "writer", "writer-Secret-3"), 200,
                "writer to log in")
    produce = lambda gw: produce_status(gw, "writer", "writer-Secret-3")  # noqa: E731
    for gw in gateways:
        assert produce(gw) == 403
    ok(command("acls", "add", "--allow-principal", "User:writer", "--operation", "Write",
               "--operation", "Describe", "--topic", TOPIC, bootstrap=up.bootstrap))
    wait_status(gateways, produce, 200, "the granted Write to apply")
    listed = ok(command("acls", "list", "--topic", TOPIC, bootstrap=up.bootstrap)).stdout
    assert "User:writer" in listed
    r = ok(command("acls", "remove", "--allow-principal", "User:writer", "--operation", "Write",
                   "--topic", TOPIC, bootstrap=up.bootstrap))
    assert "User:writer" in r.stdout
    wait_status(gateways, produce, 403, "the revoked Write to apply")


def console_users(gw, user, password, method="GET", path="", body=None):
    return requests.request(method, f"{gw.http_url}/v1/console/users{path}", timeout=30,
                            headers=dict(basic(user, password),
                                         **{"Content-Type": "application/json"}),
                            data=None if body is None else json.dumps(body))


def test_a_user_made_in_one_gateways_console_logs_in_through_both(fleet):
    """The console's users routes write _sluice_security, as `sluice users --upstream` does."""
    up, gateways = fleet
    ok(command("users", "set", "console-admin", bootstrap=up.bootstrap,
               stdin="console-Secret-0\n"))
    ok(command("acls", "add", "--allow-principal", "User:console-admin", "--operation", "Alter",
               "--operation", "Describe", "--cluster", bootstrap=up.bootstrap))
    admin = ("console-admin", "console-Secret-0")
    wait_status(gateways, lambda gw: console_users(gw, *admin).status_code, 200,
                "the console admin's rights")
    r = console_users(gateways[0], *admin, "POST", body={
        "name": "made-in-console", "password": "made-Secret-9",
        "mechanisms": ["PLAIN", "SCRAM-SHA-512"]})
    assert r.status_code == 201, r.text
    assert r.json() == {"name": "made-in-console", "mechanisms": [
        {"mechanism": "PLAIN", "iterations": 4096},
        {"mechanism": "SCRAM-SHA-512", "iterations": 4096}]}
    # At once on the gateway that made it; within the bound on the other.
    assert topics_status(gateways[0], "made-in-console", "made-Secret-9") == 200
    wait_status(gateways, lambda gw: topics_status(gw, "made-in-console", "made-Secret-9"), 200,
                "the console's user to log in")
    records = dict(security_records(up.bootstrap))
    assert "scram-sha-512=" in records["user:made-in-console"]
    assert "scram-sha-256=" not in records["user:made-in-console"]
    assert "made-Secret-9" not in json.dumps(records)
    names = [u["name"] for u in console_users(gateways[1], *admin).json()["users"]]
    assert "made-in-console" in names
    assert "made-in-console" in ok(command("users", "list", bootstrap=up.bootstrap)).stdout
    # A new password through the other gateway: the old one stops working on both.
    r = console_users(gateways[1], *admin, "PUT", "/made-in-console",
                      body={"password": "made-Secret-10"})
    assert r.status_code == 200, r.text
    wait_status(gateways, lambda gw: topics_status(gw, "made-in-console", "made-Secret-9"), 401,
                "the old password refused")
    wait_status(gateways, lambda gw: topics_status(gw, "made-in-console", "made-Secret-10"), 200,
                "the new password")
    # Deleted through the first: locked out everywhere, a tombstone in the topic.
    r = console_users(gateways[0], *admin, "DELETE", "/made-in-console", body={})
    assert r.status_code == 204, r.text
    wait_status(gateways, lambda gw: topics_status(gw, "made-in-console", "made-Secret-10"), 401,
                "the deleted user refused")
    assert dict(security_records(up.bootstrap))["user:made-in-console"] is None
    for gw in gateways:
        for line in gw.log_lines:
            assert "made-Secret" not in line


def test_a_quota_set_through_the_command_reaches_both_gateways(fleet):
    up, gateways = fleet
    ok(command("quotas", "set", "--user", "alice", "--add", "producer_byte_rate=1048576",
               bootstrap=up.bootstrap))
    for gw in gateways:
        gw.wait_log("_sluice_security: quota:", timeout=APPLIED_WITHIN)
    listed = ok(command("quotas", "list", bootstrap=up.bootstrap)).stdout
    assert "user-principal 'alice'" in listed and "producer_byte_rate=1048576" in listed


def test_a_record_of_an_unknown_kind_is_skipped_with_a_log_line(fleet):
    up, gateways = fleet
    kcat_produce(up.bootstrap, "_sluice_security", ["future-kind:x:whatever"], keyed=True)
    for gw in gateways:
        gw.wait_log("a record of unknown kind 'future-kind' skipped", timeout=APPLIED_WITHIN)
    # The tail goes on: the next change still applies.
    ok(command("users", "set", "after-unknown", bootstrap=up.bootstrap, stdin="after-Secret-7\n"))
    wait_status(gateways, lambda gw: topics_status(gw, "after-unknown", "after-Secret-7"), 200,
                "a user added after an unknown record to log in")


def sqs(gw, key_id, secret):
    return boto3.client("sqs", endpoint_url=gw.sqs_url, region_name="us-east-1",
                        aws_access_key_id=key_id, aws_secret_access_key=secret,
                        config=Config(retries={"max_attempts": 1}, read_timeout=60,
                                      connect_timeout=10))


def test_an_aws_key_added_with_the_command_signs_sqs_requests(fleet):
    up, gateways = fleet
    key_id, secret = "AKIASHARED000000TEST", "shared/Secret+Key0123456789abcdefghij"

    def status():
        try:
            sqs(gateways[0], key_id, secret).list_queues()
            return 200
        except ClientError as e:
            return e.response["ResponseMetadata"]["HTTPStatusCode"]
    assert status() == 403
    ok(command("users", "set", "sqs-admin", "--aws-access-key-id", key_id,
               bootstrap=up.bootstrap, stdin=secret + "\n"))
    wait_status(gateways[:1], lambda gw: status(), 200, "the key to sign requests")
    records = dict(security_records(up.bootstrap))
    assert records["aws-key:sqs-admin"].startswith(key_id + " ")
    assert "sqs-admin aws-access-key-id=" + key_id in \
        ok(command("users", "list", bootstrap=up.bootstrap)).stdout


def test_deleting_a_user_locks_them_out_everywhere(fleet):
    up, gateways = fleet
    ok(command("users", "set", "leaver", bootstrap=up.bootstrap, stdin="leaver-Secret-4\n"))
    wait_status(gateways, lambda gw: topics_status(gw, "leaver", "leaver-Secret-4"), 200,
                "leaver to log in")
    ok(command("users", "delete", "leaver", bootstrap=up.bootstrap))
    wait_status(gateways, lambda gw: topics_status(gw, "leaver", "leaver-Secret-4"), 401,
                "leaver to be locked out")
    assert dict(security_records(up.bootstrap)).get("user:leaver", "gone") is None


def test_a_gateway_started_later_sees_the_state_over_its_own_files(fleet, tmp_path):
    up, gateways = fleet
    # A user of its own data dir: this gateway's alone, and the log says so.
    d = str(tmp_path)
    r = subprocess.run([sluice_binary(), "users", "set", "local-only", "--data-dir", d],
                       input="local-Secret-5\n", capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    late = Gateway(up.bootstrap, settings=SETTINGS)
    late.data_dir = d
    try:
        late.start(timeout=60)
        wait_ready(late, timeout=60)
        # Ready means caught up: no further wait.
        assert topics_status(late, "alice", "alice-Secret-1") == 200
        assert topics_status(late, "leaver", "leaver-Secret-4") == 401
        assert topics_status(late, "local-only", "local-Secret-5") == 200
        assert topics_status(gateways[1], "local-only", "local-Secret-5") == 401
        late.wait_log("has 1 users, 0 ACLs, 0 quota entities and 0 AWS keys of its own; "
                      "they apply to THIS gateway only")
    finally:
        late.close()


def test_a_gateway_killed_comes_back_with_the_same_state(fleet):
    up, gateways = fleet
    gw = gateways[1]
    gw.kill()
    gw.start(timeout=60)
    wait_ready(gw, timeout=60)
    assert topics_status(gw, "alice", "alice-Secret-1") == 200
    assert topics_status(gw, "leaver", "leaver-Secret-4") == 401
    # writer keeps Describe, lost Write.
    assert produce_status(gw, "writer", "writer-Secret-3") == 403
    # And it tails again: a change after the restart applies.
    ok(command("users", "set", "comeback", bootstrap=up.bootstrap, stdin="comeback-Secret-6\n"))
    wait_status([gw], lambda g: topics_status(g, "comeback", "comeback-Secret-6"), 200,
                "a user added after the restart to log in")


def test_the_command_refuses_bad_locations_clearly(tmp_path):
    both = subprocess.run([sluice_binary(), "users", "list", "--data-dir", str(tmp_path),
                           "--upstream", "127.0.0.1:9"], capture_output=True, text=True,
                          timeout=30)
    assert both.returncode == 2 and "not both" in both.stderr
    neither = subprocess.run([sluice_binary(), "acls", "list"], capture_output=True, text=True,
                             timeout=30)
    assert neither.returncode == 2 and "--data-dir DIR is required" in neither.stderr
    began = time.monotonic()
    down = subprocess.run([sluice_binary(), "users", "list", "--upstream",
                           unreachable_bootstrap(), "--upstream.request.timeout.ms", "2000"],
                          capture_output=True, text=True, timeout=60)
    assert down.returncode == 1 and "_sluice_security" in down.stderr, down.stderr
    assert time.monotonic() - began < 30


def test_a_user_added_with_the_command_logs_in_with_scram_through_the_kafka_proxy(fleet):
    from confluent_kafka import Producer
    import re
    up, _ = fleet
    ok(command("users", "set", "scram-user", bootstrap=up.bootstrap, stdin="scram-Secret-8\n"))
    # Node ports below the ephemeral range: with port 0 the listener's port + 1 + N may be
    # held by another connection of a busy machine, and that node is then not served.
    gw = Gateway(up.bootstrap, args=proxy_kafka_args("SASL_PLAINTEXT"))
    try:
        line = gw.start(timeout=60).wait_log("listening:")
        port = int(re.search(r"kafka_sasl_plaintext=[^ ]*:(\d+)", line).group(1))
        wait_ready(gw, timeout=60)
        gw.wait_log(" served on 127.0.0.1:", timeout=30)

        def produce_as(password):
            outcome = []
            p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all",
                          "security.protocol": "SASL_PLAINTEXT",
                          "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "scram-user",
                          "sasl.password": password, "message.timeout.ms": 8000})
            p.produce(TOPIC, b"through the proxy",
                      on_delivery=lambda err, msg: outcome.append(err))
            p.flush(15)
            return outcome
        assert produce_as("scram-Secret-8") == [None]
        refused = produce_as("wrong")
        assert refused and refused[0] is not None
    finally:
        gw.close()
