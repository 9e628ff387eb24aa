"""Dynamic broker configs (KIP-226) and group configs (KIP-848) through real admin clients
(confluent_kafka's AdminClient, kafka-python's KafkaAdminClient, kafkajs) and raw requests
where no client here speaks them (IncrementalAlterConfigs, GROUP resources): their effect on
existing topics and groups, their persistence across kill -9, their sources in DescribeConfigs,
and Kafka's refusals."""
import os
import socket
import struct
import subprocess

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from harness import Sluice, connect, kafka_request, read_frame
from kafka_wire import FlexReader, NO_TAGS, compact_array, compact_string, uvarint

HERE = os.path.dirname(os.path.abspath(__file__))

INVALID_CONFIG = 40
INVALID_REQUEST = 42
GROUP_AUTHORIZATION_FAILED = 30

RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_GROUP = 2, 4, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# Kafka's ConfigSource ids.
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER, DEFAULT = 1, 2, 3, 4, 5
DYNAMIC_GROUP = 8


@pytest.fixture
def dyn_broker():
    s = Sluice().start()
    try:
        yield s
    finally:
        s.close()


def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def wait_all(futures, timeout=30):
    return {k: f.result(timeout=timeout) for k, f in futures.items()}


def alter_error(a, resource):
    """The KafkaError of a refused AlterConfigs on one resource (None when accepted)."""
    try:
        wait_all(a.alter_configs([resource]))
        return None
    except KafkaException as e:
        return e.args[0]


