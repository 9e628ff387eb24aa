"""__consumer_offsets holds Kafka's own records, as lag monitors (Burrow, kafka-lag-exporter)
read them: commits from kafka-python and confluent_kafka, the classic group's metadata with its
members, the KIP-848 records of a node-rdkafka member (group.protocol=consumer), tombstones on
leave and delete, and all of it still there after kill -9. The topic is read as a plain
consumer reads it and decoded here from Kafka's published message definitions
(group-coordinator/src/main/resources/common/message/*.json), not from sluice's code."""
import json
import os
import queue
import struct
import subprocess
import threading
import time

import pytest
import requests
from confluent_kafka import Consumer, TopicPartition as CKTopicPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kafka_errors
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from harness import Sluice, connect, kafka_request, read_frame, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
JS = os.path.join(HERE, "js")
OFFSETS_TOPIC = "__consumer_offsets"


# --- Kafka's record layout, decoded from the message definitions ---------------------------------

class Buf:
    """Big-endian reads over one record key or value."""

    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        assert self.p + n <= len(self.d), "truncated"
        out = self.d[self.p:self.p + n]
        self.p += n
        return out

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        shift = n = 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def string(self):  # int16 length; -1 is null
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def bytes_(self):  # int32 length
        n = self.i32()
        return None if n < 0 else self.take(n)

    def cstring(self):  # compact: uvarint length+1; 0 is null
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode()

    def carray(self, item):
        n = self.uvarint() - 1
        return None if n < 0 else [item() for _ in range(n)]

    def uuid(self):
        return self.take(16)

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def end(self):
        assert self.p == len(self.d), f"{len(self.d) - self.p} bytes left over"


def decode_key(raw):
    """(type, fields) of a record key: OffsetCommitKey (0, 1), GroupMetadataKey (2),
    ConsumerGroup*Key (3-8)."""
    b = Buf(raw)
    t = b.i16()
    if t in (0, 1):
        k = {"group": b.string(), "topic": b.string(), "partition": b.i32()}
    elif t in (2, 3, 4, 6):
        k = {"group": b.string()}
    elif t in (5, 7, 8):
        k = {"group": b.string(), "member_id": b.string()}
    else:
        raise AssertionError(f"unexpected key type {t}")
    b.end()
    return t, k


def decode_offset_commit_value(raw):
    b = Buf(raw)
    v = b.i16()
    assert v in (1, 3), f"OffsetCommitValue version {v}"
    out = {"version": v, "offset": b.i64()}
    if v >= 3:
        out["leader_epoch"] = b.i32()
    out["metadata"] = b.string()
    out["commit_timestamp"] = b.i64()
    if v == 1:
        out["expire_timestamp"] = b.i64()
    b.end()
    return out


def decode_group_metadata_value(raw):
    b = Buf(raw)
    v = b.i16()
    assert v == 3, f"GroupMetadataValue version {v}"
    out = {"protocol_type": b.string(), "generation": b.i32(), "protocol": b.string(),
           "leader": b.string(), "current_state_timestamp": b.i64(), "members": []}
    for _ in range(b.i32()):
        out["members"].append({
            "member_id": b.string(), "group_instance_id": b.string(), "client_id": b.string(),
            "client_host": b.string(), "rebalance_timeout": b.i32(), "session_timeout": b.i32(),
            "subscription": b.bytes_(), "assignment": b.bytes_()})
    b.end()
    return out


def decode_subscription(raw):
    """ConsumerProtocolSubscription (any version): its topics."""
    b = Buf(raw)
    b.i16()
    return [b.string() for _ in range(b.i32())]


def decode_assignment(raw):
    """ConsumerProtocolAssignment (any version): topic -> partitions."""
    b = Buf(raw)
    b.i16()
    out = {}
    for _ in range(b.i32()):
        topic = b.string()
        out[topic] = sorted(b.i32() for _ in range(b.i32()))
    return out


