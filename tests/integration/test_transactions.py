"""Transactions with real clients: python3-confluent-kafka (librdkafka) and kafkajs producers
commit and abort; read_committed consumers see committed transactions only; a second producer
with the same transactional.id fences the first; a consume-transform-produce loop stays
exactly-once across a SIGKILL of the producer process; SIGKILL of sluice in the middle of
transactions leaves each one committed or aborted, never half visible."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, consume_to_end, wait_for
from kafka_wire import compact_string, uvarint

HERE = os.path.dirname(os.path.abspath(__file__))


def create_topics(bootstrap, *specs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, parts, 1) for name, parts in specs])
    for f in futures.values():
        f.result(15)


def read_all(bootstrap, topic, partitions=1, committed=True, timeout=60):
    """Every value of `topic` up to each partition's end when the call starts: the last stable
    offset (read_committed) or the high watermark."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic()}",
                  "enable.auto.commit": False,
                  "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        return [v.decode() for v in consume_to_end(c, topic, partitions, timeout)]
    finally:
        c.close()


def end_offsets(bootstrap, topic, partitions, committed):
    """Each partition's last stable offset (committed) or high watermark, from ListOffsets."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "end-offsets",
                  "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)]
    finally:
        c.close()


def txn_producer(bootstrap, txn_id, **extra):
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 1,
            "log_level": 0}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(30)
    return p


def test_confluent_committed_visible_aborted_never(broker):
    create_topics(broker.bootstrap, ("tx-out", 2))
    p = txn_producer(broker.bootstrap, "tx-confluent")
    for t in range(6):
        p.begin_transaction()
        for i in range(20):
            p.produce("tx-out", value=f"t{t}-{i}".encode(), partition=i % 2)
        if t % 2 == 0:
            p.commit_transaction(30)
        else:
            p.flush(30)  # abort_transaction() drops what was not sent yet: send it all first
            p.abort_transaction(30)
    committed = read_all(broker.bootstrap, "tx-out", 2)
    assert sorted(committed) == sorted(f"t{t}-{i}" for t in (0, 2, 4) for i in range(20))
    everything = read_all(broker.bootstrap, "tx-out", 2, committed=False)
    assert len(everything) == 120


def test_kafkajs_transactions(broker):
    create_topics(broker.bootstrap, ("js-tx-in", 1), ("js-tx-out", 1))
    r = subprocess.run(["node", os.path.join(HERE, "js", "transactions_kafkajs.js"),
                        broker.bootstrap], capture_output=True, text=True, timeout=180,
                       cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    committed = read_all(broker.bootstrap, "js-tx-out")
    assert sorted(committed) == sorted([f"c{i}" for i in range(10)] + ["winner"])
    # sendOffsetsToTransaction: the group's offset committed with the transaction.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "js-tx-group"})
    try:
        got = c.committed([TopicPartition("js-tx-in", 0)], timeout=10)
    finally:
        c.close()
    assert got[0].offset == 42


def test_second_producer_fences_the_first(broker):
    create_topics(broker.bootstrap, ("fence-out", 1))
    first = txn_producer(broker.bootstrap, "fence-id")
    first.begin_transaction()
    first.produce("fence-out", value=b"zombie")
    first.flush(10)
    second = txn_producer(broker.bootstrap, "fence-id")
    with pytest.raises(KafkaException) as e:
        first.commit_transaction(15)
    assert e.value.args[0].fatal() or "fenced" in str(e.value).lower()
    second.begin_transaction()
    second.produce("fence-out", value=b"winner")
    second.commit_transaction(15)
    assert read_all(broker.bootstrap, "fence-out") == ["winner"]


# --- consume-transform-produce across a SIGKILL of the producer process ----------------------

def ctp_worker(bootstrap, total, batch):
    """Runs in a child process: reads ctp-in, writes "out-<value>" to ctp-out and commits the
    consumed offsets in the same transaction; prints progress; exits after `total` inputs."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp-group",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "log_level": 0})
    c.subscribe(["ctp-in"])
    p = txn_producer(bootstrap, "ctp-app", **{"transaction.timeout.ms": 10000})
    done = 0
    while True:
        msgs = [m for m in c.consume(batch, 1.0) if not m.error()]
        if msgs:
            p.begin_transaction()
            for m in msgs:
                p.produce("ctp-out", value=b"out-" + m.value())
            p.send_offsets_to_transaction(c.position(c.assignment()),
                                          c.consumer_group_metadata(), 30)
            p.commit_transaction(30)
            done += len(msgs)
            print(json.dumps({"committed_batches": 1, "records": len(msgs)}), flush=True)
        positions = c.position(c.assignment()) if c.assignment() else []
        if positions and sum(max(tp.offset, 0) for tp in positions) >= total:
            break
    c.close()
    print("finished", flush=True)


def start_worker(bootstrap, total, batch):
    code = (f"import sys; sys.path.insert(0, {HERE!r}); import test_transactions as t; "
            f"t.ctp_worker({bootstrap!r}, {total}, {batch})")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=HERE)


def test_consume_transform_produce_is_exactly_once_across_producer_kill(broker):
    total = 3000
    create_topics(broker.bootstrap, ("ctp-in", 3), ("ctp-out", 1))
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(total):
        p.produce("ctp-in", value=b"%05d" % i, partition=i % 3)
    assert p.flush(30) == 0

    w = start_worker(broker.bootstrap, total, 50)
    # Let it commit a few transactions, then kill it in the middle of its work.
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(lines) < 5:
        line = w.stdout.readline()
        if not line:
            break
        lines.append(line)
    assert len(lines) >= 5, "the worker committed nothing"
    w.send_signal(signal.SIGKILL)
    w.wait(10)

    w2 = start_worker(broker.bootstrap, total, 50)
    try:
        out, _ = w2.communicate(timeout=180)
    finally:
        if w2.poll() is None:
            w2.kill()
    assert "finished" in out
    values = read_all(broker.bootstrap, "ctp-out")
    assert len(values) == total, f"{len(values)} outputs for {total} inputs"
    assert sorted(values) == [f"out-{i:05d}" for i in range(total)]


