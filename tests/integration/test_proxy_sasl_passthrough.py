"""SASL passthrough through the Kafka proxy (upstream mode, proxy.sasl.passthrough): the gateway
does not terminate its clients' SASL logins; their SaslHandshake and SaslAuthenticate go to the
upstream broker, which authenticates them with its own users and authorizes them with its own
ACLs. The SCRAM users dave and erin exist only on the native upstream (its authorizer on, dave
granted the topic, erin nothing, the gateway's own account a super user): dave produces and
consumes through the proxy with SCRAM-SHA-256 and -512 and his records are in the upstream;
erin logs in but is refused the topic by the upstream (TOPIC_AUTHORIZATION_FAILED, so the
upstream saw her principal, not the gateway's); a wrong password and a user that exists only on
the gateway are refused by the upstream, and a request before any login is closed by it (the
gateway's own super-user login is not lent to clients). After SaslHandshake v0 the bare tokens
of PLAIN and SCRAM pass through (the upstream sees dave and erin as themselves, and closes on a
wrong password); v0 for another mechanism is refused, v1 goes on. SNI routing on a SASL_SSL listener with passthrough carries a real
client's login to the broker its server name picks. A plaintext listener, the gateway's
authorizer or proxy.principal.map with passthrough, or a PLAINTEXT upstream, refuse to start
naming the setting.
"""
import json
import os
import subprocess
import sys
import textwrap
import uuid

import pytest
from confluent_kafka import KafkaError, Producer

from harness import connect, kafka_request, read_frame
from sasl_support import auth_error, consume_all, produce, set_user
from upstream_support import (Gateway, NativeUpstream, add_acl, listener_port, proxy_kafka_args,
                              resolve_shim_path)

TOPIC = "passthrough"
GATEWAY_USER, GATEWAY_PASSWORD = "gateway", "gateway-Secret-9"
DAVE, DAVE_PASSWORD = "dave", "dave-Secret-4"
ERIN, ERIN_PASSWORD = "erin", "erin-Secret-5"
# Only on the gateway: the upstream does not know her.
GWONLY, GWONLY_PASSWORD = "frank", "frank-Secret-6"




class Passthrough:
    def __init__(self):
        self.upstream = NativeUpstream(
            args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
            settings={"authorizer.enabled": "true", "super.users": f"User:{GATEWAY_USER}"})
        for name, password in ((GATEWAY_USER, GATEWAY_PASSWORD), (DAVE, DAVE_PASSWORD),
                               (ERIN, ERIN_PASSWORD)):
            set_user(self.upstream.data_dir, name, password)
        add_acl(self.upstream.data_dir, DAVE, ["--topic", TOPIC, "--operation", "All"])
        add_acl(self.upstream.data_dir, DAVE, ["--group", "sasl-test", "--operation", "All"])
        self.upstream.start()
        self.upstream_sasl = f"127.0.0.1:{listener_port(self.upstream, 'kafka_sasl_plaintext')}"
        self.gateway = None
        try:
            self._admin_create_topic()
            self.gateway = Gateway(self.upstream_sasl, args=proxy_kafka_args("SASL_PLAINTEXT"),
                                   settings=self.settings())
            set_user(self.gateway.data_dir, GWONLY, GWONLY_PASSWORD)
            self.gateway.start()
            self.port = listener_port(self.gateway, "kafka_sasl_plaintext")
            self.gateway.wait_log(" served on 127.0.0.1:", timeout=30)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def settings(**extra):
        s = {"proxy.sasl.passthrough": "true", "proxy.metadata.refresh.ms": 1000,
             "upstream.security.protocol": "SASL_PLAINTEXT",
             "upstream.sasl.mechanism": "SCRAM-SHA-512",
             "upstream.sasl.username": GATEWAY_USER, "upstream.sasl.password": GATEWAY_PASSWORD}
        s.update(extra)
        return s

    def _admin_create_topic(self):
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient(self.upstream_admin())
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)

    def upstream_admin(self):
        """The upstream straight, as its super user."""
        return {"bootstrap.servers": self.upstream_sasl, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": GATEWAY_USER,
                "sasl.password": GATEWAY_PASSWORD}

    def client(self, user, password, mechanism="SCRAM-SHA-256", **extra):
        cfg = {"bootstrap.servers": f"127.0.0.1:{self.port}",
               "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
               "sasl.username": user, "sasl.password": password}
        cfg.update(extra)
        return cfg

    def close(self):
        try:
            if self.gateway is not None:
                self.gateway.close()
        finally:
            self.upstream.close()


