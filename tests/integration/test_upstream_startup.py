"""Upstream mode's start-up and its stand-ins: the sluice_mock_cluster tool (a bootstrap line,
3 brokers that kcat lists, topics made at start, stopping on stdin EOF and on SIGTERM, bad
arguments refused); `sluice --upstream` refusing a TLS or SASL Kafka listener given
explicitly (a PLAINTEXT one is the proxy: test_proxy.py; SQS stays off unless --sqs asks for
it: test_sqs_upstream.py serves it),
refusing a property librdkafka refuses with librdkafka's message, logging its mode; librdkafka's
lines in the upstream log area (--log-level upstream=debug: its debugging on); an
unreachable bootstrap answering /readyz 503 with a reason; /metrics showing librdkafka's
statistics and none of the native backend's lines."""
import json
import os
import re
import subprocess

import pytest
import requests

from harness import ROOT, sluice_binary, wait_for
from upstream_support import (Gateway, MockCluster, mock_cluster_binary, newer_mock_available,
                              unreachable_bootstrap, wait_ready)
from ws_support import WsClient


def kcat_metadata(bootstrap):
    r = subprocess.run(["kcat", "-b", bootstrap, "-L", "-J"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# --- the mock cluster tool ---------------------------------------------------------------------

def test_mock_cluster_prints_bootstrap_and_serves_three_brokers_with_its_topics():
    with MockCluster({"orders": 6, "audit": 1}) as mock:
        assert len(mock.bootstrap.split(",")) == 3
        md = kcat_metadata(mock.bootstrap)
        assert sorted(b["id"] for b in md["brokers"]) == [1, 2, 3]
        topics = {t["topic"]: t for t in md["topics"]}
        assert len(topics["orders"]["partitions"]) == 6
        assert len(topics["audit"]["partitions"]) == 1
        # Leaders spread over the brokers.
        assert len({p["leader"] for p in topics["orders"]["partitions"]}) > 1
    assert mock.proc.returncode == 0


def test_mock_cluster_stops_on_sigterm():
    mock = MockCluster({"t": 1}).start()
    assert mock.terminate() == 0


@pytest.mark.skipif(not newer_mock_available(), reason="node-rdkafka's librdkafka 2.12 not built")
def test_mock_cluster_runs_on_the_newer_librdkafka():
    with MockCluster({"t": 2}, newer=True) as mock:
        assert len(kcat_metadata(mock.bootstrap)["brokers"]) == 3
        assert "librdkafka 2.12" in mock.proc.stderr.readline()


@pytest.mark.parametrize("args,words", [
    (["--brokers", "0"], "--brokers"),
    (["--topic", "nopartitions"], "NAME:PARTITIONS"),
    (["--topic", "t:zero"], "NAME:PARTITIONS"),
    (["--bogus", "1"], "unknown option"),
    (["--brokers"], "missing value"),
])
def test_mock_cluster_refuses_bad_arguments(args, words):
    r = subprocess.run([mock_cluster_binary()] + args, capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and words in r.stderr, r.stderr


# --- sluice --upstream: what stops the start ----------------------------------------------------

@pytest.mark.parametrize("listener", ["SSL://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"])
def test_a_tls_proxy_listener_without_a_certificate_stops_the_start(listener):
    # The Kafka listener serves the proxy (test_proxy.py, test_proxy_security.py) on every
    # protocol; a TLS one needs the broker mode's ssl.* settings.
    g = Gateway(unreachable_bootstrap(), args=["--kafka", listener])
    try:
        code, err = g.run_to_exit()
    finally:
        g.close()
    assert code == 2 and listener in err and "ssl.certificate.location" in err, err


def test_listeners_setting_from_set_or_the_file_is_checked_too():
    g = Gateway(unreachable_bootstrap(), settings={"listeners": "SSL://127.0.0.1:0"})
    try:
        code, err = g.run_to_exit()
    finally:
        g.close()
    assert code == 2 and "ssl.certificate.location" in err, err


def test_kafka_proxy_with_the_authorizer_on_starts():
    # The proxy applies the gateway's ACLs to what it forwards (test_proxy_security.py).
    with MockCluster({"t": 1}) as mock, \
            Gateway(mock.bootstrap, args=["--kafka", "127.0.0.1:0"],
                    settings={"authorizer.enabled": "true"}) as g:
        assert "kafka=" in g.wait_log("listening:")


def test_an_upstream_setting_the_proxy_cannot_honour_stops_the_start(tmp_path):
    # librdkafka takes a PKCS#12 keystore; the proxy's own upstream connections do not, and
    # say so rather than connect without the client certificate.
    for args in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                  "/CN=gateway", "-keyout", "gw.key", "-out", "gw.pem"],
                 ["pkcs12", "-export", "-in", "gw.pem", "-inkey", "gw.key", "-passout",
                  "pass:store-Pass-1", "-out", "gw.p12"]):
        r = subprocess.run(["openssl"] + args, cwd=tmp_path, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
    g = Gateway(unreachable_bootstrap(), args=["--kafka", "127.0.0.1:0"],
                settings={"upstream.security.protocol": "SSL",
                          "upstream.ssl.keystore.location": str(tmp_path / "gw.p12"),
                          "upstream.ssl.keystore.password": "store-Pass-1"})
    try:
        code, err = g.run_to_exit()
    finally:
        g.close()
    assert code == 2 and "upstream.ssl.keystore.location: not honoured by the Kafka proxy" in err, \
        err


def test_listeners_from_the_environment_are_defaults_turned_off():
    # The container image sets SLUICE_LISTENERS and SLUICE_SQS_LISTENER.
    env = {"SLUICE_LISTENERS": "PLAINTEXT://127.0.0.1:0", "SLUICE_SQS_LISTENER": "127.0.0.1:0"}
    with MockCluster({"t": 1}) as mock, Gateway(mock.bootstrap, env=env) as g:
        listening = g.wait_log("listening:")
        assert "kafka=" not in listening and "sqs=" not in listening
        assert g.wait_log("the Kafka listener is off")
        assert g.wait_log("the SQS listener is off unless given explicitly")


def test_refused_property_stops_the_start_with_librdkafkas_message():
    g = Gateway(unreachable_bootstrap(), settings={"upstream.no.such.property": "1"})
    try:
        code, err = g.run_to_exit()
    finally:
        g.close()
    assert code == 2, err
    # librdkafka's own words, naming the property.
    assert "upstream.no.such.property" in err and "No such configuration property" in err, err


def test_refused_property_value_stops_the_start():
    g = Gateway(unreachable_bootstrap(), settings={"upstream.security.protocol": "carrier-pigeon"})
    try:
        code, err = g.run_to_exit()
    finally:
        g.close()
    assert code == 2 and "security.protocol" in err, err


def test_empty_upstream_flag_is_refused():
    r = subprocess.run([sluice_binary(), "--upstream", ""], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "--upstream: needs HOST:PORT" in r.stderr, r.stderr


# --- sluice --upstream: serving -----------------------------------------------------------------

def test_start_logs_the_mode_and_keeps_kafka_and_sqs_off():
    with MockCluster({"t": 1}) as mock, Gateway(mock.bootstrap) as g:
        line = g.wait_log("sluice starting in upstream mode")
        assert f"bootstrap {mock.bootstrap}" in line
        assert g.wait_log("the Kafka listener is off")
        assert g.wait_log("the SQS listener is off unless given explicitly")
        listening = g.wait_log("listening:")
        assert "kafka=" not in listening and "sqs=" not in listening and "http=" in listening
        wait_ready(g)
        assert requests.get(g.http_url + "/healthz", timeout=10).status_code == 200


def upstream_lines(gateway, level):
    """The gateway's log lines of the upstream area at `level` (text format)."""
    return [l for l in list(gateway.log_lines) if f" {level} [upstream] " in l]


def test_log_level_upstream_debug_turns_on_librdkafkas_debugging():
    """librdkafka's own lines go to the upstream area; --log-level upstream=debug turns on its
    broker, topic, metadata, cgrp and fetch debugging in the gateway's handles, the consumers
    a subscription opens included; at the default level there are none of them."""
    with MockCluster({"logged": 1}) as mock:
        with Gateway(mock.bootstrap, args=["--log-level", "info,upstream=debug"]) as g:
            wait_ready(g)
            with WsClient(g.http_port) as c:
                c.send({"op": "subscribe", "topics": ["logged"], "from": "earliest"})
                c.recv_op("subscribed")

                def facilities(kind):
                    """The librdkafka facilities of the debug lines of handles of `kind`."""
                    out = set()
                    for l in upstream_lines(g, "debug"):
                        words = l.split("[upstream] ", 1)[1].split(" ")
                        if f"#{kind}-" in words[0] and len(words) > 1:
                            out.add(words[1].rstrip(":"))
                    return out
                wait_for(lambda: {"BROKER", "METADATA"} <= facilities("producer") and
                         {"FETCH", "METADATA"} <= facilities("consumer"), 20,
                         "librdkafka debug lines of the producer and of a consumer",
                         interval=0.2)
            # Other areas stay at info.
            assert not any(" debug [" in l and "[upstream]" not in l for l in g.log_lines)
        with Gateway(mock.bootstrap) as quiet:
            wait_ready(quiet)
            with WsClient(quiet.http_port) as c:
                c.send({"op": "subscribe", "topics": ["logged"], "from": "earliest"})
                c.recv_op("subscribed")
            assert upstream_lines(quiet, "debug") == []
            assert upstream_lines(quiet, "info"), "the producer's start line is in the area"


def test_log_level_names_the_upstream_area_when_misspelt():
    r = subprocess.run([sluice_binary(), "--data-dir", "/nonexistent-never-created",
                        "--log-level", "info,upstrem=debug"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "did you mean upstream?" in r.stderr, r.stderr


def test_unreachable_bootstrap_is_not_ready_with_a_reason():
    with Gateway(unreachable_bootstrap(),
                 settings={"upstream.request.timeout.ms": 2000}) as g:
        def not_ready_with_reason():
            r = requests.get(g.http_url + "/readyz", timeout=10)
            return r.status_code == 503 and r.json().get("reason") and r.json()
        body = wait_for(not_ready_with_reason, 30, "/readyz 503 with a reason", interval=0.2)
        assert body["status"] == "not ready"
        assert g.alive()


def test_metrics_show_librdkafka_statistics_and_no_native_lines():
    with MockCluster({"t": 3}) as mock, \
            Gateway(mock.bootstrap, settings={"upstream.statistics.interval.ms": 500}) as g:
        wait_ready(g)

        def brokers_listed():
            # librdkafka connects to a broker when it needs one: every broker is listed, the
            # bootstrap's connection is up.
            text = requests.get(g.http_url + "/metrics", timeout=10).text
            listed = re.findall(r'^sluice_upstream_broker_up\{[^}]*node_id="([1-3])"\} [01]$',
                                text, re.M)
            up = re.findall(r'^sluice_upstream_broker_up\{[^}]*node_id="[1-3]"\} 1$', text, re.M)
            return len(set(listed)) == 3 and up and text
        text = wait_for(brokers_listed, 30, "the 3 upstream brokers on /metrics, one up",
                        interval=0.2)
        for family in ["sluice_upstream_broker_up", "sluice_upstream_broker_rtt_seconds",
                       "sluice_upstream_broker_throttle_seconds",
                       "sluice_upstream_requests_total", "sluice_upstream_request_errors_total",
                       "sluice_upstream_call_errors_total"]:
            assert f"# TYPE {family} " in text and f"# HELP {family} " in text, family
        assert re.search(r'sluice_upstream_broker_rtt_seconds\{[^}]*quantile="0.99"\}', text)
        # Each upstream family is described in docs/operations.md.
        with open(os.path.join(ROOT, "docs", "operations.md")) as f:
            doc = f.read()
        for family in set(re.findall(r"^# TYPE (sluice_upstream_[a-z_]+) ", text, re.M)):
            assert f"`{family}`" in doc, family
        # The native backend's lines are not there.
        assert "sluice_partition_" not in text and "sluice_fsync_seconds" not in text


# --- the harness's rerun mode -------------------------------------------------------------------

def test_rerun_mode_puts_a_gateway_in_front_of_every_sluice(monkeypatch):
    from harness import Sluice
    monkeypatch.setenv("SLUICE_TEST_UPSTREAM", "native")
    with Sluice(settings={"num.partitions": 2}) as s:
        assert s.upstream is not None and s.upstream.alive()
        # Kafka clients talk to the upstream, HTTP clients to the gateway.
        assert s.kafka_port == s.upstream.kafka_port
        assert s.http_port != s.upstream.http_port
        assert s.wait_log("sluice starting in upstream mode")
        wait_ready(s)
        gateway, upstream = s.proc, s.upstream.proc
    assert gateway.returncode == 0 and upstream.returncode == 0


# --- pass-through properties: a SASL/SCRAM upstream ---------------------------------------------

def test_pass_through_properties_reach_a_sasl_scram_upstream():
    from sasl_support import PASSWORDS, SaslSluice
    upstream = SaslSluice().start()
    try:
        good = {"upstream.security.protocol": "SASL_PLAINTEXT",
                "upstream.sasl.mechanism": "SCRAM-SHA-256",
                "upstream.sasl.username": "alice",
                "upstream.sasl.password": PASSWORDS["alice"]}
        with Gateway(upstream.sasl_bootstrap, settings=good) as g:
            wait_ready(g)
            assert g.wait_log("upstream cluster id")  # asked over the SASL connection
            assert PASSWORDS["alice"] not in g.log_text()
        bad = dict(good, **{"upstream.sasl.password": "not-the-password",
                            "upstream.request.timeout.ms": 2000})
        with Gateway(upstream.sasl_bootstrap, settings=bad) as g:
            def refused():
                r = requests.get(g.http_url + "/readyz", timeout=10)
                return r.status_code == 503 and r.json().get("reason") and r.json()
            body = wait_for(refused, 30, "/readyz 503 after a refused login", interval=0.2)
            assert "auth" in body["reason"].lower(), body
            assert "not-the-password" not in g.log_text()
    finally:
        upstream.close()
