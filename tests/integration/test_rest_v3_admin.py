"""REST Proxy API v3 administration over real HTTP (the client level's admin): brokers, topics
created (validate_only too), grown and deleted, topic configs listed, read, set, reset and
altered in a batch, consumer groups with their consumers and lag, and ACLs listed, created
(one, and a batch) and deleted with filters, checked against real Kafka clients
(confluent-kafka's AdminClient and Consumer, kafka-python's admin for ACLs).

One sluice for the module, with the authorizer on and the anonymous principal a super user (the
REST requests and the Kafka clients here are anonymous); a second one with basic
authentication for a principal without rights."""
import base64
import tempfile
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from kafka import KafkaAdminClient
from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, ResourcePattern
from kafka.admin import ResourcePatternFilter
from kafka.admin import ConfigResource as KPConfigResource, ConfigResourceType, ResourceType
from kafka.admin.acl_resource import ACLResourcePatternType

from harness import Sluice, upstream_rerun_mode
from rest_support import Rest, create_topic
from sasl_support import users

JSON = "application/json"
SETTINGS = {"authorizer.enabled": "true", "super.users": "User:ANONYMOUS"}


@pytest.fixture(scope="module")
def broker():
    s = Sluice(settings=SETTINGS).start()
    try:
        yield s
    finally:
        s.close()


def cluster_url(rest):
    cid = rest.get("/v3/clusters").json()["data"][0]["cluster_id"]
    return cid, f"/v3/clusters/{cid}"


def patch(rest, path, body):
    return rest.s.patch(rest.base + path, json=body, timeout=rest.timeout)


def put(rest, path, body):
    return rest.s.put(rest.base + path, json=body, timeout=rest.timeout)


def b_id(rest, base):
    return rest.get(base + "/brokers").json()["data"][0]["broker_id"]


def test_brokers(broker):
    rest = Rest(broker)
    cid, base = cluster_url(rest)
    brokers = rest.get(base + "/brokers").json()
    assert brokers["kind"] == "KafkaBrokerList"
    assert len(brokers["data"]) == 1
    b = brokers["data"][0]
    assert b["kind"] == "KafkaBroker" and b["cluster_id"] == cid
    assert b["metadata"]["resource_name"] == f"crn:///kafka={cid}/broker={b['broker_id']}"
    assert b["port"] == broker.kafka_port and b["host"] == "127.0.0.1"
    one = rest.get(f"{base}/brokers/{b['broker_id']}")
    assert one.status_code == 200 and one.json()["broker_id"] == b["broker_id"]
    # The cluster's controller link names that broker.
    c = rest.get(base).json()
    assert c["controller"]["related"].endswith(f"/brokers/{b['broker_id']}")
    assert rest.get(base + "/brokers/42").status_code == 404
    # Its configs, as DescribeConfigs shows them to a Kafka client.
    configs = rest.get(f"{base}/brokers/{b['broker_id']}/configs").json()
    assert configs["kind"] == "KafkaBrokerConfigList"
    by_name = {c["name"]: c for c in configs["data"]}
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, str(b["broker_id"]))
    kafka_view = a.describe_configs([res])[res].result(10)
    # The backend's own settings (the Kafka front adds the gateway's, num.partitions...).
    assert "log.retention.ms" in by_name
    for name, c in by_name.items():
        if name in kafka_view:
            assert c["value"] == kafka_view[name].value, name
    assert all(c["kind"] == "KafkaBrokerConfig" and c["broker_id"] == b["broker_id"]
               for c in configs["data"])
    assert rest.get(base + "/brokers/42/configs").status_code == 404


def broker_config_source(broker, broker_id, name):
    """A broker config as a Kafka client's DescribeConfigs shows it: (value, source name)."""
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
    entry = a.describe_configs([res])[res].result(10)[name]
    return entry.value, ConfigSource(entry.source).name


