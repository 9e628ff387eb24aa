#!/usr/bin/python3
"""Checks the history of a fault run (history.py) for the anomalies a log and a queue must never
show, and prints a JSON summary: counts and a few examples of each, exit status 1 on any.

Log (Kafka, REST) operations:
  send      ok: {value, topic, partition, offset, seq, idempotent}   one record acknowledged
  txn       ok: {outcome: commit|abort, values, offsets: [[partition, offset], ...]}
  read      ok: {group, isolation: committed|uncommitted, topic, partition, offset, value}
  assign    ok: {partitions}   a consumer's new assignment (its positions may move back)
  commit    ok: {group, topic, partition, offset}   a committed offset the server accepted
  final-read ok: {isolation, topic, partition, offset, value}   the full read after the run
  final-done ok: {isolation}   that read reached the end of every partition
Queue (SQS) operations:
  sqs-send    ok: {value}
  sqs-receive ok: {value, start, vt, message_id}   received at `time`, asked at `start`,
                            hidden for vt s
  sqs-delete  ok | fail | info: {value, message_id}
  A client's retry of a send it did not hear the answer to may store a value twice (SQS is
  at least once): receives and deletes are matched by message id where the history has one.
  sqs-final   ok: {value}   the drain after the run; sqs-final-done ok when the queue stayed
                            empty for longer than every visibility timeout
FIFO queue operations: fifo-send, fifo-receive, fifo-delete, fifo-final, fifo-final-done as the
  sqs-* ones (every queue check above applies to them too), with {group, seq} on sends
  (one sender per group, seq in send order) and {group, seq, message_id, call, index} on
  receives (call: one ReceiveMessage, index: the place in its answer)

Anomalies:
  lost                    an acknowledged write (send ok, committed transaction, sqs-send ok
                          not deleted) missing from the final read / drain
  duplicate               a value of an idempotent or transactional producer at two offsets
  inconsistent_offset     one (topic, partition, offset) with two values
  aborted_read            a read_committed read of a value of an aborted transaction
  producer_non_monotonic  one producer's acknowledged offsets on a partition out of send order
  consumer_non_monotonic  one consumer's reads of a partition going back within an assignment
  commit_ahead            a committed offset past a record the group had not read (records
                          of aborted transactions and markers may be skipped)
  incomplete              the final read or drain did not finish
  deleted_redelivered     a message received after its delete was acknowledged (a delete that
                          may have carried an older receipt handle, which SQS acknowledges
                          without deleting, does not count)
  overlapping_receive     a message received again before the previous receive's visibility
                          timeout had passed (two holders at once)
  fifo_out_of_order       a FIFO message received while an earlier message of its group that
                          was certainly sent had not been deleted (no delete asked for before
                          the answer) and was not earlier in the same answer
  fifo_duplicate          one FIFO value stored twice (received under two message ids): the
                          deduplication id of a resent message did not hold
"""
import argparse
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from history import load  # noqa: E402

ANOMALIES = ["lost", "duplicate", "inconsistent_offset", "aborted_read",
             "producer_non_monotonic", "consumer_non_monotonic", "commit_ahead", "incomplete",
             "deleted_redelivered", "overlapping_receive", "fifo_out_of_order",
             "fifo_duplicate"]
EXAMPLES = 5


class Report:
    def __init__(self):
        self.counts = {a: 0 for a in ANOMALIES}
        self.examples = {a: [] for a in ANOMALIES}

    def add(self, kind, example):
        self.counts[kind] += 1
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(example)

    def total(self):
        return sum(self.counts.values())


def check(history):
    """The summary dict of one history (a list of entries)."""
    r = Report()
    ok = [e for e in history if e["type"] == "ok"]
    by_op = defaultdict(list)
    for e in ok:
        by_op[e["op"]].append(e)
    stats = {"entries": len(history), "ok": len(ok),
             "ops": sum(1 for e in history if e["type"] != "invoke" and e["worker"] != "nemesis"),
             "nemesis": dict(_count(e["op"] for e in history if e["worker"] == "nemesis"
                                    and e["type"] == "invoke"))}
    unknown_txn_values = set()
    for e in history:
        if e["op"] == "txn" and e["type"] in ("invoke", "info"):
            unknown_txn_values.update(e.get("values") or [])
    _check_log(by_op, unknown_txn_values, r, stats)
    for prefix in ("sqs", "fifo"):
        maybe_deleted = {e["value"] for e in history if e["op"] == prefix + "-delete"
                         and e["type"] == "info"}
        _check_queue(by_op, maybe_deleted, r, stats, prefix)
    _check_fifo(history, by_op, r)
    return {"valid": r.total() == 0, "anomalies": r.total(), "counts": r.counts,
            "examples": {k: v for k, v in r.examples.items() if v}, "stats": stats}


