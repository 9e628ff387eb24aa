"""The process contract: flags, data directory, listeners, health and shutdown."""
import os
import struct
import subprocess
import tempfile
import urllib.request

import pytest

from harness import Sluice, connect, kafka_request, read_frame, sluice_binary


def run(args, timeout=20):
    return subprocess.run([sluice_binary()] + args, capture_output=True, text=True,
                          timeout=timeout)


def test_help_documents_every_flag():
    r = run(["--help"])
    assert r.returncode == 0
    for flag in ["--data-dir", "--kafka", "--http", "--sqs", "--advertise-kafka", "--config"]:
        assert flag in r.stdout


def test_unknown_flag_fails_with_one_clear_line():
    r = run(["--no-such-flag"])
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "--no-such-flag" in lines[0]


def test_bad_listener_address_fails():
    r = run(["--kafka", "not-an-endpoint", "--data-dir", tempfile.mkdtemp()])
    assert r.returncode != 0
    assert "--kafka" in r.stderr


def test_data_dir_that_is_a_file_fails():
    with tempfile.NamedTemporaryFile() as f:
        r = run(["--data-dir", f.name, "--kafka", "127.0.0.1:0", "--http", "off", "--sqs", "off"])
        assert r.returncode != 0
        assert "--data-dir" in r.stderr


def test_second_process_on_same_data_dir_is_refused(broker):
    r = run(["--data-dir", broker.data_dir, "--kafka", "127.0.0.1:0", "--http", "off",
             "--sqs", "off"])
    assert r.returncode != 0
    assert "in use" in r.stderr
    assert broker.alive()


def test_healthz_and_metrics(broker):
    with urllib.request.urlopen(broker.http_url + "/healthz", timeout=10) as r:
        assert r.status == 200
        assert b"ok" in r.read()
    # One Kafka request, then its counter shows on /metrics.
    with connect(broker.kafka_port) as s:
        s.sendall(kafka_request(18, 0, 1))
        read_frame(s)
    with urllib.request.urlopen(broker.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    assert 'sluice_kafka_requests_total{api="ApiVersions"} 1' in text
    assert "sluice_kafka_request_seconds_bucket" in text


def test_unknown_http_route_is_404(broker):
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(broker.http_url + "/nope", timeout=10)
    assert e.value.code == 404


def test_listener_off_is_not_opened():
    s = Sluice(args=["--http", "off"])
    # The harness passes --http 127.0.0.1:0 first; the later flag wins.
    s.start()
    try:
        assert s.http_port is None
        assert s.kafka_port is not None
    finally:
        s.close()


def test_sigterm_exits_cleanly(broker):
    assert broker.stop() == 0
    assert "sluice stopped" in broker.log_text()
