"""proxy.principal.map's CERTIFICATE entries through the Kafka proxy (upstream mode,
gateway/proxy): clients log in at the gateway (SASL PLAIN termination, the gateway's own users)
and each one's upstream connections present the client certificate the map gives its principal,
so that a TLS cluster requiring client certificates authorizes each client as its certificate's
subject.

The upstream is a native sluice whose SSL listener requires a client certificate and maps its
subject to a principal (ssl.principal.mapping.rules: the CN), with the authorizer on: app-alice
may do everything on the topic, app-bob only describe it, and the gateway's own certificate
(CN=Client-Alice: the unmapped clients') describe and read it. Through a gateway mapping alice
to app-alice's certificate and bob to app-bob's (its key under a password): alice produces;
bob's produce and carol's (unmapped) are refused by the upstream. SIGHUP reads the map again:
bob's next connection presents app-alice's certificate and produces; a map whose key does not
match its certificate is refused with its line and the map in use stays. No key password
reaches a log.
"""
import os
import signal
import uuid

import pytest
from confluent_kafka import KafkaError

import tls_support
from sasl_support import PASSWORDS, set_user
from test_proxy_principal_map import produce_error, read, sasl_port
from upstream_support import Gateway, NativeUpstream, add_acl, listener_port, proxy_kafka_args

TOPIC = "pm-orders"  # the name test_proxy_principal_map's read() reads
CAROL, CAROL_PASSWORD = "carol", "carol-Secret-6"
KEY_PASSWORD = "Bob-Key-Pass 7"  # with a blank: the rest of the map's line


def map_text(pki, bob_as="app-bob"):
    bob_key, bob_password = (("app-bob-enc.key", KEY_PASSWORD) if bob_as == "app-bob"
                             else (f"{bob_as}.key", ""))
    # alice's files relative to the map's folder, bob's absolute.
    return (f"# client principal -> CERTIFICATE certificate key [key password]\n"
            f"User:alice -> CERTIFICATE app-alice.pem app-alice.key\n"
            f"User:bob -> certificate {pki.path(bob_as + '.pem')} {pki.path(bob_key)} "
            f"{bob_password}\n")


