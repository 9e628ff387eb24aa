"""The Kafka port in upstream mode as a protocol-aware proxy (gateway/proxy): unmodified
clients (kcat, confluent-kafka, kafka-python, kafkajs; over the native sluice also sarama at
its 0.8.2 and 2.2 protocol versions and node-rdkafka 2.12 as KIP-848 group members) produce and
consume through a gateway in front of librdkafka's 3-broker mock cluster and of a native sluice; their records are read
back straight from the upstream, and no client ever learns an upstream address (the brokers
they report are gateway addresses; raw Metadata, FindCoordinator and DescribeCluster at every
version the gateway advertises carry only gateway host:ports). Also: an unknown API key is
answered without closing the session, a client that vanishes mid-request leaves the gateway
serving, a stopped upstream closes the client connections and the gateway keeps running, and
the librdkafka 2.12 mock (newer protocol versions) when it is built.

One stand-in cluster and one gateway per upstream kind for the whole file (module fixtures).
"""
import json
import os
import random
import re
import socket
import struct
import subprocess
import time

import pytest
import requests

import kafka_wire
import proxy_wire as pw
from harness import connect, kafka_request, read_frame, wait_for
from upstream_support import (Gateway, MockCluster, NativeUpstream, kcat_produce, kcat_read,
                              newer_mock_available)

HERE = os.path.dirname(os.path.abspath(__file__))
TOPICS = {"proxy-kcat": 3, "proxy-confluent": 3, "proxy-kpy": 2, "proxy-js": 3, "proxy-raw": 1,
          "proxy-sarama-0-8-2": 1, "proxy-sarama-2-2": 1}


