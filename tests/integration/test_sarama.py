"""sarama 1.22 (Go, Debian package): no ApiVersions, versions fixed by Config.Version (the
client is built once per file by conftest's sarama_bin; test_proxy runs it through the proxy)."""
import subprocess

import pytest


@pytest.mark.parametrize("version", ["0.8.2.0", "0.11.0.0", "2.2.0"])
def test_sarama_round_trip(broker, sarama_bin, version):
    topic = "sarama-" + version.replace(".", "-")
    r = subprocess.run([sarama_bin, broker.bootstrap, topic, version, "200"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"
