"""The audit log (audit.log, one JSON object per line): a wrong SCRAM password, a wrong HTTP
Basic password, a bad SigV4 signature, a Kafka produce, a REST call, an SSE stream and an SQS
call denied by ACL, `sluice users set`, `sluice acls add`, AlterUserScramCredentials, CreateAcls/DeleteAcls
and AlterConfigs each give exactly the expected line; the test's secrets appear nowhere in the
audit file, the main log or /metrics; audit.log=off writes no file; rotation keeps
audit.log.files files."""
import base64
import glob
import json
import os
import re
import subprocess
import tempfile

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka import KafkaAdminClient
from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, ResourcePattern
from kafka.admin import ResourcePatternFilter, ResourceType
from kafka.admin.acl_resource import ACLResourcePatternType

from harness import Sluice, connect, sluice_binary, wait_for
from sasl_support import auth_error, sasl_authenticate, sasl_handshake, users
from test_sasl_scram_admin import SHA256, alter, upsertion

PASSWORDS = {"alice": "alice-Audit-Pw-1", "bob": "bob-Audit-Pw-2"}
KEYS = {"alice": ("AKIAALICEAUDIT00TEST", "alice/Audit+Secret/Key0123456789abcdef"),
        "bob": ("AKIABOBAUDIT0000TEST", "bob/Audit+Secret/Key0123456789abcdefgh")}
WRONG_PASSWORD = "not-the-Password-9"
WRONG_SECRET = "wrong/Audit+Secret/Key0123456789abcdef"
CAROL_PASSWORD = "carol-Audit-Pw-3"
SECRETS = [*PASSWORDS.values(), *(s for _, s in KEYS.values()), WRONG_PASSWORD, WRONG_SECRET,
           CAROL_PASSWORD]
REGION = "us-east-1"
CLIENT = re.compile(r"^127\.0\.0\.1:\d+$")


def cli(*args, stdin=None, env=None):
    r = subprocess.run([sluice_binary(), *args], input=stdin, capture_output=True, text=True,
                       timeout=30, env=None if env is None else {**os.environ, **env})
    assert r.returncode == 0, r.stderr
    return r


def audit_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def without_time(line):
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", line["time"]), line
    out = dict(line)
    del out["time"]
    if "client" in out and out["client"] != "local":
        assert CLIENT.match(out["client"]), out
        out["client"] = "127.0.0.1:PORT"
    return out


def wait_audit(path, expected, timeout=15):
    """Waits (bounded) until the audit file holds a line equal to `expected` (time left out,
    the client's port as PORT); returns the raw line."""
    def found():
        for line in audit_lines(path):
            if without_time(line) == expected:
                return line
        return None
    try:
        return wait_for(found, timeout, f"audit line {expected}", interval=0.05)
    except TimeoutError:
        raise AssertionError("no audit line " + json.dumps(expected) + " in:\n" +
                             "\n".join(json.dumps(l) for l in audit_lines(path)))


