"""ACLs on the Kafka front: the `sluice acls` CLI, Kafka's checks for a plaintext client
(User:ANONYMOUS), persistence across a restart, and CreateAcls/DescribeAcls/DeleteAcls through
kafka-python's admin client."""
import subprocess
import tempfile

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, ResourcePattern
from kafka.admin import ResourcePatternFilter, ResourceType
from kafka.admin.acl_resource import ACLResourcePatternType

from harness import Sluice, sluice_binary

ANON = "User:ANONYMOUS"


def acls_cli(data_dir, *args):
    return subprocess.run([sluice_binary(), "acls", *args, "--data-dir", data_dir],
                          capture_output=True, text=True, timeout=30)


def produce_error(bootstrap, topic):
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000})
    errors = []
    p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert len(errors) == 1
    return errors[0]


def test_cli_rejects_bad_flags():
    with tempfile.TemporaryDirectory() as d:
        for bad in (["add", "--allow-principal", ANON, "--operation", "Frob", "--topic", "a"],
                    ["add", "--allow-principal", ANON, "--operation", "Write", "--group", "g"],
                    ["add", "--topic", "a"], ["frob"], ["list", "--bogus"]):
            r = acls_cli(d, *bad)
            assert r.returncode == 2, (bad, r.stdout, r.stderr)
            assert "acls" in r.stderr


def test_acls_decide_and_survive_a_restart():
    with tempfile.TemporaryDirectory() as d:
        r = acls_cli(d, "add", "--allow-principal", ANON, "--operation", "Write",
                     "--operation", "Create", "--topic", "a")
        assert r.returncode == 0, r.stderr
        settings = {"authorizer.enabled": "true"}
        for _ in range(2):  # the second run reads the ACLs back from DATA_DIR/acls
            s = Sluice(data_dir=d, settings=settings).start()
            try:
                assert produce_error(s.bootstrap, "a") is None
                err = produce_error(s.bootstrap, "b")
                assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
                md = AdminClient({"bootstrap.servers": s.bootstrap}).list_topics(timeout=10)
                assert "a" in md.topics and "b" not in md.topics
            finally:
                s.close()
        listed = acls_cli(d, "list")
        assert "TOPIC:LITERAL:a" in listed.stdout and "WRITE" in listed.stdout


def test_off_by_default_changes_nothing():
    with tempfile.TemporaryDirectory() as d:
        acls_cli(d, "add", "--deny-principal", ANON, "--topic", "*")
        s = Sluice(data_dir=d).start()
        try:
            assert produce_error(s.bootstrap, "x") is None
        finally:
            s.close()


def test_admin_client_create_describe_delete():
    s = Sluice(settings={"authorizer.enabled": "true", "super.users": ANON}).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=s.bootstrap, request_timeout_ms=10000)
        acl = ACL(principal="User:alice", host="*", operation=ACLOperation.WRITE,
                  permission_type=ACLPermissionType.ALLOW,
                  resource_pattern=ResourcePattern(ResourceType.TOPIC, "a"))
        bad = ACL(principal="User:alice", host="*", operation=ACLOperation.WRITE,
                  permission_type=ACLPermissionType.ALLOW,
                  resource_pattern=ResourcePattern(ResourceType.GROUP, "g"))
        result = admin.create_acls([acl, bad])
        assert len(result["succeeded"]) == 1 and len(result["failed"]) == 1
        flt = ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                        permission_type=ACLPermissionType.ANY,
                        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                               ACLResourcePatternType.ANY))
        found, err = admin.describe_acls(flt)
        assert err.errno == 0 and len(found) == 1 and found[0].principal == "User:alice"
        deleted = admin.delete_acls([flt])
        assert len(deleted[0][1]) == 1
        found, _ = admin.describe_acls(flt)
        assert found == []
        admin.close()
    finally:
        s.close()