def produce_one(broker, topic, value):
    """Produces one record; returns the delivery error (None when stored)."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 10_000_000,
                  "retries": 0, "linger.ms": 0})
    result = {}
    p.produce(topic, value, callback=lambda err, msg: result.setdefault("err", err))
    p.flush(30)
    assert "err" in result, "no delivery report"
    return result["err"]


# --- raw requests -------------------------------------------------------------------------------

def call(port, api_key, version, body):
    with connect(port) as sock:
        sock.sendall(kafka_request(api_key, version, 7, body, flexible_header=True))
        frame = read_frame(sock)
    r = FlexReader(frame, 4)  # correlation id
    r.tags()  # flexible response header
    return r


def incremental_alter(port, resources, validate_only=False):
    """IncrementalAlterConfigs v1: resources = [(type, name, [(key, op, value)])]. Returns
    [(error_code, error_message)] in order."""
    body = compact_array([
        struct.pack(">b", t) + compact_string(name) + compact_array([
            compact_string(k) + struct.pack(">b", op) + compact_string(v) + NO_TAGS
            for k, op, v in configs]) + NO_TAGS
        for t, name, configs in resources])
    body += struct.pack(">b", 1 if validate_only else 0) + NO_TAGS
    r = call(port, 44, 1, body)
    r.int32()  # throttle

    def one(r):
        code, message = r.int16(), r.compact_string()
        r.int8()
        r.compact_string()
        r.tags()
        return code, message
    return r.compact_array(one)


def describe(port, rtype, name, include_synonyms=True):
    """DescribeConfigs v4 of one resource: (error_code, message, {name: entry}) where an entry
    is a dict of value, read_only, source and synonyms [(name, value, source)]."""
    body = compact_array([struct.pack(">b", rtype) + compact_string(name) + b"\x00" + NO_TAGS])
    body += struct.pack(">bb", 1 if include_synonyms else 0, 0) + NO_TAGS
    r = call(port, 32, 4, body)
    r.int32()

    def synonym(r):
        s = (r.compact_string(), r.compact_string(), r.int8())
        r.tags()
        return s

    def entry(r):
        e = {"name": r.compact_string(), "value": r.compact_string(), "read_only": r.bool(),
             "source": r.int8(), "sensitive": r.bool()}
        e["synonyms"] = r.compact_array(synonym)
        r.int8()
        r.compact_string()
        r.tags()
        return e

    def result(r):
        code, message = r.int16(), r.compact_string()
        r.int8()
        r.compact_string()
        entries = r.compact_array(entry)
        r.tags()
        return code, message, {e["name"]: e for e in entries}
    return r.compact_array(result)[0]


def consumer_heartbeat(port, group, topic):
    """ConsumerGroupHeartbeat v0 joining `group`: (error_code, heartbeat_interval_ms)."""
    body = (compact_string(group) + compact_string("") + struct.pack(">i", 0) +
            compact_string(None) + compact_string(None) + struct.pack(">i", 30000) +
            compact_array([compact_string(topic)]) + compact_string(None) +
            compact_array([]) + NO_TAGS)
    r = call(port, 68, 0, body)
    r.int32()
    code = r.int16()
    r.compact_string()
    r.compact_string()
    r.int32()
    return code, r.int32()


# --- dynamic broker configs ---------------------------------------------------------------------

def test_message_max_bytes_default_applies_to_existing_topic_and_survives_kill(dyn_broker):
    a = admin(dyn_broker)
    wait_all(a.create_topics([NewTopic("big", 1, 1),
                              NewTopic("own-limit", 1, 1,
                                       config={"max.message.bytes": "200000"})]))
    assert produce_one(dyn_broker, "big", b"x" * 20000) is None

    res = ConfigResource("broker", "0", set_config={"message.max.bytes": "10000"})
    assert alter_error(a, res) is None
    # At once, for the topic that does not override it; not for the one that does.
    err = produce_one(dyn_broker, "big", b"x" * 20000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert produce_one(dyn_broker, "own-limit", b"x" * 20000) is None

    def check_described():
        broker = wait_all(a.describe_configs([ConfigResource("broker", "0")]))
        entry = list(broker.values())[0]["message.max.bytes"]
        assert entry.value == "10000"
        assert entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert not entry.is_read_only
        topic = wait_all(a.describe_configs([ConfigResource("topic", "big")]))
        entry = list(topic.values())[0]["max.message.bytes"]
        assert entry.value == "10000"
        assert entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value

    check_described()
    dyn_broker.kill()
    dyn_broker.start()
    a = admin(dyn_broker)
    check_described()
    err = produce_one(dyn_broker, "big", b"x" * 20000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE

    # Removing it (AlterConfigs replaces the broker's whole set) restores the default.
    assert alter_error(a, ConfigResource("broker", "0")) is None
    assert produce_one(dyn_broker, "big", b"x" * 20000) is None


def test_cluster_default_and_broker_layers_with_kafka_python():
    from kafka.admin import ConfigResource as KPResource, ConfigResourceType, KafkaAdminClient
    s = Sluice(settings={"log.retention.hours": "100"}).start()
    try:
        a = KafkaAdminClient(bootstrap_servers=s.bootstrap, client_id="dyn-kp")
        a.create_topics([__import__("kafka.admin", fromlist=["NewTopic"]).NewTopic(
            "layered", 1, 1)])
        r = a.alter_configs([KPResource(ConfigResourceType.BROKER, "",
                                        configs={"log.retention.ms": "3600000"})])
        assert [res[0] for res in r.resources] == [0]
        # The default resource lists only what is set there (kafka-python cannot describe
        # the "" resource: it sends broker resources to the broker named).
        port = s.kafka_port
        code, _, entries = describe(port, RESOURCE_BROKER, "")
        assert code == 0
        assert [(e["name"], e["value"], e["source"], e["synonyms"]) for e in entries.values()] == [
            ("log.retention.ms", "3600000", DYNAMIC_DEFAULT_BROKER,
             [("log.retention.ms", "3600000", DYNAMIC_DEFAULT_BROKER)])]

        # The topic follows the default, above the static log.retention.hours.
        _, _, topic = describe(port, RESOURCE_TOPIC, "layered")
        assert topic["retention.ms"]["value"] == "3600000"
        assert topic["retention.ms"]["source"] == DYNAMIC_DEFAULT_BROKER

        # This broker's own value wins over the default; every layer is a synonym.
        r = a.alter_configs([KPResource(ConfigResourceType.BROKER, "0",
                                        configs={"log.retention.ms": "7200000"})])
        assert [res[0] for res in r.resources] == [0]
        _, _, topic = describe(port, RESOURCE_TOPIC, "layered")
        assert topic["retention.ms"]["value"] == "7200000"
        assert topic["retention.ms"]["source"] == DYNAMIC_BROKER
        assert topic["retention.ms"]["synonyms"] == [
            ("log.retention.ms", "7200000", DYNAMIC_BROKER),
            ("log.retention.ms", "3600000", DYNAMIC_DEFAULT_BROKER),
            ("log.retention.hours", "100", STATIC_BROKER),
            ("log.retention.ms", "604800000", DEFAULT)]
        _, _, broker = describe(port, RESOURCE_BROKER, "0")
        assert broker["log.retention.ms"]["source"] == DYNAMIC_BROKER
        assert broker["log.retention.ms"]["read_only"] is False
        assert broker["node.id"]["read_only"] is True
        a.close()
    finally:
        s.close()


def test_refusals_have_kafkas_errors(dyn_broker):
    a = admin(dyn_broker)
    err = alter_error(a, ConfigResource("broker", "0", set_config={"num.partitions": "3"}))
    assert err.code() == INVALID_REQUEST
    assert "Cannot update these configs dynamically: Set(num.partitions)" in err.str()
    err = alter_error(a, ConfigResource("broker", "0", set_config={"no.such.config": "1"}))
    assert err.code() == INVALID_CONFIG
    port = dyn_broker.kafka_port
    # Raw: librdkafka sends a broker resource to the broker it names, and there is no broker 5.
    assert incremental_alter(port, [(RESOURCE_BROKER, "5", [("log.retention.ms", SET, "1")])]) == [
        (INVALID_REQUEST, "Unexpected broker id, expected 0, but received 5")]
    err = alter_error(a, ConfigResource("broker", "0", set_config={"log.retention.ms": "soon"}))
    assert err.code() == INVALID_REQUEST
    # Nothing of the above was taken.
    entries = list(wait_all(a.describe_configs([ConfigResource("broker", "0")])).values())[0]
    assert entries["log.retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert entries["num.partitions"].value == "1"

    # validate_only checks and changes nothing.
    assert incremental_alter(port, [(RESOURCE_BROKER, "0",
                                     [("log.retention.ms", SET, "1000")])],
                             validate_only=True) == [(0, None)]
    _, _, broker = describe(port, RESOURCE_BROKER, "0")
    assert broker["log.retention.ms"]["source"] == DEFAULT
    code, message, _ = describe(port, RESOURCE_BROKER, "9")
    assert code == INVALID_REQUEST

    # A refusal is the resource's own: the others of the request are taken.
    assert incremental_alter(port, [
        (RESOURCE_BROKER, "0", [("num.partitions", SET, "3")]),
        (RESOURCE_BROKER, "", [("log.retention.ms", SET, "3600000")])]) == [
        (INVALID_REQUEST, "Cannot update these configs dynamically: Set(num.partitions)"),
        (0, None)]
    _, _, broker = describe(port, RESOURCE_BROKER, "0")
    assert broker["log.retention.ms"]["value"] == "3600000"
    assert broker["log.retention.ms"]["source"] == DYNAMIC_DEFAULT_BROKER
    assert broker["num.partitions"]["value"] == "1"


def test_incremental_set_delete_append_subtract(dyn_broker):
    port = dyn_broker.kafka_port
    a = admin(dyn_broker)
    wait_all(a.create_topics([NewTopic("policy", 1, 1)]))
    ok = [(0, None)]
    assert incremental_alter(port, [(RESOURCE_BROKER, "",
                                     [("log.cleanup.policy", APPEND, "compact")])]) == ok
    _, _, topic = describe(port, RESOURCE_TOPIC, "policy")
    assert topic["cleanup.policy"]["value"] == "compact"
    assert incremental_alter(port, [(RESOURCE_BROKER, "",
                                     [("log.cleanup.policy", APPEND, "delete")])]) == ok
    _, _, topic = describe(port, RESOURCE_TOPIC, "policy")
    assert topic["cleanup.policy"]["value"] == "compact,delete"
    assert incremental_alter(port, [(RESOURCE_BROKER, "",
                                     [("log.cleanup.policy", SUBTRACT, "compact")])]) == ok
    _, _, topic = describe(port, RESOURCE_TOPIC, "policy")
    assert topic["cleanup.policy"]["value"] == "delete"
    assert topic["cleanup.policy"]["source"] == DYNAMIC_DEFAULT_BROKER

    [(code, message)] = incremental_alter(port, [(RESOURCE_BROKER, "0",
                                                  [("log.retention.ms", APPEND, "5")])])
    assert code == INVALID_CONFIG
    assert message == "Config value append is not allowed for config key: log.retention.ms"

    assert incremental_alter(port, [(RESOURCE_BROKER, "0",
                                     [("log.segment.bytes", SET, "1048576")])]) == ok
    _, _, topic = describe(port, RESOURCE_TOPIC, "policy")
    assert topic["segment.bytes"]["value"] == "1048576"
    assert incremental_alter(port, [(RESOURCE_BROKER, "0",
                                     [("log.segment.bytes", DELETE, None)])]) == ok
    _, _, topic = describe(port, RESOURCE_TOPIC, "policy")
    assert topic["segment.bytes"]["value"] == "1073741824"
    assert topic["segment.bytes"]["source"] == DEFAULT


def test_kafkajs_alter_and_describe_broker_configs(dyn_broker):
    r = subprocess.run(["node", os.path.join(HERE, "js", "dynamic_configs_kafkajs.js"),
                        dyn_broker.bootstrap],
                       capture_output=True, text=True, timeout=120, cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok")
    _, _, topic = describe(dyn_broker.kafka_port, RESOURCE_TOPIC, "kjs-dyn")
    assert topic["retention.bytes"]["value"] == "123456789"
    assert topic["retention.bytes"]["source"] == DYNAMIC_BROKER


# --- group configs ------------------------------------------------------------------------------

def test_group_configs_are_checked_used_and_persisted(dyn_broker):
    port = dyn_broker.kafka_port
    a = admin(dyn_broker)
    wait_all(a.create_topics([NewTopic("grp-topic", 1, 1)]))

    code, _, group = describe(port, RESOURCE_GROUP, "g1")
    assert code == 0
    assert group["consumer.heartbeat.interval.ms"]["value"] == "5000"
    assert group["consumer.heartbeat.interval.ms"]["source"] == DEFAULT

    ok = [(0, None)]
    assert incremental_alter(port, [(RESOURCE_GROUP, "g1", [
        ("consumer.heartbeat.interval.ms", SET, "7000"),
        ("consumer.session.timeout.ms", SET, "50000")])]) == ok
    [(code, message)] = incremental_alter(port, [(RESOURCE_GROUP, "g1", [
        ("consumer.session.timeout.ms", SET, "1000")])])
    assert code == INVALID_CONFIG
    assert message == ("consumer.session.timeout.ms must be greater than or equal to "
                       "group.consumer.min.session.timeout.ms")
    [(code, message)] = incremental_alter(port, [(RESOURCE_GROUP, "g1", [
        ("consumer.heartbeat.interval.ms", SET, "60000")])])
    assert code == INVALID_CONFIG
    [(code, message)] = incremental_alter(port, [(RESOURCE_GROUP, "g1", [
        ("share.unknown.ms", SET, "1")])])
    assert (code, message) == (INVALID_CONFIG, "Unknown group config name: share.unknown.ms")

    # The KIP-848 coordinator gives the group's members its own heartbeat interval.
    assert consumer_heartbeat(port, "g1", "grp-topic") == (0, 7000)
    assert consumer_heartbeat(port, "g2", "grp-topic") == (0, 5000)

    dyn_broker.kill()
    dyn_broker.start()
    port = dyn_broker.kafka_port
    _, _, group = describe(port, RESOURCE_GROUP, "g1")
    assert group["consumer.heartbeat.interval.ms"]["value"] == "7000"
    assert group["consumer.heartbeat.interval.ms"]["source"] == DYNAMIC_GROUP
    assert group["consumer.session.timeout.ms"]["synonyms"] == [
        ("consumer.session.timeout.ms", "50000", DYNAMIC_GROUP),
        ("group.consumer.session.timeout.ms", "45000", DEFAULT)]
    assert consumer_heartbeat(port, "g1", "grp-topic") == (0, 7000)

    assert incremental_alter(port, [(RESOURCE_GROUP, "g1", [
        ("consumer.heartbeat.interval.ms", DELETE, None)])]) == ok
    assert consumer_heartbeat(port, "g3", "grp-topic")[1] == 5000
    _, _, group = describe(port, RESOURCE_GROUP, "g1")
    assert group["consumer.heartbeat.interval.ms"]["value"] == "5000"


# --- message.format.version ---------------------------------------------------------------------

def test_message_format_version_is_accepted_and_reported(dyn_broker):
    a = admin(dyn_broker)
    wait_all(a.create_topics([NewTopic("old-client", 1, 1,
                                       config={"message.format.version": "2.8-IV1"})]))
    entries = list(wait_all(a.describe_configs([ConfigResource("topic", "old-client")]))
                   .values())[0]
    assert entries["message.format.version"].value == "2.8-IV1"
    assert entries["message.format.version"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    res = ConfigResource("topic", "old-client",
                         set_config={"message.format.version": "0.10.2", "retention.ms": "1000"})
    assert alter_error(a, res) is None
    entries = list(wait_all(a.describe_configs([ConfigResource("topic", "old-client")]))
                   .values())[0]
    assert entries["message.format.version"].value == "0.10.2"
    assert entries["retention.ms"].value == "1000"
    # Records are stored as produced.
    assert produce_one(dyn_broker, "old-client", b"v") is None
    wait_all(a.create_topics([NewTopic("new-client", 1, 1)]))
    entries = list(wait_all(a.describe_configs([ConfigResource("topic", "new-client")]))
                   .values())[0]
    assert entries["message.format.version"].value == "3.0-IV1"
    assert entries["message.format.version"].source == ConfigSource.DEFAULT_CONFIG.value