def test_broker_and_cluster_configs(broker):
    rest = Rest(broker)
    cid, base = cluster_url(rest)
    bid = b_id(rest, base)
    name = "log.retention.ms"

    # The cluster-wide defaults (.../broker-configs): none set; one set by a Kafka client is
    # listed and read.
    url = base + "/broker-configs"
    listed = rest.get(url)
    assert listed.status_code == 200, listed.text
    assert listed.json()["kind"] == "KafkaClusterConfigList"
    assert name not in {c["name"] for c in listed.json()["data"]}
    assert rest.get(f"{url}/{name}").status_code == 404
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        def set_default(configs):
            r = kp.alter_configs([KPConfigResource(ConfigResourceType.BROKER, "",
                                                   configs=configs)])
            assert [res[0] for res in r.resources] == [0]
        set_default({name: "1800000"})
        c = rest.get(f"{url}/{name}")
        assert c.status_code == 200 and c.json()["value"] == "1800000", c.text
        assert c.json()["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        set_default({})
    finally:
        kp.close()
    assert rest.get(f"{url}/{name}").status_code == 404
    r = put(rest, f"{url}/{name}", {"value": "3600000"})
    if upstream_rerun_mode() is not None:
        # librdkafka 2.0.2 cannot address the cluster's "" resource: a clear refusal.
        assert r.status_code == 400 and r.json()["error_code"] == 40002, r.text
        assert "cluster-wide" in r.json()["message"]
    else:
        cluster_default_changes(broker, rest, url, bid, name, r)

    # One broker's: GET, PUT, :alter, DELETE; every broker's (.../brokers/-/configs).
    broker_config_changes(broker, rest, base, bid, name)


def cluster_default_changes(broker, rest, url, bid, name, r):
    """A PUT (`r`), read back, altered in a batch, refused, reset."""
    assert r.status_code == 204, r.text
    one = rest.get(f"{url}/{name}")
    assert one.status_code == 200, one.text
    c = one.json()
    assert c["kind"] == "KafkaClusterConfig" and c["config_type"] == "BROKER"
    assert c["value"] == "3600000" and c["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert c["metadata"]["self"] == f"{broker.http_url}{url}/{name}"
    assert broker_config_source(broker, bid, name) == ("3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    r = rest.post(url + ":alter", {"data": [{"name": name, "value": "5400000"}],
                                   "validate_only": True}, JSON)
    assert r.status_code == 204, r.text
    assert rest.get(f"{url}/{name}").json()["value"] == "3600000"
    r = rest.post(url + ":alter", {"data": [{"name": name, "value": "5400000"}]}, JSON)
    assert r.status_code == 204, r.text
    assert rest.get(f"{url}/{name}").json()["value"] == "5400000"
    r = put(rest, f"{url}/{name}", {"value": "soon"})
    assert r.status_code == 400, r.text
    assert rest.delete(f"{url}/{name}").status_code == 204
    assert rest.get(f"{url}/{name}").status_code == 404
    assert broker_config_source(broker, bid, name)[1] != "DYNAMIC_DEFAULT_BROKER_CONFIG"


def broker_config_changes(broker, rest, base, bid, name):
    url = f"{base}/brokers/{bid}/configs"
    one = rest.get(f"{url}/{name}")
    assert one.status_code == 200, one.text
    assert one.json()["kind"] == "KafkaBrokerConfig" and one.json()["broker_id"] == bid
    assert put(rest, f"{url}/{name}", {"value": "7200000"}).status_code == 204
    c = rest.get(f"{url}/{name}").json()
    assert c["value"] == "7200000" and c["source"] == "DYNAMIC_BROKER_CONFIG"
    assert broker_config_source(broker, bid, name) == ("7200000", "DYNAMIC_BROKER_CONFIG")
    r = rest.post(url + ":alter", {"data": [{"name": name, "operation": "DELETE"}]}, JSON)
    assert r.status_code == 204, r.text
    assert rest.get(f"{url}/{name}").json()["source"] != "DYNAMIC_BROKER_CONFIG"
    assert put(rest, f"{url}/{name}", {"value": "7200000"}).status_code == 204
    assert rest.delete(f"{url}/{name}").status_code == 204
    assert broker_config_source(broker, bid, name)[1] != "DYNAMIC_BROKER_CONFIG"
    every = rest.get(base + "/brokers/-/configs").json()
    assert every["kind"] == "KafkaBrokerConfigList"
    assert {c["broker_id"] for c in every["data"]} == {bid}
    assert rest.get(f"{url}/no.such.config").status_code == 404
    for bad in (put(rest, f"{base}/brokers/42/configs/{name}", {"value": "1"}),
                rest.get(f"{base}/brokers/42/configs/{name}")):
        assert bad.status_code == 404 and bad.json()["error_code"] == 404, bad.text


def test_create_grow_and_delete_topics(broker):
    rest = Rest(broker)
    cid, base = cluster_url(rest)
    # validate_only: checked, not created.
    r = rest.post(base + "/topics", {"topic_name": "checked", "partitions_count": 2,
                                     "validate_only": True}, JSON)
    assert r.status_code == 200, r.text  # the openapi: 200 for a dry run, 201 once created
    assert r.json()["partitions_count"] == 2
    assert rest.get(base + "/topics/checked").status_code == 404

    r = rest.post(base + "/topics", {"topic_name": "made", "partitions_count": 3,
                                     "replication_factor": 1,
                                     "configs": [{"name": "cleanup.policy", "value": "compact"}]},
                  JSON)
    assert r.status_code == 201, r.text
    t = r.json()
    assert t["kind"] == "KafkaTopic" and t["topic_name"] == "made"
    assert t["partitions_count"] == 3 and t["replication_factor"] == 1
    assert t["metadata"]["self"] == f"{broker.http_url}{base}/topics/made"
    assert t["is_internal"] is False and "authorized_operations" not in t
    # A Kafka client sees it, with its config.
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    md = a.list_topics(timeout=10)
    assert len(md.topics["made"].partitions) == 3
    res = ConfigResource(ConfigResource.Type.TOPIC, "made")
    configs = a.describe_configs([res])[res].result(10)
    assert configs["cleanup.policy"].value == "compact"

    # Errors: a duplicate, a bad name, a bad count, too many replicas.
    r = rest.post(base + "/topics", {"topic_name": "made", "partitions_count": 1}, JSON)
    assert r.status_code == 400 and r.json()["error_code"] == 40002, r.text
    assert "already exists" in r.json()["message"]
    r = rest.post(base + "/topics", {"topic_name": "bad name!", "partitions_count": 1}, JSON)
    assert r.status_code == 400 and r.json()["error_code"] == 40002, r.text
    r = rest.post(base + "/topics", {"topic_name": "zero", "partitions_count": 0}, JSON)
    assert r.status_code == 400, r.text
    r = rest.post(base + "/topics", {"topic_name": "rf", "partitions_count": 1,
                                     "replication_factor": 3}, JSON)
    assert r.status_code == 400 and "Replication factor" in r.json()["message"], r.text
    r = rest.post(base + "/topics", {"partitions_count": 1}, JSON)
    assert r.status_code == 400, r.text

    # Asked for: the caller's operations (ANONYMOUS is a super user here: all of them).
    t = rest.get(base + "/topics/made?include_authorized_operations=true").json()
    assert sorted(t["authorized_operations"]) == sorted(
        ["READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS",
         "ALTER_CONFIGS"])
    listed = rest.get(base + "/topics?include_authorized_operations=true").json()["data"]
    assert all("DESCRIBE" in x["authorized_operations"] for x in listed)

    # A replicas assignment (the openapi's form): its partition count is what is created.
    r = rest.post(base + "/topics", {"topic_name": "placed",
                                     "replicas_assignments": {"0": [b_id(rest, base)],
                                                              "1": [b_id(rest, base)]},
                                     "configs": [{"name": "retention.ms", "value": None}]},
                  JSON)
    assert r.status_code == 201 and r.json()["partitions_count"] == 2, r.text
    r = rest.post(base + "/topics", {"topic_name": "misplaced",
                                     "replicas_assignments": {"0": [4242]}}, JSON)
    assert r.status_code == 400 and r.json()["error_code"] == 40002, r.text

    # A partition's earliest and latest offsets.
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(3):
        p.produce("made", b"x", key=b"k%d" % i, partition=1)  # compacted: keyed
    assert p.flush(30) == 0
    r = rest.get(base + "/topics/made/partitions/1/offset")
    assert r.status_code == 200, r.text
    o = r.json()
    assert o["kind"] == "KafkaPartitionWithOffsets" and o["partition_id"] == 1
    assert (o["earliest_offset"], o["latest_offset"]) == (0, 3)
    assert rest.get(base + "/topics/made/partitions/1/offset?offset_type=x").status_code == 400
    assert rest.get(base + "/topics/made/partitions/9/offset").status_code == 404

    # Replicas, and reassignments (none is ever under way).
    part = base + "/topics/made/partitions/0"
    reps = rest.get(part + "/replicas").json()
    assert reps["kind"] == "KafkaReplicaList" and len(reps["data"]) == 1
    rep = reps["data"][0]
    assert rep["kind"] == "KafkaReplica" and rep["is_leader"] and rep["is_in_sync"]
    assert rep["broker"]["related"].endswith(f"/brokers/{rep['broker_id']}")
    assert rest.get(f"{part}/replicas/{rep['broker_id']}").json()["broker_id"] == rep["broker_id"]
    assert rest.get(part + "/replicas/4242").status_code == 404
    held = rest.get(f"{base}/brokers/{rep['broker_id']}/partition-replicas").json()
    assert ("made", 0) in {(x["topic_name"], x["partition_id"]) for x in held["data"]}
    for url in (base + "/topics/-/partitions/-/reassignment",
                base + "/topics/made/partitions/-/reassignment"):
        r = rest.get(url)
        assert r.status_code == 200 and r.json()["kind"] == "KafkaReassignmentList", r.text
        assert r.json()["data"] == []
    r = rest.get(part + "/reassignment")
    assert r.status_code == 404 and r.json()["error_code"] == 404, r.text
    assert rest.get(base + "/topics/none/partitions/-/reassignment").status_code == 404

    # More partitions (PATCH partitions_count); fewer is refused.
    r = patch(rest, base + "/topics/made", {"partitions_count": 5})
    assert r.status_code == 200, r.text
    assert r.json()["partitions_count"] == 5
    assert len(rest.get(base + "/topics/made/partitions").json()["data"]) == 5
    r = patch(rest, base + "/topics/made", {"partitions_count": 2})
    assert r.status_code == 400, r.text

    # Delete.
    r = rest.delete(base + "/topics/made")
    assert r.status_code == 204, r.text
    assert rest.get(base + "/topics/made").status_code == 404
    r = rest.delete(base + "/topics/made")
    assert r.status_code == 404 and r.json()["error_code"] == 40403, r.text
    md = a.list_topics(timeout=10)
    assert "made" not in md.topics
    # Topics of sluice's own state are not deleted (as Kafka's DeleteTopics answers).
    for own in ("__consumer_offsets", "_sluice_rest_consumers"):
        r = rest.delete(f"{base}/topics/{own}")
        assert r.status_code == 400 and "sluice's own state" in r.json()["message"], r.text


def test_topic_configs(broker):
    create_topic(broker, "cfg", 1, {"retention.ms": "3600000"})
    rest = Rest(broker)
    cid, base = cluster_url(rest)
    url = base + "/topics/cfg/configs"
    listed = rest.get(url).json()
    assert listed["kind"] == "KafkaTopicConfigList"
    by_name = {c["name"]: c for c in listed["data"]}
    ret = by_name["retention.ms"]
    assert ret["kind"] == "KafkaTopicConfig" and ret["value"] == "3600000"
    assert ret["source"] == "DYNAMIC_TOPIC_CONFIG" and ret["is_default"] is False
    assert ret["topic_name"] == "cfg" and ret["cluster_id"] == cid
    assert by_name["cleanup.policy"]["is_default"] is True

    one = rest.get(url + "/retention.ms")
    assert one.status_code == 200 and one.json()["value"] == "3600000"
    every = rest.get(base + "/topics/-/configs").json()
    assert every["kind"] == "KafkaTopicConfigList"
    assert every["metadata"]["self"] == f"{broker.http_url}{base}/topics/-/configs"
    assert {(c["topic_name"], c["value"]) for c in every["data"]
            if c["name"] == "retention.ms"} >= {("cfg", "3600000")}
    assert rest.get(url + "/no.such.config").status_code == 404

    r = put(rest, url + "/retention.ms", {"value": "7200000"})
    assert r.status_code == 204, r.text
    assert rest.get(url + "/retention.ms").json()["value"] == "7200000"
    r = put(rest, url + "/retention.ms", {"value": "soon"})
    assert r.status_code == 400, r.text

    r = rest.delete(url + "/retention.ms")
    assert r.status_code == 204, r.text
    reset = rest.get(url + "/retention.ms").json()
    assert reset["source"] != "DYNAMIC_TOPIC_CONFIG"

    # A batch: validate_only changes nothing, then SET and DELETE together.
    batch = {"data": [{"name": "cleanup.policy", "value": "compact"},
                      {"name": "max.message.bytes", "value": "65536"}], "validate_only": True}
    r = rest.post(url + ":alter", batch, JSON)
    assert r.status_code == 204, r.text
    assert rest.get(url + "/cleanup.policy").json()["value"] == "delete"
    batch["validate_only"] = False
    assert rest.post(url + ":alter", batch, JSON).status_code == 204
    assert rest.get(url + "/cleanup.policy").json()["value"] == "compact"
    r = rest.post(url + ":alter", {"data": [{"name": "cleanup.policy", "operation": "DELETE"}]},
                  JSON)
    assert r.status_code == 204, r.text
    assert rest.get(url + "/cleanup.policy").json()["value"] == "delete"
    assert rest.get(url + "/max.message.bytes").json()["value"] == "65536"
    r = rest.post(url + ":alter", {"data": [{"name": "x", "operation": "FROB"}]}, JSON)
    assert r.status_code == 400, r.text
    # What a Kafka client sees.
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg")
    assert a.describe_configs([res])[res].result(10)["max.message.bytes"].value == "65536"
    assert rest.get(base + "/topics/none/configs").status_code == 404


def test_default_topic_configs_are_what_a_new_topic_gets(broker):
    """GET .../topics/{t}/default-configs (kafka-rest's DefaultTopicConfigsResource): the
    configs a topic created without any gets, as AdminClient describes such a topic; for a
    topic with overrides, and for a name not created yet."""
    create_topic(broker, "with-overrides", 1, {"retention.ms": "3600000",
                                               "cleanup.policy": "compact"})
    create_topic(broker, "plain", 1)
    rest = Rest(broker)
    cid, base = cluster_url(rest)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, "plain")
    fresh = {n: e.value for n, e in a.describe_configs([res])[res].result(10).items()}
    for topic in ("with-overrides", "not-made-yet"):
        r = rest.get(f"{base}/topics/{topic}/default-configs")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["kind"] == "KafkaTopicConfigList"
        assert body["metadata"]["self"] == f"{broker.http_url}{base}/topics/{topic}/default-configs"
        got = {c["name"]: c for c in body["data"]}
        assert got.keys() == fresh.keys()
        assert {n: c["value"] for n, c in got.items()} == fresh
        ret = got["retention.ms"]
        assert ret["kind"] == "KafkaTopicConfig" and ret["topic_name"] == topic
        assert ret["cluster_id"] == cid and ret["source"] != "DYNAMIC_TOPIC_CONFIG"
        assert ret["metadata"]["self"].endswith(f"{base}/topics/{topic}/configs/retention.ms")
        assert all(s["source"] != "DYNAMIC_TOPIC_CONFIG" for c in got.values()
                   for s in c.get("synonyms", []))
    # The topic keeps its own values; the defaults changed nothing.
    assert rest.get(f"{base}/topics/with-overrides/configs/retention.ms").json()["value"] \
        == "3600000"
    r = rest.get(f"{base}/topics/bad%20name/default-configs")
    assert r.status_code == 400 and r.json()["error_code"] == 400, r.text
    assert rest.get("/v3/clusters/other/topics/plain/default-configs").status_code == 404


