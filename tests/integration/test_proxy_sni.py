"""SNI routing through the Kafka proxy (upstream mode, gateway/proxy, proxy.sni.host.pattern):
one SSL listener serves the 3 brokers of the mock cluster on its one port; Metadata and
FindCoordinator advertise broker-N.kafka.test with that port, and the server name of each TLS
handshake picks the broker. Raw requests over Python's ssl prove it: a Produce on a connection
named for the partition's leader is accepted, the same Produce on a connection named for
another broker is answered NOT_LEADER_OR_FOLLOWER by that broker; a name for a node the
cluster lacks is closed after the handshake (logged), and no name or another name is the
bootstrap; --advertise-kafka's port (a load balancer's) is every broker's. A real client (kcat
producing to each partition, confluent-kafka consuming in a group) reaches the names through
an LD_PRELOAD getaddrinfo shim (tests/tools/resolve_shim.c: names under .kafka.test are
127.0.0.1; /etc/hosts is not touched), and the records are read back straight from the
upstream. A plaintext listener, a bad pattern or the pattern with
proxy.node.port.base refuse to start, naming the setting.

One mock cluster and one gateway for the whole file (module fixture).
"""
import json
import os
import re
import socket
import struct
import subprocess
import sys
import textwrap

import pytest

from harness import kafka_request, read_frame
from kafka_wire import batch, parse_produce_v3_response, produce_v3
from proxy_wire import (FIND_COORDINATOR, METADATA, api_versions, exchange,
                        find_coordinator_addresses, find_coordinator_request, metadata_brokers,
                        metadata_request)
from tls_support import Pki, client_context, tls_closed
from upstream_support import Gateway, MockCluster, kcat_read, resolve_shim_path

TOPIC = "sni-orders"
CLIENT_TOPIC = "sni-clients"
PATTERN = "broker-$(nodeId).kafka.test"
NOT_LEADER_OR_FOLLOWER = 6


class SniProxy:
    def __init__(self, tmp):
        self.pki = Pki(tmp, names=("*.kafka.test", "kafka.test"))
        self.cluster = MockCluster(topics={TOPIC: 3, CLIENT_TOPIC: 3}).start()
        try:
            self.gateway = Gateway(
                self.cluster.bootstrap, args=["--kafka", "SSL://127.0.0.1:0"],
                settings=self.pki.settings(**{"proxy.sni.host.pattern": PATTERN,
                                              "proxy.metadata.refresh.ms": 1000}))
            self.gateway.start()
            line = self.gateway.wait_log("(SNI routing;", timeout=30)
            self.port = int(line.split("Kafka proxy on 127.0.0.1:")[1].split(" ")[0])
            # The topology knows the brokers (a name for one of them is served).
            self.gateway.wait_log("upstream broker 3 joined", timeout=30)
        except BaseException:
            self.cluster.stop()
            raise

    def connect(self, name):
        """A TLS connection to the proxy's one port sending `name` as its server name (None:
        no SNI at all)."""
        ctx = client_context(self.pki)
        if name is None:
            ctx.check_hostname = False
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            return ctx.wrap_socket(raw, server_hostname=name)
        except BaseException:
            raw.close()
            raise

    def close(self):
        try:
            self.gateway.close()
        finally:
            self.cluster.stop()


@pytest.fixture(scope="module")
def sni(tmp_path_factory):
    p = SniProxy(tmp_path_factory.mktemp("sni-pki"))
    try:
        yield p
    finally:
        p.close()


def metadata_v1(sock, topics, correlation_id=11):
    """(brokers [(node, host, port)], {partition: leader}) of the first topic, Metadata v1."""
    body = exchange(sock, METADATA, 1, metadata_request(1, topics), correlation_id)
    brokers = metadata_brokers(1, body)
    # Skip the brokers again to reach controller_id and the topics.
    pos = 4
    for _ in brokers:
        pos += 4
        (n,) = struct.unpack_from(">h", body, pos)
        pos += 2 + n + 4
        (n,) = struct.unpack_from(">h", body, pos)
        pos += 2 + max(n, 0)
    pos += 4  # controller_id
    leaders = {}
    (n_topics,) = struct.unpack_from(">i", body, pos)
    pos += 4
    for _ in range(n_topics):
        pos += 2  # error_code
        (n,) = struct.unpack_from(">h", body, pos)
        pos += 2 + n + 1  # name, is_internal
        (n_parts,) = struct.unpack_from(">i", body, pos)
        pos += 4
        for _ in range(n_parts):
            _err, index, leader = struct.unpack_from(">hii", body, pos)
            pos += 10
            for _ in range(2):  # replicas, isr
                (k,) = struct.unpack_from(">i", body, pos)
                pos += 4 + 4 * k
            leaders.setdefault(index, leader)
    return brokers, leaders


