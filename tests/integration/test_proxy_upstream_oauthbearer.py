"""OAUTHBEARER logins to the upstream (upstream mode): with upstream.sasl.mechanism=OAUTHBEARER
and upstream.sasl.oauthbearer.token.endpoint.url=file:PATH (Kafka's name; a file: URL names a
file holding the token), the Kafka proxy's connections (gateway/proxy) and the gateway's
librdkafka clients (the REST front, backend/upstream) log in with the token in that file.

The upstream is a native sluice with a SASL_PLAINTEXT listener offering OAUTHBEARER (tokens
checked against the test's keys) and the authorizer on: the token's subject gw-writer may do
everything on the topic, gw-reader only describe and read it. Through a gateway whose token
file holds gw-writer's token, a client of its plaintext proxy listener and its REST front both
produce; the records are read straight from the upstream. The file is then rewritten with
gw-reader's token: the proxy's next upstream connection logs in as gw-reader, whose produce
the upstream refuses. A token signed by a key the upstream does not know: the proxy's login is
refused (one log line naming the token file) and the client's connection closes as a dead
broker's. No token reaches the gateway's log.

proxy.principal.map's OAUTHBEARER entries: a gateway whose own token is gw-reader's maps its
client alice (SASL PLAIN at the gateway) to a token file holding gw-writer's token (a path
relative to the map's folder) and bob to one holding an expired token. alice's records reach the
upstream (only gw-writer may write them); bob's connection closes after one log line naming his
file, and alice is served as before. A map whose token file is missing is refused at SIGHUP with
its line number, the map in use kept.
"""
import json
import os
import signal
import uuid

import pytest
import requests
from confluent_kafka import KafkaError

from harness import connect, kafka_request
from jwt_support import Keys
from rest_support import V2, V2_JSON
from sasl_support import (PASSWORDS, closed_by_peer, sasl_authenticate, sasl_handshake,
                          set_user)
from test_proxy_principal_map import produce_error, read
from upstream_support import Gateway, NativeUpstream, add_acl, listener_port, proxy_kafka_args

TOPIC = "pm-orders"  # the name test_proxy_principal_map's read() reads


class OauthUpstream:
    def __init__(self, tmp):
        self.dir = str(tmp)
        self.keys = Keys(self.dir)
        self.upstream = NativeUpstream(
            args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
            settings=dict(self.keys.settings(), **{
                "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
                "authorizer.enabled": "true", "super.users": "User:ANONYMOUS"}))
        u = self.upstream.data_dir
        add_acl(u, "gw-writer", ["--topic", TOPIC, "--operation", "All"])
        for op in ("Describe", "Read"):
            add_acl(u, "gw-reader", ["--topic", TOPIC, "--operation", op])
        add_acl(u, "gw-reader", ["--group", "pm-", "--resource-pattern-type", "prefixed",
                                 "--operation", "Read"])
        self.upstream.start()
        self.sasl_port = listener_port(self.upstream, "kafka_sasl_plaintext")
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.upstream.bootstrap})  # super user
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)
        self.gateways = []

    def gateway(self, token, listeners=("PLAINTEXT",), **extra):
        token_file = os.path.join(self.dir, f"token-{uuid.uuid4().hex[:6]}.jwt")
        with open(token_file, "w") as f:
            f.write(token + "\n")
        settings = {"proxy.metadata.refresh.ms": 1000,
                    "upstream.security.protocol": "SASL_PLAINTEXT",
                    "upstream.sasl.mechanism": "OAUTHBEARER",
                    "upstream.sasl.oauthbearer.token.endpoint.url": "file://" + token_file}
        settings.update(extra)
        g = Gateway(f"127.0.0.1:{self.sasl_port}", args=proxy_kafka_args(*listeners),
                    settings=settings)
        g.token_file = token_file
        for name, password in PASSWORDS.items():  # the gateway's users, for SASL listeners
            set_user(g.data_dir, name, password)
        self.gateways.append(g)
        try:
            g.start()
        except Exception:
            print(g.log_text())
            raise
        g.kafka_port = listener_port(g, "kafka_sasl_plaintext" if "SASL_PLAINTEXT" in listeners
                                     else "kafka")
        return g

    def close(self):
        try:
            for g in self.gateways:
                g.close()
        finally:
            self.upstream.close()


@pytest.fixture(scope="module")
def oauth(tmp_path_factory):
    o = OauthUpstream(tmp_path_factory.mktemp("oauth"))
    try:
        yield o
    finally:
        o.close()