class CertificateUpstream:
    def __init__(self, tmp):
        self.pki = tls_support.Pki(tmp)
        d = self.pki.dir
        for name, serial in (("app-alice", "0x5001"), ("app-bob", "0x5002")):
            tls_support._openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj",
                                 f"/O=sluice/CN={name}", "-keyout", f"{name}.key", "-out",
                                 f"{name}.csr", cwd=d)
            tls_support._openssl("x509", "-req", "-days", "2", "-in", f"{name}.csr", "-CA",
                                 "ca.pem", "-CAkey", "ca.key", "-set_serial", serial, "-out",
                                 f"{name}.pem", cwd=d)
        tls_support._openssl("pkey", "-in", "app-bob.key", "-aes256", "-passout",
                             f"pass:{KEY_PASSWORD}", "-out", "app-bob-enc.key", cwd=d)
        self.upstream = NativeUpstream(
            args=proxy_kafka_args("SSL"),
            settings=self.pki.settings(**{
                "listener.name.ssl.ssl.client.auth": "required",
                # "CN=app-alice,O=sluice" -> app-alice
                "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/,DEFAULT",
                "authorizer.enabled": "true", "super.users": "User:ANONYMOUS"}))
        u = self.upstream.data_dir
        add_acl(u, "app-alice", ["--topic", TOPIC, "--operation", "All"])
        add_acl(u, "app-bob", ["--topic", TOPIC, "--operation", "Describe"])
        for op in ("Describe", "Read"):
            add_acl(u, "Client-Alice", ["--topic", TOPIC, "--operation", op])
        for user in ("app-alice", "app-bob", "Client-Alice"):
            add_acl(u, user, ["--group", "pm-", "--resource-pattern-type", "prefixed",
                              "--operation", "Read"])
        self.upstream.start()
        self.ssl_port = listener_port(self.upstream, "kafka_ssl")
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.upstream.bootstrap})  # super user
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)
        self.map_file = os.path.join(d, "principals.map")
        self.write_map(map_text(self.pki))
        self.gateway = Gateway(
            f"127.0.0.1:{self.ssl_port}", args=proxy_kafka_args("SASL_PLAINTEXT"),
            settings={"proxy.metadata.refresh.ms": 1000,
                      "upstream.security.protocol": "SSL",
                      "upstream.ssl.ca.location": self.pki.path("ca.pem"),
                      "upstream.ssl.certificate.location": self.pki.path("client.pem"),
                      "upstream.ssl.key.location": self.pki.path("client.key"),
                      "proxy.principal.map": self.map_file})
        for name, password in list(PASSWORDS.items()) + [(CAROL, CAROL_PASSWORD)]:
            set_user(self.gateway.data_dir, name, password)
        try:
            self.gateway.start()
        except Exception:
            print(self.gateway.log_text())
            raise
        self.gateway.sasl_port = sasl_port(self.gateway)
        self.gateway.wait_log(" served on 127.0.0.1:", timeout=30)

    def write_map(self, text):
        with open(self.map_file, "w") as f:
            f.write(text)
        os.chmod(self.map_file, 0o600)

    def client(self, user):
        return {"bootstrap.servers": f"127.0.0.1:{self.gateway.sasl_port}",
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": user, "sasl.password": PASSWORDS.get(user, CAROL_PASSWORD)}

    def close(self):
        try:
            self.gateway.close()
        finally:
            self.upstream.close()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    c = CertificateUpstream(tmp_path_factory.mktemp("pki"))
    try:
        yield c
    finally:
        c.close()


def test_each_client_presents_its_mapped_certificate(certs):
    tag = uuid.uuid4().hex[:8]
    # alice -> app-alice's certificate (All on the topic).
    assert produce_error(certs.client("alice"), f"alice-{tag}") is None
    # bob -> app-bob's (Describe only): the upstream refuses his produce.
    assert produce_error(certs.client("bob"), f"bob-{tag}").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    # carol has no entry: the gateway's own certificate (Client-Alice: Describe, Read).
    assert produce_error(certs.client(CAROL), f"carol-{tag}").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    seen, error = read(certs.client(CAROL), {f"alice-{tag}"})
    assert error is None
    # Straight from the upstream (super user): only alice's record is there.
    seen, error = read({"bootstrap.servers": certs.upstream.bootstrap}, {f"alice-{tag}"})
    assert error is None
    assert f"bob-{tag}" not in seen and f"carol-{tag}" not in seen
    log = certs.gateway.log_text()
    assert "2 client principals with upstream credentials of their own" in log
    assert KEY_PASSWORD not in log


def test_sighup_swaps_a_certificate_and_a_bad_key_keeps_the_map(certs):
    tag = uuid.uuid4().hex[:8]
    # bob -> app-alice's certificate from now on: his next connection produces.
    certs.write_map(map_text(certs.pki, bob_as="app-alice"))
    certs.gateway.proc.send_signal(signal.SIGHUP)
    certs.gateway.wait_log("proxy.principal.map reloaded: 2 client principals")
    assert produce_error(certs.client("bob"), f"bob-after-{tag}") is None
    # A key that is not its certificate's: named with its line, the map in use kept.
    certs.write_map(f"User:bob -> CERTIFICATE app-alice.pem app-bob.key\n")
    certs.gateway.proc.send_signal(signal.SIGHUP)
    line = certs.gateway.wait_log("proxy.principal.map reload failed, keeping the previous map")
    assert certs.map_file + " line 1: User:bob: " in line, line
    assert "does not match" in line, line
    assert produce_error(certs.client("bob"), f"bob-kept-{tag}") is None
    seen, error = read({"bootstrap.servers": certs.upstream.bootstrap},
                       {f"bob-after-{tag}", f"bob-kept-{tag}"})
    assert error is None
    assert certs.gateway.alive()
    assert KEY_PASSWORD not in certs.gateway.log_text()
