"""KIP-368 on the Kafka proxy's upstream connections (upstream mode, gateway/proxy): a cluster
with connections.max.reauth.ms ends every SASL session after that long, and closes a
connection whose session ended at its next request. The proxy re-authenticates each upstream
connection in place before its session ends (the client's requests held meanwhile, the
forwarded ones answered first), so the gateway's clients never see their connection cut.

The upstream is a native sluice with a SASL_PLAINTEXT and a SASL_SSL listener (SCRAM-SHA-512
user `gateway`, OAUTHBEARER tokens checked against the test's keys) and
connections.max.reauth.ms=3000; its
auth log (debug) names every re-authentication, its Kafka log every request refused after a
session ended. A confluent-kafka producer and a consumer group run through a gateway (its
upstream over SASL_PLAINTEXT, then over SASL_SSL) for
several session lifetimes: no error or disconnect on their side, every record consumed once,
the upstream re-authenticated the gateway's connections and closed none for an ended session.
With OAUTHBEARER from a token file, the file is rewritten with a renewed token during the run:
the first token's expiry passes without a cut (a re-authentication with it would be refused).
An attack: the file rewritten with another subject's token: the upstream refuses the
re-authentication (KIP-368 forbids a principal change); the proxy closes that client's
connection with one log line and goes on serving. And the proxy never tries a principal change
itself: with proxy.principal.map, alice's open connections keep re-authenticating as the
upstream user they logged in as after a SIGHUP maps her to another (none as the new one, no
failure); her next connection logs in as the new entry.
"""
import os
import re
import signal
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import tls_support
from harness import connect, kafka_request, read_frame
from jwt_support import Keys
from sasl_support import closed_by_peer, set_user
from upstream_support import Gateway, NativeUpstream, listener_port, proxy_kafka_args

TOPIC = "reauth-orders"
GATEWAY_USER, GATEWAY_PASSWORD = "gateway", "gateway-Secret-9"
# Upstream users of proxy.principal.map entries.
UPSTREAM = {"app-alice": "app-alice-Secret-4", "app-bob": "app-bob-Secret-5"}
SESSION_MS = 3000
# The upstream's auth log line of one re-authentication (gateway/kafka/sasl_exchange.cc).
REAUTH = re.compile(r"re-authenticated as (User:\S+) with (\S+), session (\d+) ms")
# Its Kafka log line of a request after a session ended (gateway/kafka/dispatcher.cc), for a
# request of the test's clients (their client.id; the proxy forwards their requests as they
# came). The gateway's own librdkafka clients (2.0.2: no KIP-368) are cut at each session end
# and reconnect; they are not the proxy's.
EXPIRED = re.compile(r"client 'reauth-test-[a-z]+': .* expired; closing")


