"""proxy.principal.map through the Kafka proxy (upstream mode, gateway/proxy): clients log in
at the gateway (SASL PLAIN and SCRAM termination, the gateway's own users) and their upstream
connections log in to the cluster as the upstream user the map gives them, so the cluster's
own ACLs judge each client.

The upstream is a native sluice with the authorizer on: app-alice may do everything on the
topic, app-bob only describe it, and the gateway's own account read it (both may use their
consumer groups). Through a gateway
mapping alice to app-alice and bob to app-bob (carol unmapped): alice produces and consumes;
bob gets TOPIC_AUTHORIZATION_FAILED from the upstream on both; carol, on the gateway's own
credentials, reads alice's records but may not write. With proxy.principal.map.unmapped=deny
carol's login is refused at the gateway, and a plaintext client's (User:ANONYMOUS) connection
closes at its first request. SIGHUP reads the map again: a client's next connection logs in
upstream as its new entry says; a bad file keeps the map in use. No password of the map reaches
a log.
"""
import os
import re
import signal
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from harness import connect, kafka_request
from sasl_support import (PASSWORDS, closed_by_peer, produce, sasl_authenticate, sasl_handshake,
                          set_user)
from upstream_support import Gateway, NativeUpstream, add_acl, proxy_kafka_args

TOPIC = "pm-orders"
GATEWAY_USER, GATEWAY_PASSWORD = "gateway", "gateway-Secret-4"
CAROL, CAROL_PASSWORD = "carol", "carol-Secret-6"
# The upstream's accounts the map names; a password with blanks (the rest of the line).
UPSTREAM = {"app-alice": "app alice Secret 8", "app-bob": "app-bob-Secret-9"}
MAP = (f"# client principal -> upstream mechanism, user, password\n"
       f"User:alice -> SCRAM-SHA-512 app-alice {UPSTREAM['app-alice']}\n"
       f"\n"
       f"User:bob -> PLAIN app-bob {UPSTREAM['app-bob']}\n")



def sasl_port(server):
    line = server.wait_log("listening:")
    return int(re.search(r"kafka_sasl_plaintext=[^ ]*:(\d+)", line).group(1))


class Mapped:
    def __init__(self, tmp):
        self.upstream = NativeUpstream(
            args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
            settings={"authorizer.enabled": "true", "super.users": "User:ANONYMOUS"})
        d = self.upstream.data_dir
        set_user(d, GATEWAY_USER, GATEWAY_PASSWORD)
        for user, password in UPSTREAM.items():
            set_user(d, user, password)
        add_acl(d, "app-alice", ["--topic", TOPIC, "--operation", "All"])
        add_acl(d, "app-alice", ["--group", "pm-", "--resource-pattern-type", "prefixed",
                                 "--operation", "All"])
        add_acl(d, "app-bob", ["--topic", TOPIC, "--operation", "Describe"])
        for op in ("Describe", "Read"):
            add_acl(d, GATEWAY_USER, ["--topic", TOPIC, "--operation", op])
        # Their consumers' groups; what they may read is the topic's ACLs' business.
        for user in ("app-bob", GATEWAY_USER):
            add_acl(d, user, ["--group", "pm-", "--resource-pattern-type", "prefixed",
                              "--operation", "Read"])
        self.upstream.start()
        self.upstream_sasl = f"127.0.0.1:{sasl_port(self.upstream)}"
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.upstream.bootstrap})  # super user
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)
        self.map_file = os.path.join(str(tmp), "principals.map")
        with open(self.map_file, "w") as f:
            f.write(MAP)
        os.chmod(self.map_file, 0o600)
        self.gateways = []

    def gateway(self, unmapped, plaintext=False, map_file=None):
        # The plaintext listener's clients are User:ANONYMOUS, never mapped here.
        listeners = proxy_kafka_args("SASL_PLAINTEXT", *(["PLAINTEXT"] if plaintext else []))
        g = Gateway(self.upstream_sasl, args=listeners,
                    settings={"proxy.metadata.refresh.ms": 1000,
                              "upstream.security.protocol": "SASL_PLAINTEXT",
                              "upstream.sasl.mechanism": "SCRAM-SHA-512",
                              "upstream.sasl.username": GATEWAY_USER,
                              "upstream.sasl.password": GATEWAY_PASSWORD,
                              "proxy.principal.map": map_file or self.map_file,
                              "proxy.principal.map.unmapped": unmapped})
        for name, password in list(PASSWORDS.items()) + [(CAROL, CAROL_PASSWORD)]:
            set_user(g.data_dir, name, password)
        self.gateways.append(g)
        g.start()
        g.sasl_port = sasl_port(g)
        g.wait_log(" served on 127.0.0.1:", timeout=30)
        return g

    def close(self):
        try:
            for g in self.gateways:
                g.close()
        finally:
            self.upstream.close()


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    m = Mapped(tmp_path_factory.mktemp("map"))
    try:
        yield m
    finally:
        m.close()