def kcat_metadata(bootstrap):
    r = subprocess.run(["kcat", "-b", bootstrap, "-L", "-J"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def free_port_base(node_ids):
    """A port base in 20000-29999 whose base + id is free on 127.0.0.1 for every node id."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 30000 - max(node_ids) - 1)
        socks = []
        try:
            for n in node_ids:
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + n))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free block of node ports found")


class ProxySetup:
    """An upstream (mock or native) with a gateway whose --kafka listener is the proxy."""

    def __init__(self, kind):
        self.kind = kind
        self.upstream = None
        self.gateway = None

    def start(self):
        if self.kind == "native":
            # KIP-848 members heartbeat every 500 ms (the node-rdkafka test's takeover).
            self.upstream = NativeUpstream(settings={
                "auto.create.topics.enable": "false",
                "group.consumer.heartbeat.interval.ms": "500",
                "group.consumer.session.timeout.ms": "10000"})
            self.upstream.start()
            from confluent_kafka.admin import AdminClient, NewTopic
            admin = AdminClient({"bootstrap.servers": self.upstream.bootstrap})
            futures = admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
            for f in futures.values():
                f.result(30)
        else:
            self.upstream = MockCluster(TOPICS, newer=(self.kind == "mock212")).start()
        self.upstream_brokers = {b["id"]: b["name"]
                                 for b in kcat_metadata(self.upstream.bootstrap)["brokers"]}
        # Node ports below the ephemeral range, so that no port-0 bind of this run takes one.
        base = free_port_base(list(self.upstream_brokers))
        self.gateway = Gateway(self.upstream.bootstrap, args=["--kafka", "127.0.0.1:0"],
                               settings={"proxy.metadata.refresh.ms": 1000,
                                         "proxy.node.port.base": base})
        self.gateway.start()
        self.kafka_port = int(re.search(r"kafka=[^ ]*:(\d+)",
                                        self.gateway.wait_log("listening:")).group(1))
        self.node_ports = {}
        for node in self.upstream_brokers:
            line = self.gateway.wait_log(f"upstream broker {node} served on", timeout=30)
            self.node_ports[node] = int(re.search(r"served on [^ ]*:(\d+)", line).group(1))
        return self

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.kafka_port}"

    def gateway_addresses(self):
        return {f"127.0.0.1:{p}" for p in self.node_ports.values()}

    def upstream_ports(self):
        return {int(name.rsplit(":", 1)[1]) for name in self.upstream_brokers.values()}

    def assert_gateway_address(self, node, host, port):
        assert host == "127.0.0.1", (node, host, port)
        assert port == self.node_ports[node], (node, host, port, self.node_ports)
        assert port not in self.upstream_ports()

    def close(self):
        if self.gateway:
            try:
                self.gateway.close()
            except RuntimeError:
                print("\n".join(self.gateway.log_lines[-40:]))
                raise
        if self.upstream:
            if isinstance(self.upstream, MockCluster):
                self.upstream.stop()
            else:
                self.upstream.close()


@pytest.fixture(scope="module", params=["mock", "native"])
def proxied(request):
    setup = ProxySetup(request.param)
    try:
        yield setup.start()
    finally:
        setup.close()


# --- clients ------------------------------------------------------------------------------------

def test_kcat_lists_gateway_brokers_and_round_trips(proxied):
    md = kcat_metadata(proxied.bootstrap)
    assert {b["id"] for b in md["brokers"]} == set(proxied.upstream_brokers)
    for b in md["brokers"]:
        assert b["name"] in proxied.gateway_addresses(), b
    topics = {t["topic"]: t for t in md["topics"]}
    assert len(topics["proxy-kcat"]["partitions"]) == 3

    lines = [f"kcat-{i}" for i in range(30)]
    kcat_produce(proxied.bootstrap, "proxy-kcat", lines)
    # In the upstream, read straight from it ...
    upstream_values = kcat_read(proxied.upstream.bootstrap, "proxy-kcat", 30, fmt="%s\\n")
    assert sorted(upstream_values) == sorted(lines)
    # ... and through the gateway.
    assert sorted(kcat_read(proxied.bootstrap, "proxy-kcat", 30, fmt="%s\\n")) == sorted(lines)


def test_confluent_idempotent_producer_and_group_with_commit(proxied):
    from confluent_kafka import Consumer, Producer, TopicPartition
    p = Producer({"bootstrap.servers": proxied.bootstrap, "enable.idempotence": True,
                  "linger.ms": 5})
    md = p.list_topics(timeout=30)
    assert {f"{b.host}:{b.port}" for b in md.brokers.values()} == proxied.gateway_addresses()
    delivered = []
    for i in range(90):
        p.produce("proxy-confluent", value=f"ck-{i}".encode(), partition=i % 3,
                  on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(30) == 0
    assert len(delivered) == 90 and all(e is None for e in delivered)

    group = f"proxy-group-{proxied.kind}"
    c = Consumer({"bootstrap.servers": proxied.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe(["proxy-confluent"])
        seen = []
        deadline = time.monotonic() + 60
        while len(seen) < 90 and time.monotonic() < deadline:
            for m in c.consume(100, 0.5):
                if m.error() is None:
                    seen.append(m.value().decode())
        assert sorted(seen) == sorted(f"ck-{i}" for i in range(90))
        c.commit(asynchronous=False)
    finally:
        c.close()
    # The commit is in the upstream: a consumer straight on it sees the group's offsets.
    direct = Consumer({"bootstrap.servers": proxied.upstream.bootstrap, "group.id": group})
    try:
        committed = direct.committed([TopicPartition("proxy-confluent", i) for i in range(3)],
                                     timeout=30)
        assert sum(tp.offset for tp in committed) == 90
    finally:
        direct.close()
    values = kcat_read(proxied.upstream.bootstrap, "proxy-confluent", 90, fmt="%s\\n")
    assert sorted(values) == sorted(f"ck-{i}" for i in range(90))


def test_kafka_python_round_trip_and_cluster_metadata(proxied):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    producer = KafkaProducer(bootstrap_servers=proxied.bootstrap, acks="all", linger_ms=5)
    for i in range(20):
        producer.send("proxy-kpy", value=f"kp-{i}".encode(), partition=i % 2)
    producer.flush(30)
    brokers = producer._metadata.brokers()
    assert {f"{b.host}:{b.port}" for b in brokers} == proxied.gateway_addresses()
    producer.close(10)
    consumer = KafkaConsumer(bootstrap_servers=proxied.bootstrap, consumer_timeout_ms=15000,
                             auto_offset_reset="earliest")
    consumer.assign([TopicPartition("proxy-kpy", 0), TopicPartition("proxy-kpy", 1)])
    seen = []
    for m in consumer:
        seen.append(m.value.decode())
        if len(seen) == 20:
            break
    consumer.close()
    assert sorted(seen) == sorted(f"kp-{i}" for i in range(20))
    upstream_values = kcat_read(proxied.upstream.bootstrap, "proxy-kpy", 20, fmt="%s\\n")
    assert sorted(upstream_values) == sorted(seen)


def test_kafkajs_producer_group_and_admin(proxied):
    r = subprocess.run(["node", os.path.join(HERE, "js", "proxy_kafkajs.js"), proxied.bootstrap,
                        "proxy-js", "3"], capture_output=True, text=True, timeout=180,
                       cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.strip().split("\n")
    assert out[-1] == "ok", r.stdout
    for b in json.loads(out[-2])["brokers"]:
        proxied.assert_gateway_address(b["id"], b["host"], b["port"])
    values = kcat_read(proxied.upstream.bootstrap, "proxy-js", 60, fmt="%s\\n")
    assert sorted(values) == sorted(f"js-value-{i}" for i in range(60))


def test_old_client_without_api_versions_and_acks_zero(proxied):
    """sarama 0.8.2's defaults: no ApiVersions, Produce v0-v3 straight to the leader's port.
    An acks=0 Produce gets no response, and the next request's answer is still matched."""
    md = kcat_metadata(proxied.bootstrap)
    leader = next(t for t in md["topics"] if t["topic"] == "proxy-raw")["partitions"][0]["leader"]
    with connect(proxied.node_ports[leader]) as s:
        s.sendall(kafka_request(0, 3, 1, kafka_wire.produce_v3(
            "proxy-raw", 0, kafka_wire.batch([b"raw-1", b"raw-2"]), acks=1)))
        frame = read_frame(s)
        assert struct.unpack_from(">i", frame, 0)[0] == 1
        [(topic, partition, error, _base)] = kafka_wire.parse_produce_v3_response(frame[4:])
        assert (topic, partition, error) == ("proxy-raw", 0, 0)
        s.sendall(kafka_request(0, 3, 2, kafka_wire.produce_v3(
            "proxy-raw", 0, kafka_wire.batch([b"raw-3"]), acks=0)))
        body = pw.exchange(s, pw.METADATA, 1, pw.metadata_request(1, ["proxy-raw"]), 3)
        for node, host, port in pw.metadata_brokers(1, body):
            proxied.assert_gateway_address(node, host, port)
    values = kcat_read(proxied.upstream.bootstrap, "proxy-raw", 3, fmt="%s\\n")
    assert values == ["raw-1", "raw-2", "raw-3"]


@pytest.mark.parametrize("version", ["0.8.2.0", "2.2.0"])
def test_sarama_round_trip_through_the_proxy(proxied, sarama_bin, version):
    """The real sarama (Go): 0.8.2's defaults send no ApiVersions and Produce/Fetch v0, 2.2's
    newer versions; it finds the leader through the rewritten Metadata, produces with
    acks=all and reads back through the proxy; the records are in the upstream. Over the
    native upstream only: librdkafka's mock cluster refuses sarama straight as well (both
    versions fail at the producer's first Metadata against it; through the proxy 0.8.2 gets as
    far as its Produce v0, whose magic 0 message set the mock refuses: it appends only record
    batches of magic 2)."""
    if proxied.kind != "native":
        pytest.skip("librdkafka's mock cluster refuses sarama's requests without a proxy too")
    topic = "proxy-sarama-" + version.rsplit(".", 1)[0].replace(".", "-")
    r = subprocess.run([sarama_bin, proxied.bootstrap, topic, version, "50"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"
    values = kcat_read(proxied.upstream.bootstrap, topic, 50, fmt="%s\\n")
    assert values == [f"v{i}" for i in range(50)]


def upstream_requests(setup, api):
    metrics = requests.get(f"{setup.upstream.http_url}/metrics", timeout=10).text
    m = re.search(r'sluice_kafka_requests_total\{api="%s"\} (\d+)' % api, metrics)
    return int(m.group(1)) if m else 0


def test_node_rdkafka_kip848_group_through_the_proxy(proxied):
    """node-rdkafka on librdkafka 2.12 with group.protocol=consumer (KIP-848): two members
    share a 6-partition topic by ConsumerGroupHeartbeat through the proxy, one leaves, the
    other takes its partitions over; every record consumed and committed. Over the native
    upstream (the mocks serve no ConsumerGroupHeartbeat)."""
    if proxied.kind != "native":
        pytest.skip("librdkafka's mock cluster has no KIP-848 group coordinator")
    js = os.path.join(HERE, "js")
    if not os.path.exists(os.path.join(js, "node_modules", "node-rdkafka", "build", "Release",
                                       "node-librdkafka.node")):
        pytest.fail("node-rdkafka is not built (scripts/install-deps)")
    joins = upstream_requests(proxied, "JoinGroup")
    r = subprocess.run(["node", os.path.join(js, "groups_rdkafka.js"), proxied.bootstrap,
                        "consumer"], capture_output=True, text=True, timeout=240, cwd=js)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
    assert upstream_requests(proxied, "ConsumerGroupHeartbeat") > 0
    assert upstream_requests(proxied, "JoinGroup") == joins


# --- raw: no upstream address in any version ----------------------------------------------------

def check_every_advertised_version(setup):
    """Metadata, FindCoordinator and DescribeCluster at every version the gateway advertises,
    on the bootstrap port and a node port: every address is the gateway's."""
    checked = []
    for port in [setup.kafka_port] + list(setup.node_ports.values())[:1]:
        with connect(port) as s:
            error, offered = pw.api_versions(s)
            assert error == 0
            corr = 10
            if pw.METADATA in offered:
                lo, hi = offered[pw.METADATA]
                for v in range(lo, hi + 1):
                    corr += 1
                    body = pw.exchange(s, pw.METADATA, v, pw.metadata_request(v, ["proxy-kcat"]),
                                       corr)
                    brokers = pw.metadata_brokers(v, body)
                    assert {b[0] for b in brokers} == set(setup.upstream_brokers), (v, brokers)
                    for node, host, p in brokers:
                        setup.assert_gateway_address(node, host, p)
                    checked.append(("Metadata", v))
            if pw.FIND_COORDINATOR in offered:
                lo, hi = offered[pw.FIND_COORDINATOR]
                for v in range(lo, hi + 1):
                    corr += 1
                    body = pw.exchange(s, pw.FIND_COORDINATOR, v,
                                       pw.find_coordinator_request(v, "proxy-raw-group"), corr)
                    for error, node, host, p in pw.find_coordinator_addresses(v, body):
                        if error == 0:
                            setup.assert_gateway_address(node, host, p)
                        else:
                            assert p not in setup.upstream_ports()
                    checked.append(("FindCoordinator", v))
            if pw.DESCRIBE_CLUSTER in offered:
                lo, hi = offered[pw.DESCRIBE_CLUSTER]
                for v in range(lo, hi + 1):
                    corr += 1
                    body = pw.exchange(s, pw.DESCRIBE_CLUSTER, v, pw.describe_cluster_request(v),
                                       corr)
                    brokers = pw.describe_cluster_brokers(v, body)
                    assert brokers
                    for node, host, p in brokers:
                        setup.assert_gateway_address(node, host, p)
                    checked.append(("DescribeCluster", v))
    return checked


def test_every_advertised_version_carries_only_gateway_addresses(proxied):
    checked = check_every_advertised_version(proxied)
    assert ("Metadata", 1) in checked and ("FindCoordinator", 0) in checked, checked
    if proxied.kind == "native":
        assert ("DescribeCluster", 0) in checked and ("Metadata", 12) in checked, checked


@pytest.mark.skipif(not newer_mock_available(), reason="node-rdkafka's librdkafka 2.12 not built")
def test_newer_mock_cluster_versions_carry_only_gateway_addresses():
    setup = ProxySetup("mock212")
    try:
        setup.start()
        checked = check_every_advertised_version(setup)
        assert ("Metadata", 12) in checked, checked
        kcat_produce(setup.bootstrap, "proxy-kcat", ["new-1", "new-2"])
        assert sorted(kcat_read(setup.bootstrap, "proxy-kcat", 2, fmt="%s\\n")) == [
            "new-1", "new-2"]
    finally:
        setup.close()


# --- failures -----------------------------------------------------------------------------------

def test_unknown_api_key_is_answered_and_the_session_stays(proxied):
    with connect(proxied.kafka_port) as s:
        s.sendall(kafka_request(1000, 0, 77))
        frame = read_frame(s)
        corr, error = struct.unpack_from(">ih", frame, 0)
        assert corr == 77 and error == 35  # UNSUPPORTED_VERSION
        # A version the proxy does not offer of a known API: the same answer.
        s.sendall(kafka_request(pw.METADATA, 999, 78))
        corr, error = struct.unpack_from(">ih", read_frame(s), 0)
        assert corr == 78 and error == 35
        error, offered = pw.api_versions(s)
        assert error == 0 and pw.METADATA in offered and 1000 not in offered


def test_client_vanishing_mid_request_leaves_the_gateway_serving(proxied):
    s = connect(proxied.kafka_port)
    s.sendall(struct.pack(">i", 5000) + b"\x00\x03\x00\x01")  # a frame cut short
    s.close()
    # A pipelined Metadata whose client goes before the answer.
    s = connect(proxied.kafka_port)
    s.sendall(kafka_request(pw.METADATA, 1, 5, pw.metadata_request(1, [])))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    # An oversized frame closes that connection only.
    with connect(proxied.kafka_port) as s:
        s.sendall(struct.pack(">i", 200 * 1024 * 1024))
        s.settimeout(10)
        assert s.recv(1) == b""
    assert proxied.gateway.alive()
    assert len(kcat_metadata(proxied.bootstrap)["brokers"]) == len(proxied.upstream_brokers)


def test_stopped_upstream_closes_client_connections_and_gateway_keeps_running():
    upstream = NativeUpstream().start()
    gateway = Gateway(upstream.bootstrap, args=["--kafka", "127.0.0.1:0"])
    try:
        gateway.start()
        port = int(re.search(r"kafka=[^ ]*:(\d+)", gateway.wait_log("listening:")).group(1))
        with connect(port) as s:
            error, _ = pw.api_versions(s)  # forwarded: the upstream connection is open
            assert error == 0
            upstream.stop()
            s.settimeout(30)
            assert s.recv(1) == b""  # closed as a broker that died
        assert gateway.wait_log("closing the client")
        assert gateway.alive()
        # New connections are still taken (what the proxy answers itself is answered).
        with connect(port) as s:
            s.sendall(kafka_request(1000, 0, 1))
            corr, error = struct.unpack_from(">ih", read_frame(s), 0)
            assert corr == 1 and error == 35
    finally:
        gateway.close()
        upstream.close()


def test_a_node_port_held_by_another_socket_is_served_once_it_is_free():
    """A node port that cannot be bound (another process holds it) is tried again within
    seconds, not at the next metadata refresh (set to 10 minutes here): the broker is served
    as soon as the port is free."""
    upstream = NativeUpstream().start()
    holder = socket.socket()
    gateway = None
    try:
        node = kcat_metadata(upstream.bootstrap)["brokers"][0]["id"]
        base = free_port_base([node])
        holder.bind(("127.0.0.1", base + node))
        holder.listen(1)
        gateway = Gateway(upstream.bootstrap, args=["--kafka", "127.0.0.1:0"],
                          settings={"proxy.node.port.base": base,
                                    "proxy.metadata.refresh.ms": 600000})
        gateway.start()
        assert f"port {base + node}" in gateway.wait_log(
            f"upstream broker {node}: cannot serve it", timeout=30)
        holder.close()
        assert gateway.wait_log(f"upstream broker {node} served on", timeout=30)
        with connect(base + node) as s:
            error, _ = pw.api_versions(s)
            assert error == 0
    finally:
        holder.close()
        if gateway:
            gateway.close()
        upstream.close()
