"""sarama 1.22 (Go, Debian package): no ApiVersions, versions fixed by Config.Version."""
import os
import shutil
import subprocess
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def sarama_bin():
    if shutil.which("go") is None or not os.path.isdir("/usr/share/gocode/src/github.com/Shopify/sarama"):
        pytest.fail("go and golang-github-shopify-sarama-dev are needed (scripts/install-deps)")
    out = tempfile.mkdtemp(prefix="sarama-")
    path = os.path.join(out, "sarama_roundtrip")
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode",
               GOCACHE=os.path.join(out, "cache"), GOFLAGS="")
    subprocess.run(["go", "build", "-o", path, "."], cwd=os.path.join(HERE, "go", "sarama_roundtrip"),
                   env=env, check=True, timeout=600, capture_output=True)
    yield path
    shutil.rmtree(out, ignore_errors=True)


@pytest.mark.parametrize("version", ["0.8.2.0", "0.11.0.0", "2.2.0"])
def test_sarama_round_trip(broker, sarama_bin, version):
    topic = "sarama-" + version.replace(".", "-")
    r = subprocess.run([sarama_bin, broker.bootstrap, topic, version, "200"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"