@pytest.fixture(scope="module")
def gateway(mapped):
    return mapped.gateway("default")


def client(g, user, mechanism="PLAIN", **extra):
    cfg = {"bootstrap.servers": f"127.0.0.1:{g.sasl_port}", "security.protocol": "SASL_PLAINTEXT",
           "sasl.mechanism": mechanism, "sasl.username": user,
           "sasl.password": PASSWORDS.get(user, CAROL_PASSWORD)}
    cfg.update(extra)
    return cfg


def produce_error(cfg, value, timeout=30):
    """The delivery error of one record (None: delivered)."""
    results = []
    p = Producer(dict(cfg, **{"acks": "all", "message.timeout.ms": 20000}))
    p.produce(TOPIC, value.encode(), partition=0,
              on_delivery=lambda err, msg: results.append(err))
    assert p.flush(timeout) == 0, "no delivery report"
    return results[0]


def read(cfg, wanted=frozenset(), timeout=30):
    """Reads TOPIC from the beginning until `wanted` was seen: (values seen, the first error)."""
    c = Consumer(dict(cfg, **{"group.id": "pm-" + uuid.uuid4().hex[:6],
                              "enable.auto.commit": False}))
    c.assign([TopicPartition(TOPIC, 0, 0)])
    seen, error = set(), None
    deadline = time.monotonic() + timeout
    try:
        while error is None and not (wanted and wanted <= seen):
            assert time.monotonic() < deadline, f"neither read nor refused within {timeout}s"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() != KafkaError._PARTITION_EOF:
                    error = m.error().code()
                continue
            seen.add(m.value().decode())
    finally:
        c.close()
    return seen, error


def test_each_client_acts_as_its_upstream_user(mapped, gateway):
    tag = uuid.uuid4().hex[:8]
    # alice -> app-alice (All): produces and consumes, with either mechanism at the gateway.
    produce(client(gateway, "alice"), TOPIC, [f"alice-{tag}"])
    produce(client(gateway, "alice", "SCRAM-SHA-256"), TOPIC, [f"alice-scram-{tag}"])
    wanted = {f"alice-{tag}", f"alice-scram-{tag}"}
    seen, error = read(client(gateway, "alice"), wanted)
    assert error is None and wanted <= seen
    seen, error = read({"bootstrap.servers": mapped.upstream.bootstrap}, wanted)
    assert error is None and wanted <= seen
    # bob -> app-bob (Describe only): the upstream refuses his produce and his fetch.
    assert produce_error(client(gateway, "bob"), f"bob-{tag}").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert read(client(gateway, "bob"))[1] == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # carol has no entry: the gateway's own account (Describe, Read) reads but cannot write.
    seen, error = read(client(gateway, CAROL), wanted)
    assert error is None and wanted <= seen
    assert produce_error(client(gateway, CAROL), f"carol-{tag}").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    seen, _ = read({"bootstrap.servers": mapped.upstream.bootstrap}, wanted)
    assert f"bob-{tag}" not in seen and f"carol-{tag}" not in seen
    log = gateway.log_text()
    assert "2 client principals with upstream credentials" in log
    for password in list(UPSTREAM.values()) + [GATEWAY_PASSWORD]:
        assert password not in log