class AuditBroker:
    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sluice-audit-test-")
        self.data_dir = self._tmp.name
        self.audit = os.path.join(self.data_dir, "audit.log")
        for name, password in PASSWORDS.items():
            users("set", name, "--data-dir", self.data_dir, stdin=password + "\n")
            key_id, secret = KEYS[name]
            r = users("set", name, "--data-dir", self.data_dir, "--aws-access-key-id", key_id,
                      stdin=secret + "\n")
            assert r.returncode == 0, r.stderr
        # bob may see bob-topic but not write it.
        cli("acls", "add", "--allow-principal", "User:bob", "--operation", "Describe",
            "--topic", "bob-topic", "--data-dir", self.data_dir)
        self.server = Sluice(data_dir=self.data_dir, sqs=True,
                             args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
                             settings={"authorizer.enabled": "true", "super.users": "User:alice",
                                       "http.authentication": "basic",
                                       "sqs.authentication": "sigv4"})
        self.server.start()
        line = self.server._find_line("listening:")
        self.sasl_port = int(re.search(r"kafka_sasl_plaintext=[^ ]*:(\d+)", line).group(1))

    @property
    def sasl_bootstrap(self):
        return f"127.0.0.1:{self.sasl_port}"

    def kafka_config(self, user, mechanism="SCRAM-SHA-256", password=None):
        return {"bootstrap.servers": self.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": mechanism, "sasl.username": user,
                "sasl.password": PASSWORDS[user] if password is None else password}

    def kafka_admin(self):
        return KafkaAdminClient(bootstrap_servers=self.sasl_bootstrap,
                                security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                sasl_plain_username="alice",
                                sasl_plain_password=PASSWORDS["alice"], request_timeout_ms=10000)

    def sqs(self, user, secret=None):
        key_id, right = KEYS[user]
        return boto3.client("sqs", endpoint_url=self.server.sqs_url, region_name=REGION,
                            aws_access_key_id=key_id, aws_secret_access_key=secret or right,
                            config=Config(retries={"max_attempts": 1}, read_timeout=30,
                                          connect_timeout=10))

    def close(self):
        try:
            self.server.stop()
        finally:
            self._tmp.cleanup()


@pytest.fixture(scope="module")
def broker():
    b = AuditBroker()
    yield b
    b.close()


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def produce_as(cfg, topic):
    p = Producer(dict(cfg, **{"message.timeout.ms": 15000}))
    errors = []
    p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(20)
    assert len(errors) == 1
    return errors[0]


