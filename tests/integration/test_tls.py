"""TLS on the Kafka front (SSL and SASL_SSL listeners): certificates made by the test with the
openssl command line; kcat, python3-confluent-kafka and kafkajs over SSL; mutual TLS with the
principal from the client certificate; SASL_SSL with PLAIN and SCRAM-SHA-512; an untrusted
server certificate; garbage and plaintext Kafka on the SSL port; SIGHUP reloading the
certificate (and keeping it when the new key is bad); start-up errors for bad TLS settings."""
import os
import signal
import socket
import ssl
import subprocess
import uuid

import pytest

from harness import kafka_request, sluice_binary
from sasl_support import PASSWORDS, consume_all, produce, set_user
from tls_support import (Pki, TlsSluice, api_versions_ok, client_context, peer_serial,
                         tls_closed, tls_connect)

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def tls_broker(pki, tmp_path):
    pki.use_server(1)
    for name, password in PASSWORDS.items():
        set_user(str(tmp_path), name, password)
    # fetch.response.max.bytes=0: Fetch responses as large as the client allows, so that one
    # spans several of the TLS path's write buffers.
    s = TlsSluice(pki, data_dir=str(tmp_path),
                  settings={"fetch.response.max.bytes": "0"}).start()
    try:
        yield s
    finally:
        s.close()


def ssl_config(pki, bootstrap, **extra):
    cfg = {"bootstrap.servers": bootstrap, "security.protocol": "SSL",
           "ssl.ca.location": pki.path("ca.pem")}
    cfg.update(extra)
    return cfg


def topic_name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# --- clients over SSL --------------------------------------------------------------------------

def test_confluent_kafka_produces_and_consumes_over_ssl(pki, tls_broker):
    cfg = ssl_config(pki, tls_broker.ssl_bootstrap)
    topic = topic_name("ssl-ck")
    # About 3 MB: fetch responses larger than the TLS path's 1 MiB write buffer.
    values = [f"ssl-{i}-" + os.urandom(2500).hex() for i in range(600)]
    produce(cfg, topic, values)
    big_fetch = dict(cfg, **{"max.partition.fetch.bytes": 8 << 20, "fetch.max.bytes": 16 << 20})
    assert consume_all(big_fetch, topic, len(values)) == values
    # The same records through the plaintext listener (the TLS path wrote nothing different).
    assert consume_all({"bootstrap.servers": tls_broker.server.bootstrap}, topic,
                       len(values)) == values


