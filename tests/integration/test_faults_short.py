"""A short fault run (tests/faults): idempotent and transactional producers, read_committed and
read_uncommitted group consumers, kafkajs, SQS (standard and FIFO), REST and WebSocket clients,
while the nemesis SIGKILLs and restarts sluice, SIGSTOPs it, and cuts, delays and stalls
connections through loopback proxies. The
checker must find nothing; on failure the seed and the checker's summary are printed and the
history stays in the test's tmp dir."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "faults"))
import run  # noqa: E402

SEED = 20261202
SECONDS = 35
KILLS = 3


def test_short_fault_run_finds_no_anomaly(tmp_path):
    summary = run.run(SEED, SECONDS, KILLS, str(tmp_path), log=lambda m: None)
    report = json.dumps(summary, indent=2, sort_keys=True)
    if not summary["valid"]:
        # pytest rotates its tmp dirs: keep a copy of the evidence where it stays.
        keep = tempfile.mkdtemp(prefix=f"sluice-faults-{SEED}-")
        for name in ("history.jsonl", "summary.json", "sluice.log"):
            if os.path.exists(tmp_path / name):
                shutil.copy(tmp_path / name, keep)
        raise AssertionError(f"seed {SEED}: the checker found anomalies (history in "
                             f"{tmp_path}/history.jsonl, copied to {keep}):\n{report}")
    # The run did what it claims: every fault kind happened, and work got through.
    assert summary["run"]["nemesis"]["kill"] == KILLS, report
    assert summary["stats"]["acked_writes"] > 100, report
    assert summary["stats"]["committed_txns"] > 0 and summary["stats"]["aborted_txns"] > 0, report
    assert summary["stats"]["reads"] > 0 and summary["stats"]["sqs_deleted"] > 0, report
    assert summary["stats"]["fifo_sent"] > 0 and summary["stats"]["fifo_deleted"] > 0, report
    # The WebSocket and kafkajs producers' acknowledged sends are among the writes the checker
    # held to.
    with open(tmp_path / "history.jsonl") as f:
        entries = [json.loads(line) for line in f]
    ws_acks = [e for e in entries
               if e["worker"] == "w0" and e["op"] == "send" and e["type"] == "ok"]
    assert len(ws_acks) > 10, report
    kafkajs_acks = [e for e in entries
                    if e["worker"] == "k0" and e["op"] == "send" and e["type"] == "ok"]
    assert len(kafkajs_acks) > 10, report
