"""SASL through the Kafka proxy (upstream mode, gateway/proxy): the gateway terminates its
clients' SASL logins on a SASL_PLAINTEXT listener (PLAIN, SCRAM-SHA-256/512 against its own
users, as the broker mode does) and logs in to a SASL upstream with its own credentials
(upstream.sasl.*, SCRAM-SHA-512). kcat and confluent-kafka produce and consume through it;
their records are read back straight from the upstream. A wrong password is refused at the
gateway and nothing is forwarded (a request before the login closes the connection
unanswered); SaslHandshake v0 with bare tokens and ApiVersions before the login are answered
by the gateway itself.

With the authorizer on (the gateway's ACLs, asked through the policy chain as the broker mode
asks them) a principal without rights gets TOPIC_AUTHORIZATION_FAILED on produce and fetch and
GROUP_AUTHORIZATION_FAILED on a group while alice and bob, granted, produce and consume on the
same listener; a Produce naming an allowed and a denied topic goes up without the denied one and
the answer has both; an API the proxy cannot name resources in is neither advertised nor
forwarded. A second gateway with producer and consumer quotas holds a producer and a consumer
through its proxy near the quota, and they see throttle_time_ms. A third one serves the proxy on
SSL and SASL_SSL listeners (TLS terminated at the gateway), with OAUTHBEARER tokens whose expiry
ends the session (KIP-368).

One native SASL upstream and one gateway with the authorizer on for the whole file (module
fixtures), the quota and TLS gateways beside it.
"""
import re
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from harness import connect, kafka_request, read_frame
from kafka_wire import batch, parse_produce_v3_response
from sasl_support import (PASSWORDS, api_versions_keys, auth_error, closed_by_peer, kbytes,
                          kstring, metadata_v1_all, produce, sasl_authenticate, sasl_handshake,
                          set_user)
from upstream_support import (Gateway, NativeUpstream, add_acl, listener_port, proxy_kafka_args,
                              read_until)

TOPIC = "sec-proxy"
# The gateway's own account at the upstream; its clients' accounts are the gateway's users.
GATEWAY_USER, GATEWAY_PASSWORD = "gateway", "gateway-Secret-9"
# A user of the gateway with DESCRIBE on TOPIC only.
CAROL, CAROL_PASSWORD = "carol", "carol-Secret-3"
SECRET_TOPIC = "sec-proxy-secret"
# The gateway's ACLs: alice and bob may do everything on TOPIC and on the sec-proxy* groups.
GRANTS = [(user, flags) for user in ("alice", "bob") for flags in (
    ["--topic", TOPIC, "--operation", "All"],
    ["--group", "sec-proxy", "--resource-pattern-type", "prefixed", "--operation", "All"])] + [
    (CAROL, ["--topic", TOPIC, "--operation", "Describe"])]




def read_topic(cfg, wanted):
    """TOPIC's values until `wanted` were all seen, as a sec-proxy-* group (what the ACLs grant)."""
    return read_until(cfg, TOPIC, wanted, group_prefix="sec-proxy-")


def wait_node_ports(gateway, timeout=30):
    """Waits until the gateway serves an upstream node (its topology logged in upstream and
    read the brokers); the gateway's log goes to stderr when it does not."""
    try:
        return gateway.wait_log(" served on 127.0.0.1:", timeout=timeout)
    except Exception:
        import sys
        print(gateway.log_text(), file=sys.stderr)
        raise