# --- SIGKILL of sluice in the middle of transactions -----------------------------------------

def churn_worker(bootstrap):
    """Child process: transactions of 10 records on 2 partitions, forever; odd ones abort."""
    p = txn_producer(bootstrap, "churn", **{"transaction.timeout.ms": 3000})
    t = 0
    while True:
        p.begin_transaction()
        for i in range(10):
            p.produce("churn-out", value=f"{t}-{i}".encode(), partition=i % 2)
        if t % 2 == 0:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
        print(t, flush=True)
        t += 1


def test_sluice_killed_mid_transaction_leaves_none_half_visible():
    s = Sluice(settings={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    s.start()
    try:
        create_topics(s.bootstrap, ("churn-out", 2))
        code = (f"import sys; sys.path.insert(0, {HERE!r}); import test_transactions as t; "
                f"t.churn_worker({s.bootstrap!r})")
        w = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, cwd=HERE)
        try:
            for _ in range(30):  # let 30 transactions finish, then kill sluice mid-flight
                assert w.stdout.readline(), "the transactional producer stopped"
            s.kill()
        finally:
            w.kill()
            w.wait(10)
        s.start()
        # The open transaction (if any) times out and is aborted: every transaction is
        # finished once the last stable offset reaches the end of the log, and read_committed
        # consumers are not stuck behind it.
        wait_for(lambda: end_offsets(s.bootstrap, "churn-out", 2, committed=True) ==
                 end_offsets(s.bootstrap, "churn-out", 2, committed=False), 60,
                 "the last stable offsets to reach the high watermarks")
        values = read_all(s.bootstrap, "churn-out", 2, timeout=90)
        by_txn = {}
        for v in values:
            t, i = v.split("-")
            by_txn.setdefault(int(t), set()).add(int(i))
        for t, records in by_txn.items():
            assert t % 2 == 0, f"aborted transaction {t} is visible"
            assert records == set(range(10)), f"transaction {t} is half visible: {sorted(records)}"
        assert len(by_txn) >= 15
    finally:
        s.close()


# --- DescribeProducers / ListTransactions / DescribeTransactions over the raw protocol -------

class _Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def i(self, fmt, n):
        import struct
        return struct.unpack(fmt, self.take(n))[0]

    def uvarint(self):
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    def string(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode()

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def _call(port, api_key, version, body):
    import struct
    from harness import connect, kafka_request, read_frame
    with connect(port) as s:
        s.sendall(kafka_request(api_key, version, 7, body, flexible_header=True))
        frame = read_frame(s)
    r = _Reader(frame)
    assert r.i(">i", 4) == 7
    r.tags()
    return r


def test_describe_producers_and_transactions(broker):
    import struct
    create_topics(broker.bootstrap, ("admin-out", 1))
    idem = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(10):
        idem.produce("admin-out", value=b"%d" % i)
    assert idem.flush(15) == 0
    p = txn_producer(broker.bootstrap, "tx-admin")
    p.begin_transaction()
    p.produce("admin-out", value=b"t")
    p.commit_transaction(15)

    # DescribeProducers v0: both producers, the idempotent one at sequence 9.
    body = uvarint(2) + compact_string("admin-out") + uvarint(2) + struct.pack(">i", 0)
    body += b"\x00" + b"\x00"
    r = _call(broker.kafka_port, 61, 0, body)
    r.i(">i", 4)
    assert r.uvarint() - 1 == 1 and r.string() == "admin-out"
    assert r.uvarint() - 1 == 1
    assert r.i(">i", 4) == 0 and r.i(">h", 2) == 0
    r.string()
    producers = []
    for _ in range(r.uvarint() - 1):
        pid, epoch, last_seq, _ts, _ce, txn_start = struct.unpack(">qiiqiq", r.take(36))
        r.tags()
        producers.append((pid, epoch, last_seq, txn_start))
    assert len(producers) == 2
    assert any(last_seq == 9 and txn_start == -1 for _, _, last_seq, txn_start in producers)

    # ListTransactions v0: the transactional id, CompleteCommit.
    r = _call(broker.kafka_port, 66, 0, b"\x01\x01\x00")
    r.i(">i", 4)
    assert r.i(">h", 2) == 0
    r.take(1)  # no unknown state filters
    listed = {}
    for _ in range(r.uvarint() - 1):
        tid = r.string()
        pid = r.i(">q", 8)
        listed[tid] = (pid, r.string())
        r.tags()
    assert listed["tx-admin"][1] == "CompleteCommit"

    # DescribeTransactions v0: the same, plus an unknown id.
    body = uvarint(3) + compact_string("tx-admin") + compact_string("nope") + b"\x00"
    r = _call(broker.kafka_port, 65, 0, body)
    r.i(">i", 4)
    assert r.uvarint() - 1 == 2
    err, tid, state = r.i(">h", 2), r.string(), r.string()
    assert (err, tid, state) == (0, "tx-admin", "CompleteCommit")
    r.i(">i", 4), r.i(">q", 8)
    assert r.i(">q", 8) == listed["tx-admin"][0]
    r.i(">h", 2)
    for _ in range(r.uvarint() - 1):
        r.string()
        r.take(4 * (r.uvarint() - 1))
        r.tags()
    r.tags()
    assert r.i(">h", 2) == 105  # TRANSACTIONAL_ID_NOT_FOUND