def flexible(raw):
    b = Buf(raw)
    assert b.i16() == 0, "KIP-848 values are version 0"
    return b


def topic_partitions(b):
    def one():
        tid = b.uuid()
        parts = b.carray(b.i32)
        b.tags()
        return tid, sorted(parts)
    return dict(b.carray(one))


def decode_consumer_value(key_type, raw):
    b = flexible(raw)
    if key_type in (3, 6):  # ConsumerGroupMetadataValue.Epoch, ...TargetAssignmentMetadata
        out = {"epoch": b.i32()}
    elif key_type == 4:  # ConsumerGroupPartitionMetadataValue
        def topic():
            t = {"topic_id": b.uuid(), "name": b.cstring(), "partitions": b.i32()}

            def racks():
                r = (b.i32(), b.carray(b.cstring))
                b.tags()
                return r
            b.carray(racks)
            b.tags()
            return t
        out = {"topics": b.carray(topic)}
    elif key_type == 5:  # ConsumerGroupMemberMetadataValue
        out = {"instance_id": b.cstring(), "rack_id": b.cstring(), "client_id": b.cstring(),
               "client_host": b.cstring(), "subscribed_topic_names": b.carray(b.cstring),
               "subscribed_topic_regex": b.cstring(), "rebalance_timeout_ms": b.i32(),
               "server_assignor": b.cstring()}
    elif key_type == 7:  # ConsumerGroupTargetAssignmentMemberValue
        out = {"partitions": topic_partitions(b)}
    else:  # 8: ConsumerGroupCurrentMemberAssignmentValue
        out = {"member_epoch": b.i32(), "previous_member_epoch": b.i32(), "state": b.i8(),
               "assigned": topic_partitions(b), "pending_revocation": topic_partitions(b)}
    b.tags()
    b.end()
    return out


# --- reading the topic -----------------------------------------------------------------------------

def read_offsets_topic(bootstrap, timeout=30):
    """Every record of __consumer_offsets, in order per partition: (key bytes, value bytes or
    None for a tombstone)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "raw-reader-unused",
                  "enable.auto.commit": False, "enable.partition.eof": False})
    try:
        meta = c.list_topics(OFFSETS_TOPIC, timeout=10)
        parts = sorted(meta.topics[OFFSETS_TOPIC].partitions)
        tps = [CKTopicPartition(OFFSETS_TOPIC, p) for p in parts]
        ends = [c.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in tps]
        c.assign([CKTopicPartition(OFFSETS_TOPIC, p, 0) for p in parts])
        out = []
        deadline = time.monotonic() + timeout
        while True:
            positions = [max(tp.offset, 0) for tp in c.position(tps)]
            if all(pos >= end for pos, end in zip(positions, ends)):
                return out
            assert time.monotonic() < deadline, f"reading {OFFSETS_TOPIC}: at {positions} of {ends}"
            for m in c.consume(500, 0.2):
                if m.error() is None:
                    out.append((m.key(), m.value()))
    finally:
        c.close()


def latest(records):
    """Compaction's view: the last value (or tombstone) per key, decoded key -> raw value."""
    out = {}
    for key, value in records:
        t, k = decode_key(key)
        out[(t, tuple(sorted(k.items())))] = value
    return out


def find(view, key_type, **fields):
    return view.get((key_type, tuple(sorted(fields.items()))), "absent")


# --- fixtures and clients ----------------------------------------------------------------------------

@pytest.fixture
def broker():
    s = Sluice(settings={"group.initial.rebalance.delay.ms": "200",
                         "group.consumer.heartbeat.interval.ms": "500",
                         "group.consumer.session.timeout.ms": "20000"}).start()
    try:
        yield s
    finally:
        s.close()


def make_topic(bootstrap, name, partitions, records):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.close()
    p = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(records):
        p.send(name, value=b"v%d" % i, partition=i % partitions)
    p.flush(30)
    p.close()