def _count(items):
    out = defaultdict(int)
    for i in items:
        out[i] += 1
    return out


def _check_log(by_op, unknown_txn_values, r, stats):
    sends = by_op["send"]
    txns = by_op["txn"]
    committed_values = set()
    aborted_values = set()
    exactly_once = set()  # values that must be stored at one offset only
    acked = []            # (value, where it came from)
    positions = defaultdict(set)  # (topic, partition, offset) -> values
    places = defaultdict(set)     # value -> (topic, partition, offset)
    for e in sends:
        acked.append((e["value"], e["worker"]))
        if e.get("idempotent", True):
            exactly_once.add(e["value"])
        if e.get("offset") is not None and e["offset"] >= 0:
            key = (e["topic"], e["partition"], e["offset"])
            positions[key].add(e["value"])
            places[e["value"]].add(key)
    for e in txns:
        if e["outcome"] == "commit":
            committed_values.update(e["values"])
            exactly_once.update(e["values"])
            acked.extend((v, e["worker"]) for v in e["values"])
            for v, (p, o) in zip(e["values"], e.get("offsets") or []):
                if o is not None and o >= 0:
                    key = (e["topic"], p, o)
                    positions[key].add(v)
                    places[v].add(key)
        else:
            aborted_values.update(e["values"])
    stats["acked_writes"] = len(acked)
    stats["committed_txns"] = sum(1 for e in txns if e["outcome"] == "commit")
    stats["aborted_txns"] = sum(1 for e in txns if e["outcome"] == "abort")

    reads = by_op["read"] + by_op["final-read"]
    stats["reads"] = len(by_op["read"])
    for e in reads:
        key = (e["topic"], e["partition"], e["offset"])
        positions[key].add(e["value"])
        places[e["value"]].add(key)
        if e.get("isolation") == "committed" and e["value"] in aborted_values:
            r.add("aborted_read", {"worker": e["worker"], "value": e["value"],
                                   "partition": e["partition"], "offset": e["offset"]})
    for key, values in sorted(positions.items()):
        if len(values) > 1:
            r.add("inconsistent_offset", {"topic": key[0], "partition": key[1],
                                          "offset": key[2], "values": sorted(values)})
    for v in sorted(exactly_once):
        if len(places[v]) > 1:
            r.add("duplicate", {"value": v, "at": sorted(places[v])})

    # Lost: checked against the read_uncommitted final read (it sees every stored record).
    finished = {e.get("isolation") for e in by_op["final-done"]}
    if acked or by_op["final-read"]:
        if "uncommitted" not in finished:
            r.add("incomplete", {"what": "final read (read_uncommitted) did not finish"})
        else:
            final = {e["value"] for e in by_op["final-read"] if e.get("isolation") != "committed"}
            for v, w in acked:
                if v not in final:
                    r.add("lost", {"value": v, "worker": w})
        if by_op["final-read"] and any(e.get("isolation") == "committed"
                                       for e in by_op["final-read"]) and \
                "committed" not in finished:
            r.add("incomplete", {"what": "final read (read_committed) did not finish"})

    # Producers: acknowledged offsets follow the order records were sent in, per partition.
    per_producer = defaultdict(list)
    for e in sends:
        if e.get("idempotent", True) and e.get("seq") is not None and e.get("offset", -1) >= 0:
            per_producer[(e["worker"], e["topic"], e["partition"])].append(e)
    for (w, t, p), es in per_producer.items():
        es.sort(key=lambda e: e["seq"])
        for a, b in zip(es, es[1:]):
            if b["offset"] <= a["offset"]:
                r.add("producer_non_monotonic", {"worker": w, "partition": p,
                                                 "first": [a["value"], a["offset"]],
                                                 "then": [b["value"], b["offset"]]})

    # Consumers: within one assignment, a partition's reads move forward.
    last = {}
    group_max = defaultdict(lambda: -1)
    for e in sorted(by_op["read"] + by_op["assign"], key=lambda e: e["time"]):
        if e["op"] == "assign":
            for k in [k for k in last if k[0] == e["worker"]]:
                del last[k]
            continue
        k = (e["worker"], e["topic"], e["partition"])
        if k in last and e["offset"] <= last[k][0]:
            r.add("consumer_non_monotonic", {"worker": e["worker"], "partition": e["partition"],
                                             "first": last[k], "then": [e["offset"],
                                                                        e["value"]]})
        last[k] = [e["offset"], e["value"]]
    # Committed offsets: never past a record the group should have read and had not. The
    # final read gives the offsets of data records (a gap is a transaction marker); a
    # read_committed group may skip aborted records (and those of transactions whose outcome
    # is unknown). Without a final read: never past the group's highest read + 1.
    txn_values = unknown_txn_values
    data = defaultdict(dict)  # (topic, partition) -> {offset: value}
    for e in by_op["final-read"]:
        if e.get("isolation") != "committed":
            data[(e["topic"], e["partition"])][e["offset"]] = e["value"]
    isolation = {e.get("group"): e.get("isolation") for e in by_op["read"]}
    frontier = {}  # (group, topic, partition) -> [sorted visible offsets, index, read set]
    for e in sorted(by_op["read"] + by_op["commit"], key=lambda e: e["time"]):
        g = (e.get("group"), e["topic"], e["partition"])
        if e["op"] == "read":
            group_max[g] = max(group_max[g], e["offset"])
        if not data:
            if e["op"] == "commit" and e["offset"] > group_max[g] + 1:
                r.add("commit_ahead", {"worker": e["worker"], "group": e.get("group"),
                                       "partition": e["partition"], "committed": e["offset"],
                                       "max_read": group_max[g]})
            continue
        if g not in frontier:
            committed_only = isolation.get(e.get("group")) == "committed"
            visible = sorted(o for o, v in data[(e["topic"], e["partition"])].items()
                             if not committed_only or (v not in aborted_values
                                                       and v not in txn_values)
                             or v in committed_values)
            frontier[g] = [visible, 0, set()]
        visible, i, read_set = frontier[g]
        if e["op"] == "read":
            read_set.add(e["offset"])
            while i < len(visible) and visible[i] in read_set:
                i += 1
            frontier[g][1] = i
        elif i < len(visible) and visible[i] < e["offset"]:
            r.add("commit_ahead", {"worker": e["worker"], "group": e.get("group"),
                                   "partition": e["partition"], "committed": e["offset"],
                                   "first_unread": visible[i]})


