"""Compaction of a topic written by a real transactional client (python3-confluent-kafka).

Committed and aborted transactions of two transactional producers (interleaved, so one
producer's transaction is open while the other's ends) and non-transactional writes go to the
same keys of a cleanup.policy=compact topic with small segments. After a cleaning pass has
covered every sealed segment (awaited on the storage log's "compacted ... offsets below N"
line): a read_committed consumer sees exactly the latest committed value of each key; a
read_uncommitted consumer sees the same (the aborted records are gone, not just hidden); every
surviving record keeps the offset it was produced at; a consumer placed on a removed offset or
a transaction marker moves on to the next record. A tombstone committed in a transaction stays
readable while delete.retention.ms has not passed and removes its key once it has.
Transaction markers stay while delete.retention.ms has not passed; once it has (0 here), the
markers of transactions with no record left go (the last marker of each producer stays), and a
read_committed fetch never lists an aborted transaction whose abort marker is gone (seen with
hand-built Fetch v4 requests, which return the control batches). SIGKILL of sluice after
compaction and a restart give the same answers, and the transactional ids go on committing and
aborting after it.
"""
import re
import struct
import time

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, connect, kafka_request, read_frame, wait_for

KEYS = [f"k{i}" for i in range(8)]
ABORT_ONLY_KEYS = [f"x{i}" for i in range(4)]
FILLER = "filler"  # written last, to seal the segments holding everything else
COMPACTED = re.compile(r"(\S+)-(\d+): compacted \d+ segments into \d+ .* offsets below (\d+)")


def topic_configs(delete_retention_ms):
    return {"cleanup.policy": "compact", "segment.bytes": "1024",
            "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0",
            "delete.retention.ms": str(delete_retention_ms)}


def create_topic(bootstrap, name, configs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, 1, 1, config=configs)]).values():
        f.result(15)


class Writer:
    """Produces through one client and remembers the offset each record was stored at, and
    what a read_committed reader must see: the value at the highest committed offset per key.
    Every send is flushed, so offsets follow the order of the calls."""

    def __init__(self, topic):
        self.topic = topic
        self.offsets = {}       # offset -> (key, value, committed?) for every record sent
        self.pending = {}       # producer -> [offsets] of its open transaction
        self.ends = []          # (producer, committed?) of every end(), in order
        self.markers = {}       # marker offset -> (producer name, committed?), see write_workload

    def send(self, producer, key, value, txn):
        got = []

        def delivered(err, msg):
            assert err is None, err
            got.append(msg.offset())

        producer.produce(self.topic, key=key.encode(),
                         value=None if value is None else value.encode(), on_delivery=delivered)
        producer.flush(30)
        assert len(got) == 1
        off = got[0]
        if txn:
            self.pending.setdefault(id(producer), []).append(off)
            self.offsets[off] = (key, value, None)
        else:
            self.offsets[off] = (key, value, True)

    def end(self, producer, commit):
        self.ends.append((id(producer), commit))
        for off in self.pending.pop(id(producer), []):
            key, value, _ = self.offsets[off]
            self.offsets[off] = (key, value, commit)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    def latest_committed(self):
        """key -> (offset, value) of the latest committed record of each key."""
        out = {}
        for off in sorted(self.offsets):
            key, value, committed = self.offsets[off]
            if committed:
                out[key] = (off, value)
        return out

    def aborted_offsets(self):
        return sorted(o for o, (_, _, c) in self.offsets.items() if c is False)


def txn_producer(bootstrap, txn_id):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 0,
                  "log_level": 0})
    p.init_transactions(30)
    return p


