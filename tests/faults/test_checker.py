"""The checker on small hand-written histories: a clean history passes, and each anomaly it
knows is found (and only that one)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402

T = "faults"


def send(w, value, p, o, seq, t, idempotent=True):
    return {"worker": w, "op": "send", "type": "ok", "time": t, "topic": T, "partition": p,
            "offset": o, "value": value, "seq": seq, "idempotent": idempotent}


def read(w, value, p, o, t, isolation="uncommitted", group="g"):
    return {"worker": w, "op": "read", "type": "ok", "time": t, "topic": T, "partition": p,
            "offset": o, "value": value, "isolation": isolation, "group": group}


def final(value, p, o, isolation="uncommitted"):
    return {"worker": "final", "op": "final-read", "type": "ok", "time": 100.0, "topic": T,
            "partition": p, "offset": o, "value": value, "isolation": isolation}


def done(isolation="uncommitted"):
    return {"worker": "final", "op": "final-done", "type": "ok", "time": 101.0,
            "isolation": isolation}


def txn(w, outcome, values, offsets, t):
    return {"worker": w, "op": "txn", "type": "ok", "time": t, "topic": T, "outcome": outcome,
            "values": values, "offsets": offsets}


def commit(w, p, o, t, group="g"):
    return {"worker": w, "op": "commit", "type": "ok", "time": t, "topic": T, "partition": p,
            "offset": o, "group": group}


def assign(w, t):
    return {"worker": w, "op": "assign", "type": "ok", "time": t, "partitions": [0, 1]}


def clean_log():
    return [
        {"worker": "p0", "op": "send", "type": "invoke", "time": 0.5, "value": "p0-0"},
        send("p0", "p0-0", 0, 0, 0, 1.0),
        send("p0", "p0-1", 0, 1, 1, 1.1),
        send("p0", "p0-2", 1, 0, 2, 1.2),
        txn("t0", "commit", ["t0-0", "t0-1"], [[0, 2], [0, 3]], 2.0),
        txn("t0", "abort", ["t0-2"], [[1, 2]], 2.5),
        assign("c0", 2.9),
        read("c0", "p0-0", 0, 0, 3.0, "committed"),
        read("c0", "p0-1", 0, 1, 3.1, "committed"),
        read("c0", "t0-0", 0, 2, 3.2, "committed"),
        commit("c0", 0, 3, 3.3),
        assign("c0", 3.4),
        read("c0", "t0-0", 0, 2, 3.5, "committed"),  # redelivered after the new assignment
        read("u0", "t0-2", 1, 2, 3.6, "uncommitted", "gu"),
        {"worker": "nemesis", "op": "kill", "type": "invoke", "time": 4.0},
        final("p0-0", 0, 0), final("p0-1", 0, 1), final("t0-0", 0, 2), final("t0-1", 0, 3),
        final("p0-2", 1, 0), final("t0-2", 1, 2), done(),
        final("p0-0", 0, 0, "committed"), final("t0-0", 0, 2, "committed"), done("committed"),
    ]


def sqs(op, value, t, type_="ok", **kw):
    e = {"worker": kw.pop("worker", "q0"), "op": op, "type": type_, "time": t, "value": value}
    e.update(kw)
    return e


def clean_queue():
    return [
        sqs("sqs-send", "m0", 1.0), sqs("sqs-send", "m1", 1.1), sqs("sqs-send", "m2", 1.2),
        sqs("sqs-receive", "m0", 2.0, start=1.9, vt=5),
        sqs("sqs-delete", "m0", 2.1),
        sqs("sqs-receive", "m1", 2.0, start=1.9, vt=5),
        # m1 not deleted: received again after its visibility timeout, then drained
        sqs("sqs-receive", "m1", 7.5, start=7.0, vt=5, worker="q1"),
        sqs("sqs-final", "m1", 20.0, worker="qfinal"),
        sqs("sqs-final", "m2", 20.0, worker="qfinal"),
        {"worker": "qfinal", "op": "sqs-final-done", "type": "ok", "time": 30.0},
    ]


def only(summary, kind):
    assert summary["counts"][kind] >= 1, summary
    others = {k: v for k, v in summary["counts"].items() if k != kind and v}
    assert others == {}, summary
    assert not summary["valid"]


def test_clean_log_history_passes():
    s = checker.check(clean_log())
    assert s["valid"], s
    assert s["stats"]["acked_writes"] == 5
    assert s["stats"]["nemesis"] == {"kill": 1}


def test_clean_queue_history_passes():
    s = checker.check(clean_queue())
    assert s["valid"], s


def test_lost_acknowledged_write():
    h = [e for e in clean_log() if not (e["op"] == "final-read" and e["value"] == "p0-2")]
    only(checker.check(h), "lost")


def test_lost_committed_transaction_record():
    h = [e for e in clean_log() if not (e["op"] == "final-read" and e["value"] == "t0-1")]
    only(checker.check(h), "lost")


def test_duplicate_of_an_idempotent_write():
    h = clean_log()
    h.insert(-4, final("p0-1", 1, 1))
    only(checker.check(h), "duplicate")


def test_non_idempotent_writes_may_repeat():
    h = clean_log()
    h.insert(1, send("r0", "r0-0", 1, 1, 0, 1.0, idempotent=False))
    h.insert(-4, final("r0-0", 1, 1))
    h.insert(-4, final("r0-0", 1, 3))
    assert checker.check(h)["valid"]


def test_inconsistent_offset():
    h = clean_log()
    h.append(read("u0", "p0-2", 0, 1, 3.7, "uncommitted", "gu"))
    s = checker.check(h)
    assert s["counts"]["inconsistent_offset"] == 1
    assert s["examples"]["inconsistent_offset"][0]["values"] == ["p0-1", "p0-2"]


def test_aborted_read():
    h = clean_log()
    h.append(read("c0", "t0-2", 1, 2, 3.8, "committed"))
    only(checker.check(h), "aborted_read")


def test_aborted_read_in_the_final_committed_read():
    h = clean_log()
    h.insert(-1, final("t0-2", 1, 2, "committed"))
    only(checker.check(h), "aborted_read")


def test_producer_offsets_out_of_send_order():
    h = clean_log()
    h[1], h[2] = send("p0", "p0-0", 0, 1, 0, 1.0), send("p0", "p0-1", 0, 0, 1, 1.1)
    for i, e in enumerate(h):
        if e["op"] == "final-read" and e["isolation"] == "uncommitted" and e["partition"] == 0:
            if e["offset"] in (0, 1):
                h[i] = final("p0-0" if e["offset"] == 1 else "p0-1", 0, e["offset"])
    for i, e in enumerate(h):
        if e["op"] in ("read", "final-read") and e["value"] in ("p0-0", "p0-1") and \
                e.get("isolation") == "committed":
            h[i] = dict(e, value="p0-0" if e["offset"] == 1 else "p0-1")
    only(checker.check(h), "producer_non_monotonic")


def test_consumer_going_back_without_a_new_assignment():
    h = [e for e in clean_log() if not (e["op"] == "assign" and e["time"] == 3.4)]
    only(checker.check(h), "consumer_non_monotonic")


def test_commit_ahead_of_what_was_read():
    h = clean_log()
    h.append(commit("c0", 0, 5, 3.9))
    only(checker.check(h), "commit_ahead")


def test_commit_past_a_marker_and_aborted_records_passes():
    h = clean_log()
    # p1: p0-2 at 0, the aborted t0-2 at 2 (its marker at 3): a read_committed group that read
    # offset 0 may commit 4.
    h.append(read("c0", "p0-2", 1, 0, 3.8, "committed"))
    h.append(commit("c0", 1, 4, 3.9))
    assert checker.check(h)["valid"], checker.check(h)


def test_read_uncommitted_group_may_not_skip_aborted_records():
    h = clean_log()
    h.append(read("u0", "p0-2", 1, 0, 3.55, "uncommitted", "gu"))
    h.append(commit("u0", 1, 4, 3.9, "gu"))  # t0-2 at 2 was not read by gu... it was at 3.6
    assert checker.check(h)["valid"]
    h2 = [e for e in h if not (e["worker"] == "u0" and e["op"] == "read"
                               and e["value"] == "t0-2")]
    only(checker.check(h2), "commit_ahead")


def test_commit_of_a_partition_never_read():
    h = clean_log()
    h.append(commit("c0", 1, 2, 3.9))
    only(checker.check(h), "commit_ahead")


def test_missing_final_read():
    h = [e for e in clean_log() if not (e["op"] == "final-done"
                                        and e["isolation"] == "uncommitted")]
    only(checker.check(h), "incomplete")


def test_deleted_message_redelivered():
    h = clean_queue()
    h.insert(5, sqs("sqs-receive", "m0", 9.0, start=8.5, vt=5, worker="q1"))
    only(checker.check(h), "deleted_redelivered")


def test_a_delete_with_an_older_receipt_handle_may_leave_the_message():
    # q1's receive (vt 2) ran out while its delete was on the way; q0 received the message
    # again before the delete was answered: q1's handle may have been the older one, which SQS
    # acknowledges without deleting, so the message may come back (seen in an hour-long run).
    h = [sqs("sqs-send", "m7", 0.5),
         sqs("sqs-receive", "m7", 1.1, start=1.0, vt=2, worker="q1"),
         sqs("sqs-receive", "m7", 3.4, start=2.8, vt=5),
         sqs("sqs-delete", "m7", 3.6, worker="q1"),
         sqs("sqs-receive", "m7", 9.0, start=8.9, vt=4, worker="q1"),
         sqs("sqs-delete", "m7", 9.1, worker="q1"),
         {"worker": "qfinal", "op": "sqs-final-done", "type": "ok", "time": 30.0}]
    assert checker.check(h)["valid"], checker.check(h)
    # Received by nobody else in between: that delete was certain, the return is not.
    h = [e for e in h if not (e["op"] == "sqs-receive" and e["worker"] == "q0")]
    only(checker.check(h), "deleted_redelivered")


def test_message_never_redelivered():
    h = [e for e in clean_queue() if not (e["op"] == "sqs-final" and e["value"] == "m1")]
    only(checker.check(h), "lost")


def test_message_whose_delete_is_unknown_may_vanish():
    h = [e for e in clean_queue() if not (e["op"] == "sqs-final" and e["value"] == "m1")]
    h.append(sqs("sqs-delete", "m1", 7.6, type_="info", worker="q1"))
    assert checker.check(h)["valid"]


def test_two_receivers_hold_one_message():
    h = clean_queue()
    h.insert(6, sqs("sqs-receive", "m1", 3.0, start=2.9, vt=5, worker="q1"))
    only(checker.check(h), "overlapping_receive")


def test_a_late_answer_to_an_early_receive_is_no_overlap():
    # q0 asked at 1.0 (vt 5) and was answered only at 8.0: it may have taken hold after q1's
    # receive (5.0-5.1, vt 2) had ended, so nothing is certain.
    h = [sqs("sqs-send", "m9", 0.5),
         sqs("sqs-receive", "m9", 8.0, start=1.0, vt=5),
         sqs("sqs-receive", "m9", 5.1, start=5.0, vt=2, worker="q1"),
         sqs("sqs-final", "m9", 20.0, worker="qfinal"),
         {"worker": "qfinal", "op": "sqs-final-done", "type": "ok", "time": 30.0}]
    assert checker.check(h)["valid"], checker.check(h)
    h[1] = sqs("sqs-receive", "m9", 6.5, start=1.0, vt=5)  # answered before 5.0 + 2
    only(checker.check(h), "overlapping_receive")


def test_a_value_sent_twice_is_two_messages():
    # A send retried after a cut connection stored m5 twice: deleting one copy does not make
    # the other a redelivery, and two holders of different copies do not overlap.
    h = [sqs("sqs-send", "m5", 1.0),
         sqs("sqs-receive", "m5", 2.0, start=1.9, vt=5, message_id="id-a"),
         sqs("sqs-delete", "m5", 2.1, message_id="id-a"),
         sqs("sqs-receive", "m5", 3.0, start=2.9, vt=5, message_id="id-b", worker="q1"),
         sqs("sqs-delete", "m5", 3.1, message_id="id-b", worker="q1"),
         {"worker": "qfinal", "op": "sqs-final-done", "type": "ok", "time": 30.0}]
    assert checker.check(h)["valid"], checker.check(h)
    # The same copy again after its delete is still a redelivery.
    h[3] = sqs("sqs-receive", "m5", 3.0, start=2.9, vt=5, message_id="id-a", worker="q1")
    assert checker.check(h)["counts"]["deleted_redelivered"] == 1


def test_queue_drain_not_finished():
    h = [e for e in clean_queue() if e["op"] != "sqs-final-done"]
    only(checker.check(h), "incomplete")


def fifo(op, value, t, type_="ok", **kw):
    group, _, seq = value.rpartition("-")
    e = {"worker": kw.pop("worker", "f0"), "op": op, "type": type_, "time": t, "value": value,
         "group": group, "seq": int(seq)}
    e.update(kw)
    return e


def clean_fifo():
    return [
        fifo("fifo-send", "f0-0", 1.0), fifo("fifo-send", "f0-1", 1.1),
        fifo("fifo-send", "f0-2", 1.2), fifo("fifo-send", "f1-0", 1.3, worker="f1"),
        # f0-0 and f0-1 in one answer, in order; f1-0 is another group's
        fifo("fifo-receive", "f0-0", 2.0, start=1.9, vt=5, message_id="a", call=1, index=0),
        fifo("fifo-receive", "f0-1", 2.0, start=1.9, vt=5, message_id="b", call=1, index=1),
        fifo("fifo-receive", "f1-0", 2.0, start=1.9, vt=5, message_id="d", call=1, index=2),
        fifo("fifo-delete", "f0-0", 2.1, type_="invoke"), fifo("fifo-delete", "f0-0", 2.2),
        fifo("fifo-delete", "f0-1", 2.3, type_="invoke"), fifo("fifo-delete", "f0-1", 2.4),
        fifo("fifo-receive", "f0-2", 3.0, start=2.9, vt=5, message_id="c", call=2, index=0,
             worker="f1"),
        # f0-2 and f1-0 left: they come back to the drain
        fifo("fifo-final", "f1-0", 20.0, worker="qfinal", message_id="d", call=1, index=0),
        fifo("fifo-final", "f0-2", 20.0, worker="qfinal", message_id="c", call=1, index=1),
        {"worker": "qfinal", "op": "fifo-final-done", "type": "ok", "time": 30.0},
    ]


def test_clean_fifo_history_passes():
    summary = checker.check(clean_fifo())
    assert summary["valid"], summary
    assert summary["stats"]["fifo_sent"] == 4


def test_fifo_message_received_before_an_earlier_one_of_its_group_was_deleted():
    # f0-2 received while f0-1 (sent, received, not yet deleted) is still in flight.
    h = [e for e in clean_fifo() if not (e["op"] == "fifo-delete" and e["value"] == "f0-1")]
    h.append(fifo("fifo-final", "f0-1", 20.0, worker="qfinal", message_id="b", call=2, index=0))
    only(checker.check(h), "fifo_out_of_order")


def test_fifo_message_received_before_an_earlier_one_was_ever_delivered():
    h = [fifo("fifo-send", "f0-0", 1.0), fifo("fifo-send", "f0-1", 1.1),
         fifo("fifo-receive", "f0-1", 2.0, start=1.9, vt=5, message_id="b", call=1, index=0),
         fifo("fifo-delete", "f0-1", 2.1, type_="invoke"), fifo("fifo-delete", "f0-1", 2.2),
         fifo("fifo-final", "f0-0", 20.0, worker="qfinal", message_id="a", call=1, index=0),
         {"worker": "qfinal", "op": "fifo-final-done", "type": "ok", "time": 30.0}]
    only(checker.check(h), "fifo_out_of_order")
    # In one answer, in order, it is right.
    h[2] = fifo("fifo-receive", "f0-1", 2.0, start=1.9, vt=5, message_id="b", call=1, index=1)
    h.insert(2, fifo("fifo-receive", "f0-0", 2.0, start=1.9, vt=5, message_id="a", call=1,
                     index=0))
    h = [e for e in h if e["op"] != "fifo-final"] + [
        fifo("fifo-final", "f0-0", 20.0, worker="qfinal", message_id="a", call=1, index=0)]
    assert checker.check(h)["valid"], checker.check(h)


def test_fifo_message_whose_delete_was_asked_for_does_not_hold_the_group():
    # f0-1's delete was asked for before f0-2 came, with an unknown outcome.
    h = clean_fifo()
    h = [e for e in h if not (e["op"] == "fifo-delete" and e["value"] == "f0-1"
                              and e["type"] == "ok")]
    h.append(fifo("fifo-delete", "f0-1", 2.4, type_="info"))
    assert checker.check(h)["valid"], checker.check(h)


def test_fifo_value_stored_twice():
    h = clean_fifo()
    h[-2] = fifo("fifo-final", "f0-2", 20.0, worker="qfinal", message_id="c2", call=1, index=1)
    only(checker.check(h), "fifo_duplicate")


def test_fifo_acknowledged_send_lost():
    h = [e for e in clean_fifo() if not (e["op"] == "fifo-final" and e["value"] == "f1-0")]
    only(checker.check(h), "lost")


def test_cli_exit_status(tmp_path, capsys):
    import json
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text("".join(json.dumps(e) + "\n" for e in clean_log()))
    bad.write_text("".join(json.dumps(e) + "\n" for e in clean_log()[:-8]) + '{"torn')
    assert checker.main([str(good)]) == 0
    assert checker.main([str(bad), "--out", str(tmp_path / "s.json")]) == 1
    out = json.loads((tmp_path / "s.json").read_text())
    assert out["counts"]["incomplete"] >= 1
