import os
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sluice  # noqa: E402


@pytest.fixture
def broker():
    """A fresh sluice with an empty data directory, stopped after the test."""
    s = Sluice().start()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def sqs_broker():
    """A fresh sluice with its SQS listener open."""
    s = Sluice(sqs=True).start()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session")
def sarama_bin():
    """tests/integration/go/sarama_roundtrip built with Debian's sarama (GOPATH mode, no
    download): BOOTSTRAP TOPIC VERSION COUNT produces COUNT records to partition 0 of an empty
    TOPIC and reads them back, printing ok."""
    here = os.path.dirname(os.path.abspath(__file__))
    if shutil.which("go") is None or not os.path.isdir(
            "/usr/share/gocode/src/github.com/Shopify/sarama"):
        pytest.fail("go and golang-github-shopify-sarama-dev are needed (scripts/install-deps)")
    out = tempfile.mkdtemp(prefix="sarama-")
    path = os.path.join(out, "sarama_roundtrip")
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode",
               GOCACHE=os.path.join(out, "cache"), GOFLAGS="")
    subprocess.run(["go", "build", "-o", path, "."],
                   cwd=os.path.join(here, "go", "sarama_roundtrip"), env=env, check=True,
                   timeout=600, capture_output=True)
    yield path
    shutil.rmtree(out, ignore_errors=True)