def _check_queue(by_op, maybe_deleted, r, stats, prefix="sqs"):
    op = lambda name: f"{prefix}-{name}"  # noqa: E731
    sent = [e["value"] for e in by_op[op("send")]]
    if not sent and not by_op[op("receive")]:
        return
    stats[prefix + "_sent"] = len(sent)
    stats[prefix + "_received"] = len(by_op[op("receive")])
    stats[prefix + "_deleted"] = len(by_op[op("delete")])
    message = lambda e: e.get("message_id") or e["value"]  # noqa: E731
    receives = defaultdict(list)
    for e in by_op[op("receive")] + by_op[op("final")]:
        receives[message(e)].append(e)
    deleted_at = {}
    for e in by_op[op("delete")]:
        m = message(e)
        # FIFO queues refuse an older handle (ReceiptHandleIsInvalid): an acknowledged FIFO
        # delete is certain.
        if prefix == "sqs" and _maybe_stale(e, [x for x in receives[m]
                                                if x["op"] == op("receive")]):
            continue
        deleted_at[m] = min(deleted_at.get(m, e["time"]), e["time"])
    for v, es in receives.items():
        es.sort(key=lambda e: e.get("start", e["time"]))
        for e in es:
            if v in deleted_at and e.get("start", e["time"]) > deleted_at[v]:
                r.add("deleted_redelivered", {"message": v, "deleted": deleted_at[v],
                                              "received": e["time"], "worker": e["worker"]})
                break
        # A receive took hold at some moment between its start and its answer, and kept the
        # message for vt seconds from then: two holds overlap for certain only when each was
        # answered before the other's earliest possible end.
        held = [e for e in es if e["op"] == op("receive")]
        for i, a in enumerate(held):
            for b in held[i + 1:]:
                if b["time"] < a["start"] + a["vt"] and a["time"] < b["start"] + b["vt"]:
                    r.add("overlapping_receive", {"message": v,
                                                  "first": [a["worker"], a["start"], a["time"],
                                                            a["vt"]],
                                                  "second": [b["worker"], b["start"],
                                                             b["time"], b["vt"]]})
    if not by_op[op("final-done")]:
        r.add("incomplete", {"what": f"final {prefix} queue drain did not finish"})
        return
    # Deleted, possibly deleted (info), or seen by the drain: nothing else may vanish.
    maybe_deleted = {e["value"] for e in by_op[op("delete")]} | maybe_deleted
    drained = {e["value"] for e in by_op[op("final")]}
    for v in sent:
        if v not in maybe_deleted and v not in drained:
            r.add("lost", {"value": v, "queue": prefix})