def test_proxy_and_rest_front_log_in_with_the_token_file(oauth):
    writer = oauth.keys.token(sub="gw-writer", lifetime=600)
    g = oauth.gateway(writer)
    g.wait_log(" served on 127.0.0.1:", timeout=30)  # the topology logged in and saw a broker
    proxied = {"bootstrap.servers": f"127.0.0.1:{g.kafka_port}"}
    tag = uuid.uuid4().hex[:8]
    assert produce_error(proxied, f"proxy-{tag}") is None
    # The REST front's librdkafka producer logs in with the same file. (/readyz stays 503:
    # gw-writer may not read the gateway's _sluice_security topic, which readiness needs.)
    r = requests.post(f"{g.http_url}/topics/{TOPIC}",
                      data=json.dumps({"records": [{"value": f"rest-{tag}", "partition": 0}]}),
                      headers={"Content-Type": V2_JSON, "Accept": V2}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["offsets"][0].get("error_code") is None, r.text
    # (The JSON embedded format stores the value as JSON text: quoted.)
    seen, error = read({"bootstrap.servers": oauth.upstream.bootstrap},
                       {f"proxy-{tag}", f'"rest-{tag}"'})
    assert error is None
    # A renewed file is read at the next upstream login: now as gw-reader (no write).
    with open(g.token_file, "w") as f:
        f.write(oauth.keys.token(sub="gw-reader", lifetime=600))
    assert produce_error(proxied, f"reader-{tag}").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    seen, error = read(proxied, {f"proxy-{tag}"})  # gw-reader may read
    assert error is None
    log = g.log_text()
    assert writer not in log and writer.split(".")[2] not in log


def test_a_token_the_upstream_refuses_closes_the_client(oauth):
    stranger = oauth.keys.token(sub="gw-writer", key=oauth.keys.stranger, kid="ec-1")
    g = oauth.gateway(stranger, **{"upstream.request.timeout.ms": 3000})
    with connect(g.kafka_port) as s:
        s.sendall(kafka_request(18, 0, 1))  # ApiVersions: forwarded, so the upstream is opened
        assert closed_by_peer(s, timeout=20)
    line = g.wait_log("login to upstream", timeout=20)
    assert "the token in " + g.token_file in line, line
    assert "SASL_AUTHENTICATION_FAILED" in line, line
    assert g.alive()
    assert stranger.split(".")[2] not in g.log_text()


def test_principal_map_oauthbearer_entries(oauth):
    writer = oauth.keys.token(sub="gw-writer", lifetime=600)
    expired = oauth.keys.token(sub="gw-writer", lifetime=-3600)
    os.makedirs(os.path.join(oauth.dir, "map-tokens"), exist_ok=True)
    alice_file = os.path.join(oauth.dir, "map-tokens", "alice.jwt")
    bob_file = os.path.join(oauth.dir, "map-tokens", "bob.jwt")
    for path, token in ((alice_file, writer), (bob_file, expired)):
        with open(path, "w") as f:
            f.write(token + "\n")
    map_file = os.path.join(oauth.dir, "principals.map")
    with open(map_file, "w") as f:
        f.write("# client principal -> OAUTHBEARER file:PATH\n"
                "User:alice -> OAUTHBEARER file:map-tokens/alice.jwt\n"
                f"User:bob -> OAUTHBEARER file://{bob_file}\n")
    # The gateway's own token: gw-reader, who may not write.
    g = oauth.gateway(oauth.keys.token(sub="gw-reader", lifetime=600),
                      listeners=("SASL_PLAINTEXT",),
                      **{"proxy.principal.map": map_file, "upstream.request.timeout.ms": 3000})
    g.wait_log(" served on 127.0.0.1:", timeout=30)
    alice = {"bootstrap.servers": f"127.0.0.1:{g.kafka_port}",
             "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
             "sasl.username": "alice", "sasl.password": PASSWORDS["alice"]}
    tag = uuid.uuid4().hex[:8]
    assert produce_error(alice, f"alice-{tag}") is None
    # bob's expired token: his upstream login is refused and his connection closed.
    with connect(g.kafka_port) as s:
        assert sasl_handshake(s, "PLAIN")[0] == 0
        error, message, _ = sasl_authenticate(s, f"\0bob\0{PASSWORDS['bob']}".encode())
        assert error == 0, message
        s.sendall(kafka_request(18, 0, 3))  # ApiVersions: forwarded, so the upstream is opened
        assert closed_by_peer(s, timeout=20)
    line = g.wait_log("login to upstream", timeout=20)
    assert "the token in " + bob_file in line, line
    assert "SASL_AUTHENTICATION_FAILED" in line, line
    # alice is unaffected.
    assert produce_error(alice, f"alice-after-{tag}") is None
    seen, error = read({"bootstrap.servers": oauth.upstream.bootstrap},
                       {f"alice-{tag}", f"alice-after-{tag}"})
    assert error is None
    # A token file missing at reload: refused with its line, the map in use kept.
    with open(map_file, "w") as f:
        f.write("User:alice -> OAUTHBEARER file:map-tokens/alice.jwt\n"
                "User:bob -> OAUTHBEARER file:map-tokens/nope.jwt\n")
    g.proc.send_signal(signal.SIGHUP)
    line = g.wait_log("proxy.principal.map reload failed, keeping the previous map")
    assert map_file + " line 2: User:bob: token file" in line, line
    assert g.alive()
    log = g.log_text()
    for token in (writer, expired):
        assert token.split(".")[2] not in log