class ReauthUpstream:
    def __init__(self, tmp):
        self.dir = str(tmp)
        self.keys = Keys(self.dir)
        self.pki = tls_support.Pki(tmp)
        self.upstream = NativeUpstream(
            args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0",
                  "--kafka", "SASL_SSL://127.0.0.1:0"],
            settings=dict(self.keys.settings(), **self.pki.settings(), **{
                "sasl.enabled.mechanisms": "SCRAM-SHA-512,OAUTHBEARER",
                "connections.max.reauth.ms": SESSION_MS,
                "log.level": "info,auth=debug"}))
        set_user(self.upstream.data_dir, GATEWAY_USER, GATEWAY_PASSWORD)
        for user, password in UPSTREAM.items():
            set_user(self.upstream.data_dir, user, password)
        self.upstream.start()
        self.sasl_port = listener_port(self.upstream, "kafka_sasl_plaintext")
        self.sasl_ssl_port = listener_port(self.upstream, "kafka_sasl_ssl")
        admin = AdminClient({"bootstrap.servers": self.upstream.bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)
        self.gateways = []

    def gateway(self, settings, listener="PLAINTEXT", users=None, tls=False):
        s = {"proxy.metadata.refresh.ms": 1000,
             "upstream.security.protocol": "SASL_PLAINTEXT",
             # The proxy's re-authentication lines are its debug lines.
             "log.level": "debug,upstream=info,storage=info,group=info,http=info"}
        s.update(settings)
        if tls:
            s.update({"upstream.security.protocol": "SASL_SSL",
                      "upstream.ssl.ca.location": self.pki.path("ca.pem")})
        port = self.sasl_ssl_port if tls else self.sasl_port
        g = Gateway(f"127.0.0.1:{port}", args=proxy_kafka_args(listener),
                    settings=s)
        for name, password in (users or {}).items():
            set_user(g.data_dir, name, password)
        self.gateways.append(g)
        try:
            g.start()
            g.wait_log(" served on 127.0.0.1:", timeout=30)
        except Exception:
            print(g.log_text())
            raise
        g.kafka_port = listener_port(g, "kafka" if listener == "PLAINTEXT"
                                     else "kafka_" + listener.lower())
        return g

    def reauths(self, principal):
        """The upstream's re-authentications of `principal` so far: (mechanism, session ms)."""
        out = []
        for line in self.upstream.log_text().splitlines():
            m = REAUTH.search(line)
            if m and m.group(1) == principal:
                out.append((m.group(2), int(m.group(3))))
        return out

    def close(self):
        # The gateways in parallel (each stop takes a second or two: its librdkafka clients).
        threads = [threading.Thread(target=g.close) for g in self.gateways]
        try:
            for t in threads:
                t.start()
        finally:
            for t in threads:
                t.join(60)
            self.upstream.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ReauthUpstream(tmp_path_factory.mktemp("reauth"))
    try:
        yield c
    finally:
        c.close()


def write_token(path, token):
    with open(path + ".new", "w") as f:
        f.write(token + "\n")
    os.replace(path + ".new", path)  # whoever renews it replaces it whole


def run_clients(gateway, until, timeout=40, login=None):
    """A producer and a consumer group through `gateway`'s proxy, producing a record every
    few tens of milliseconds until `until()` holds (bounded by `timeout`), then everything
    produced is read. Returns (errors seen by librdkafka, values produced, values consumed)."""
    errors = []
    logs = []

    def on_error(err):
        errors.append(str(err))

    class Log:  # librdkafka's own log lines (a disconnect is one)
        def log(self, level, fmt, *args):
            logs.append(fmt % args if args else fmt)

    common = {"bootstrap.servers": f"127.0.0.1:{gateway.kafka_port}", "error_cb": on_error,
              "logger": Log(), "log.connection.close": True}
    common.update(login or {})
    tag = uuid.uuid4().hex[:8]
    producer = Producer(dict(common, **{"client.id": "reauth-test-producer",
                                        "acks": "all", "linger.ms": 5,
                                        "enable.idempotence": True}))
    consumer = Consumer(dict(common, **{"client.id": "reauth-test-consumer",
                                        "group.id": f"reauth-{tag}",
                                        "auto.offset.reset": "earliest",
                                        "enable.auto.commit": False,
                                        "fetch.wait.max.ms": 100}))
    consumer.subscribe([TOPIC])
    produced, consumed, failed = [], [], []

    def delivered(err, msg):
        if err:
            failed.append(str(err))

    def take(wait):
        m = consumer.poll(wait)
        if m is None:
            return
        if m.error():
            errors.append(str(m.error()))
            return
        v = m.value().decode()
        if v.startswith(tag):
            consumed.append(v)

    try:
        deadline = time.monotonic() + timeout
        n = 0
        while not until():
            assert time.monotonic() < deadline, "the re-authentications did not come"
            v = f"{tag}-{n}"
            producer.produce(TOPIC, v.encode(), partition=0, on_delivery=delivered)
            produced.append(v)
            n += 1
            producer.poll(0)
            take(0.03)
        assert producer.flush(30) == 0
        end = time.monotonic() + 30
        while len(consumed) < len(produced) and time.monotonic() < end:
            take(0.2)
        # (Before the clients close: their own goodbyes are no cut.)
        seen = errors + failed + [line for line in logs
                                  if "isconnect" in line or "onnection closed" in line]
    finally:
        producer.flush(5)
        consumer.close()
    return seen, produced, consumed


def count_lines(server, needle):
    return sum(1 for line in server.log_text().splitlines() if needle in line)


def expired_closes(cluster):
    """The upstream's closes of the test clients' connections for an ended session."""
    return [line for line in cluster.upstream.log_text().splitlines() if EXPIRED.search(line)]


@pytest.mark.parametrize("upstream_tls", [False, True], ids=["sasl_plaintext", "sasl_ssl"])
def test_producer_and_consumer_ride_through_session_ends(cluster, upstream_tls):
    g = cluster.gateway({"upstream.sasl.mechanism": "SCRAM-SHA-512",
                         "upstream.sasl.username": GATEWAY_USER,
                         "upstream.sasl.password": GATEWAY_PASSWORD}, tls=upstream_tls)
    before = len(cluster.reauths("User:" + GATEWAY_USER))

    def gateway_reauths():
        return count_lines(g, "re-authenticated to upstream")

    def enough():
        # Every connection the clients use (bootstrap, leader, coordinator) lives through at
        # least two session ends: at least six re-authentications in all.
        return gateway_reauths() >= 6 and \
            len(cluster.reauths("User:" + GATEWAY_USER)) - before >= 6

    problems, produced, consumed = run_clients(g, enough)
    assert problems == [], problems
    assert sorted(consumed) == sorted(produced)  # each once
    assert len(set(consumed)) == len(consumed)
    # Each with the session's lifetime from connections.max.reauth.ms.
    assert all(mech == "SCRAM-SHA-512" and ms == SESSION_MS
               for mech, ms in cluster.reauths("User:" + GATEWAY_USER)[before:])
    log = g.log_text()
    assert "closing the client" not in log, log
    assert "re-authentication to upstream" not in log, log  # no failure line
    assert expired_closes(cluster) == []
    # The proxy's own frames never reached a client (their correlation ids are negative):
    # the clients saw no error above; and the connections were re-authenticated in place.
    assert GATEWAY_PASSWORD not in log
    assert g.alive()


def test_a_renewed_token_file_is_used_by_the_next_reauthentication(cluster):
    token_file = os.path.join(cluster.dir, f"token-{uuid.uuid4().hex[:6]}.jwt")
    first_lifetime = 6
    first = cluster.keys.token(sub="gw-oauth", lifetime=first_lifetime)
    first_expiry = time.time() + first_lifetime - 1  # (exp is whole seconds)
    write_token(token_file, first)
    g = cluster.gateway({"upstream.sasl.mechanism": "OAUTHBEARER",
                         "upstream.sasl.oauthbearer.token.endpoint.url": "file://" + token_file})
    state = {"renewed": False, "after_expiry": None}

    def done():
        seen = len(cluster.reauths("User:gw-oauth"))
        if not state["renewed"] and seen >= 1:
            # The sessions now run on the first token (its expiry bounds them); the renewed
            # one must be read before they end.
            write_token(token_file, cluster.keys.token(sub="gw-oauth", lifetime=600))
            state["renewed"] = True
        if state["renewed"] and state["after_expiry"] is None and \
                time.time() > first_expiry + 1.5:
            state["after_expiry"] = seen
        # Two re-authentications after the first token expired: both with the renewed one
        # (the upstream refuses an expired token, and the proxy would close the client).
        return state["after_expiry"] is not None and seen >= state["after_expiry"] + 2

    problems, produced, consumed = run_clients(g, done)
    assert problems == [], problems
    assert sorted(consumed) == sorted(produced)
    log = g.log_text()
    assert "closing the client" not in log, log
    assert "re-authentication to upstream" not in log, log
    assert first not in log and first.split(".")[2] not in log
    assert expired_closes(cluster) == []
    assert all(mech == "OAUTHBEARER" for mech, _ in cluster.reauths("User:gw-oauth"))


def test_a_reauthentication_as_another_principal_is_refused_and_closes_the_client(cluster):
    token_file = os.path.join(cluster.dir, f"token-{uuid.uuid4().hex[:6]}.jwt")
    write_token(token_file, cluster.keys.token(sub="gw-first", lifetime=600))
    g = cluster.gateway({"upstream.sasl.mechanism": "OAUTHBEARER",
                         "upstream.sasl.oauthbearer.token.endpoint.url": "file://" + token_file,
                         "upstream.request.timeout.ms": 5000})
    with connect(g.kafka_port) as s:
        s.sendall(kafka_request(18, 0, 1))  # ApiVersions: forwarded, the upstream logs in
        read_frame(s, timeout=20)
        # Another subject's token: the next re-authentication would change the principal.
        other = cluster.keys.token(sub="gw-second", lifetime=600)
        write_token(token_file, other)
        assert closed_by_peer(s, timeout=20)
    line = g.wait_log("re-authentication to upstream", timeout=20)
    assert "SASL_AUTHENTICATION_FAILED" in line, line
    assert "the token in " + token_file in line, line
    assert count_lines(g, "re-authentication to upstream") == 1
    assert other.split(".")[2] not in g.log_text()
    assert g.alive()
    # The gateway goes on: a new connection logs in afresh (as the new subject) and is served.
    with connect(g.kafka_port) as s:
        s.sendall(kafka_request(18, 0, 2))
        assert len(read_frame(s, timeout=20)) > 4


def test_a_mapped_principal_keeps_its_upstream_user_when_the_map_changes(cluster, tmp_path):
    """A principal change is what KIP-368 forbids: after a SIGHUP maps alice elsewhere, her open
    connections re-authenticate as the user they logged in as; only new ones take the map."""
    map_file = str(tmp_path / "principals.map")
    with open(map_file, "w") as f:
        f.write(f"User:alice -> SCRAM-SHA-512 app-alice {UPSTREAM['app-alice']}\n")
    os.chmod(map_file, 0o600)
    alice_password = "alice-Secret-1"
    g = cluster.gateway({"upstream.sasl.mechanism": "SCRAM-SHA-512",
                         "upstream.sasl.username": GATEWAY_USER,
                         "upstream.sasl.password": GATEWAY_PASSWORD,
                         "proxy.principal.map": map_file},
                        listener="SASL_PLAINTEXT", users={"alice": alice_password})
    alice = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
             "sasl.username": "alice", "sasl.password": alice_password}
    state = {"mark": None}

    def done():
        seen = len(cluster.reauths("User:app-alice"))
        if state["mark"] is None and seen >= 1:
            with open(map_file, "w") as f:
                f.write(f"User:alice -> SCRAM-SHA-512 app-bob {UPSTREAM['app-bob']}\n")
            g.proc.send_signal(signal.SIGHUP)
            g.wait_log("proxy.principal.map reloaded: 1 client principals", timeout=20)
            state["mark"] = seen
        # Each of her connections (bootstrap, leader, coordinator) once more after the reload.
        return state["mark"] is not None and seen >= state["mark"] + 3

    problems, produced, consumed = run_clients(g, done, login=alice)
    assert problems == [], problems
    assert sorted(consumed) == sorted(produced)
    assert cluster.reauths("User:app-bob") == []  # never tried
    log = g.log_text()
    assert "re-authentication to upstream" not in log, log
    assert "closing the client" not in log, log
    assert expired_closes(cluster) == []
    # A connection opened after the reload logs in upstream as the new entry says.
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{g.kafka_port}", **alice})
    producer.produce(TOPIC, b"after-reload", partition=0)
    assert producer.flush(30) == 0
    cluster.upstream.wait_log("authenticated as User:app-bob with SCRAM-SHA-512", timeout=20)
    assert UPSTREAM["app-alice"] not in log and UPSTREAM["app-bob"] not in g.log_text()
