"""kafkajs 2.2.4 (Node.js): admin calls and a produce/consume round trip."""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def test_kafkajs_round_trip(broker):
    r = subprocess.run(["node", os.path.join(HERE, "js", "roundtrip.js"), broker.bootstrap],
                       capture_output=True, text=True, timeout=180, cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok")
