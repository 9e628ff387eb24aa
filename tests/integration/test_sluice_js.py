"""sluice.js (gateway/http/ui/sluice.js) in Node.js.

- Against a fake WebSocket server: the client's side of the /ws protocol frame by frame
  (subscribe, records in both encodings, produce and acks, errors, commit, credit, unsubscribe,
  reconnect with backoff and resume), its decoder, its SSE helper, and loading it as a plain
  script and as an ES module. The tests are js/sluice_client_test.js (node:test); this file
  runs them and shows their report.
- Against the real binary (js/sluice_js_receive.js): the client asks for compact frames by
  default and hands onRecords the records kcat produced, exactly as it does with the default
  frames, in each format.
"""
import json
import os
import subprocess

from rest_support import create_topic

HERE = os.path.dirname(os.path.abspath(__file__))
JS = os.path.join(HERE, "js")
KCAT = "/usr/bin/kcat"


def test_sluice_js_against_a_fake_server():
    r = subprocess.run(["node", "--test", "--test-reporter=spec", "sluice_client_test.js"],
                       capture_output=True, text=True, timeout=300, cwd=JS)
    report = r.stdout + r.stderr
    assert r.returncode == 0, report
    assert "ℹ fail 0" in report, report


def kcat(broker, *args, stdin=None):
    r = subprocess.run([KCAT, "-b", broker.bootstrap] + list(args), input=stdin,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def receive(broker, topic, count, fmt, encoding=None):
    args = ["node", os.path.join(JS, "sluice_js_receive.js"),
            f"ws://127.0.0.1:{broker.http_port}/ws", topic, str(count), fmt]
    if encoding:
        args.append(encoding)
    r = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=JS)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_sluice_js_decodes_compact_frames_from_sluice(broker):
    create_topic(broker, "js-compact", 2)
    kcat(broker, "-t", "js-compact", "-P", "-p", "0", "-K", ":", "-H", "trace=t-1",
         stdin='k0:v0\nk1:{"n":1}\n')
    kcat(broker, "-t", "js-compact", "-P", "-p", "0", stdin="plain\n")
    kcat(broker, "-t", "js-compact", "-P", "-p", "1", "-K", ":", stdin="p1:one\n")
    produced = {}
    for p, n in ((0, 3), (1, 1)):
        out = kcat(broker, "-t", "js-compact", "-C", "-p", str(p), "-o", "beginning", "-c",
                   str(n), "-e", "-J")
        for line in out.splitlines():
            m = json.loads(line)
            produced[(m["partition"], m["offset"])] = m
    got = receive(broker, "js-compact", 4, "string")
    assert set(got["encodings"]) == {"compact"}, got["encodings"]
    records = {(r["partition"], r["offset"]): r for r in got["records"]}
    assert set(records) == set(produced)
    for pos, m in produced.items():
        r = records[pos]
        h = m.get("headers") or {}
        headers = dict(zip(h[::2], h[1::2])) if isinstance(h, list) else h
        assert r == {"topic": "js-compact", "partition": pos[0], "offset": pos[1],
                     "timestamp": m["ts"], "key": m["key"], "value": m["payload"],
                     "headers": headers}, (r, m)
    # The same record objects as the default frames give, in every format.
    for fmt in ("string", "base64", "json"):
        compact = receive(broker, "js-compact", 4, fmt)
        default = receive(broker, "js-compact", 4, fmt, "records")
        assert set(default["encodings"]) == {"records"}
        key = lambda r: (r["partition"], r["offset"])
        assert sorted(compact["records"], key=key) == sorted(default["records"], key=key), fmt