@pytest.fixture(scope="module")
def passthrough():
    p = Passthrough()
    try:
        yield p
    finally:
        p.close()


def test_upstream_user_produces_and_consumes_through_the_proxy(passthrough):
    tag = uuid.uuid4().hex[:8]
    values = [f"{m}-{tag}" for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
    for mechanism, value in zip(("SCRAM-SHA-256", "SCRAM-SHA-512"), values):
        produce(passthrough.client(DAVE, DAVE_PASSWORD, mechanism), TOPIC, [value])
    got = consume_all(passthrough.client(DAVE, DAVE_PASSWORD, "SCRAM-SHA-512"), TOPIC, 2)
    assert set(values) <= set(got)
    # The records are in the upstream.
    upstream = consume_all(passthrough.upstream_admin(), TOPIC, 2)
    assert set(values) <= set(upstream)


def test_the_upstream_authorizes_the_clients_principal(passthrough):
    # erin's login succeeds at the upstream, but the upstream's ACLs give her nothing.
    errors = []
    p = Producer(dict(passthrough.client(ERIN, ERIN_PASSWORD), **{
        "error_cb": errors.append, "message.timeout.ms": 10000}))
    delivered = []
    p.produce(TOPIC, b"erin", on_delivery=lambda err, msg: delivered.append(err))
    p.flush(20)
    assert len(delivered) == 1 and delivered[0] is not None
    assert delivered[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, delivered[0]
    assert not [e for e in errors if e.code() == KafkaError._AUTHENTICATION], errors


def test_logins_the_upstream_does_not_know_are_refused(passthrough):
    # A wrong password, and a user only the gateway has: the upstream refuses both.
    for user, password in ((DAVE, "not-the-password"), (GWONLY, GWONLY_PASSWORD)):
        err = auth_error(passthrough.client(user, password))
        assert err is not None and err.code() == KafkaError._AUTHENTICATION, (user, err)
    # The gateway's own users were not asked (it does not terminate SASL).
    assert "authentication failed: user" not in passthrough.gateway.log_text()


def test_no_request_passes_without_a_login(passthrough):
    # The client's upstream connection is not logged in as the gateway (a super user there):
    # a request before any login reaches an unauthenticated upstream session, which closes.
    from sasl_support import closed_by_peer, metadata_v1_all
    with connect(passthrough.port) as s:
        s.sendall(metadata_v1_all())
        assert closed_by_peer(s)


def bare(token):
    """A bare SASL token as v0 clients send it: length-prefixed, no request header."""
    return len(token).to_bytes(4, "big") + token


def scram_v0_login(s, user, password, mechanism="SCRAM-SHA-256"):
    """SCRAM (RFC 5802) in bare tokens after an accepted SaslHandshake v0; the server-final
    message's signature is checked."""
    import base64
    import hashlib
    import hmac
    algo = hashlib.sha256 if mechanism.endswith("256") else hashlib.sha512
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n={user},r={nonce}"
    s.sendall(bare(b"n,," + first_bare.encode()))
    server_first = read_frame(s).decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    assert attrs["r"].startswith(nonce), server_first
    salted = hashlib.pbkdf2_hmac(algo().name, password.encode(), base64.b64decode(attrs["s"]),
                                 int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", algo).digest()
    final_bare = f"c=biws,r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{final_bare}".encode()
    signature = hmac.new(algo(client_key).digest(), auth_message, algo).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    s.sendall(bare(f"{final_bare},p={base64.b64encode(proof).decode()}".encode()))
    server_final = read_frame(s).decode()
    server_key = hmac.new(salted, b"Server Key", algo).digest()
    expected = base64.b64encode(hmac.new(server_key, auth_message, algo).digest()).decode()
    assert server_final == f"v={expected}", server_final


def lists_topic(s, correlation_id):
    """Metadata v1 (all topics) on a logged-in connection: whether TOPIC is in the answer (the
    upstream lists only the topics the principal may describe)."""
    from sasl_support import metadata_v1_all
    s.sendall(metadata_v1_all(correlation_id=correlation_id))
    body = read_frame(s)
    assert body[:4] == correlation_id.to_bytes(4, "big")
    return TOPIC.encode() in body


def test_sasl_handshake_v0_bare_tokens_pass_through(passthrough):
    # compat: kafka-python with an old api_version and sarama before Kafka 1.0 send
    # SaslHandshake v0, then the mechanism's tokens bare (no header): the upstream answers
    # each with a bare frame and authenticates the client itself.
    from sasl_support import closed_by_peer, sasl_handshake
    with connect(passthrough.port) as s:
        assert sasl_handshake(s, "PLAIN", version=0)[0] == 0
        s.sendall(bare(f"\0{DAVE}\0{DAVE_PASSWORD}".encode()))
        assert read_frame(s) == b""  # PLAIN's empty server token, a bare frame
        assert lists_topic(s, 7)  # dave may describe the topic upstream
    with connect(passthrough.port) as s:
        assert sasl_handshake(s, "PLAIN", version=0)[0] == 0
        s.sendall(bare(f"\0{ERIN}\0{ERIN_PASSWORD}".encode()))
        assert read_frame(s) == b""
        assert not lists_topic(s, 8)  # the upstream saw erin, who may not
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        with connect(passthrough.port) as s:
            assert sasl_handshake(s, mechanism, version=0)[0] == 0
            scram_v0_login(s, DAVE, DAVE_PASSWORD, mechanism)
            assert lists_topic(s, 9)
    # A wrong password and a gateway-only user: the upstream closes the connection.
    for user, password in ((DAVE, "not-the-password"), (GWONLY, GWONLY_PASSWORD)):
        with connect(passthrough.port) as s:
            assert sasl_handshake(s, "PLAIN", version=0)[0] == 0
            s.sendall(bare(f"\0{user}\0{password}".encode()))
            assert closed_by_peer(s)
    assert passthrough.gateway.alive()


def test_sasl_handshake_v0_for_other_mechanisms_is_refused(passthrough):
    # How many bare tokens GSSAPI exchanges is the mechanism's business: UNSUPPORTED_VERSION in
    # a SaslHandshake v0 answer (no mechanisms), then v1 on the same connection goes upstream.
    import struct
    with connect(passthrough.port) as s:
        s.sendall(kafka_request(17, 0, 5, struct.pack(">h", 6) + b"GSSAPI"))
        assert read_frame(s) == struct.pack(">ihi", 5, 35, 0)
        s.sendall(kafka_request(17, 1, 6, struct.pack(">h", 13) + b"SCRAM-SHA-256"))
        frame = read_frame(s)
        corr, error, n = struct.unpack_from(">ihi", frame, 0)
        assert (corr, error) == (6, 0) and n >= 1, frame
    passthrough.gateway.wait_log("SaslHandshake v0 for 'GSSAPI' cannot pass through")


SNI_PRODUCER = textwrap.dedent("""
    import json, sys
    from confluent_kafka import Producer
    cfg, topic, value = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    errors = []
    p = Producer(cfg)
    p.produce(topic, value.encode(), partition=0,
              on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(30) == 0, "not delivered"
    assert not errors, errors
""")


def test_passthrough_on_sasl_ssl_with_sni_routing(passthrough, tmp_path):
    """SASL_SSL with SNI routing (proxy.sni.host.pattern) and passthrough together: TLS ends
    at the gateway, the server name picks the broker, the login goes to it. A real client
    (confluent-kafka, names resolved by the LD_PRELOAD shim) produces as dave."""
    from tls_support import Pki
    (tmp_path / "pki").mkdir()
    pki = Pki(tmp_path / "pki", names=("*.kafka.test", "kafka.test"))
    g = Gateway(passthrough.upstream_sasl, args=["--kafka", "SASL_SSL://127.0.0.1:0"],
                settings=pki.settings(**Passthrough.settings(**{
                    "proxy.sni.host.pattern": "broker-$(nodeId).kafka.test"})))
    try:
        g.start()
        port = listener_port(g, "kafka_sasl_ssl")
        g.wait_log("upstream broker 0 joined", timeout=30)
        lookups = tmp_path / "lookups"
        env = dict(os.environ, LD_PRELOAD=resolve_shim_path(), SLUICE_RESOLVE_LOG=str(lookups))
        cfg = passthrough.client(DAVE, DAVE_PASSWORD, "SCRAM-SHA-512", **{
            "bootstrap.servers": f"bootstrap.kafka.test:{port}",
            "security.protocol": "SASL_SSL", "ssl.ca.location": pki.path("ca.pem")})
        value = f"sni-{uuid.uuid4().hex[:8]}"
        r = subprocess.run([sys.executable, "-c", SNI_PRODUCER, json.dumps(cfg), TOPIC, value],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr
        assert "broker-0.kafka.test" in lookups.read_text().split()
    finally:
        g.close()
    assert_in_upstream(passthrough, value)


def assert_in_upstream(passthrough, value, timeout=30):
    """Reads TOPIC straight from the upstream (as its super user) until `value` shows up."""
    import time
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(dict(passthrough.upstream_admin(), **{"group.id": "sasl-test",
                                                       "enable.auto.commit": False}))
    c.assign([TopicPartition(TOPIC, 0, 0)])
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None and m.value().decode() == value:
                return
    finally:
        c.close()
    raise AssertionError(f"{value} not in the upstream within {timeout}s")


@pytest.mark.parametrize("args,extra,why", [
    (["--kafka", "127.0.0.1:0"], {}, "not SASL_PLAINTEXT or SASL_SSL"),
    (["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"], {"authorizer.enabled": "true"},
     "authorizer.enabled"),
    (["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"], {"upstream.security.protocol": "PLAINTEXT"},
     "upstream.security.protocol"),
])
def test_refused_at_start(passthrough, args, extra, why):
    settings = Passthrough.settings(**extra)
    if extra.get("upstream.security.protocol") == "PLAINTEXT":
        for k in ("upstream.sasl.mechanism", "upstream.sasl.username", "upstream.sasl.password"):
            settings.pop(k)
    g = Gateway(passthrough.upstream_sasl, args=args, settings=settings)
    try:
        code, stderr = g.run_to_exit()
    finally:
        g.close()
    assert code != 0
    assert "proxy.sasl.passthrough" in stderr and why in stderr, stderr


def test_refused_with_a_principal_map(passthrough, tmp_path):
    map_file = tmp_path / "principals"
    map_file.write_text(f"User:dave -> SCRAM-SHA-512 {DAVE} {DAVE_PASSWORD}\n")
    map_file.chmod(0o600)
    g = Gateway(passthrough.upstream_sasl, args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
                settings=Passthrough.settings(**{"proxy.principal.map": str(map_file)}))
    try:
        code, stderr = g.run_to_exit()
    finally:
        g.close()
    assert code != 0
    assert "proxy.sasl.passthrough" in stderr and "proxy.principal.map" in stderr, stderr