def test_kcat_produces_and_consumes_over_ssl(pki, tls_broker):
    topic = topic_name("ssl-kcat")
    common = ["kcat", "-b", tls_broker.ssl_bootstrap, "-X", "security.protocol=SSL", "-X",
              f"ssl.ca.location={pki.path('ca.pem')}", "-t", topic]
    lines = [f"kcat-tls-{i}" for i in range(20)]
    r = subprocess.run(common + ["-P"], input="\n".join(lines) + "\n", capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(common + ["-C", "-o", "beginning", "-e", "-q"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == lines


KAFKAJS_SSL = r"""
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');
const [bootstrap, ca, topic] = process.argv.slice(1);
const kafka = new Kafka({ clientId: 'sluice-js-tls', brokers: [bootstrap],
                          logLevel: logLevel.NOTHING, retry: { retries: 3 },
                          ssl: { ca: [fs.readFileSync(ca, 'utf-8')], servername: 'localhost' } });
async function main() {
  const producer = kafka.producer();
  await producer.connect();
  const values = [];
  for (let i = 0; i < 20; i++) values.push('js-tls-' + i);
  await producer.send({ topic, acks: -1, messages: values.map(v => ({ value: v })) });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: 'js-tls-group' });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out; got ' + got.length)), 60000);
    consumer.run({ eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length === values.length) { clearTimeout(timer); resolve(); }
    } }).catch(reject);
  });
  await consumer.disconnect();
  if (JSON.stringify(got) !== JSON.stringify(values)) throw new Error('mismatch: ' + got);
  console.log('ok');
}
main().catch(e => { console.error(e); process.exit(1); });
"""


def test_kafkajs_produces_and_consumes_over_ssl(pki, tls_broker):
    r = subprocess.run(["node", "-e", KAFKAJS_SSL, tls_broker.ssl_bootstrap, pki.path("ca.pem"),
                        topic_name("js-tls")],
                       capture_output=True, text=True, timeout=180, cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok")


# --- SASL_SSL ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_sasl_ssl_logs_in_and_round_trips(pki, tls_broker, mechanism):
    cfg = ssl_config(pki, tls_broker.sasl_ssl_bootstrap, **{
        "security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "sasl.username": "alice",
        "sasl.password": PASSWORDS["alice"]})
    topic = topic_name("sasl-ssl")
    produce(cfg, topic, ["a", "b", "c"])
    assert consume_all(cfg, topic, 3) == ["a", "b", "c"]


def test_sasl_ssl_refuses_a_wrong_password(pki, tls_broker):
    from sasl_support import auth_error
    cfg = ssl_config(pki, tls_broker.sasl_ssl_bootstrap, **{
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice", "sasl.password": "wrong"})
    assert auth_error(cfg) is not None
    tls_broker.server.wait_log("authentication failed: user 'alice'")


def test_sasl_ssl_serves_only_the_login_before_authentication(pki, tls_broker):
    with tls_connect(tls_broker.sasl_ssl_port, client_context(pki)) as s:
        assert api_versions_ok(s)  # allowed before login
        s.sendall(kafka_request(3, 1, 9, b"\xff\xff\xff\xff"))  # Metadata: refused
        assert tls_closed(s)


# --- trust and bad input -----------------------------------------------------------------------

def test_untrusted_server_certificate_is_refused_by_the_client(pki, tls_broker):
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_connect(tls_broker.ssl_port, client_context(pki, ca="other-ca.pem"))
    # librdkafka refuses it as well: nothing is delivered.
    from confluent_kafka import Producer
    p = Producer(ssl_config(pki, tls_broker.ssl_bootstrap,
                            **{"ssl.ca.location": pki.path("other-ca.pem"),
                               "message.timeout.ms": 3000}))
    errors = []
    p.produce("never", b"x", on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert errors and errors[0] is not None


def test_garbage_and_plaintext_kafka_on_the_ssl_port_are_refused(pki, tls_broker):
    for payload in (os.urandom(3000), kafka_request(18, 0, 1)):
        with socket.create_connection(("127.0.0.1", tls_broker.ssl_port), timeout=10) as s:
            s.sendall(payload)
            s.settimeout(10)
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
            # Either closed at once, or a TLS alert record (content type 21) and then closed.
            assert data == b"" or data[0] == 21
    tls_broker.server.wait_log("TLS handshake failed")
    with tls_connect(tls_broker.ssl_port, client_context(pki)) as s:
        assert api_versions_ok(s)
    assert tls_broker.server.alive()


def test_a_client_that_stalls_in_the_handshake_does_not_block_others(pki, tls_broker):
    with socket.create_connection(("127.0.0.1", tls_broker.ssl_port), timeout=10) as stalled:
        stalled.sendall(b"\x16\x03\x01")  # the start of a ClientHello, then nothing
        with tls_connect(tls_broker.ssl_port, client_context(pki)) as s:
            assert api_versions_ok(s)


# --- mutual TLS --------------------------------------------------------------------------------

@pytest.fixture
def mtls_broker(pki, tmp_path):
    pki.use_server(1)
    s = TlsSluice(pki, data_dir=str(tmp_path), settings={
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.principal.mapping.rules":
            "RULE:^CN=(.*?),O=sluice$/$1/L,DEFAULT"}).start()
    try:
        yield s
    finally:
        s.close()


def test_mutual_tls_refuses_a_client_without_a_certificate(pki, mtls_broker):
    try:
        s = tls_connect(mtls_broker.ssl_port, client_context(pki))
    except ssl.SSLError:
        pass  # TLS 1.2: refused inside the handshake
    else:
        # TLS 1.3: the server's verdict on the missing certificate comes after the client's
        # side of the handshake is done; the server then ends the connection.
        with s:
            try:
                s.sendall(kafka_request(18, 0, 1))
            except (ssl.SSLError, ConnectionError):
                pass
            assert tls_closed(s)
    mtls_broker.server.wait_log("TLS handshake failed")
    # librdkafka without a certificate gets nothing delivered.
    from confluent_kafka import Producer
    p = Producer(ssl_config(pki, mtls_broker.ssl_bootstrap, **{"message.timeout.ms": 3000}))
    errors = []
    p.produce("never", b"x", on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert errors and errors[0] is not None


def test_mutual_tls_maps_the_certificate_subject_to_the_principal(pki, mtls_broker):
    cfg = ssl_config(pki, mtls_broker.ssl_bootstrap,
                     **{"ssl.certificate.location": pki.path("client.pem"),
                        "ssl.key.location": pki.path("client.key")})
    topic = topic_name("mtls")
    produce(cfg, topic, ["m1", "m2"])
    assert consume_all(cfg, topic, 2) == ["m1", "m2"]
    line = mtls_broker.server.wait_log("by TLS client certificate")
    assert "authenticated as User:client-alice" in line
    assert "CN=Client-Alice,O=sluice" in line
    # The per-listener prefix applies to that listener only: SASL_SSL asks for no certificate.
    with tls_connect(mtls_broker.sasl_ssl_port, client_context(pki)) as s:
        assert api_versions_ok(s)


# --- reload ------------------------------------------------------------------------------------

def test_sighup_reloads_the_certificate_and_keeps_open_connections(pki, tls_broker):
    ctx = client_context(pki)
    old = tls_connect(tls_broker.ssl_port, ctx)
    try:
        assert peer_serial(old) == "1001"
        assert api_versions_ok(old)

        pki.use_server(2)
        tls_broker.server.proc.send_signal(signal.SIGHUP)
        tls_broker.server.wait_log("TLS certificate reloaded (serial 1002)")
        with tls_connect(tls_broker.ssl_port, ctx) as new:
            assert peer_serial(new) == "1002"
            assert api_versions_ok(new)
        with tls_connect(tls_broker.sasl_ssl_port, ctx) as new:
            assert peer_serial(new) == "1002"
        assert api_versions_ok(old, correlation_id=8)  # the open connection still works

        # A key that does not match: the error is logged and the current certificate stays.
        pki.use_server(1, key_from="server2.key")
        tls_broker.server.proc.send_signal(signal.SIGHUP)
        line = tls_broker.server.wait_log("TLS reload failed")
        assert pki.path("server.key") in line and "does not match the certificate" in line
        with tls_connect(tls_broker.ssl_port, ctx) as new:
            assert peer_serial(new) == "1002"
            assert api_versions_ok(new)
        assert api_versions_ok(old, correlation_id=9)
    finally:
        old.close()
    assert tls_broker.server.alive()


# --- start-up errors ---------------------------------------------------------------------------

def start_error(tmp_path, *args):
    data = tmp_path / "data"
    r = subprocess.run([sluice_binary(), "--data-dir", str(data), "--http", "off", "--sqs", "off"]
                       + list(args), capture_output=True, text=True, timeout=30)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert not (data / "meta.properties").exists()  # refused before the data dir is touched
    assert "starting" not in r.stderr
    return r.returncode, lines


@pytest.mark.parametrize("listener", ["SSL://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"])
def test_tls_listener_without_certificate_is_refused_at_start(tmp_path, listener):
    code, lines = start_error(tmp_path, "--kafka", listener)
    assert code == 2
    assert len(lines) == 1, lines
    assert listener in lines[0] and "ssl.certificate.location" in lines[0]


def test_missing_and_mismatched_files_are_refused_at_start(pki, tmp_path):
    base = ["--kafka", "SSL://127.0.0.1:0", "--set",
            f"ssl.certificate.location={pki.path('server1.pem')}"]
    code, lines = start_error(tmp_path, *base, "--set",
                              f"ssl.key.location={pki.path('absent.key')}")
    assert code == 2 and len(lines) == 1, lines
    assert pki.path("absent.key") in lines[0] and "cannot read" in lines[0]

    code, lines = start_error(tmp_path, *base, "--set",
                              f"ssl.key.location={pki.path('server2.key')}")
    assert code == 2 and len(lines) == 1, lines
    assert "does not match the certificate" in lines[0]

    code, lines = start_error(tmp_path, *base, "--set",
                              f"ssl.key.location={pki.path('server1.key')}", "--set",
                              "ssl.client.auth=sometimes")
    assert code == 2 and "ssl.client.auth" in lines[0]


def test_requested_client_auth_serves_clients_with_and_without_a_certificate(pki, tmp_path):
    pki.use_server(1)
    s = TlsSluice(pki, data_dir=str(tmp_path),
                  settings={"listener.name.ssl.ssl.client.auth": "requested"}).start()
    try:
        with tls_connect(s.ssl_port, client_context(pki)) as anonymous:
            assert api_versions_ok(anonymous)
        with tls_connect(s.ssl_port, client_context(pki, cert="client.pem",
                                                    key="client.key")) as known:
            assert api_versions_ok(known)
        line = s.server.wait_log("by TLS client certificate")
        assert "authenticated as User:CN=Client-Alice,O=sluice" in line  # DEFAULT rule
        assert sum("by TLS client certificate" in l for l in s.server.log_lines) == 1
    finally:
        s.close()
