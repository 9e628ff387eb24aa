"""REST Proxy API v3 administration over real HTTP (the client level's admin): brokers, topics
created (validate_only too), grown and deleted, topic configs listed, read, set, reset and
altered in a batch, and consumer groups with their consumers and lag, checked against a real
Kafka client (confluent-kafka's AdminClient and Consumer)."""
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from rest_support import Rest, create_topic

JSON = "application/json"


def cluster_url(rest):
    cid = rest.get("/v3/clusters").json()["data"][0]["cluster_id"]
    return cid, f"/v3/clusters/{cid}"


def patch(rest, path, body):
    return rest.s.patch(rest.base + path, json=body, timeout=rest.timeout)


def put(rest, path, body):
    return rest.s.put(rest.base + path, json=body, timeout=rest.timeout)


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


def test_create_grow_and_delete_topics(broker):
    rest = Rest(broker)
    cid, base = cluster_url(rest)
    # validate_only: checked, not created.
    r = rest.post(base + "/topics", {"topic_name": "checked", "partitions_count": 2,
                                     "validate_only": True}, JSON)
    assert r.status_code == 201, r.text
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
        c.commit(offsets=[TopicPartition("lagged", 0, 2), TopicPartition("lagged", 1, 5)],
                 asynchronous=False)

        rest = Rest(broker)
        cid, base = cluster_url(rest)
        groups = rest.get(base + "/consumer-groups").json()
        assert groups["kind"] == "KafkaConsumerGroupList"
        g = {x["consumer_group_id"]: x for x in groups["data"]}["g1"]
        assert g["kind"] == "KafkaConsumerGroup" and g["state"] == "STABLE"
        assert g["is_simple"] is False and g["partition_assignor"]
        assert g["consumers"]["related"].endswith(f"/v3/clusters/{cid}/consumer-groups/g1/consumers")

        one = rest.get(base + "/consumer-groups/g1").json()
        assert one["consumer_group_id"] == "g1"
        consumers = rest.get(base + "/consumer-groups/g1/consumers").json()
        assert consumers["kind"] == "KafkaConsumerList"
        assert len(consumers["data"]) == 1
        member = consumers["data"][0]
        assert member["client_id"] == "lag-client"
        assert sorted((a["topic_name"], a["partition_id"]) for a in member["assignments"]) == \
            [("lagged", 0), ("lagged", 1)]

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

        r = rest.get(base + "/consumer-groups/nobody")
        assert r.status_code == 404, r.text
        assert rest.get(base + "/consumer-groups/nobody/lags").status_code == 404
    finally:
        c.close()
