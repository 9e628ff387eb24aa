#!/usr/bin/python3
"""One fault run: a sluice (node.py) with proxies, the workers of workers.py, the nemesis of
nemesis.py for --seconds, then the final full read of the log and drain of the queue, then the
checker. Writes DIR/history.jsonl, DIR/sluice.log and DIR/summary.json; exit status 1 when the
checker found an anomaly (or a worker crashed).

    /usr/bin/python3 tests/faults/run.py --seed 7 --seconds 60 --kills 5 --out /tmp/run7

Upstream mode (--gateways N): a native sluice plays the Kafka cluster and N gateways
(`--upstream`) serve the clients, the workers spread over them (Kafka clients through each
gateway's proxy listener, REST and WebSocket on its HTTP front; SQS on the first gateway, the one
that serves the queues); the nemesis kills the gateways (--kills among them) and the cluster
(--cluster-kills), and pauses, cuts, delays and stalls any of them, the cluster's link to every
gateway included; the final read and the checker are the same, read straight from the cluster.
DIR/sluice.log then holds every process's lines, each prefixed with its name.
"""
import argparse
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checker  # noqa: E402
import workers  # noqa: E402
from history import History, load  # noqa: E402
from nemesis import Nemesis  # noqa: E402
from node import Node, free_port as node_free_port  # noqa: E402

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC = "faults"
PARTITIONS = 3
QUEUE = "faults-q"
FIFO_QUEUE = "faults-q.fifo"
MAX_VT = 5  # the largest visibility timeout the SQS workers ask for
# After a gateway's crash a receive lease holds what it covers up to this long past the
# timeout of the receive whose record was lost (docs/sqs.md, "Receive leases").
LEASE_SLACK = 5


def setup(node, sqs_node=None):
    """The topic on `node` (the sluice, or the cluster) and the queues through `sqs_node`."""
    a = AdminClient({"bootstrap.servers": node.direct_bootstrap})
    for f in a.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        f.result(30)
    c = workers.sqs_client(f"http://127.0.0.1:{(sqs_node or node).ports['sqs']}")
    url = c.create_queue(QueueName=QUEUE)["QueueUrl"]
    fifo = c.create_queue(QueueName=FIFO_QUEUE, Attributes={"FifoQueue": "true"})["QueueUrl"]
    # The paths: "/<account>/<queue>"
    return "/" + url.split("/", 3)[3], "/" + fifo.split("/", 3)[3]


def final_read(node, history, isolation, timeout=90):
    """Every record of the topic, from offset 0 to the end each partition has now."""
    c = Consumer({"bootstrap.servers": node.direct_bootstrap, "group.id": "final-" + isolation,
                  "enable.auto.commit": False, "isolation.level": "read_" + isolation})
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        deadline = time.monotonic() + timeout
        ends = [c.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in tps]
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        while True:
            positions = [max(tp.offset, 0) for tp in c.position(tps)]
            if all(pos >= end for pos, end in zip(positions, ends)):
                break
            if time.monotonic() > deadline:
                history.record("final", "final-done", "info", isolation=isolation,
                               ends=ends, positions=positions)
                return False
            for m in c.consume(500, 0.2):
                if m.error() is None:
                    history.record("final", "final-read", "ok", isolation=isolation,
                                   topic=m.topic(), partition=m.partition(), offset=m.offset(),
                                   value=m.value().decode())
        history.record("final", "final-done", "ok", isolation=isolation, ends=ends)
        return True
    finally:
        c.close()


def wait_stable(node, timeout=40):
    """Until the last stable offset of every partition reaches its high watermark (open
    transactions of producers that crashed time out after transaction.timeout.ms)."""
    rc = Consumer({"bootstrap.servers": node.direct_bootstrap, "group.id": "final-lso",
                   "isolation.level": "read_committed"})
    ru = Consumer({"bootstrap.servers": node.direct_bootstrap, "group.id": "final-hw"})
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
            lso = [rc.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in tps]
            hw = [ru.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in tps]
            if lso == hw:
                return True
            time.sleep(0.5)
        return False
    finally:
        rc.close()
        ru.close()


def drain_queue(node, history, path, quiet=MAX_VT + LEASE_SLACK + 3, timeout=120,
                prefix="sqs"):
    """Receives and deletes until the queue has stayed empty for longer than any visibility
    timeout a worker used and a lease's slack (so every message received and left has come
    back). `prefix`
    "fifo" records fifo-final with each message's group, seq, id and place in its answer."""
    url = f"http://127.0.0.1:{node.ports['sqs']}" + path
    c = workers.sqs_client(url.rsplit(path, 1)[0])
    deadline = time.monotonic() + timeout
    last_seen = time.monotonic()
    calls = 0
    while time.monotonic() < deadline:
        got = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                VisibilityTimeout=60)
        msgs = got.get("Messages", [])
        calls += 1
        for i, m in enumerate(msgs):
            extra = {"message_id": m["MessageId"]}
            if prefix == "fifo":
                group, seq = workers.fifo_place(m["Body"])
                extra.update({"group": group, "seq": seq, "call": calls, "index": i})
            history.record("qfinal", prefix + "-final", "ok", value=m["Body"], **extra)
            history.record("qfinal", prefix + "-delete", "invoke", value=m["Body"],
                           message_id=m["MessageId"])
            c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        if msgs:
            last_seen = time.monotonic()
        elif time.monotonic() - last_seen > quiet:
            history.record("qfinal", prefix + "-final-done", "ok")
            return True
    return False