class SecuredProxy:
    def __init__(self):
        self.upstream = NativeUpstream(args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"])
        set_user(self.upstream.data_dir, GATEWAY_USER, GATEWAY_PASSWORD)
        self.upstream.start()
        self.upstream_sasl = f"127.0.0.1:{listener_port(self.upstream, 'kafka_sasl_plaintext')}"
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.upstream.bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1),
                                      NewTopic(SECRET_TOPIC, 1, 1)]).values():
            f.result(30)
        self.gateway = Gateway(
            self.upstream_sasl, args=proxy_kafka_args("SASL_PLAINTEXT"),
            settings={"proxy.metadata.refresh.ms": 1000,
                      "upstream.security.protocol": "SASL_PLAINTEXT",
                      "upstream.sasl.mechanism": "SCRAM-SHA-512",
                      "upstream.sasl.username": GATEWAY_USER,
                      "upstream.sasl.password": GATEWAY_PASSWORD,
                      "authorizer.enabled": "true"})
        for name, password in list(PASSWORDS.items()) + [(CAROL, CAROL_PASSWORD)]:
            set_user(self.gateway.data_dir, name, password)
        for user, flags in GRANTS:
            add_acl(self.gateway.data_dir, user, flags)
        self.gateway.start()
        self.port = listener_port(self.gateway, "kafka_sasl_plaintext")
        # Every upstream node gets its (SASL) node port once the gateway logged in upstream.
        wait_node_ports(self.gateway)

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def client(self, mechanism, user="alice", password=None, **extra):
        cfg = {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_PLAINTEXT",
               "sasl.mechanism": mechanism, "sasl.username": user,
               "sasl.password": (PASSWORDS.get(user, CAROL_PASSWORD) if password is None
                                 else password)}
        cfg.update(extra)
        return cfg

    def close(self):
        try:
            self.gateway.close()
        finally:
            self.upstream.close()


@pytest.fixture(scope="module")
def proxy():
    p = SecuredProxy()
    try:
        yield p
    finally:
        p.close()



def test_confluent_plain_and_scram_through_the_proxy(proxy):
    tag = uuid.uuid4().hex[:8]
    wanted = {f"{m}-{tag}" for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")}
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        produce(proxy.client(mechanism), TOPIC, [f"{mechanism}-{tag}"])
    # Read back through the proxy as another user, and straight from the upstream.
    read_topic(proxy.client("SCRAM-SHA-512", user="bob"), wanted)
    read_topic({"bootstrap.servers": proxy.upstream.bootstrap}, wanted)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kcat_through_the_proxy(proxy, mechanism):
    tag = uuid.uuid4().hex[:8]
    sasl = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanism={mechanism}",
            "-X", "sasl.username=alice", "-X", f"sasl.password={PASSWORDS['alice']}"]
    r = subprocess.run(["kcat", "-b", proxy.bootstrap, "-P", "-t", TOPIC, "-p", "0"] + sasl,
                       input=f"kcat-{tag}\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["kcat", "-b", proxy.bootstrap, "-C", "-t", TOPIC, "-p", "0", "-o",
                        "beginning", "-e", "-f", "%s\\n"] + sasl,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"kcat-{tag}" in r.stdout.split("\n")
    # The record is in the upstream.
    read_topic({"bootstrap.servers": proxy.upstream.bootstrap}, {f"kcat-{tag}"})


def test_wrong_password_is_refused_at_the_gateway(proxy):
    err = auth_error(proxy.client("SCRAM-SHA-256", password="not-the-password"))
    assert err is not None and err.code() == KafkaError._AUTHENTICATION, err
    proxy.gateway.wait_log("authentication failed: user 'alice'")
    # Raw: SASL_AUTHENTICATION_FAILED (58), then the connection closes.
    with connect(proxy.port) as s:
        assert sasl_handshake(s, "PLAIN")[0] == 0
        error, message, _ = sasl_authenticate(s, b"\0alice\0wrong")
        assert error == 58, (error, message)
        assert "alice" not in (message or "")
        assert closed_by_peer(s)