def test_users_set_is_audited_from_the_cli(broker):
    for name in PASSWORDS:
        line = wait_audit(broker.audit, {
            "event": "user_changed", "principal": audit_principal(), "client": "local",
            "front": "cli", "user": name, "action": "set",
            "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], "via": "cli"})
        assert list(line) == ["time", "event", "principal", "client", "front", "user",
                              "action", "mechanisms", "via"]
        wait_audit(broker.audit, {
            "event": "user_changed", "principal": audit_principal(), "client": "local",
            "front": "cli", "user": name, "action": "set", "mechanisms": ["SigV4"],
            "via": "cli"})


def audit_principal():
    import pwd
    return "Local:" + pwd.getpwuid(os.geteuid()).pw_name


def test_acls_add_is_audited_from_the_cli(broker):
    wait_audit(broker.audit, {
        "event": "acl_changed", "principal": audit_principal(), "client": "local",
        "front": "cli", "action": "create",
        "bindings": [{"resource_type": "TOPIC", "resource_name": "bob-topic",
                      "pattern": "LITERAL", "principal": "User:bob", "host": "*",
                      "operation": "DESCRIBE", "permission": "ALLOW"}]})


def test_wrong_scram_password(broker):
    err = auth_error(broker.kafka_config("bob", password=WRONG_PASSWORD))
    assert err is not None and err.code() == KafkaError._AUTHENTICATION
    wait_audit(broker.audit, {
        "event": "authentication_failed", "principal": "User:ANONYMOUS",
        "client": "127.0.0.1:PORT", "front": "kafka", "mechanism": "SCRAM-SHA-256",
        "user": "bob", "reason": "wrong password (client proof does not verify)"})


def test_wrong_http_basic_password(broker):
    r = requests.get(broker.server.http_url + "/topics", headers=basic("bob", WRONG_PASSWORD),
                     timeout=10)
    assert r.status_code == 401
    wait_audit(broker.audit, {
        "event": "authentication_failed", "principal": "User:ANONYMOUS",
        "client": "127.0.0.1:PORT", "front": "http", "mechanism": "Basic", "user": "bob",
        "reason": "wrong password"})


def test_bad_sigv4_signature(broker):
    with pytest.raises(ClientError) as e:
        broker.sqs("alice", secret=WRONG_SECRET).list_queues()
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    wait_audit(broker.audit, {
        "event": "authentication_failed", "principal": "User:ANONYMOUS",
        "client": "127.0.0.1:PORT", "front": "sqs", "mechanism": "SigV4",
        "user": KEYS["alice"][0],
        "reason": "SignatureDoesNotMatch: The request signature we calculated does not match "
                  "the signature you provided. Check your AWS Secret Access Key and signing "
                  "method. Consult the service documentation for details."})


def test_kafka_produce_denied(broker):
    assert produce_as(broker.kafka_config("alice"), "bob-topic") is None  # creates it
    err = produce_as(broker.kafka_config("bob"), "bob-topic")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    wait_audit(broker.audit, {
        "event": "authorization_denied", "principal": "User:bob", "client": "127.0.0.1:PORT",
        "front": "kafka", "operation": "WRITE", "resource_type": "TOPIC",
        "resource_name": "bob-topic", "api": "Produce"})


def test_rest_call_denied(broker):
    r = requests.post(broker.server.http_url + "/topics/rest-topic",
                      headers={**basic("bob", PASSWORDS["bob"]),
                               "Content-Type": "application/vnd.kafka.json.v2+json"},
                      data=json.dumps({"records": [{"value": 1}]}), timeout=10)
    assert r.status_code == 403, r.text
    wait_audit(broker.audit, {
        "event": "authorization_denied", "principal": "User:bob", "client": "127.0.0.1:PORT",
        "front": "http", "operation": "WRITE", "resource_type": "TOPIC",
        "resource_name": "rest-topic", "api": "POST /topics/{topic}"})


def test_sse_subscription_denied(broker):
    r = requests.get(broker.server.http_url + "/topics/bob-topic/events",
                     headers=basic("bob", PASSWORDS["bob"]), stream=True, timeout=10)
    r.close()
    assert r.status_code == 403
    wait_audit(broker.audit, {
        "event": "authorization_denied", "principal": "User:bob", "client": "127.0.0.1:PORT",
        "front": "sse", "operation": "READ", "resource_type": "TOPIC",
        "resource_name": "bob-topic", "api": "GET /topics/{topic}/events"})


def test_sqs_call_denied(broker):
    url = broker.server.sqs_url + "/000000000000/bob-queue"
    with pytest.raises(ClientError) as e:
        broker.sqs("bob").send_message(QueueUrl=url, MessageBody="hi")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    wait_audit(broker.audit, {
        "event": "authorization_denied", "principal": "User:bob", "client": "127.0.0.1:PORT",
        "front": "sqs", "operation": "WRITE", "resource_type": "TOPIC",
        "resource_name": "bob-queue", "api": "SendMessage"})


def test_alter_user_scram_credentials(broker):
    s = connect(broker.sasl_port)
    try:
        assert sasl_handshake(s, "PLAIN")[0] == 0
        assert sasl_authenticate(s, f"\0alice\0{PASSWORDS['alice']}".encode())[0] == 0
        assert alter(s, upsertions=[upsertion("carol", SHA256, CAROL_PASSWORD)]) == {
            "carol": (0, None)}
    finally:
        s.close()
    wait_audit(broker.audit, {
        "event": "user_changed", "principal": "User:alice", "client": "127.0.0.1:PORT",
        "front": "kafka", "user": "carol", "action": "set", "mechanisms": ["SCRAM-SHA-256"],
        "via": "AlterUserScramCredentials"})


def test_create_and_delete_acls(broker):
    admin = broker.kafka_admin()
    try:
        acl = ACL(principal="User:bob", host="*", operation=ACLOperation.READ,
                  permission_type=ACLPermissionType.ALLOW,
                  resource_pattern=ResourcePattern(ResourceType.TOPIC, "acl-\"topic\""))
        result = admin.create_acls([acl])
        assert result["failed"] == [], result
        binding = {"resource_type": "TOPIC", "resource_name": "acl-\"topic\"",
                   "pattern": "LITERAL", "principal": "User:bob", "host": "*",
                   "operation": "READ", "permission": "ALLOW"}
        wait_audit(broker.audit, {
            "event": "acl_changed", "principal": "User:alice", "client": "127.0.0.1:PORT",
            "front": "kafka", "action": "create", "bindings": [binding]})
        f = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                      permission_type=ACLPermissionType.ANY,
                      resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, "acl-\"topic\"",
                                                             ACLResourcePatternType.LITERAL))
        deleted = admin.delete_acls([f])
        assert len(deleted[0][1]) == 1, deleted
        wait_audit(broker.audit, {
            "event": "acl_changed", "principal": "User:alice", "client": "127.0.0.1:PORT",
            "front": "kafka", "action": "delete", "bindings": [binding]})
    finally:
        admin.close()