def run(seed, seconds, kills, out, settings=None, env=None, log=print, gateways=0,
        cluster_kills=0):
    """One run against one sluice, or (`gateways` > 0) against that many gateways in upstream
    mode over a native sluice as the cluster."""
    os.makedirs(out, exist_ok=True)
    data = os.path.join(out, "data")
    os.makedirs(data, exist_ok=True)
    rng = random.Random(seed)
    hist_path = os.path.join(out, "history.jsonl")
    log_path = os.path.join(out, "sluice.log")
    node_settings = {"num.partitions": str(PARTITIONS), **(settings or {})}
    if gateways:
        cluster = Node(os.path.join(data, "cluster"), settings=node_settings, env=env,
                       log_path=log_path, sqs=False, name="cluster")
        # The first gateway serves the SQS queues (one per cluster); each gateway's proxy
        # serves the cluster's node 0 on a port of its own, fixed across restarts.
        fronts = [Node(os.path.join(data, f"gw{i}"), env=env, log_path=log_path, sqs=(i == 0),
                       name=f"gw{i}", args=["--upstream", cluster.bootstrap],
                       settings={**(settings or {}),
                                 "proxy.node.port.base": str(node_free_port())})
                  for i in range(gateways)]
    else:
        cluster = None
        fronts = [Node(data, settings=node_settings, env=env, log_path=log_path)]
    every = ([cluster] if cluster else []) + fronts
    history = History(hist_path)
    t_start = time.monotonic()
    try:
        for n in every:
            n.start()
        log_node = cluster or fronts[0]  # where the topic is, read straight
        sqs_node = fronts[0]
        path, fifo_path = setup(log_node, sqs_node)

        def on(i):  # the gateway of the i-th worker (the one sluice without gateways)
            return fronts[i % len(fronts)]

        def r():
            return random.Random(rng.random())
        ws = [workers.IdempotentProducer("p0", on(0), history, r()),
              workers.IdempotentProducer("p1", on(1), history, r()),
              workers.TransactionalProducer("t0", on(0), history, r()),
              workers.GroupConsumer("c0", on(0), history, r(), "gc", "committed"),
              workers.GroupConsumer("c1", on(1), history, r(), "gc", "committed"),
              workers.GroupConsumer("u0", on(1), history, r(), "gu", "uncommitted"),
              workers.SqsWorker("q0", sqs_node, history, r(), path),
              workers.SqsWorker("q1", sqs_node, history, r(), path),
              workers.RestProducer("r0", on(1), history, r()),
              workers.FifoWorker("f0", sqs_node, history, r(), fifo_path),
              workers.FifoWorker("f1", sqs_node, history, r(), fifo_path),
              workers.WsProducer("w0", on(1), history, r()),
              workers.KafkajsProducer("k0", on(0), history, r())]
        for w in ws:
            w.start()
        nemesis = Nemesis(fronts, history, rng.randrange(1 << 30), seconds, kills,
                          cluster=cluster, cluster_kills=cluster_kills)
        nemesis.start()
        nemesis.join(seconds + 120)
        log(f"nemesis done: {nemesis.done}")
        for n in every:
            n.heal()
            if n.stopped:
                n.resume()
            if not n.alive():
                n.start()
        for w in ws:
            w.stop()
        for w in ws:
            w.join(90)
        stuck = [w.worker for w in ws if w.is_alive()]
        log("workers stopped" + (f" (still running: {stuck})" if stuck else ""))
        wait_stable(log_node)
        final_read(log_node, history, "uncommitted")
        final_read(log_node, history, "committed")
        drain_queue(sqs_node, history, path)
        drain_queue(sqs_node, history, fifo_path, prefix="fifo")
        history.close()
        summary = checker.check(load(hist_path))
        summary["run"] = {"seed": seed, "seconds": seconds, "kills_asked": kills,
                          "nemesis": nemesis.done, "nemesis_error": nemesis.error,
                          "wall_seconds": round(time.monotonic() - t_start, 1),
                          "sluice_starts": sum(n.starts for n in every),
                          "worker_errors": {w.worker: w.errors for w in ws},
                          "worker_crashes": {w.worker: w.exception for w in ws if w.exception},
                          "workers_stuck": stuck}
        if gateways:
            summary["run"].update({"gateways": gateways, "cluster_kills_asked": cluster_kills,
                                   "starts": {n.name: n.starts for n in every}})
        if summary["run"]["worker_crashes"] or stuck or nemesis.error:
            summary["valid"] = False
        with open(os.path.join(out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2, sort_keys=True)
        return summary
    finally:
        history.close()
        for n in reversed(every):
            n.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description="a fault run against one sluice")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--out", required=True, help="directory for the history, logs and summary")
    ap.add_argument("--gateways", type=int, default=0,
                    help="upstream mode: this many gateways over a native sluice as the cluster")
    ap.add_argument("--cluster-kills", type=int, default=0,
                    help="upstream mode: SIGKILLs (and restarts) of the cluster")
    args = ap.parse_args(argv)
    summary = run(args.seed, args.seconds, args.kills, args.out,
                  log=lambda m: print(m, file=sys.stderr), gateways=args.gateways,
                  cluster_kills=args.cluster_kills)
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0 if summary["valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
