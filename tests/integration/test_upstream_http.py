"""The HTTP fronts in upstream mode against the stand-ins (upstream_support.py: the mock cluster on
librdkafka 2.0.2 and, when node-rdkafka has built it, 2.12; a native sluice), with real clients:
REST v2 produce through the gateway read directly from the upstream with kcat, and kcat produce
to the upstream read by a REST v2 consumer instance of the gateway; a REST consumer's commit is
the upstream group's committed offset as confluent-kafka sees it; two gateways sharing a group
split its partitions, and an instance moves to the gateway it is asked on; REST v3 clusters,
brokers (the mock's 3), topics (create, delete, configs: against the native-sluice upstream,
since the 2.0.2 mock has no CreateTopics), partitions and consumer groups with lag; WebSocket
(node ws) and SSE subscriptions with commit and Last-Event-ID resume; and bad upstreams: an
unreachable bootstrap (REST produce answered 50x in Confluent's shape within the deadline), a
record larger than the cluster's limit, a topic deleted under a WebSocket and an SSE
subscription (ended as the embedded mode ends them); and REST produce from many clients at
once: each request's records and each client's requests read back from the upstream in order,
none lost or doubled."""
import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from confluent_kafka import Consumer, TopicPartition

from harness import ROOT, Sluice, wait_for
from rest_support import V2, V2_BINARY, V2_JSON, Rest, b64, create_topic, unb64
from upstream_support import (Gateway, MockCluster, NativeUpstream, kcat_produce, kcat_read,
                              newer_mock_available, unreachable_bootstrap, wait_ready)
from ws_support import WsClient

JS = os.path.join(ROOT, "tests", "integration", "js")
# Short group timings. The mock cluster holds every JoinGroup after the first for the session
# timeout less a second before it answers (it does not notice that every member has rejoined,
# as Kafka does): a 6 s session makes a rebalance on the mock take 5 s, not 29.
# (No short upstream.topic.metadata.refresh.interval.ms here: librdkafka 2.0.2 rejoins when a
# periodic metadata refresh lands while its JoinGroup is pending, which costs one more such
# wait; backend/upstream/README.md.)
FAST_GROUPS = {"consumer.session.timeout.ms": 6000, "upstream.heartbeat.interval.ms": 1000}


@pytest.fixture(scope="module", params=["mock-2.0.2", "mock-2.12"])
def mock(request):
    """One mock cluster (3 brokers) per librdkafka version: Debian's 2.0.2 and, when
    node-rdkafka has built it, 2.12 (TOOLCHAIN.md); each test uses topics of its own."""
    newer = request.param == "mock-2.12"
    if newer and not newer_mock_available():
        pytest.skip("node-rdkafka's librdkafka 2.12 is not built")
    topics = {"produced": 3, "kcat-in": 2, "commits": 2, "shared": 4, "v3t": 3, "ws-in": 1,
              "ws-group": 2, "sse-in": 2, "big": 1, "doomed-ws": 1, "doomed-sse": 1,
              "doomed-wsg": 1}
    with MockCluster(topics, newer=newer) as m:
        yield m


@pytest.fixture(scope="module")
def gateway(mock):
    with Gateway(mock.bootstrap, settings=FAST_GROUPS) as g:
        wait_ready(g)
        yield g


@pytest.fixture(scope="module")
def native_upstream():
    """One native sluice playing the cluster for the module (full admin API, ListGroups and
    DescribeGroups, which the 2.0.2 mock lacks); each test uses topics and groups of its own."""
    with NativeUpstream() as u:
        yield u


@pytest.fixture(scope="module")
def native_gateway(native_upstream):
    with Gateway(native_upstream.bootstrap) as g:
        wait_ready(g)
        yield g


def new_instance(rest, group, **config):
    r = rest.post(f"/consumers/{group}", config)
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    return base[base.index("/consumers/"):]


def poll_records(rest, path, want, timeout=60, accept=V2_BINARY):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want:
        assert time.monotonic() < deadline, f"got {len(got)} of {want} records"
        r = rest.get(path + "/records?timeout=1000", headers={"Accept": accept})
        assert r.status_code == 200, r.text
        got += r.json()
    return got


def cluster_id(rest):
    r = rest.get("/v3/clusters")
    assert r.status_code == 200, r.text
    return r.json()["data"][0]["cluster_id"]


# --- REST v2 produce and consume, through the gateway and around it ------------------------------