def test_unmapped_principals_are_refused_with_deny(mapped):
    g = mapped.gateway("deny", plaintext=True)
    with connect(g.sasl_port) as s:
        error, _ = sasl_handshake(s, "PLAIN")
        assert error == 0
        error, message, _ = sasl_authenticate(
            s, f"\0{CAROL}\0{CAROL_PASSWORD}".encode())
        assert error == 58, (error, message)  # SASL_AUTHENTICATION_FAILED
        assert "may not use the proxy" in message
        assert closed_by_peer(s)
    g.wait_log("User:carol has no entry in proxy.principal.map")
    # Without SASL (User:ANONYMOUS, unmapped): the connection closes at its first request.
    port = int(re.search(r" kafka=[^ ]*:(\d+)", g.wait_log("listening:")).group(1))
    with connect(port) as s:
        s.sendall(kafka_request(3, 1, 9, struct.pack(">i", -1)))  # Metadata v1, all topics
        assert closed_by_peer(s)
    g.wait_log("User:ANONYMOUS has no entry in proxy.principal.map")
    # alice is mapped: served as before.
    tag = uuid.uuid4().hex[:8]
    produce(client(g, "alice"), TOPIC, [f"deny-gw-{tag}"])
    seen, error = read({"bootstrap.servers": mapped.upstream.bootstrap}, {f"deny-gw-{tag}"})
    assert error is None
    for password in list(UPSTREAM.values()):
        assert password not in g.log_text()


def test_sighup_reads_the_map_again_and_a_bad_file_keeps_the_old_one(mapped, tmp_path):
    own_map = str(tmp_path / "reloaded.map")
    with open(own_map, "w") as f:
        f.write(MAP)
    os.chmod(own_map, 0o600)
    g = mapped.gateway("default", map_file=own_map)
    tag = uuid.uuid4().hex[:8]
    # bob -> app-bob (Describe only): refused by the upstream.
    assert produce_error(client(g, "bob"), f"bob-before-{tag}").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    # bob -> app-alice from now on: his next connection logs in upstream as app-alice.
    with open(own_map, "w") as f:
        f.write(f"User:bob -> SCRAM-SHA-512 app-alice {UPSTREAM['app-alice']}\n")
    g.proc.send_signal(signal.SIGHUP)
    g.wait_log("proxy.principal.map reloaded: 1 client principals")
    assert produce_error(client(g, "bob"), f"bob-after-{tag}") is None
    # alice has no entry any more: the gateway's own account, which may not write.
    assert produce_error(client(g, "alice"), f"alice-after-{tag}").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    # A file that does not parse: named with its line, the map in use kept.
    with open(own_map, "w") as f:
        f.write("User:bob -> SCRAM-SHA-512 app-alice secret\nUser:dave => PLAIN x y\n")
    g.proc.send_signal(signal.SIGHUP)
    line = g.wait_log("proxy.principal.map reload failed, keeping the previous map")
    assert own_map + " line 2" in line, line
    assert produce_error(client(g, "bob"), f"bob-kept-{tag}") is None
    seen, error = read({"bootstrap.servers": mapped.upstream.bootstrap},
                       {f"bob-after-{tag}", f"bob-kept-{tag}"})
    assert error is None
    assert f"bob-before-{tag}" not in seen and f"alice-after-{tag}" not in seen
    assert g.alive()
    for password in list(UPSTREAM.values()) + ["secret"]:
        assert password not in g.log_text()
