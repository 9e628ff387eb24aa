"""Upstream mode against clusters that need TLS and SASL: a native sluice with SSL and SASL_SSL
(SCRAM-SHA-512) listeners plays the cluster, and a gateway (`sluice --upstream`) reaches it with
the `upstream.*` properties handed to librdkafka. Records produced through the gateway's REST
front are read straight from the cluster with confluent-kafka over the same protocol; wrong
credentials and an untrusted certificate leave the gateway not ready, saying why, and its REST
front answers with an error instead of hanging."""
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import uuid

import pytest
import requests

from harness import sluice_binary, wait_for
from rest_support import V2, V2_JSON
from sasl_support import PASSWORDS, consume_all, set_user
from tls_support import Pki, TlsSluice


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def cluster(pki, tmp_path_factory):
    d = str(tmp_path_factory.mktemp("cluster"))
    for name, password in PASSWORDS.items():
        set_user(d, name, password)
    s = TlsSluice(pki, data_dir=d).start()
    try:
        yield s
    finally:
        s.close()


class Gateway:
    """`sluice --upstream BOOTSTRAP` with an HTTP front only; `props` are upstream.* settings."""

    def __init__(self, bootstrap, props):
        self._tmp = tempfile.TemporaryDirectory(prefix="sluice-gw-")
        cmd = [sluice_binary(), "--data-dir", self._tmp.name, "--upstream", bootstrap,
               "--http", "127.0.0.1:0"]
        for k, v in props.items():
            cmd += ["--set", f"upstream.{k}={v}"]
        self.lines = []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, errors="replace")
        threading.Thread(target=self._read, daemon=True).start()
        line = wait_for(lambda: self._line("listening:") or self.proc.poll() is not None, 30,
                        "the gateway to listen")
        if line is True:
            raise RuntimeError("the gateway exited:\n" + "\n".join(self.lines))
        self.http_url = "http://127.0.0.1:" + re.search(r"http=[^ ]*:(\d+)", line).group(1)

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def _line(self, needle):
        return next((l for l in list(self.lines) if needle in l), None)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._tmp.cleanup()


def sasl_props(pki, password=PASSWORDS["alice"]):
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice", "sasl.password": password,
            "ssl.ca.location": pki.path("ca.pem"), "request.timeout.ms": "4000"}


def ssl_props(pki, ca="ca.pem"):
    return {"security.protocol": "SSL", "ssl.ca.location": pki.path(ca),
            "request.timeout.ms": "4000"}


def client_config(props, bootstrap):
    cfg = {k: v for k, v in props.items() if k != "request.timeout.ms"}
    cfg["bootstrap.servers"] = bootstrap
    return cfg


def produce_through(gw, topic, values):
    body = {"records": [{"value": v} for v in values]}
    r = requests.post(f"{gw.http_url}/topics/{topic}", data=json.dumps(body),
                      headers={"Content-Type": V2_JSON, "Accept": V2}, timeout=60)
    return r


def ready(gw):
    r = requests.get(f"{gw.http_url}/readyz", timeout=10)
    gw.last_ready = (r.status_code, r.text)
    return r


def not_ready_saying(gw, pattern, what):
    """Waits (bounded) for /readyz to answer 503 with a reason matching `pattern`."""
    try:
        # (A requests.Response is falsy when its status is an error: answer True instead.)
        wait_for(lambda: (lambda a: a.status_code == 503 and
                          re.search(pattern, a.text, re.I) is not None)(ready(gw)), 30, what)
    except TimeoutError as e:
        raise AssertionError(f"{e}; /readyz last answered {gw.last_ready}") from None


@pytest.mark.parametrize("protocol", ["SASL_SSL", "SSL"])
def test_records_produced_through_the_gateway_reach_a_secured_cluster(pki, cluster, protocol):
    bootstrap = cluster.sasl_ssl_bootstrap if protocol == "SASL_SSL" else cluster.ssl_bootstrap
    props = sasl_props(pki) if protocol == "SASL_SSL" else ssl_props(pki)
    gw = Gateway(bootstrap, props)
    try:
        wait_for(lambda: ready(gw).status_code == 200, 30, "the gateway to be ready")
        topic = f"up-sec-{protocol.lower()}-{uuid.uuid4().hex[:8]}"
        values = [{"n": i} for i in range(5)]
        r = produce_through(gw, topic, values)
        assert r.status_code == 200, r.text
        offsets = r.json()["offsets"]
        assert [o.get("error_code") for o in offsets] == [None] * 5
        got = consume_all(client_config(props, bootstrap), topic, 5)
        assert [json.loads(v) for v in got] == values
        # The console's sizes come over the gateway's own connections to the brokers, with
        # the same TLS (and SASL login) as librdkafka's.
        def sized():
            r = requests.get(f"{gw.http_url}/v1/console/partition-sizes", timeout=60)
            assert r.status_code == 200 and r.json()["unknown"] == [], r.text
            return [p for p in r.json()["partitions"] if p["topic"] == topic]
        parts = wait_for(sized, 30, "the topic's size")
        assert parts[0]["partition"] == 0 and parts[0]["size_bytes"] > 0, parts
    finally:
        gw.close()


def test_a_wrong_password_leaves_the_gateway_not_ready_and_says_why(pki, cluster):
    gw = Gateway(cluster.sasl_ssl_bootstrap, sasl_props(pki, password="wrong"))
    try:
        not_ready_saying(gw, r"authentication", "/readyz to say authentication failed")
        began = time.monotonic()
        p = produce_through(gw, f"up-sec-denied-{uuid.uuid4().hex[:8]}", [1])
        assert time.monotonic() - began < 30
        assert p.status_code >= 500, p.text
        body = p.json()
        assert isinstance(body.get("error_code"), int) and body.get("message"), body
        cluster.server.wait_log("authentication failed: user 'alice'")
    finally:
        gw.close()


def test_an_untrusted_cluster_certificate_leaves_the_gateway_not_ready(pki, cluster):
    gw = Gateway(cluster.ssl_bootstrap, ssl_props(pki, ca="other-ca.pem"))
    try:
        not_ready_saying(gw, r"ssl|certificate|handshake", "/readyz to name the TLS failure")
    finally:
        gw.close()


def test_a_property_librdkafka_refuses_stops_start_up_with_its_message(tmp_path):
    r = subprocess.run([sluice_binary(), "--data-dir", str(tmp_path), "--upstream",
                        "127.0.0.1:9", "--http", "127.0.0.1:0", "--set",
                        "upstream.security.protocol=CARRIER_PIGEON"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "upstream.security.protocol" in r.stderr
    assert "CARRIER_PIGEON" in r.stderr or "Invalid value" in r.stderr