def classic_member(bootstrap, topic, group, records):
    """A kafka-python member of `group` that read `records` records; its next offsets."""
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                      client_id="layout-client", enable_auto_commit=False,
                      auto_offset_reset="earliest", session_timeout_ms=10000,
                      heartbeat_interval_ms=500)
    nxt = {}
    deadline = time.monotonic() + 60
    while sum(1 for _ in nxt) < 3 or sum(nxt.values()) < records:
        assert time.monotonic() < deadline, f"read {nxt}"
        for tp, msgs in c.poll(500).items():
            for m in msgs:
                nxt[tp.partition] = m.offset + 1
    return c, nxt


def have_node_rdkafka():
    return os.path.exists(os.path.join(JS, "node_modules", "node-rdkafka", "build", "Release",
                                       "node-librdkafka.node"))


class Kip848Member:
    """node-rdkafka with group.protocol=consumer (offsets_layout_rdkafka.js): joins, reads,
    commits, stays until close()."""

    def __init__(self, bootstrap, topic, group, records):
        self.proc = subprocess.Popen(
            ["node", os.path.join(JS, "offsets_layout_rdkafka.js"), bootstrap, topic, group,
             str(records)], cwd=JS, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.committed = None
        deadline = time.monotonic() + 90
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "the KIP-848 member did not get ready: " + self._stderr()
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            assert line is not None, "the KIP-848 member exited: " + self._stderr()
            if line.startswith("committed "):
                self.committed = {o["partition"]: o["offset"]
                                  for o in json.loads(line[len("committed "):])}
            if line == "ready":
                return

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def _stderr(self):
        if self.proc.poll() is None:
            return "(running)"
        return self.proc.stderr.read()

    def close(self):
        """Leaves the group; returns once the client is gone."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(60)
        assert self.proc.returncode == 0, self.proc.stderr.read()


# --- tests -------------------------------------------------------------------------------------------

def test_classic_group_records_are_kafkas(broker):
    make_topic(broker.bootstrap, "lay", 3, 30)
    consumer, nxt = classic_member(broker.bootstrap, "lay", "lag-monitored", 30)
    member_id = consumer._coordinator._generation.member_id
    consumer.commit({TopicPartition("lay", p): OffsetAndMetadata(o, f"meta-{p}")
                     for p, o in nxt.items()})
    # confluent_kafka commits without metadata: Kafka stores "".
    ck = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ck-simple"})
    ck.commit(offsets=[CKTopicPartition("lay", 1, 4)], asynchronous=False)
    ck.close()
    before = int(time.time() * 1000)

    records = read_offsets_topic(broker.bootstrap)
    assert records, "nothing in __consumer_offsets"
    types = {decode_key(k)[0] for k, _ in records}
    assert 0 not in types, "a record in the legacy layout"
    view = latest(records)
    for p, o in nxt.items():
        v = decode_offset_commit_value(find(view, 1, group="lag-monitored", topic="lay",
                                            partition=p))
        assert v["version"] == 3
        assert v["offset"] == o
        assert v["metadata"] == f"meta-{p}"
        assert abs(v["commit_timestamp"] - before) < 60000
    simple = decode_offset_commit_value(find(view, 1, group="ck-simple", topic="lay", partition=1))
    assert simple["offset"] == 4 and simple["metadata"] == ""

    g = decode_group_metadata_value(find(view, 2, group="lag-monitored"))
    assert g["protocol_type"] == "consumer"
    assert g["generation"] >= 1
    assert g["protocol"] in ("range", "roundrobin")
    assert g["leader"] == member_id
    assert len(g["members"]) == 1
    m = g["members"][0]
    assert m["member_id"] == member_id
    assert m["group_instance_id"] is None
    assert m["client_id"] == "layout-client"
    assert "127.0.0.1" in m["client_host"]
    assert m["session_timeout"] == 10000
    assert decode_subscription(m["subscription"]) == ["lay"]
    assert decode_assignment(m["assignment"]) == {"lay": [0, 1, 2]}

    # Leaving and deleting the group: Kafka's tombstones (null values) for its keys.
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    wait_for(lambda: dict(admin.delete_consumer_groups(["lag-monitored"]))["lag-monitored"]
             is kafka_errors.NoError, 30, "group deletion")
    admin.close()
    view = latest(read_offsets_topic(broker.bootstrap))
    for p in nxt:
        assert find(view, 1, group="lag-monitored", topic="lay", partition=p) is None
    assert find(view, 2, group="lag-monitored") is None
    assert find(view, 1, group="ck-simple", topic="lay", partition=1) not in (None, "absent")


def kip848_view(view, group):
    """The KIP-848 records of `group` in the latest view, decoded."""
    out = {"members": {}, "targets": {}, "current": {}}
    for (t, fields), raw in view.items():
        k = dict(fields)
        if t not in (3, 4, 5, 6, 7, 8) or k["group"] != group:
            continue
        v = None if raw is None else decode_consumer_value(t, raw)
        if t == 3:
            out["epoch"] = v
        elif t == 4:
            out["subscription"] = v
        elif t == 6:
            out["target_epoch"] = v
        else:
            out[{5: "members", 7: "targets", 8: "current"}[t]][k["member_id"]] = v
    return out


@pytest.mark.skipif(not have_node_rdkafka(), reason="node-rdkafka not built (scripts/install-deps)")
def test_kip848_group_records_are_kafkas(broker):
    make_topic(broker.bootstrap, "k848", 3, 30)
    member = Kip848Member(broker.bootstrap, "k848", "k848-g", 30)
    try:
        view = latest(read_offsets_topic(broker.bootstrap))
        for p, o in member.committed.items():
            v = decode_offset_commit_value(find(view, 1, group="k848-g", topic="k848", partition=p))
            assert v["offset"] == o
        g = kip848_view(view, "k848-g")
        epoch = g["epoch"]["epoch"]
        assert epoch >= 1
        topics = g["subscription"]["topics"]
        assert [(t["name"], t["partitions"]) for t in topics] == [("k848", 3)]
        tid = topics[0]["topic_id"]
        assert g["target_epoch"]["epoch"] == epoch
        assert len(g["members"]) == 1
        (mid, meta), = g["members"].items()
        assert meta["client_id"] == "kip848-client"
        assert "127.0.0.1" in meta["client_host"]
        assert meta["subscribed_topic_names"] == ["k848"]
        assert meta["subscribed_topic_regex"] is None
        assert g["targets"][mid] == {"partitions": {tid: [0, 1, 2]}}
        cur = g["current"][mid]
        assert cur["member_epoch"] == epoch
        assert cur["state"] == 0  # STABLE
        assert cur["assigned"] == {tid: [0, 1, 2]}
        assert cur["pending_revocation"] == {}
    finally:
        member.close()
    # The member left: tombstones for its records; the group epoch moved on.
    g = kip848_view(latest(read_offsets_topic(broker.bootstrap)), "k848-g")
    assert g["members"] == {mid: None}
    assert g["targets"].get(mid) is None
    assert g["current"] == {mid: None}
    assert g["epoch"]["epoch"] > epoch


def group_epoch(broker, group):
    r = requests.get(f"{broker.http_url}/v1/groups/{group}", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.skipif(not have_node_rdkafka(), reason="node-rdkafka not built (scripts/install-deps)")
def test_groups_survive_kill_9(broker):
    make_topic(broker.bootstrap, "crash", 3, 30)
    classic, nxt = classic_member(broker.bootstrap, "crash", "crash-classic", 30)
    classic.commit({TopicPartition("crash", p): OffsetAndMetadata(o, "c") for p, o in nxt.items()})
    member = Kip848Member(broker.bootstrap, "crash", "crash-848", 30)
    try:
        before = group_epoch(broker, "crash-848")
        assert len(before["members"]) == 1
        broker.kill()
        # Back on the port the clients know too (a second listener; sluice announces to each
        # client the address it reached).
        broker.args += ["--kafka", f"127.0.0.1:{broker.kafka_port}"]
        broker.start()
        # Committed offsets of both groups are back.
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        got = admin.list_consumer_group_offsets("crash-classic")
        assert {tp.partition: om.offset for tp, om in got.items()} == nxt
        assert all(om.metadata == "c" for om in got.values())
        got = admin.list_consumer_group_offsets("crash-848")
        assert {tp.partition: om.offset for tp, om in got.items()} == member.committed
        admin.close()
        # The KIP-848 member came back with the group, at its epoch: its next heartbeats are
        # accepted, so the group epoch does not move (a member that had to rejoin would bump it).
        after = group_epoch(broker, "crash-848")
        assert after["generation"] == before["generation"]
        assert [m["member_id"] for m in after["members"]] == \
            [m["member_id"] for m in before["members"]]

        def heartbeats():
            metrics = requests.get(f"{broker.http_url}/metrics", timeout=10).text
            for line in metrics.splitlines():
                if line.startswith('sluice_kafka_requests_total{api="ConsumerGroupHeartbeat"}'):
                    return int(line.split()[-1]) >= 3
            return False
        wait_for(heartbeats, 30, "the KIP-848 member's heartbeats after the restart")
        assert group_epoch(broker, "crash-848")["generation"] == before["generation"]
        # And the topic is still in Kafka's layout.
        types = {decode_key(k)[0] for k, _ in read_offsets_topic(broker.bootstrap)}
        assert 0 not in types and {1, 2, 3, 5, 8} <= types
    finally:
        member.close()
        classic.close()


# --- commit metadata over offset.metadata.max.bytes ----------------------------------------------

def s16(x):
    return struct.pack(">h", len(x)) + x.encode()


def call_raw(sock, api_key, version, body, cid):
    sock.sendall(kafka_request(api_key, version, cid, body))
    frame = read_frame(sock)
    assert struct.unpack(">i", frame[:4])[0] == cid
    return Buf(frame[4:])


def test_metadata_over_the_limit_is_refused_by_offset_commit_and_txn_offset_commit(broker):
    make_topic(broker.bootstrap, "meta", 2, 0)
    big, small = "x" * 4097, "y" * 4096
    # OffsetCommit (kafka-python): the partition with too much metadata is refused.
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="meta-g",
                      enable_auto_commit=False)
    with pytest.raises(kafka_errors.OffsetMetadataTooLargeError):
        c.commit({TopicPartition("meta", 0): OffsetAndMetadata(1, big)})
    c.commit({TopicPartition("meta", 1): OffsetAndMetadata(2, small)})
    c.close()

    # TxnOffsetCommit: the same limit, per partition; the other partition is taken.
    sock = connect(broker.kafka_port)
    try:
        def init():
            b = call_raw(sock, 22, 1, s16("meta-txn") + struct.pack(">i", 60000), 1)
            b.i32()
            err = b.i16()
            return (b.i64(), b.i16()) if err == 0 else None
        pid, epoch = wait_for(init, 30, "InitProducerId")
        b = call_raw(sock, 25, 1, s16("meta-txn") + struct.pack(">qh", pid, epoch) +
                     s16("meta-txn-g"), 2)
        b.i32()
        assert b.i16() == 0
        partitions = (struct.pack(">i", 2) +
                      struct.pack(">iqi", 0, 5, -1) + s16(big) +
                      struct.pack(">iqi", 1, 6, -1) + s16(small))
        body = (s16("meta-txn") + s16("meta-txn-g") + struct.pack(">qh", pid, epoch) +
                struct.pack(">i", 1) + s16("meta") + partitions)
        b = call_raw(sock, 28, 2, body, 3)
        b.i32()
        errors = {}
        for _ in range(b.i32()):
            assert b.string() == "meta"
            for _ in range(b.i32()):
                p = b.i32()
                errors[p] = b.i16()
        assert errors == {0: 12, 1: 0}  # OFFSET_METADATA_TOO_LARGE
    finally:
        sock.close()