def write_workload(bootstrap, topic):
    """Transactions committed and aborted on the same keys, keys only aborted transactions
    wrote, non-transactional writes, and a tombstone committed in a transaction."""
    w = Writer(topic)
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0})
    a = txn_producer(bootstrap, f"{topic}-a")
    b = txn_producer(bootstrap, f"{topic}-b")

    for k in KEYS:
        w.send(plain, k, f"plain0-{k}", txn=False)
    for round_ in range(3):
        a.begin_transaction()
        for k in KEYS:
            w.send(a, k, f"commit{round_}-{k}", txn=True)
        # b's transaction opens while a's is still open and ends after it: the two ranges
        # interleave in the log.
        b.begin_transaction()
        for k in KEYS + ABORT_ONLY_KEYS:
            w.send(b, k, f"abort{round_}-{k}", txn=True)
        w.end(a, commit=True)
        w.send(b, KEYS[0], f"abort{round_}-late", txn=True)
        w.end(b, commit=False)
        w.send(plain, KEYS[round_ + 1], f"plain{round_ + 1}", txn=False)
    # b commits after its aborted transactions: once compaction has removed their records
    # (and, past delete.retention.ms, their markers), they must not hide this one.
    b.begin_transaction()
    w.send(b, KEYS[7], "b-commit-k7", txn=True)
    w.send(b, ABORT_ONLY_KEYS[1], "b-commit-x1", txn=True)
    w.end(b, commit=True)
    # A committed tombstone, a committed value after an aborted one, and a last aborted
    # transaction on keys that have committed values.
    a.begin_transaction()
    w.send(a, KEYS[5], None, txn=True)
    w.send(a, KEYS[6], "final-k6", txn=True)
    w.end(a, commit=True)
    b.begin_transaction()
    for k in KEYS:
        w.send(b, k, "abort-last", txn=True)
    w.send(b, ABORT_ONLY_KEYS[0], "abort-last", txn=True)
    w.end(b, commit=False)
    # The marker of b's last transaction is the last offset written so far; filler records
    # roll it out of the active segment so that a cleaning pass can reach it.
    last = max(w.offsets) + 1
    for i in range(3):
        w.send(plain, FILLER, "x" * 600 + str(i), txn=False)
    for p in (plain, a, b):
        p.flush(10)
    # Each end() wrote one marker, after every record sent before it and before the next: the
    # offsets no record got are the markers, in the order of the end() calls.
    gaps = [o for o in range(max(w.offsets)) if o not in w.offsets]
    assert len(gaps) == len(w.ends), (gaps, w.ends)
    names = {id(a): "a", id(b): "b"}
    w.markers = {o: (names[pid], commit) for o, (pid, commit) in zip(gaps, w.ends)}
    return w, last


def await_compaction(broker, topic, below, timeout=60):
    """Waits for a cleaning pass of `topic`-0 that covered every offset below `below`."""
    def covered():
        for line in broker.log_text().splitlines():
            m = COMPACTED.search(line)
            if m and m.group(1) == topic and int(m.group(3)) >= below:
                return line
        return None
    return wait_for(covered, timeout, f"a compaction of {topic} past offset {below}", 0.1)