def produce_error(sock, partition, value, correlation_id):
    sock.sendall(kafka_request(0, 3, correlation_id,
                               produce_v3(TOPIC, partition, batch([value]))))
    frame = read_frame(sock)
    assert struct.unpack_from(">i", frame, 0)[0] == correlation_id
    [(_, index, error, _)] = parse_produce_v3_response(frame[4:])
    assert index == partition
    return error


def test_metadata_and_coordinators_name_every_broker_on_the_one_port(sni):
    with sni.connect("bootstrap.kafka.test") as s:
        brokers, leaders = metadata_v1(s, [TOPIC])
        assert sorted(brokers) == [(n, f"broker-{n}.kafka.test", sni.port) for n in (1, 2, 3)]
        assert sorted(leaders) == [0, 1, 2]
        # Every version offered (the upstream's and the codec's common ones).
        _, offered = api_versions(s)
        for v in range(offered[METADATA][0], offered[METADATA][1] + 1):
            body = exchange(s, METADATA, v, metadata_request(v, [TOPIC]), 20 + v)
            assert sorted(metadata_brokers(v, body)) == sorted(brokers), v
        for v in range(offered[FIND_COORDINATOR][0], offered[FIND_COORDINATOR][1] + 1):
            body = exchange(s, FIND_COORDINATOR, v, find_coordinator_request(v, "sni-group"),
                            40 + v)
            [(error, node, host, port)] = find_coordinator_addresses(v, body)
            assert error == 0, v
            assert (host, port) == (f"broker-{node}.kafka.test", sni.port), v
    # No node port is bound (a node port's log line is "upstream broker N served on H:P").
    assert not re.search(r"upstream broker \d+ served on", sni.gateway.log_text())


def test_server_name_picks_the_broker(sni):
    with sni.connect("bootstrap.kafka.test") as s:
        _, leaders = metadata_v1(s, [TOPIC])
    corr = 100
    for partition, leader in sorted(leaders.items()):
        other = 1 + leader % 3
        # Named for the leader: that broker takes the record.
        with sni.connect(f"broker-{leader}.kafka.test") as s:
            corr += 1
            assert produce_error(s, partition, f"to-{leader}".encode(), corr) == 0
        # Named for another broker (case differs: DNS names are caseless): that broker is not
        # the leader and says so, so the connection did reach it and not the leader.
        with sni.connect(f"BROKER-{other}.Kafka.Test") as s:
            corr += 1
            assert produce_error(s, partition, b"wrong", corr) == NOT_LEADER_OR_FOLLOWER


def test_no_or_other_name_is_the_bootstrap(sni):
    for name in (None, "kafka.test", "broker-x.kafka.test", "broker-01.kafka.test"):
        with sni.connect(name) as s:
            brokers, _ = metadata_v1(s, [TOPIC])
            assert len(brokers) == 3, name


def test_name_of_a_node_the_cluster_lacks_is_closed(sni):
    with sni.connect("broker-9.kafka.test") as s:
        assert tls_closed(s)
    sni.gateway.wait_log("TLS server name 'broker-9.kafka.test' names upstream broker 9, which "
                         "the cluster does not have")
    # The gateway goes on serving.
    with sni.connect("broker-1.kafka.test") as s:
        assert len(metadata_v1(s, [TOPIC])[0]) == 3


