"""TLS from the Kafka proxy to the upstream (upstream mode, gateway/proxy): the gateway's own
connections to the cluster (the topology's and every client's) speak TLS with librdkafka's
`upstream.ssl.*` properties, the ones the gateway's librdkafka clients take.

The upstream is a native sluice with an SSL listener that requires a client certificate
(ssl.client.auth=required) and a SASL_SSL listener whose certificate names another host
(wrong.example). Through a gateway with a client certificate (its key under a password)
kcat and confluent-kafka produce and consume over SSL; through another, SASL_SSL with SCRAM
and ssl.endpoint.identification.algorithm=none, they do too; the records are read back
straight from the upstream and no response carries an upstream address. Refused, each with
one log line and the client's connection closed as a dead broker's (never a hang): a gateway
without a client certificate, one that trusts another CA, and one that checks the name
(https, the default) against the wrong.example certificate.
"""
import os
import re
import subprocess
import threading
import uuid

import pytest

import tls_support
from harness import connect, kafka_request, wait_for
from sasl_support import closed_by_peer, produce, set_user
from test_proxy import check_every_advertised_version
from upstream_support import (Gateway, NativeUpstream, kcat_produce, listener_port,
                              proxy_kafka_args, read_until)

TOPIC = "proxy-tls"
GATEWAY_USER, GATEWAY_PASSWORD = "gateway", "gateway-Secret-7"
KEY_PASSWORD = "Key-Pass-5"



class TlsUpstream:
    """The native upstream, its PKI, and the gateways started against it (closed with it)."""

    def __init__(self, tmp):
        self.pki = tls_support.Pki(tmp)
        d = self.pki.dir
        # A certificate from the trusted CA for another host only.
        with open(os.path.join(d, "wrong.ext"), "w") as f:
            f.write("subjectAltName=DNS:wrong.example\n")
        tls_support._openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=wrong.example",
                             "-keyout", "wrong.key", "-out", "wrong.csr", cwd=d)
        tls_support._openssl("x509", "-req", "-days", "2", "-in", "wrong.csr", "-CA", "ca.pem",
                             "-CAkey", "ca.key", "-set_serial", "0x4001", "-extfile", "wrong.ext",
                             "-out", "wrong.pem", cwd=d)
        # The gateway's client key, under a password (ssl.key.password).
        tls_support._openssl("pkey", "-in", "client.key", "-aes256", "-passout",
                             f"pass:{KEY_PASSWORD}", "-out", "client-enc.key", cwd=d)
        self.upstream = NativeUpstream(
            settings=self.pki.settings(**{
                "listener.name.ssl.ssl.client.auth": "required",
                "listener.name.sasl_ssl.ssl.certificate.location": self.pki.path("wrong.pem"),
                "listener.name.sasl_ssl.ssl.key.location": self.pki.path("wrong.key")}),
            args=proxy_kafka_args("SSL", "SASL_SSL"))
        set_user(self.upstream.data_dir, GATEWAY_USER, GATEWAY_PASSWORD)
        self.gateways = []
        self.upstream.start()
        self.ssl_port = listener_port(self.upstream, "kafka_ssl")
        self.sasl_ssl_port = listener_port(self.upstream, "kafka_sasl_ssl")
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.upstream.bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)

    def ssl_settings(self, **extra):
        s = {"upstream.security.protocol": "SSL",
             "upstream.ssl.ca.location": self.pki.path("ca.pem"),
             "upstream.ssl.certificate.location": self.pki.path("client.pem"),
             "upstream.ssl.key.location": self.pki.path("client-enc.key"),
             "upstream.ssl.key.password": KEY_PASSWORD}
        s.update(extra)
        return {k: v for k, v in s.items() if v is not None}

    def sasl_ssl_settings(self, **extra):
        s = {"upstream.security.protocol": "SASL_SSL",
             "upstream.sasl.mechanism": "SCRAM-SHA-512",
             "upstream.sasl.username": GATEWAY_USER,
             "upstream.sasl.password": GATEWAY_PASSWORD,
             "upstream.ssl.ca.location": self.pki.path("ca.pem")}
        s.update(extra)
        return s

    def gateway(self, bootstrap, settings, refused=False):
        extra = {"proxy.metadata.refresh.ms": 1000}
        if refused:
            # The start waits this long for the (refused) cluster; so does each proxy
            # connection's opening.
            extra["upstream.request.timeout.ms"] = 2000
        g = Gateway(bootstrap, args=proxy_kafka_args("PLAINTEXT"),
                    settings=dict(settings, **extra))
        self.gateways.append(g)
        try:
            g.start()
        except Exception:
            print(g.log_text())
            raise
        g.kafka_port = listener_port(g, "kafka")
        return g

    def close(self):
        # In parallel: a gateway refused by the cluster takes seconds to stop (its librdkafka
        # clients give up on it).
        errors = []

        def close_one(g):
            try:
                g.close()
            except Exception as e:  # reported below, after every gateway is down
                errors.append(e)
        threads = [threading.Thread(target=close_one, args=(g,)) for g in self.gateways]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.upstream.close()
        assert not errors, errors


@pytest.fixture(scope="module")
def tls_upstream(tmp_path_factory):
    u = TlsUpstream(tmp_path_factory.mktemp("pki"))
    try:
        yield u
    finally:
        u.close()