def test_nothing_is_forwarded_before_the_login(proxy):
    with connect(proxy.port) as s:
        # ApiVersions is answered by the gateway itself (SaslHandshake, SaslAuthenticate and
        # the upstream's APIs are listed).
        keys = api_versions_keys(s)
        assert {0, 1, 3, 17, 18, 36} <= keys
        # Any other request before the login closes the connection unanswered.
        s.sendall(metadata_v1_all())
        assert closed_by_peer(s)
    # An unknown mechanism: UNSUPPORTED_SASL_MECHANISM (33) with the enabled list, then closed.
    with connect(proxy.port) as s:
        error, mechanisms = sasl_handshake(s, "GSSAPI")
        assert error == 33
        assert set(mechanisms) >= {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
        assert closed_by_peer(s)


def test_handshake_v0_with_bare_tokens_then_forwarding(proxy):
    with connect(proxy.port) as s:
        assert sasl_handshake(s, "PLAIN", version=0)[0] == 0
        token = f"\0bob\0{PASSWORDS['bob']}".encode()
        s.sendall(kbytes(token))
        assert read_frame(s) == b""  # the empty server reply, a bare frame
        s.sendall(metadata_v1_all(correlation_id=7))
        body = read_frame(s)
        assert struct.unpack(">i", body[:4])[0] == 7
        assert TOPIC.encode() in body
        # The brokers it lists are the gateway's node ports, never the upstream's.
        assert str(proxy.upstream.kafka_port).encode() not in body


def test_a_login_after_success_on_the_node_port_too(proxy):
    # A client that learnt the node ports from Metadata logs in there as well (librdkafka
    # connects to them for produce and fetch): the SCRAM produce above proved that; here a
    # bad login on a node port is refused as on the bootstrap port.
    line = wait_node_ports(proxy.gateway)
    node_port = int(re.search(r"served on [^ ]*:(\d+)", line).group(1))
    with connect(node_port) as s:
        s.sendall(metadata_v1_all())
        assert closed_by_peer(s)
    with connect(node_port) as s:
        assert sasl_handshake(s, "PLAIN")[0] == 0
        error, _, _ = sasl_authenticate(s, f"\0alice\0{PASSWORDS['alice']}".encode())
        assert error == 0
        s.sendall(metadata_v1_all(correlation_id=9))
        assert struct.unpack(">i", read_frame(s)[:4])[0] == 9


def raw_login(port, user, password):
    """A socket logged in at the gateway with SASL PLAIN (SaslHandshake v1, SaslAuthenticate)."""
    s = connect(port)
    assert sasl_handshake(s, "PLAIN")[0] == 0
    assert sasl_authenticate(s, f"\0{user}\0{password}".encode())[0] == 0
    return s


def produce_v3_topics(topics, values):
    """A Produce v3 body (acks=1) of one batch of `values` to partition 0 of each topic."""
    records = batch([v.encode() for v in values])
    body = struct.pack(">hhi", -1, 1, 10000) + struct.pack(">i", len(topics))
    for t in topics:
        body += kstring(t) + struct.pack(">ii", 1, 0) + struct.pack(">i", len(records))
        body += records
    return body


def delivery_errors(cfg, topic, count=1, timeout=30):
    """Produces `count` records; the delivery reports' errors (None for a delivered one)."""
    from confluent_kafka import Producer
    errors = []
    p = Producer(dict(cfg, **{"message.timeout.ms": 15000}))
    for i in range(count):
        p.produce(topic, f"v{i}".encode(), partition=0,
                  on_delivery=lambda err, msg: errors.append(err))
    p.flush(timeout)
    assert len(errors) == count, errors
    return errors


def consumer_error(cfg, wanted, subscribe=None, assign=None, timeout=30):
    """Polls a consumer (subscribed to `subscribe` or assigned `assign`) until it reports the
    error `wanted`; fails with the errors seen after `timeout` seconds."""
    c = Consumer(dict(cfg, **{"enable.auto.commit": False, "auto.offset.reset": "earliest"}))
    seen = []
    try:
        if subscribe:
            c.subscribe(subscribe)
        else:
            c.assign(assign)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is not None:
                if m.error().code() == wanted:
                    return m.error()
                seen.append(m.error())
        raise AssertionError(f"no error {wanted} within {timeout}s: {seen}")
    finally:
        c.close()


def test_a_principal_without_rights_is_refused_per_resource(proxy):
    carol = proxy.client("SCRAM-SHA-256", user=CAROL)
    errors = delivery_errors(carol, TOPIC)
    assert errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, \
        errors
    # A fetch (an assigned partition; its group's coordinator lookup fails too, and is
    # skipped), and a group.
    consumer_error(dict(carol, **{"group.id": "carol-assign"}),
                   KafkaError.TOPIC_AUTHORIZATION_FAILED, assign=[TopicPartition(TOPIC, 0, 0)])
    consumer_error(dict(carol, **{"group.id": "carol-group"}),
                   KafkaError.GROUP_AUTHORIZATION_FAILED, subscribe=[TOPIC])
    # The refusals are the gateway's (audited there), and alice, granted, still works on the
    # same listener, in a group.
    proxy.gateway.wait_log("denied: User:carol")
    assert delivery_errors(proxy.client("SCRAM-SHA-512"), TOPIC) == [None]
    c = Consumer(proxy.client("PLAIN", user="bob", **{
        "group.id": "sec-proxy-g-" + uuid.uuid4().hex[:6], "auto.offset.reset": "earliest"}))
    try:
        c.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while True:
            assert time.monotonic() < deadline, "bob's group consumer read nothing in 30 s"
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                break
        c.commit(asynchronous=False)
    finally:
        c.close()


def test_a_produce_with_a_denied_topic_forwards_the_rest(proxy):
    tag = uuid.uuid4().hex[:8]
    with raw_login(proxy.port, "alice", PASSWORDS["alice"]) as s:
        s.sendall(kafka_request(0, 3, 11, produce_v3_topics([TOPIC, SECRET_TOPIC], [tag])))
        body = read_frame(s)
        assert struct.unpack(">i", body[:4])[0] == 11
        answers = {t: (err, base) for t, _, err, base in parse_produce_v3_response(body[4:])}
        assert answers[SECRET_TOPIC][0] == 29, answers  # TOPIC_AUTHORIZATION_FAILED
        assert answers[TOPIC][0] == 0 and answers[TOPIC][1] >= 0, answers
    # The allowed part reached the upstream; the denied topic got nothing.
    read_topic({"bootstrap.servers": proxy.upstream.bootstrap}, {tag})
    c = Consumer({"bootstrap.servers": proxy.upstream.bootstrap, "group.id": "x"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(SECRET_TOPIC, 0), timeout=10)
        assert high == 0, (low, high)
    finally:
        c.close()


def test_an_api_without_named_resources_is_not_forwarded(proxy):
    with raw_login(proxy.port, "alice", PASSWORDS["alice"]) as s:
        keys = api_versions_keys(s, correlation_id=5)
        assert {0, 1, 3} <= keys
        # DescribeAcls (29), WriteTxnMarkers (27), DescribeLogDirs (35): not advertised ...
        assert not keys & {27, 29, 35}, keys
        # ... and a request of one is answered UNSUPPORTED_VERSION (35) by the gateway, the
        # session going on.
        filter_all = struct.pack(">bhhhbb", 1, -1, -1, -1, 1, 1)  # DescribeAcls v0: ANY
        s.sendall(kafka_request(29, 0, 21, filter_all))
        body = read_frame(s)
        assert struct.unpack(">ih", body[:6]) == (21, 35)
        s.sendall(metadata_v1_all(correlation_id=22))
        assert struct.unpack(">i", read_frame(s)[:4])[0] == 22


# --- quotas ---------------------------------------------------------------------------------------
QUOTA = 300_000  # bytes/s, the default client's producer and consumer quota at the gateway
QUOTA_SECONDS = 4
QUOTA_TOPIC = "sec-proxy-quota"


@pytest.fixture(scope="module")
def metered(proxy):
    """A second gateway over the same upstream: a PLAINTEXT proxy listener, no authorizer, and
    producer and consumer quotas for every client."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": proxy.upstream.bootstrap})
    admin.create_topics([NewTopic(QUOTA_TOPIC, 1, 1)])[QUOTA_TOPIC].result(30)
    g = Gateway(proxy.upstream_sasl, args=proxy_kafka_args("PLAINTEXT"),
                settings={"upstream.security.protocol": "SASL_PLAINTEXT",
                          "upstream.sasl.mechanism": "SCRAM-SHA-256",
                          "upstream.sasl.username": GATEWAY_USER,
                          "upstream.sasl.password": GATEWAY_PASSWORD,
                          "quota.producer.default": QUOTA, "quota.consumer.default": QUOTA,
                          "proxy.metadata.refresh.ms": 1000})
    g.start()
    try:
        wait_node_ports(g)
        yield f"127.0.0.1:{listener_port(g, 'kafka')}"
    finally:
        g.close()


def test_a_producer_through_the_proxy_is_held_to_its_quota(metered):
    from confluent_kafka import Producer
    throttles, errors = [], []
    p = Producer({"bootstrap.servers": metered, "acks": "1", "linger.ms": 5,
                  "batch.size": 131072, "queue.buffering.max.kbytes": 256,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    value = b"x" * 1000
    p.produce(QUOTA_TOPIC, value, partition=0)
    assert p.flush(30) == 0
    sent, start = 0, time.monotonic()
    while time.monotonic() - start < QUOTA_SECONDS:
        try:
            p.produce(QUOTA_TOPIC, value, partition=0,
                      on_delivery=lambda err, msg: errors.append(err) if err else None)
            sent += len(value)
        except BufferError:
            p.poll(0.05)
            continue
        p.poll(0)
    assert p.flush(60) == 0
    rate = sent / (time.monotonic() - start)
    assert not errors, errors[:3]
    # throttle_time_ms reached the client, and the gateway held it near the quota (the client
    # alone goes many times faster on loopback).
    assert throttles and max(throttles) > 0, "the producer never saw throttle_time_ms"
    assert rate < 1.5 * QUOTA, f"{rate:.0f} B/s through a {QUOTA} B/s quota"


def test_a_consumer_through_the_proxy_is_held_to_its_quota(proxy, metered):
    from confluent_kafka import Producer
    # Written straight to the upstream: more than the run can read at the quota.
    p = Producer({"bootstrap.servers": proxy.upstream.bootstrap, "linger.ms": 5,
                  "batch.size": 16384})
    for _ in range(3000):
        p.produce(QUOTA_TOPIC, b"y" * 1000, partition=0)
        p.poll(0)
    assert p.flush(60) == 0
    throttles, got = [], 0
    c = Consumer({"bootstrap.servers": metered, "group.id": "sec-proxy-quota",
                  "enable.auto.commit": False,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    c.assign([TopicPartition(QUOTA_TOPIC, 0, 0)])
    start = time.monotonic()
    try:
        while time.monotonic() - start < QUOTA_SECONDS:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got += len(m.value())
    finally:
        c.close()
    assert got > 0
    assert throttles and max(throttles) > 0, "the consumer never saw throttle_time_ms"
    assert got < 2 * QUOTA * QUOTA_SECONDS, f"read {got} bytes in {QUOTA_SECONDS} s"


# --- TLS termination ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tls_proxy(proxy, tmp_path_factory):
    """A third gateway over the same upstream: the proxy on an SSL and a SASL_SSL listener
    (the broker mode's ssl.* settings; OAUTHBEARER enabled beside the password mechanisms),
    no authorizer. Yields (pki, ssl port, sasl_ssl port, the gateway, the JWT keys)."""
    from jwt_support import Keys
    from tls_support import Pki
    pki = Pki(tmp_path_factory.mktemp("proxy-pki"))
    keys = Keys(str(tmp_path_factory.mktemp("proxy-jwt")))
    g = Gateway(proxy.upstream_sasl,
                args=proxy_kafka_args("SSL", "SASL_SSL"),
                settings=pki.settings(**keys.settings(), **{
                                         "sasl.enabled.mechanisms":
                                             "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
                                         "connections.max.reauth.ms": 600000,
                                         "proxy.metadata.refresh.ms": 1000,
                                         "upstream.security.protocol": "SASL_PLAINTEXT",
                                         "upstream.sasl.mechanism": "PLAIN",
                                         "upstream.sasl.username": GATEWAY_USER,
                                         "upstream.sasl.password": GATEWAY_PASSWORD}))
    for name, password in PASSWORDS.items():
        set_user(g.data_dir, name, password)
    g.start()
    try:
        wait_node_ports(g)
        yield (pki, listener_port(g, "kafka_ssl"), listener_port(g, "kafka_sasl_ssl"), g,
               keys)
    finally:
        g.close()


def test_ssl_and_sasl_ssl_through_the_proxy(proxy, tls_proxy):
    pki, ssl_port, sasl_ssl_port, gateway, _ = tls_proxy
    tag = uuid.uuid4().hex[:8]
    tls = {"ssl.ca.location": pki.path("ca.pem")}
    ssl_cfg = dict(tls, **{"bootstrap.servers": f"127.0.0.1:{ssl_port}",
                           "security.protocol": "SSL"})
    sasl_ssl_cfg = dict(tls, **{"bootstrap.servers": f"127.0.0.1:{sasl_ssl_port}",
                                "security.protocol": "SASL_SSL",
                                "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                                "sasl.password": PASSWORDS["alice"]})
    produce(ssl_cfg, TOPIC, [f"ssl-{tag}"])
    produce(sasl_ssl_cfg, TOPIC, [f"sasl-ssl-{tag}"])
    wanted = {f"ssl-{tag}", f"sasl-ssl-{tag}"}
    # Read back through the proxy over TLS, and straight from the upstream.
    read_topic(sasl_ssl_cfg, wanted)
    read_topic({"bootstrap.servers": proxy.upstream.bootstrap}, wanted)
    # A wrong password on SASL_SSL is refused at the gateway.
    err = auth_error(dict(sasl_ssl_cfg, **{"sasl.password": "wrong"}))
    assert err is not None and err.code() == KafkaError._AUTHENTICATION, err
    # Plaintext Kafka on the SSL port gets no answer: the handshake fails and it is closed.
    with connect(ssl_port) as s:
        s.sendall(metadata_v1_all())
        assert closed_by_peer(s)
    gateway.wait_log("TLS handshake failed")


def test_a_refused_upstream_login_forwards_nothing(proxy):
    # A gateway whose own upstream password is wrong: its refresh logs the refusal, and a
    # client's connection is closed rather than forwarded unauthenticated.
    g = Gateway(proxy.upstream_sasl, args=proxy_kafka_args("PLAINTEXT"),
                settings={"upstream.security.protocol": "SASL_PLAINTEXT",
                          "upstream.sasl.mechanism": "SCRAM-SHA-512",
                          "upstream.sasl.username": GATEWAY_USER,
                          "upstream.sasl.password": "not-the-password",
                          # The start waits this long for the (refusing) cluster.
                          "upstream.request.timeout.ms": 3000})
    g.start()
    try:
        g.wait_log("login failed", timeout=30)
        with connect(listener_port(g, "kafka")) as s:
            s.sendall(metadata_v1_all())
            assert closed_by_peer(s, timeout=30)
        g.wait_log(f"user {GATEWAY_USER} with SCRAM-SHA-512: SASL_AUTHENTICATION_FAILED")
    finally:
        g.close()


def test_oauthbearer_through_the_proxy(proxy, tls_proxy):
    pki, _, sasl_ssl_port, _, keys = tls_proxy
    token = keys.token(sub="alice")
    cfg = {"bootstrap.servers": f"127.0.0.1:{sasl_ssl_port}", "security.protocol": "SASL_SSL",
           "ssl.ca.location": pki.path("ca.pem"), "sasl.mechanism": "OAUTHBEARER",
           "oauth_cb": lambda _config: (token, time.time() + 300)}
    tag = f"oauth-{uuid.uuid4().hex[:8]}"
    produce(cfg, TOPIC, [tag])
    read_topic({"bootstrap.servers": proxy.upstream.bootstrap}, {tag})
    # A token signed by a key the gateway does not know is refused there.
    stranger = keys.token(sub="alice", key=keys.stranger, kid="ec-1")
    err = auth_error(dict(cfg, oauth_cb=lambda _config: (stranger, time.time() + 300)))
    assert err is not None and err.code() == KafkaError._AUTHENTICATION, err


def test_a_token_session_ends_at_its_expiry(tls_proxy):
    # KIP-368 as in the broker mode: SaslAuthenticate v1 tells the session's lifetime (the
    # token's, shorter than connections.max.reauth.ms); a request after it closes the
    # connection.
    from tls_support import client_context, tls_connect
    pki, _, sasl_ssl_port, _, keys = tls_proxy
    token = keys.token(sub="alice", lifetime=3)
    with tls_connect(sasl_ssl_port, client_context(pki)) as s:
        assert sasl_handshake(s, "OAUTHBEARER")[0] == 0
        s.sendall(kafka_request(36, 1, 2, kbytes(
            b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01")))
        body = read_frame(s)
        error, mlen = struct.unpack(">hh", body[4:8])
        assert error == 0
        pos = 8 + max(mlen, 0)
        pos += 4 + struct.unpack(">i", body[pos:pos + 4])[0]
        lifetime = struct.unpack(">q", body[pos:pos + 8])[0]
        assert 0 < lifetime <= 3000, lifetime
        deadline = time.monotonic() + lifetime / 1000 + 10
        correlation_id = 10
        while True:
            assert time.monotonic() < deadline, "the session outlived its token"
            s.sendall(metadata_v1_all(correlation_id))
            try:
                frame = read_frame(s)
            except (ConnectionError, OSError, AssertionError):
                break  # closed: the session ended
            if not frame:
                break
            assert struct.unpack(">i", frame[:4])[0] == correlation_id
            correlation_id += 1
            time.sleep(0.25)  # paces the probe; the bound is the deadline above
