"""A short fault run in upstream mode (tests/faults, run.py --gateways): a native sluice plays
the Kafka cluster and two gateways serve the clients (idempotent and transactional producers,
read_committed and read_uncommitted group consumers and kafkajs through the gateways' Kafka
proxy listeners, REST and WebSocket producers on their HTTP fronts, SQS standard and FIFO on the
first gateway) while the nemesis SIGKILLs and restarts gateways and the cluster, SIGSTOPs them,
and cuts, delays and stalls their connections, the gateways' links to the cluster included. The
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

SEED = 20261207
SECONDS = 20
KILLS = 2          # of gateways
CLUSTER_KILLS = 1


def test_short_upstream_fault_run_finds_no_anomaly(tmp_path):
    summary = run.run(SEED, SECONDS, KILLS, str(tmp_path), log=lambda m: None, gateways=2,
                      cluster_kills=CLUSTER_KILLS)
    report = json.dumps(summary, indent=2, sort_keys=True)
    if not summary["valid"]:
        keep = tempfile.mkdtemp(prefix=f"sluice-faults-upstream-{SEED}-")
        for name in ("history.jsonl", "summary.json", "sluice.log"):
            if os.path.exists(tmp_path / name):
                shutil.copy(tmp_path / name, keep)
        raise AssertionError(f"seed {SEED}: the checker found anomalies (history in "
                             f"{tmp_path}/history.jsonl, copied to {keep}):\n{report}")
    # The run did what it claims: gateways and the cluster were killed, and work got through
    # every front.
    assert summary["run"]["nemesis"]["kill"] == KILLS + CLUSTER_KILLS, report
    assert summary["run"]["starts"]["cluster"] == 1 + CLUSTER_KILLS, report
    assert summary["stats"]["acked_writes"] > 100, report
    assert summary["stats"]["committed_txns"] > 0, report
    assert summary["stats"]["reads"] > 0 and summary["stats"]["sqs_deleted"] > 0, report
    assert summary["stats"]["fifo_sent"] > 0 and summary["stats"]["fifo_deleted"] > 0, report
    with open(tmp_path / "history.jsonl") as f:
        entries = [json.loads(line) for line in f]
    for worker in ("w0", "k0", "r0"):  # WebSocket, kafkajs (proxy), REST through gateways
        acks = [e for e in entries
                if e["worker"] == worker and e["op"] == "send" and e["type"] == "ok"]
        assert len(acks) > 10, (worker, report)