def test_advertised_port_of_a_load_balancer(sni):
    """Behind a load balancer the advertised port is the balancer's (--advertise-kafka): every
    broker is advertised there, under the pattern's names."""
    g = Gateway(sni.cluster.bootstrap,
                args=["--kafka", "SSL://127.0.0.1:0", "--advertise-kafka", "kafka.test:9093"],
                settings=sni.pki.settings(**{"proxy.sni.host.pattern": PATTERN}))
    try:
        g.start()
        line = g.wait_log("(SNI routing;", timeout=30)
        port = int(line.split("Kafka proxy on 127.0.0.1:")[1].split(" ")[0])
        g.wait_log("upstream broker 3 joined", timeout=30)
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        with client_context(sni.pki).wrap_socket(raw, server_hostname="kafka.test") as s:
            brokers, _ = metadata_v1(s, [TOPIC])
        assert sorted(brokers) == [(n, f"broker-{n}.kafka.test", 9093) for n in (1, 2, 3)]
    finally:
        g.close()


CONSUMER = textwrap.dedent("""
    import json, sys, time
    from confluent_kafka import Consumer
    cfg, want, topic = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    c = Consumer(cfg)
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + 40
    while len(got) < want and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value().decode())
    c.commit(asynchronous=False)  # raises unless the group's coordinator took it
    c.close()
    print(json.dumps(sorted(got)))
""")


def test_real_clients_through_sni_names(sni, tmp_path):
    """kcat produces to each partition, confluent-kafka consumes them in a group, both through
    bootstrap.kafka.test and the broker names the proxy advertises, resolved by the shim."""
    lookups = tmp_path / "lookups"
    env = dict(os.environ, LD_PRELOAD=resolve_shim_path(), SLUICE_RESOLVE_LOG=str(lookups))
    bootstrap = f"bootstrap.kafka.test:{sni.port}"
    ca = sni.pki.path("ca.pem")
    sent = {}
    for p in range(3):
        values = [f"p{p}-{i}" for i in range(5)]
        r = subprocess.run(["kcat", "-b", bootstrap, "-X", "security.protocol=SSL",
                            "-X", f"ssl.ca.location={ca}", "-P", "-t", CLIENT_TOPIC,
                            "-p", str(p)],
                           input="\n".join(values) + "\n", capture_output=True, text=True,
                           timeout=60, env=env)
        assert r.returncode == 0, r.stderr
        sent.update({v: p for v in values})
    # Every record is in the upstream, in the partition it was sent to (read straight from
    # the cluster: no shim, no proxy).
    upstream = kcat_read(sni.cluster.bootstrap, CLIENT_TOPIC, len(sent), fmt="%p %s\\n")
    assert sorted(upstream) == sorted(f"{p} {v}" for v, p in sent.items())
    cfg = {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": ca,
           "group.id": "sni-group", "auto.offset.reset": "earliest",
           "enable.auto.commit": False}
    r = subprocess.run([sys.executable, "-c", CONSUMER, json.dumps(cfg), str(len(sent)),
                        CLIENT_TOPIC], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == sorted(sent)
    # The clients looked up the names the proxy advertised for the partitions' leaders (and
    # only the shim answered them).
    with sni.connect("bootstrap.kafka.test") as s:
        _, leaders = metadata_v1(s, [CLIENT_TOPIC])
    names = set(lookups.read_text().split())
    wanted = {"bootstrap.kafka.test"} | {f"broker-{n}.kafka.test" for n in leaders.values()}
    assert wanted <= names, names


@pytest.mark.parametrize("args,settings,why", [
    (["--kafka", "127.0.0.1:0"], {}, "has no TLS"),
    (["--kafka", "SSL://127.0.0.1:0", "--kafka", "SASL_PLAINTEXT://127.0.0.1:0"], {},
     "has no TLS"),
    (["--kafka", "SSL://127.0.0.1:0"], {"proxy.sni.host.pattern": "broker.kafka.test"},
     "has no $(nodeId)"),
    (["--kafka", "SSL://127.0.0.1:0"], {"proxy.node.port.base": "21000"},
     "no node ports are bound"),
])
def test_refused_at_start(sni, args, settings, why):
    s = {**sni.pki.settings(), "proxy.sni.host.pattern": PATTERN, **settings}
    g = Gateway(sni.cluster.bootstrap, args=args, settings=s)
    try:
        code, stderr = g.run_to_exit()
    finally:
        g.close()
    assert code != 0
    assert why in stderr, stderr
    assert "proxy." in stderr, stderr