def test_alter_configs(broker):
    assert produce_as(broker.kafka_config("alice"), "config-topic") is None
    admin = AdminClient(broker.kafka_config("alice"))
    futures = admin.alter_configs([ConfigResource("topic", "config-topic",
                                                  set_config={"retention.ms": "3600000"})])
    for f in futures.values():
        f.result(timeout=20)
    wait_audit(broker.audit, {
        "event": "config_changed", "principal": "User:alice", "client": "127.0.0.1:PORT",
        "front": "kafka", "resource": "topic:config-topic",
        "changes": [{"key": "retention.ms", "op": "set", "value": "3600000"}]})


def test_secrets_appear_nowhere_and_events_are_counted(broker):
    # After the other cases (module order): every secret has been used by now.
    metrics = requests.get(broker.server.http_url + "/metrics",
                           headers=basic("alice", PASSWORDS["alice"]), timeout=10).text
    with open(broker.audit, encoding="utf-8") as f:
        audit_text = f.read()
    log = broker.server.log_text()
    for secret in SECRETS:
        assert secret not in audit_text
        assert secret not in log
        assert secret not in metrics
    m = re.search(r'^sluice_audit_events_total\{event="authentication_failed"\} (\d+)$', metrics,
                  re.M)
    assert m and int(m.group(1)) >= 1, metrics
    assert re.search(r"^sluice_audit_events_dropped_total 0$", metrics, re.M), metrics


def test_audit_off_writes_no_file():
    with tempfile.TemporaryDirectory(prefix="sluice-audit-off-") as d:
        cli("users", "set", "bob", "--data-dir", d, stdin="pw-Off-1\n",
            env={"SLUICE_AUDIT_LOG": "off"})
        s = Sluice(data_dir=d, settings={"audit.log": "off", "http.authentication": "basic"})
        s.start()
        try:
            r = requests.get(s.http_url + "/topics", headers=basic("bob", "wrong"), timeout=10)
            assert r.status_code == 401
            s.wait_log("authentication failed")
        finally:
            s.stop()
        assert glob.glob(os.path.join(d, "*audit*")) == []


def test_rotation_keeps_the_configured_count():
    with tempfile.TemporaryDirectory(prefix="sluice-audit-rotate-") as d:
        s = Sluice(data_dir=d, settings={"audit.log.max.bytes": "1024", "audit.log.files": "3",
                                         "authorizer.enabled": "true"})
        s.start()
        try:
            for i in range(40):  # about 230 bytes a line: several rotations
                r = requests.get(s.http_url + f"/topics/t{i}", timeout=10)
                assert r.status_code == 403
        finally:
            s.stop()
        files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "audit*")))
        assert files == ["audit.1.log", "audit.2.log", "audit.log"], files
        for name in files:
            lines = audit_lines(os.path.join(d, name))
            assert lines and all(l["event"] == "authorization_denied" for l in lines)
            assert os.path.getsize(os.path.join(d, name)) <= 1024
        newest = audit_lines(os.path.join(d, "audit.log"))[-1]
        assert newest["resource_name"] == "t39" and newest["principal"] == "User:ANONYMOUS"