class Served:
    """What test_proxy's address check needs of a gateway (check_every_advertised_version)."""

    def __init__(self, gateway, upstream_port):
        self.kafka_port = gateway.kafka_port
        line = gateway.wait_log(" served on 127.0.0.1:", timeout=30)
        node, port = re.search(r"upstream broker (\d+) served on [^ ]*:(\d+)", line).groups()
        self.node_ports = {int(node): int(port)}
        self.upstream_brokers = {int(node): f"127.0.0.1:{upstream_port}"}
        self.upstream_port = upstream_port

    def upstream_ports(self):
        return {self.upstream_port}

    def assert_gateway_address(self, node, host, port):
        assert host == "127.0.0.1", (node, host, port)
        assert port == self.node_ports[node], (node, host, port, self.node_ports)
        assert port != self.upstream_port



def round_trip(bootstrap, upstream_bootstrap, what):
    """kcat and confluent-kafka produce through the proxy; both records are read back through
    it and straight from the upstream."""
    tag = f"{what}-{uuid.uuid4().hex[:8]}"
    kcat_produce(bootstrap, TOPIC, [f"kcat-{tag}"])
    produce({"bootstrap.servers": bootstrap}, TOPIC, [f"confluent-{tag}"])
    wanted = {f"kcat-{tag}", f"confluent-{tag}"}
    read_until({"bootstrap.servers": bootstrap}, TOPIC, wanted)
    read_until({"bootstrap.servers": upstream_bootstrap}, TOPIC, wanted)


def assert_refused(gateway, reason):
    """The gateway logs why the upstream was refused (its topology's one line) and a client's
    connection closes as a dead broker's, the gateway still serving."""
    def proxy_line():  # the proxy's own line, not librdkafka's ([upstream])
        return next((l for l in list(gateway.log_lines)
                     if "[proxy] upstream metadata unavailable" in l and reason in l), None)
    line = wait_for(proxy_line, 30, f"the proxy's line on '{reason}'")
    with connect(gateway.kafka_port) as s:
        s.sendall(kafka_request(18, 0, 1))  # ApiVersions: forwarded, so the upstream is opened
        assert closed_by_peer(s, timeout=20)
    assert gateway.alive()
    assert KEY_PASSWORD not in gateway.log_text()
    return line


def test_ssl_with_a_client_certificate_round_trips(tls_upstream):
    g = tls_upstream.gateway(f"127.0.0.1:{tls_upstream.ssl_port}", tls_upstream.ssl_settings())
    served = Served(g, tls_upstream.ssl_port)
    round_trip(f"127.0.0.1:{g.kafka_port}", tls_upstream.upstream.bootstrap, "ssl")
    checked = check_every_advertised_version(served)
    assert ("Metadata", 1) in checked, checked
    assert KEY_PASSWORD not in g.log_text()


def test_sasl_ssl_without_endpoint_identification_round_trips(tls_upstream):
    # The SASL_SSL listener's certificate names wrong.example: accepted with none.
    g = tls_upstream.gateway(
        f"127.0.0.1:{tls_upstream.sasl_ssl_port}",
        tls_upstream.sasl_ssl_settings(**{"upstream.ssl.endpoint.identification.algorithm":
                                          "none"}))
    served = Served(g, tls_upstream.sasl_ssl_port)
    round_trip(f"127.0.0.1:{g.kafka_port}", tls_upstream.upstream.bootstrap, "sasl-ssl")
    check_every_advertised_version(served)
    assert GATEWAY_PASSWORD not in g.log_text()


def test_endpoint_identification_refuses_a_certificate_for_another_name(tls_upstream):
    # https (librdkafka's default): the name the gateway connects to must be in the
    # certificate; the SASL_SSL listener's is for wrong.example only.
    g = tls_upstream.gateway(f"localhost:{tls_upstream.sasl_ssl_port}",
                             tls_upstream.sasl_ssl_settings(), refused=True)
    assert_refused(g, "certificate verify failed: hostname mismatch")


def test_a_gateway_trusting_another_ca_is_refused(tls_upstream):
    g = tls_upstream.gateway(
        f"127.0.0.1:{tls_upstream.ssl_port}",
        tls_upstream.ssl_settings(**{"upstream.ssl.ca.location":
                                     tls_upstream.pki.path("other-ca.pem")}), refused=True)
    line = assert_refused(g, "TLS handshake failed: certificate verify failed: ")
    # The broker sends its CA along (OpenSSL builds the chain), else only its own certificate.
    assert ("self-signed certificate in certificate chain" in line or
            "unable to get local issuer certificate" in line), line
    # A real client fails cleanly too: kcat gives up on the metadata, it does not hang.
    r = subprocess.run(["kcat", "-b", f"127.0.0.1:{g.kafka_port}", "-L", "-m", "2"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0, r.stdout


def test_an_upstream_requiring_a_client_certificate_refuses_a_gateway_without_one(
        tls_upstream):
    g = tls_upstream.gateway(
        f"127.0.0.1:{tls_upstream.ssl_port}",
        tls_upstream.ssl_settings(**{"upstream.ssl.certificate.location": None,
                                     "upstream.ssl.key.location": None,
                                     "upstream.ssl.key.password": None}), refused=True)
    assert_refused(g, "certificate required")