def test_consumer_groups_with_lag(broker):
    create_topic(broker, "lagged", 2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce("lagged", b"v%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    # A member of group "g1" that consumed and committed part of partition 0, and stays.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g1",
                  "client.id": "lag-client", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe(["lagged"])
        deadline = time.monotonic() + 30
        while not c.assignment():
            assert time.monotonic() < deadline, "no assignment"
            c.poll(0.2)
        rest = Rest(broker)
        cid, base = cluster_url(rest)
        # Nothing committed yet: no lag to show (the REST Proxy's 404), not a lag of 0.
        r = rest.get(base + "/consumer-groups/g1/lags")
        assert r.status_code == 404 and r.json()["error_code"] == 404, r.text
        assert rest.get(base + "/consumer-groups/g1/lag-summary").status_code == 404
        c.commit(offsets=[TopicPartition("lagged", 0, 2), TopicPartition("lagged", 1, 5)],
                 asynchronous=False)

        groups = rest.get(base + "/consumer-groups").json()
        assert groups["kind"] == "KafkaConsumerGroupList"
        g = {x["consumer_group_id"]: x for x in groups["data"]}["g1"]
        assert g["kind"] == "KafkaConsumerGroup" and g["state"] == "STABLE"
        assert g["is_simple"] is False and g["partition_assignor"]
        assert g["type"] == "CLASSIC" and g["is_mixed_consumer_group"] is False
        assert g["coordinator"]["related"].endswith(f"/brokers/{b_id(rest, base)}")
        assert g["consumers"]["related"].endswith(f"/v3/clusters/{cid}/consumer-groups/g1/consumers")

        one = rest.get(base + "/consumer-groups/g1").json()
        assert one["consumer_group_id"] == "g1"
        consumers = rest.get(base + "/consumer-groups/g1/consumers").json()
        assert consumers["kind"] == "KafkaConsumerList"
        assert len(consumers["data"]) == 1
        member = consumers["data"][0]
        assert member["client_id"] == "lag-client"
        member_url = f"{base}/consumer-groups/g1/consumers/{member['consumer_id']}"
        assert member["assignments"]["related"] == f"{broker.http_url}{member_url}/assignments"
        assignments = rest.get(member_url + "/assignments").json()
        assert assignments["kind"] == "KafkaConsumerAssignmentList"
        assert sorted((a["topic_name"], a["partition_id"]) for a in assignments["data"]) == \
            [("lagged", 0), ("lagged", 1)]
        a0 = rest.get(member_url + "/assignments/lagged/partitions/0").json()
        assert a0["kind"] == "KafkaConsumerAssignment" and a0["consumer_id"] == member["consumer_id"]
        assert a0["partition"]["related"].endswith(f"{base}/topics/lagged/partitions/0")
        assert a0["lag"]["related"].endswith(f"{base}/consumer-groups/g1/lags/lagged/partitions/0")
        assert rest.get(member_url + "/assignments/lagged/partitions/7").status_code == 404
        assert rest.get(base + "/consumer-groups/g1/consumers/x/assignments").status_code == 404

        lags = rest.get(base + "/consumer-groups/g1/lags").json()
        assert lags["kind"] == "KafkaConsumerLagList"
        by_part = {x["partition_id"]: x for x in lags["data"]}
        assert by_part[0]["current_offset"] == 2 and by_part[0]["log_end_offset"] == 5
        assert by_part[0]["lag"] == 3 and by_part[1]["lag"] == 0
        assert by_part[0]["consumer_id"] == member["consumer_id"]
        assert by_part[0]["client_id"] == "lag-client"
        one_lag = rest.get(base + "/consumer-groups/g1/lags/lagged/partitions/0").json()
        assert one_lag["kind"] == "KafkaConsumerLag" and one_lag["lag"] == 3
        assert rest.get(base + "/consumer-groups/g1/lags/lagged/partitions/9").status_code == 404
        one = rest.get(base + "/consumer-groups/g1/consumers/" + member["consumer_id"]).json()
        assert one["kind"] == "KafkaConsumer" and one["client_id"] == "lag-client"
        assert rest.get(base + "/consumer-groups/g1/consumers/nobody").status_code == 404

        summary = rest.get(base + "/consumer-groups/g1/lag-summary").json()
        assert summary["kind"] == "KafkaConsumerGroupLagSummary"
        assert summary["total_lag"] == 3 and summary["max_lag"] == 3
        assert summary["max_lag_topic_name"] == "lagged" and summary["max_lag_partition_id"] == 0
        assert summary["max_lag_consumer_id"] == member["consumer_id"]

        # A group that committed one partition of two: that partition's lag only.
        other = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-partial",
                          "enable.auto.commit": False})
        try:
            other.assign([TopicPartition("lagged", 1)])
            other.commit(offsets=[TopicPartition("lagged", 1, 1)], asynchronous=False)
        finally:
            other.close()
        lags = rest.get(base + "/consumer-groups/g-partial/lags").json()["data"]
        assert [(x["partition_id"], x["lag"], x["consumer_id"]) for x in lags] == [(1, 4, "")]
        r = rest.get(base + "/consumer-groups/g-partial/lags/lagged/partitions/0")
        assert r.status_code == 404, r.text

        r = rest.get(base + "/consumer-groups/nobody")
        assert r.status_code == 404, r.text
        assert rest.get(base + "/consumer-groups/nobody/lags").status_code == 404
    finally:
        c.close()