def test_rest_produce_is_read_directly_from_the_upstream_with_kcat(mock, gateway):
    rest = Rest(gateway)
    records = [{"key": b64(f"k{i}"), "value": b64(f"v{i}")} for i in range(30)]
    records.append({"value": b64("pinned"), "partition": 2})
    r = rest.post("/topics/produced", {"records": records}, V2_BINARY)
    assert r.status_code == 200, r.text
    offsets = r.json()["offsets"]
    assert len(offsets) == 31 and all(o.get("error") is None for o in offsets), offsets
    assert offsets[-1]["partition"] == 2
    lines = kcat_read(mock.bootstrap, "produced", 31)
    got = {}
    for line in lines:
        p, o, k, v = line.split(" ", 3)
        got[v] = (int(p), int(o), k)
    assert set(got) == {f"v{i}" for i in range(30)} | {"pinned"}
    # What the gateway answered is where kcat found each record.
    for rec, ans in zip(records, offsets):
        v = unb64(rec["value"]).decode()
        assert got[v][:2] == (ans["partition"], ans["offset"]), v
    # One key, one partition (Kafka's murmur2 partitioner).
    assert len({got[f"v{i}"][0] for i in range(30) if got[f"v{i}"][2] == "k1"}) == 1


def test_kcat_produce_is_read_by_a_rest_consumer_instance(mock, gateway):
    kcat_produce(mock.bootstrap, "kcat-in", [f"k{i}:m{i}" for i in range(20)], keyed=True)
    rest = Rest(gateway)
    path = new_instance(rest, "kcat-readers", format="binary",
                        **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"})
    assert rest.post(path + "/subscription", {"topics": ["kcat-in"]}).status_code == 204
    got = poll_records(rest, path, 20)
    assert sorted(unb64(g["value"]).decode() for g in got) == sorted(f"m{i}" for i in range(20))
    assert {unb64(g["key"]).decode() for g in got} == {f"k{i}" for i in range(20)}
    assert rest.delete(path).status_code == 204


def test_rest_commit_is_the_upstream_groups_committed_offset(mock, gateway):
    kcat_produce(mock.bootstrap, "commits", [f"c{i}" for i in range(10)], partition=0)
    kcat_produce(mock.bootstrap, "commits", [f"d{i}" for i in range(4)], partition=1)
    rest = Rest(gateway)
    path = new_instance(rest, "committers", format="binary",
                        **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"})
    rest.post(path + "/subscription", {"topics": ["commits"]})
    poll_records(rest, path, 14)

    def commit():  # the 2.0.2 mock answers REBALANCE_IN_PROGRESS while the group settles
        r = rest.post(path + "/offsets", None)
        return r.status_code == 200 and r.json()
    committed = wait_for(commit, 30, "a commit the group accepts", interval=0.5)
    assert sorted((c["partition"], c["committed"]) for c in committed) == [(0, 10), (1, 4)]
    # confluent-kafka, a separate client of the upstream, sees the same committed offsets.
    c = Consumer({"bootstrap.servers": mock.bootstrap, "group.id": "committers",
                  "enable.auto.commit": False})
    try:
        seen = c.committed([TopicPartition("commits", 0), TopicPartition("commits", 1)], 30)
        assert sorted((tp.partition, tp.offset) for tp in seen) == [(0, 10), (1, 4)]
    finally:
        c.close()
    rest.delete(path)


def test_two_gateways_sharing_a_group_split_its_partitions(mock, gateway):
    kcat_produce(mock.bootstrap, "shared", [f"s{i}" for i in range(40)])
    with Gateway(mock.bootstrap, settings=FAST_GROUPS) as other:
        wait_ready(other)
        a, b = Rest(gateway), Rest(other)
        cfg = {"format": "binary", "auto.offset.reset": "earliest",
               "auto.commit.enable": "false"}
        pa = new_instance(a, "splitters", **cfg)
        pb = new_instance(b, "splitters", **cfg)
        a.post(pa + "/subscription", {"topics": ["shared"]})
        b.post(pb + "/subscription", {"topics": ["shared"]})

        def split():
            # Records keep the members polling (and so the rebalance moving).
            a.get(pa + "/records?timeout=200")
            b.get(pb + "/records?timeout=200")
            ma = {p["partition"] for p in a.get(pa + "/assignments").json()["partitions"]}
            mb = {p["partition"] for p in b.get(pb + "/assignments").json()["partitions"]}
            return ma and mb and not (ma & mb) and (ma | mb) == {0, 1, 2, 3} and (ma, mb)
        ma, mb = wait_for(split, 60, "the group's 4 partitions split over both gateways",
                          interval=0.2)
        assert len(ma) == 2 and len(mb) == 2
        a.delete(pa)
        b.delete(pb)


def test_a_rest_instance_moves_to_the_gateway_it_is_asked_on(native_upstream, native_gateway):
    """Gateways behind a load balancer without sticky sessions: an instance created on one is
    served by another when asked there, from where its reads had ended (no record twice, none
    lost); the first one's copy stops; a deletion through either ends it on both."""
    create_topic(native_upstream, "moving", 2)
    kcat_produce(native_upstream.bootstrap, "moving", [f"m{i}" for i in range(40)])
    with Gateway(native_upstream.bootstrap) as other:
        wait_ready(other)
        a, b = Rest(native_gateway), Rest(other)
        path = new_instance(a, "movers", format="binary",
                            **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"})
        assert a.post(path + "/subscription", {"topics": ["moving"]}).status_code == 204
        first = []
        deadline = time.monotonic() + 60
        while len(first) < 10:
            assert time.monotonic() < deadline, f"read {len(first)} records through the first"
            r = a.get(path + "/records?timeout=1000&max_bytes=300")
            assert r.status_code == 200, r.text
            first += r.json()
        assert len(first) < 40
        # Asked on the other gateway, the instance is there, subscribed, and reads on.
        r = b.get(path + "/subscription")
        assert r.status_code == 200, r.text
        assert r.json() == {"topics": ["moving"]}
        rest_of = poll_records(b, path, 40 - len(first))
        seen = [(g["partition"], g["offset"]) for g in first + rest_of]
        assert len(seen) == len(set(seen)) == 40
        assert sorted(unb64(g["value"]).decode() for g in first + rest_of) == \
            sorted(f"m{i}" for i in range(40))
        native_gateway.wait_log("instance " + path.rsplit("/", 1)[1] +
                                " of group movers taken over by another gateway", 30)
        # Back on the first gateway: it takes the instance back, at the same positions.
        assert a.get(path + "/records?timeout=500").json() == []
        other.wait_log("of group movers taken over by another gateway", 30)
        # A creation of the same name on either gateway is refused while it lives.
        r = b.post("/consumers/movers", {"name": path.rsplit("/", 1)[1]})
        assert r.status_code == 409 and r.json()["error_code"] == 40902, r.text
        # Deleted through the gateway that does not serve it now: gone on both.
        assert b.delete(path).status_code == 204
        wait_for(lambda: a.get(path + "/subscription").status_code == 404, 30,
                 "the deletion seen by the gateway that served the instance", interval=0.2)
        assert b.get(path + "/subscription").status_code == 404


# --- REST v3 ------------------------------------------------------------------------------------

def test_v3_clusters_brokers_topics_partitions_from_the_mock(mock, gateway):
    rest = Rest(gateway)
    cid = cluster_id(rest)
    assert cid
    brokers = rest.get(f"/v3/clusters/{cid}/brokers")
    assert brokers.status_code == 200, brokers.text
    assert sorted(b["broker_id"] for b in brokers.json()["data"]) == [1, 2, 3]
    topics = rest.get(f"/v3/clusters/{cid}/topics").json()["data"]
    assert "v3t" in {t["topic_name"] for t in topics}
    parts = rest.get(f"/v3/clusters/{cid}/topics/v3t/partitions").json()["data"]
    assert sorted(p["partition_id"] for p in parts) == [0, 1, 2]
    r = rest.get(f"/v3/clusters/{cid}/topics/v3t/partitions/1")
    assert r.status_code == 200 and r.json()["partition_id"] == 1
    # (A missing topic is not asked of the mock: it creates every topic a Metadata request
    # names. The native upstream's test below asks.)


def test_partition_sizes_say_which_brokers_do_not_offer_describe_log_dirs(mock, gateway):
    """The console's sizes over a cluster that cannot give them: the 2.0.2 mock has no
    DescribeLogDirs; each broker is named with the reason, nothing hangs."""
    r = requests.get(gateway.http_url + "/v1/console/partition-sizes", timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    unknown = {u["node_id"]: u["reason"] for u in body["unknown"]}
    if mock.newer and not unknown:  # a newer mock may answer it
        assert body["partitions"], body
        return
    assert sorted(unknown) == [1, 2, 3], body
    assert all("does not offer DescribeLogDirs" in why for why in unknown.values()), unknown
    assert body["partitions"] == []


def test_partition_sizes_refused_by_the_cluster_say_so():
    """A cluster that refuses the gateway DescribeLogDirs (no DESCRIBE on the cluster for its
    upstream principal): CLUSTER_AUTHORIZATION_FAILED named for the broker, no sizes."""
    with NativeUpstream(settings={"authorizer.enabled": "true"}) as u, \
            Gateway(u.bootstrap) as g:
        r = requests.get(g.http_url + "/v1/console/partition-sizes", timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["partitions"] == []
        assert [u["node_id"] for u in body["unknown"]] == [0], body
        assert "CLUSTER_AUTHORIZATION_FAILED" in body["unknown"][0]["reason"], body


def test_v3_consumer_groups_with_lag_against_a_native_upstream(native_upstream, native_gateway):
    # Not over the mock clusters: the 2.0.2 mock has no ListGroups or DescribeGroups (and
    # librdkafka 2.0.2's handle hangs in rd_kafka_destroy after a refused DescribeGroups).
    create_topic(native_upstream, "lagging", 2)
    kcat_produce(native_upstream.bootstrap, "lagging", [f"l{i}" for i in range(10)], partition=0)
    kcat_produce(native_upstream.bootstrap, "lagging", [f"l{i}" for i in range(6)], partition=1)
    c = Consumer({"bootstrap.servers": native_upstream.bootstrap, "group.id": "laggards",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("lagging", 0), TopicPartition("lagging", 1)])
        c.commit(offsets=[TopicPartition("lagging", 0, 3), TopicPartition("lagging", 1, 6)],
                 asynchronous=False)
    finally:
        c.close()
    rest = Rest(native_gateway)
    cid = cluster_id(rest)
    groups = rest.get(f"/v3/clusters/{cid}/consumer-groups").json()["data"]
    assert "laggards" in {g["consumer_group_id"] for g in groups}
    lags = rest.get(f"/v3/clusters/{cid}/consumer-groups/laggards/lags")
    assert lags.status_code == 200, lags.text
    by_p = {(l["topic_name"], l["partition_id"]): l for l in lags.json()["data"]}
    assert by_p[("lagging", 0)]["lag"] == 7 and by_p[("lagging", 0)]["current_offset"] == 3
    assert by_p[("lagging", 1)]["lag"] == 0
    summary = rest.get(f"/v3/clusters/{cid}/consumer-groups/laggards/lag-summary").json()
    assert summary["total_lag"] == 7 and summary["max_lag"] == 7


def test_concurrent_rest_produce_loses_nothing_and_keeps_order(native_upstream, native_gateway):
    # 12 clients at once, each sending 8 requests of 40 records one after another (each waits
    # for its answer), all to one partition: every record is in the upstream once, each
    # client's records in the order it sent them, where the answers said.
    create_topic(native_upstream, "concurrent", 1)
    clients, requests_each, per_request = 12, 8, 40

    def client(n):
        rest = Rest(native_gateway)
        answered = []
        for q in range(requests_each):
            body = {"records": [{"value": b64(f"c{n}-{q * per_request + i}"), "partition": 0}
                                for i in range(per_request)]}
            r = rest.post("/topics/concurrent", body, content_type=V2_BINARY)
            assert r.status_code == 200, r.text
            offsets = [o["offset"] for o in r.json()["offsets"]]
            assert all(o.get("error") is None for o in r.json()["offsets"]), r.text
            assert offsets == sorted(offsets) and len(set(offsets)) == per_request, offsets
            answered += offsets
        return answered

    with ThreadPoolExecutor(clients) as pool:
        answered = list(pool.map(client, range(clients)))
    total = clients * requests_each * per_request
    everyone = [o for offsets in answered for o in offsets]
    assert len(set(everyone)) == total

    c = Consumer({"bootstrap.servers": native_upstream.bootstrap, "group.id": "concurrent-check",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("concurrent", 0, 0)])
        got = []
        deadline = time.monotonic() + 60
        while len(got) < total and time.monotonic() < deadline:
            for m in c.consume(500, timeout=1):
                assert m.error() is None, m.error()
                got.append((m.offset(), m.value().decode()))
    finally:
        c.close()
    assert len(got) == total
    assert sorted(o for o, _ in got) == sorted(everyone)
    next_of = {}
    for offset, value in got:
        n, seq = value[1:].split("-")
        assert int(seq) == next_of.get(n, 0), f"client {n}: {value} at offset {offset}"
        next_of[n] = int(seq) + 1
    assert len(next_of) == clients


def test_v3_topics_create_configs_delete_against_a_native_upstream(native_upstream,
                                                                   native_gateway):
    g = native_gateway
    rest = Rest(g)
    cid = cluster_id(rest)
    r = rest.post(f"/v3/clusters/{cid}/topics",
                  {"topic_name": "made", "partitions_count": 3,
                   "configs": [{"name": "retention.ms", "value": "3600000"}]},
                  "application/json")
    assert r.status_code == 201, r.text
    assert r.json()["topic_name"] == "made"
    # Made in the upstream: its own Kafka port says so.
    md = subprocess.run(["kcat", "-b", native_upstream.bootstrap, "-L", "-J", "-t", "made"],
                        capture_output=True, text=True, timeout=60)
    assert len(json.loads(md.stdout)["topics"][0]["partitions"]) == 3
    configs = rest.get(f"/v3/clusters/{cid}/topics/made/configs").json()["data"]
    assert {c["name"]: c["value"] for c in configs}["retention.ms"] == "3600000"
    r = rest.s.put(g.http_url + f"/v3/clusters/{cid}/topics/made/configs/retention.ms",
                   data=json.dumps({"value": "7200000"}),
                   headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 204, r.text
    r = rest.get(f"/v3/clusters/{cid}/topics/made/configs/retention.ms")
    assert r.json()["value"] == "7200000"
    r = rest.post(f"/v3/clusters/{cid}/topics", {"topic_name": "made", "partitions_count": 1},
                  "application/json")
    assert r.status_code == 400 and r.json()["error_code"] == 40002, r.text
    assert rest.delete(f"/v3/clusters/{cid}/topics/made").status_code == 204
    wait_for(lambda: rest.get(f"/v3/clusters/{cid}/topics/made").status_code == 404, 30,
             "the deleted topic to be gone")
    r = rest.get(f"/v3/clusters/{cid}/topics/no-such-topic")
    assert r.status_code == 404 and r.json()["error_code"] == 40403


# --- WebSocket and SSE --------------------------------------------------------------------------

def test_node_ws_client_reads_a_topic_of_the_upstream(mock, gateway):
    kcat_produce(mock.bootstrap, "ws-in", [f"v{i}" for i in range(500)])
    out = subprocess.run(["node", os.path.join(JS, "ws_receive.js"),
                          f"ws://127.0.0.1:{gateway.http_port}/ws", "ws-in", "500"],
                         capture_output=True, text=True, timeout=120, cwd=JS)
    assert out.returncode == 0, out.stdout + out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["received"] == 500 and got["first"] == 0 and got["last"] == 499


def test_ws_group_subscription_commits_and_resumes(mock, gateway):
    kcat_produce(mock.bootstrap, "ws-group", [f"g{i}" for i in range(20)])
    with WsClient(gateway.http_port) as c:
        c.send({"op": "subscribe", "id": "s", "topics": ["ws-group"], "group": "browsers",
                "from": "earliest"})
        c.recv_op("subscribed")
        got = []
        while len(got) < 20:
            got += c.recv_op("records")[0]["records"]

        def commit():
            c.send({"op": "commit", "id": "c1"})
            m = c.recv()
            while m["op"] == "records":
                m = c.recv()
            return m["op"] == "committed" and m
        committed = wait_for(commit, 30, "a commit the group accepts", interval=0.5)
        assert sum(o["offset"] for o in committed["offsets"]) == 20
    kcat_produce(mock.bootstrap, "ws-group", [f"h{i}" for i in range(5)])
    with WsClient(gateway.http_port) as c:
        c.send({"op": "subscribe", "topics": ["ws-group"], "group": "browsers",
                "from": "earliest"})
        c.recv_op("subscribed")
        more = []
        while len(more) < 5:
            more += c.recv_op("records")[0]["records"]
        assert sorted(r["value"] for r in more) == sorted(f"h{i}" for i in range(5))


def sse_events(gateway, path, n, headers=None, timeout=60):
    out = []
    with requests.get(gateway.http_url + path, stream=True, timeout=timeout,
                      headers=headers or {}) as r:
        assert r.status_code == 200, r.text
        event = {}
        for line in r.iter_lines(decode_unicode=True):
            if line == "":
                if "data" in event:
                    out.append(event)
                    if len(out) >= n:
                        return out
                event = {}
            elif line and not line.startswith(":"):
                field, _, value = line.partition(": ")
                if field == "data":
                    event["data"] = json.loads(value)
                elif field == "id":
                    event["id"] = value
    return out


def test_sse_last_event_id_resumes_exactly(mock, gateway):
    kcat_produce(mock.bootstrap, "sse-in", [f"a{i}" for i in range(8)], partition=0)
    kcat_produce(mock.bootstrap, "sse-in", [f"b{i}" for i in range(8)], partition=1)
    first = sse_events(gateway, "/topics/sse-in/events?from=earliest", 6)
    rest = sse_events(gateway, "/topics/sse-in/events?from=earliest", 10,
                      headers={"Last-Event-ID": first[-1]["id"]})
    seen = [(e["data"]["partition"], e["data"]["offset"]) for e in first + rest]
    assert len(seen) == len(set(seen)) == 16


# --- bad upstreams ------------------------------------------------------------------------------

def test_unreachable_bootstrap_answers_produce_50x_within_the_deadline():
    with Gateway(unreachable_bootstrap(),
                 settings={"upstream.request.timeout.ms": 2000}) as g:
        rest = Rest(g, timeout=20)
        t0 = time.monotonic()
        r = rest.post("/topics/anything", {"records": [{"value": b64("x")}]}, V2_BINARY)
        elapsed = time.monotonic() - t0
        assert 500 <= r.status_code < 600, r.text
        body = r.json()
        assert isinstance(body["error_code"], int) and body["message"], body
        assert elapsed < 10, elapsed


def test_record_larger_than_the_clusters_limit_is_refused_clearly(mock, gateway):
    rest = Rest(gateway)
    r = rest.post("/topics/big", {"records": [{"value": b64("x" * 2_000_000)}]}, V2_BINARY,
                  timeout=60)
    if r.status_code == 200:
        # Refused per record: the offsets entry carries the error.
        entry = r.json()["offsets"][0]
        assert entry.get("error_code") and entry.get("error"), entry
    else:
        assert 400 <= r.status_code < 600 and r.json()["error_code"], r.text
    # The gateway still serves.
    assert rest.post("/topics/big", {"records": [{"value": b64("small")}]},
                     V2_BINARY).status_code == 200


# --- a topic deleted under a subscription --------------------------------------------------------
# The mock has no DeleteTopics: MockCluster.delete_topic makes a topic look deleted (Metadata
# says unknown, its partitions lose their leaders). The native upstream deletes for real
# (DeleteTopics from confluent-kafka's AdminClient). The embedded mode, for comparison, is a
# plain sluice.

def ws_subscription_end(port, topic, delete, group=None):
    """Subscribes to `topic` (from earliest; as a member of `group` if given) over WebSocket,
    reads its one record, runs delete() and answers the frame that ends the subscription and
    the seconds it took."""
    with WsClient(port, timeout=30) as c:
        sub = {"op": "subscribe", "id": "d", "topics": [topic], "from": "earliest"}
        if group:
            sub["group"] = group
        c.send(sub)
        c.recv_op("subscribed")
        assert len(c.recv_op("records")[0]["records"]) == 1
        t0 = time.monotonic()
        delete()
        m = c.recv()
        while m["op"] == "records":
            m = c.recv()
        return m, time.monotonic() - t0


def sse_stream_end(http_url, topic, delete):
    """Opens `topic`'s SSE stream (from earliest), reads its one record, runs delete() and
    answers the error event's data and the seconds it took."""
    with requests.get(http_url + f"/topics/{topic}/events?from=earliest", stream=True,
                      timeout=30) as r:
        assert r.status_code == 200, r.text
        t0 = None
        event = None
        for line in r.iter_lines(decode_unicode=True):
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: ") and event == "error":
                return json.loads(line[len("data: "):]), time.monotonic() - t0
            elif line.startswith("data: ") and t0 is None:
                t0 = time.monotonic()
                delete()
            elif line == "":
                event = None
    raise AssertionError("the stream ended without an error event")


def kafka_delete(bootstrap, topic):
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.delete_topics([topic]).values():
        f.result(30)


@pytest.fixture(scope="module")
def embedded_deleted_answers():
    """What the embedded mode answers when a subscription's topic is deleted: the WebSocket
    error frame and the SSE error event's data (the same topic names as the tests below)."""
    with Sluice(rerun=False) as s:
        for t in ("doomed-ws", "doomed-sse", "doomed-wsg"):
            create_topic(s, t, 1)
            kcat_produce(s.bootstrap, t, ["x"])
        ws, _ = ws_subscription_end(s.http_port, "doomed-ws",
                                    lambda: kafka_delete(s.bootstrap, "doomed-ws"))
        sse, _ = sse_stream_end(s.http_url, "doomed-sse",
                                lambda: kafka_delete(s.bootstrap, "doomed-sse"))
        wsg, _ = ws_subscription_end(s.http_port, "doomed-wsg",
                                     lambda: kafka_delete(s.bootstrap, "doomed-wsg"),
                                     group="doomed-readers")
    assert ws["op"] == "error", ws
    # A group member's subscription ends as one without a group does (the group no longer
    # hands out the topic's partitions; the member is told why instead of going silent).
    assert wsg == {"op": "error", "id": "d", "code": 40401,
                   "message": "Topic not found. (doomed-wsg)"}, wsg
    return ws, sse


def check_like_embedded(embedded, ws, ws_took, sse, sse_took):
    want_ws, want_sse = embedded
    assert ws["op"] == "error", ws
    assert (ws["id"], ws["code"], ws["message"]) == (want_ws["id"], want_ws["code"],
                                                    want_ws["message"]), (ws, want_ws)
    assert sse == want_sse, (sse, want_sse)
    assert ws == {"op": "error", "id": "d", "code": 40401,
                  "message": "Topic not found. (doomed-ws)"}, ws
    assert ws_took < 15 and sse_took < 15, (ws_took, sse_took)


def test_topic_deleted_under_a_subscription_ends_it_as_embedded_does(
        native_upstream, native_gateway, embedded_deleted_answers):
    g = native_gateway
    for t in ("doomed-ws", "doomed-sse"):
        create_topic(native_upstream, t, 1)
        kcat_produce(native_upstream.bootstrap, t, ["x"])
    ws, ws_took = ws_subscription_end(
        g.http_port, "doomed-ws", lambda: kafka_delete(native_upstream.bootstrap, "doomed-ws"))
    sse, sse_took = sse_stream_end(
        g.http_url, "doomed-sse", lambda: kafka_delete(native_upstream.bootstrap, "doomed-sse"))
    check_like_embedded(embedded_deleted_answers, ws, ws_took, sse, sse_took)
    create_topic(native_upstream, "doomed-wsg", 1)
    kcat_produce(native_upstream.bootstrap, "doomed-wsg", ["x"])
    wsg, wsg_took = ws_subscription_end(
        g.http_port, "doomed-wsg", lambda: kafka_delete(native_upstream.bootstrap, "doomed-wsg"),
        group="doomed-readers")
    assert wsg == {"op": "error", "id": "d", "code": 40401,
                   "message": "Topic not found. (doomed-wsg)"}, (wsg, wsg_took)
    # The gateway still serves.
    assert Rest(g).get("/healthz").status_code == 200


def test_topic_deleted_on_the_mock_under_a_subscription_ends_it(mock, gateway,
                                                               embedded_deleted_answers):
    for t in ("doomed-ws", "doomed-sse"):
        kcat_produce(mock.bootstrap, t, ["x"])
    ws, ws_took = ws_subscription_end(gateway.http_port, "doomed-ws",
                                      lambda: mock.delete_topic("doomed-ws"))
    sse, sse_took = sse_stream_end(gateway.http_url, "doomed-sse",
                                   lambda: mock.delete_topic("doomed-sse"))
    check_like_embedded(embedded_deleted_answers, ws, ws_took, sse, sse_took)
    kcat_produce(mock.bootstrap, "doomed-wsg", ["x"])
    wsg, wsg_took = ws_subscription_end(gateway.http_port, "doomed-wsg",
                                        lambda: mock.delete_topic("doomed-wsg"),
                                        group="doomed-readers")
    assert wsg == {"op": "error", "id": "d", "code": 40401,
                   "message": "Topic not found. (doomed-wsg)"}, (wsg, wsg_took)
    assert Rest(gateway).get("/healthz").status_code == 200