def _maybe_stale(delete, receives):
    """Whether an acknowledged delete may have carried an older receipt handle, which SQS
    answers with success without deleting ("you must provide the most recently received
    receipt handle"): another receive may have taken hold after the deleter's own receive
    (answered after that one was asked) and before the delete was answered (asked before it)."""
    own = [x for x in receives if x["worker"] == delete["worker"] and x["time"] <= delete["time"]]
    if not own:
        return False
    latest = max(own, key=lambda x: x["time"])
    return any(x is not latest and x.get("start", x["time"]) < delete["time"] and
               x["time"] > latest.get("start", latest["time"]) for x in receives)


def _check_fifo(history, by_op, r):
    """Order within a message group, and deduplication, of the FIFO queue."""
    ids = defaultdict(set)
    for e in by_op["fifo-receive"] + by_op["fifo-final"]:
        if e.get("message_id"):
            ids[e["value"]].add(e["message_id"])
    for v, s in ids.items():
        if len(s) > 1:
            r.add("fifo_duplicate", {"value": v, "message_ids": sorted(s)})
    # A message certainly exists when its send was acknowledged or anyone received it.
    exists = {}  # (group, seq) -> value
    for e in by_op["fifo-send"] + by_op["fifo-receive"] + by_op["fifo-final"]:
        if "group" in e and "seq" in e:
            exists[(e["group"], e["seq"])] = e["value"]
    delete_asked = {}  # value -> the earliest time a delete was asked for (any outcome)
    for e in history:
        if e["op"] == "fifo-delete":
            delete_asked[e["value"]] = min(delete_asked.get(e["value"], e["time"]), e["time"])
    by_call = defaultdict(list)
    for e in by_op["fifo-receive"] + by_op["fifo-final"]:
        by_call[(e["worker"], e.get("call"))].append(e)
    seqs = defaultdict(list)
    for (g, q) in exists:
        seqs[g].append(q)
    for g in seqs:
        seqs[g].sort()
    for e in by_op["fifo-receive"] + by_op["fifo-final"]:
        g, k = e.get("group"), e.get("seq")
        if g is None or k is None:
            continue
        same_call = {(x["group"], x["seq"]) for x in by_call[(e["worker"], e.get("call"))]
                     if x.get("index", 0) < e.get("index", 0)}
        for j in seqs[g]:
            if j >= k:
                break
            earlier = exists[(g, j)]
            if (g, j) in same_call:
                continue
            if delete_asked.get(earlier, float("inf")) <= e["time"]:
                continue
            r.add("fifo_out_of_order", {"group": g, "received": [k, e["worker"], e["time"]],
                                        "earlier_not_deleted": j})
            break


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("history", help="a history file (JSON lines)")
    ap.add_argument("--out", help="also write the summary here")
    args = ap.parse_args(argv)
    summary = check(load(args.history))
    text = json.dumps(summary, indent=2, sort_keys=True)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0 if summary["valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
