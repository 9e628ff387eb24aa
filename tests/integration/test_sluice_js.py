"""sluice.js (gateway/http/ui/sluice.js) against a fake WebSocket server in Node.js: the
client's side of the /ws protocol frame by frame (subscribe, records, produce and acks, errors,
commit, credit, unsubscribe, reconnect with backoff and resume), its SSE helper, and loading it
as a plain script and as an ES module. The tests are js/sluice_client_test.js (node:test); this
file runs them and shows their report."""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def test_sluice_js_against_a_fake_server():
    r = subprocess.run(["node", "--test", "--test-reporter=spec", "sluice_client_test.js"],
                       capture_output=True, text=True, timeout=300, cwd=os.path.join(HERE, "js"))
    report = r.stdout + r.stderr
    assert r.returncode == 0, report
    assert "ℹ fail 0" in report, report