def read(bootstrap, topic, committed, start=0, timeout=60):
    """(offset, key, value) of every record from `start` to the end the partition has when the
    call starts (its last stable offset or high watermark)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic()}",
                  "enable.auto.commit": False, "log_level": 0,
                  "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        tp = TopicPartition(topic, 0)
        end = c.get_watermark_offsets(tp, timeout=10, cached=False)[1]
        c.assign([TopicPartition(topic, 0, start)])
        out = []
        deadline = time.monotonic() + timeout
        while max(c.position([tp])[0].offset, 0) < end:
            assert time.monotonic() < deadline, f"reading {topic} stopped at {out[-1:]}"
            for m in c.consume(500, 0.2):
                if m.error() is None:
                    out.append((m.offset(), m.key().decode(),
                                None if m.value() is None else m.value().decode()))
        return out
    finally:
        c.close()


def expected_view(w, tombstones_kept):
    latest = w.latest_committed()
    return sorted((off, k, v) for k, (off, v) in latest.items()
                  if k != FILLER and (v is not None or tombstones_kept))


def check(bootstrap, topic, w, tombstones_kept):
    want = expected_view(w, tombstones_kept)
    for committed in (True, False):
        got = [r for r in read(bootstrap, topic, committed) if r[1] != FILLER]
        # Exactly the latest committed record of each key, at the offset it was produced at:
        # no aborted value, no key only aborted transactions wrote, no superseded value.
        assert got == want, ("read_committed" if committed else "read_uncommitted", got)
    # A consumer placed on a removed offset (an aborted record, a superseded one) or on a
    # transaction marker moves on to the next surviving record.
    kept = [off for off, _, _ in want]
    markers = [o for o in range(max(w.offsets)) if o not in w.offsets]
    assert markers  # the workload wrote commit and abort markers
    for start in w.aborted_offsets()[:3] + markers[:3] + [w.aborted_offsets()[-1]]:
        after = [o for o in kept if o >= start]
        got = [r for r in read(bootstrap, topic, True, start) if r[1] != FILLER]
        assert [off for off, _, _ in got] == after, start


def fetch_v4(topic, offset, committed, correlation_id):
    t = topic.encode()
    body = struct.pack(">iiiib", -1, 0, 1, 1 << 20, 1 if committed else 0)
    body += struct.pack(">i", 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, offset, 1 << 20)
    return kafka_request(1, 4, correlation_id, body)


def parse_fetch_v4(frame):
    """(error, high watermark, last stable offset, [(producer id, first offset)], records) of
    the one partition of a Fetch v4 response."""
    pos = 4 + 4 + 4  # correlation id, throttle time, topic count
    (ln,) = struct.unpack_from(">h", frame, pos)
    pos += 2 + ln + 4  # topic name, partition count
    _, err, hw, lso = struct.unpack_from(">ihqq", frame, pos)
    pos += 22
    (n_aborted,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    aborted = []
    for _ in range(max(n_aborted, 0)):
        aborted.append(struct.unpack_from(">qq", frame, pos))
        pos += 16
    (size,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    return err, hw, lso, aborted, frame[pos:pos + max(size, 0)]


def read_varint(data, pos):
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos


def batches_of(records):
    """(base offset, last offset, producer id, marker) of every whole batch; marker: None for
    data, "commit" or "abort" for a control batch."""
    out = []
    pos = 0
    while pos + 61 <= len(records):
        base, length = struct.unpack_from(">qi", records, pos)
        end = pos + 12 + length
        if end > len(records):
            break  # a partial batch at the end of the response
        attributes, last_delta = struct.unpack_from(">hi", records, pos + 21)
        (pid,) = struct.unpack_from(">q", records, pos + 43)
        marker = None
        if attributes & 0x20:
            # The first record's key: i16 version, i16 type (0 abort, 1 commit).
            _, rpos = read_varint(records, pos + 61)  # record length
            rpos += 1  # attributes
            _, rpos = read_varint(records, rpos)  # timestamp delta
            _, rpos = read_varint(records, rpos)  # offset delta
            _, rpos = read_varint(records, rpos)  # key length
            (ctype,) = struct.unpack_from(">h", records, rpos + 2)
            marker = "commit" if ctype == 1 else "abort"
        out.append((base, base + last_delta, pid, marker))
        pos = end
    return out


def raw_read(port, topic, committed):
    """Every batch (batches_of) and every listed aborted transaction of Fetch v4 requests from
    offset 0 to the end of the partition (its last stable offset under read_committed)."""
    batches, aborted = [], set()
    offset = 0
    with connect(port, timeout=30) as sock:
        for cid in range(1, 1000):
            sock.sendall(fetch_v4(topic, offset, committed, cid))
            err, hw, lso, listed, records = parse_fetch_v4(read_frame(sock, timeout=30))
            assert err == 0, err
            aborted.update(listed)
            got = batches_of(records)
            batches += got
            end = lso if committed else hw
            if got:
                offset = got[-1][1] + 1
            if not got or offset >= end:
                return batches, aborted
    raise AssertionError(f"reading {topic} did not reach its end")


def check_markers(broker, topic, w, retention_passed):
    """The markers left after compaction, and what read_committed fetches list."""
    batches, _ = raw_read(broker.kafka_port, topic, committed=False)
    present = {off for off, _, _, marker in batches if marker is not None}
    assert present <= set(w.markers), present - set(w.markers)
    by_producer = {}
    for off in sorted(w.markers):
        by_producer.setdefault(w.markers[off][0], []).append(off)
    a, b = by_producer["a"], by_producer["b"]
    if not retention_passed:
        assert present == set(w.markers)
    else:
        # b's first three aborted transactions left no record; a's first two committed ones
        # were superseded by later commits of the same keys: their markers went.
        assert not present & set(b[:3] + a[:2]), sorted(present & set(b[:3] + a[:2]))
        # Committed records left (a's third and last transactions, b's commit) keep their
        # markers, and so does the last marker of each producer.
        assert {a[2], a[3], b[3], b[4]} <= present, sorted(present)
    # A read_committed client is never told of an aborted transaction whose marker is gone
    # (it would skip the producer's later transactions until a marker that never comes).
    _, aborted = raw_read(broker.kafka_port, topic, committed=True)
    abort_markers = [(pid, off) for off, _, pid, marker in batches if marker == "abort"]
    for pid, first in aborted:
        assert any(p == pid and off >= first for p, off in abort_markers), (pid, first)


def test_compaction_with_transactional_producer_and_sigkill():
    with Sluice(settings={"log.cleaner.backoff.ms": "100",
                          "producer.state.snapshot.interval.ms": "1000"}) as s:
        create_topic(s.bootstrap, "txc-keep", topic_configs(86400000))
        create_topic(s.bootstrap, "txc-drop", topic_configs(0))
        workloads = {}
        for topic in ("txc-keep", "txc-drop"):
            workloads[topic], below = write_workload(s.bootstrap, topic)
            await_compaction(s, topic, below)
        # delete.retention.ms not yet passed: the committed tombstone is still there.
        check(s.bootstrap, "txc-keep", workloads["txc-keep"], tombstones_kept=True)
        # delete.retention.ms=0: the tombstone has removed its key.
        check(s.bootstrap, "txc-drop", workloads["txc-drop"], tombstones_kept=False)
        assert KEYS[5] not in {k for _, k, _ in read(s.bootstrap, "txc-drop", False)}
        check_markers(s, "txc-keep", workloads["txc-keep"], retention_passed=False)
        check_markers(s, "txc-drop", workloads["txc-drop"], retention_passed=True)

        s.kill()
        s.start()
        check(s.bootstrap, "txc-keep", workloads["txc-keep"], tombstones_kept=True)
        check(s.bootstrap, "txc-drop", workloads["txc-drop"], tombstones_kept=False)
        check_markers(s, "txc-keep", workloads["txc-keep"], retention_passed=False)
        check_markers(s, "txc-drop", workloads["txc-drop"], retention_passed=True)

        # The producers' transactional ids go on after the restart: an aborted and then a
        # committed transaction of b on the compacted log read as before.
        for topic, w in workloads.items():
            b = txn_producer(s.bootstrap, f"{topic}-b")
            b.begin_transaction()
            w.send(b, KEYS[2], "after-restart-aborted", txn=True)
            w.end(b, commit=False)
            b.begin_transaction()
            w.send(b, KEYS[3], "after-restart", txn=True)
            w.end(b, commit=True)
            got = dict((k, v) for _, k, v in read(s.bootstrap, topic, True) if k != FILLER)
            want = dict((k, v) for _, k, v in expected_view(w, topic == "txc-keep"))
            assert got == want
            assert got[KEYS[3]] == "after-restart"