# --- ACLs ------------------------------------------------------------------------------------

# The openapi's example shapes (CreateAclRequest, BatchCreateAclRequest).
PREFIXED_ALL = {"resource_type": "TOPIC", "resource_name": "topic-", "pattern_type": "PREFIXED",
                "principal": "User:alice", "host": "*", "operation": "ALL",
                "permission": "ALLOW"}
CLUSTER_DENY = {"resource_type": "CLUSTER", "resource_name": "kafka-cluster",
                "pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
                "operation": "DESCRIBE", "permission": "DENY"}
GROUP_READ = {"resource_type": "GROUP", "resource_name": "readers", "pattern_type": "LITERAL",
              "principal": "User:bob", "host": "*", "operation": "READ", "permission": "ALLOW"}


def kafka_acls(broker):
    """Every ACL as a Kafka client's DescribeAcls shows it: (type, name, pattern, principal,
    operation, permission) names."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        flt = ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                        permission_type=ACLPermissionType.ANY,
                        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                               ACLResourcePatternType.ANY))
        found, err = admin.describe_acls(flt)
        assert err.errno == 0
        return sorted((a.resource_pattern.resource_type.name, a.resource_pattern.resource_name,
                       a.resource_pattern.pattern_type.name, a.principal, a.operation.name,
                       a.permission_type.name) for a in found)
    finally:
        admin.close()


def test_acls(broker):
    rest = Rest(broker)
    cid, base = cluster_url(rest)
    url = base + "/acls"
    assert rest.get(url).json()["data"] == []

    r = rest.post(url, PREFIXED_ALL, JSON)
    assert r.status_code == 201, r.text
    r = rest.post(url + ":batch", {"data": [CLUSTER_DENY, GROUP_READ]}, JSON)
    assert r.status_code == 201, r.text
    assert kafka_acls(broker) == sorted([
        ("TOPIC", "topic-", "PREFIXED", "User:alice", "ALL", "ALLOW"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "DESCRIBE", "DENY"),
        ("GROUP", "readers", "LITERAL", "User:bob", "READ", "ALLOW")])

    listed = rest.get(url)
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert body["kind"] == "KafkaAclList"
    assert body["metadata"]["self"] == f"{broker.http_url}{url}" and body["metadata"]["next"] is None
    assert len(body["data"]) == 3
    by_type = {a["resource_type"]: a for a in body["data"]}
    topic = by_type["TOPIC"]
    assert topic["kind"] == "KafkaAcl" and topic["cluster_id"] == cid
    assert {k: topic[k] for k in PREFIXED_ALL} == PREFIXED_ALL
    assert topic["metadata"]["self"] == (
        f"{broker.http_url}{url}?resource_type=TOPIC&resource_name=topic-&pattern_type=PREFIXED"
        "&principal=User%3Aalice&host=*&operation=ALL&permission=ALLOW")

    # Filters: principal, type, a MATCH of a name, operation and permission.
    def names(query):
        r = rest.get(url + query)
        assert r.status_code == 200, r.text
        return sorted((a["resource_type"], a["resource_name"]) for a in r.json()["data"])
    assert names("?principal=User:alice") == [("CLUSTER", "kafka-cluster"), ("TOPIC", "topic-")]
    assert names("?resource_type=GROUP") == [("GROUP", "readers")]
    assert names("?resource_type=TOPIC&resource_name=topic-abc&pattern_type=MATCH") == \
        [("TOPIC", "topic-")]
    assert names("?operation=DESCRIBE&permission=DENY") == [("CLUSTER", "kafka-cluster")]
    assert names("?host=10.0.0.1") == []
    assert rest.get(url + "?principal=User:alice").json()["metadata"]["self"].endswith(
        "/acls?principal=User:alice")

    # Refused: a cluster ACL on another name (the openapi's 40002), an operation the resource
    # type has not, an unknown enum value, a missing field, a delete without its filter.
    r = rest.post(url, {**CLUSTER_DENY, "resource_name": "other"}, JSON)
    assert r.status_code == 400 and r.json()["error_code"] == 40002, r.text
    r = rest.post(url, {**GROUP_READ, "operation": "WRITE"}, JSON)
    assert r.status_code == 400 and r.json()["error_code"] == 40002, r.text
    r = rest.post(url + ":batch", {"data": [GROUP_READ, {**GROUP_READ, "permission": "MAYBE"}]},
                  JSON)
    assert r.status_code == 400 and r.json()["error_code"] == 400, r.text
    r = rest.post(url, {k: v for k, v in GROUP_READ.items() if k != "host"}, JSON)
    assert r.status_code == 400 and "host" in r.json()["message"], r.text
    assert rest.get(url + "?resource_type=FILE").status_code == 400
    r = rest.delete(url + "?resource_type=GROUP")
    assert r.status_code == 400 and "pattern_type" in r.json()["message"], r.text
    assert len(kafka_acls(broker)) == 3

    # Delete with filters: the deleted ACLs come back.
    r = rest.delete(url + "?resource_type=ANY&pattern_type=ANY&principal=User:alice"
                    "&operation=DESCRIBE&permission=ANY")
    assert r.status_code == 200, r.text
    deleted = r.json()["data"]
    assert [(a["kind"], a["resource_type"], a["operation"]) for a in deleted] == \
        [("KafkaAcl", "CLUSTER", "DESCRIBE")]
    r = rest.delete(url + "?resource_type=ANY&pattern_type=ANY&operation=ANY&permission=ANY")
    assert r.status_code == 200 and len(r.json()["data"]) == 2, r.text
    assert kafka_acls(broker) == []
    assert rest.get(url).json()["data"] == []
    assert rest.get(f"/v3/clusters/other/acls").status_code == 404


PASSWORD = "alice-Secret-1"


@pytest.fixture(scope="module")
def basic_auth_server():
    """Basic authentication on the HTTP front; alice has no ACL. The users live in the data dir
    of the sluice that checks them, so this one runs without an upstream in front."""
    d = tempfile.TemporaryDirectory(prefix="sluice-v3-acls-")
    assert users("set", "alice", "--data-dir", d.name, stdin=PASSWORD + "\n").returncode == 0
    s = Sluice(data_dir=d.name, settings={**SETTINGS, "http.authentication": "basic"},
               rerun=False).start()
    try:
        yield s
    finally:
        s.close()
        d.cleanup()


def test_acls_refused_without_rights(basic_auth_server):
    s = basic_auth_server
    rest = Rest(s)
    rest.s.headers["Authorization"] = "Basic " + base64.b64encode(
        f"alice:{PASSWORD}".encode()).decode()
    cid = rest.get("/v3/clusters").json()["data"][0]["cluster_id"]
    url = f"/v3/clusters/{cid}/acls"
    for r in (rest.get(url), rest.post(url, GROUP_READ, JSON),
              rest.post(url + ":batch", {"data": [GROUP_READ]}, JSON),
              rest.delete(url + "?resource_type=ANY&pattern_type=ANY&operation=ANY"
                          "&permission=ANY")):
        assert r.status_code == 403, r.text
        body = r.json()
        assert body["error_code"] == 40301 and body["message"], body
    assert kafka_acls(s) == []
    # Broker configs need DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster.
    base = f"/v3/clusters/{cid}"
    bid = b_id(rest, base)
    for r in (rest.get(base + "/broker-configs"), rest.get(f"{base}/brokers/{bid}/configs"),
              put(rest, base + "/broker-configs/log.retention.ms", {"value": "1"}),
              rest.post(f"{base}/brokers/{bid}/configs:alter",
                        {"data": [{"name": "log.retention.ms", "value": "1"}]}, JSON)):
        assert r.status_code == 403 and r.json()["error_code"] == 40301, r.text

    # Given DESCRIBE on one topic (granted through Kafka by the anonymous super user), she sees
    # that topic only, with just that operation.
    create_topic(s, "seen", 1)
    kp = KafkaAdminClient(bootstrap_servers=s.bootstrap, request_timeout_ms=10000)
    try:
        made = kp.create_acls([ACL(principal="User:alice", host="*",
                                   operation=ACLOperation.DESCRIBE,
                                   permission_type=ACLPermissionType.ALLOW,
                                   resource_pattern=ResourcePattern(ResourceType.TOPIC, "seen"))])
        assert not made["failed"], made
    finally:
        kp.close()
    r = rest.get(base + "/topics/seen?include_authorized_operations=true")
    assert r.status_code == 200 and r.json()["authorized_operations"] == ["DESCRIBE"], r.text
    listed = rest.get(base + "/topics?include_authorized_operations=true").json()["data"]
    assert [(t["topic_name"], t["authorized_operations"]) for t in listed] == \
        [("seen", ["DESCRIBE"])]
    assert rest.get(base + "/acls").status_code == 403


# --- records:batch (the REST Proxy's produceRecordsBatch) ---------------------------------------

def test_produce_records_batch_with_per_entry_results(broker):
    rest = Rest(broker)
    cid, base = cluster_url(rest)
    create_topic(broker, "batched", partitions=2)
    url = base + "/topics/batched/records:batch"
    # The openapi's example (string_batch), plus a record the REST Proxy refuses on its own.
    r = rest.post(url, {"entries": [
        {"id": "1", "value": {"type": "STRING", "data": "My first message"}},
        {"id": "2", "partition_id": 1, "key": {"type": "BINARY", "data": "a2V5"},
         "headers": [{"name": "h", "value": "aGk="}],
         "value": {"type": "JSON", "data": {"n": 2}}},
        {"id": "bad_3", "value": {"type": "BINARY", "data": "not base64!"}},
        {"id": "4", "partition_id": 1, "value": {"type": "STRING", "data": "fourth"}},
    ]}, content_type=JSON)
    assert r.status_code == 207, r.text
    body = r.json()
    assert [s["id"] for s in body["successes"]] == ["1", "2", "4"]
    assert [f["id"] for f in body["failures"]] == ["bad_3"]
    assert body["failures"][0]["error_code"] == 400 and body["failures"][0]["message"]
    second = body["successes"][1]
    assert second["cluster_id"] == cid and second["topic_name"] == "batched"
    assert second["partition_id"] == 1 and second["key"] == {"type": "BINARY", "size": 3}
    assert second["value"] == {"type": "JSON", "size": 7} and second["timestamp"]
    assert body["successes"][2]["offset"] == second["offset"] + 1
    # A Kafka consumer reads what the reports say, where they say.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "batch-check",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("batched", 1, second["offset"])])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
        assert [(m.key(), m.value()) for m in got] == [(b"key", b'{"n":2}'), (None, b"fourth")]
        assert got[0].headers() == [("h", b"hi")]
    finally:
        c.close()


def test_produce_records_batch_entry_with_an_unknown_partition_fails_alone(broker):
    """kafka-rest sends each entry on its own: one naming a partition the topic does not have
    is listed under failures (40403; a negative one 40402, kafka-rest's batch check) and the
    others are produced."""
    rest = Rest(broker)
    _, base = cluster_url(rest)
    create_topic(broker, "batch-partial", partitions=2)
    r = rest.post(base + "/topics/batch-partial/records:batch", {"entries": [
        {"id": "a", "partition_id": 0, "value": {"type": "STRING", "data": "first"}},
        {"id": "b", "partition_id": 2, "value": {"type": "STRING", "data": "nowhere"}},
        {"id": "c", "partition_id": 1, "value": {"type": "STRING", "data": "third"}},
        {"id": "d", "partition_id": 99, "value": {"type": "STRING", "data": "nowhere either"}},
        {"id": "e", "partition_id": -1, "value": {"type": "STRING", "data": "negative"}},
    ]}, content_type=JSON)
    assert r.status_code == 207, r.text
    body = r.json()
    assert [(s["id"], s["partition_id"], s["offset"]) for s in body["successes"]] == \
        [("a", 0, 0), ("c", 1, 0)], r.text
    assert body["failures"] == [
        {"id": "b", "error_code": 40403,
         "message": "This server does not host this topic-partition."},
        {"id": "d", "error_code": 40403,
         "message": "This server does not host this topic-partition."},
        {"id": "e", "error_code": 40402, "message": "Partition not found."}], r.text
    # A Kafka consumer finds the good entries in the log and nothing else.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "batch-partial-check",
                  "enable.auto.commit": False})
    try:
        ends = [c.get_watermark_offsets(TopicPartition("batch-partial", p), timeout=10)
                for p in (0, 1)]
        assert ends == [(0, 1), (0, 1)]
        c.assign([TopicPartition("batch-partial", p, 0) for p in (0, 1)])
        got = {}
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got[m.partition()] = m.value()
        assert got == {0: b"first", 1: b"third"}
    finally:
        c.close()


def test_produce_records_batch_refuses_a_bad_batch_whole(broker):
    rest = Rest(broker)
    _, base = cluster_url(rest)
    create_topic(broker, "batch-refused")
    url = base + "/topics/batch-refused/records:batch"
    one = {"value": {"type": "STRING", "data": "x"}}

    def refused(body, message, status=422, code=42208):
        r = rest.post(url, body, content_type=JSON)
        assert r.status_code == status, r.text
        assert r.json()["error_code"] == code and message in r.json()["message"], r.text

    refused({"entries": []}, "Empty batch.")
    refused({"entries": [dict(one, id="a"), dict(one, id="a")]}, "Batch entry IDs are not distinct.")
    refused({"entries": [dict(one, id=str(i)) for i in range(11)]}, "Too many entries in batch.")
    for bad in ("", "x" * 81, "sp ace", 7):
        refused({"entries": [dict(one, id=bad)]}, "Batch entry identifier is not a valid string.")
    refused({"entries": [one]}, "Batch entry identifier is not a valid string.")
    refused({"records": []}, "entries", status=400, code=400)
    r = rest.post(url, raw=b"", content_type=JSON)
    assert r.status_code == 422 and r.json()["error_code"] == 42208, r.text
    r = rest.post(base + "/topics/batch-refused/records:batch", {"entries": [dict(one, id="1")]},
                  content_type="text/plain")
    assert r.status_code == 415, r.text
    # Nothing was stored by the refused batches; the ten-entry limit itself is accepted.
    r = rest.post(url, {"entries": [dict(one, id=str(i)) for i in range(10)]}, content_type=JSON)
    assert r.status_code == 207 and len(r.json()["successes"]) == 10, r.text
    assert [s["offset"] for s in r.json()["successes"]] == list(range(10))


def test_lists_are_never_paged(broker):
    """The REST Proxy's openapi defines no page token, and its lists never set metadata.next:
    every list is answered whole, next null."""
    rest = Rest(broker)
    _, base = cluster_url(rest)
    for i in range(3):
        create_topic(broker, f"unpaged-{i}")
    for path in ("/v3/clusters", base + "/topics", base + "/brokers", base + "/acls",
                 base + "/consumer-groups", base + "/topics/unpaged-0/partitions",
                 base + "/topics/unpaged-0/configs"):
        body = rest.get(path).json()
        assert body["metadata"]["next"] is None, (path, body["metadata"])
    names = [t["topic_name"] for t in rest.get(base + "/topics").json()["data"]]
    assert {"unpaged-0", "unpaged-1", "unpaged-2"} <= set(names)
