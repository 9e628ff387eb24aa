"""Kafka 4 transactions (KIP-890, transaction version 2) over the wire.

No client on this machine speaks transaction version 2 (Java 4.x, franz-go), so these tests
send the requests such a client sends, byte for byte, over one TCP connection: ApiVersions v3
(the finalized feature transaction.version = 2), FindCoordinator v4 (key type 1),
InitProducerId v5, Produce v12 with transactional batches and no AddPartitionsToTxn (the
partition is added implicitly), EndTxn v5 (the epoch is bumped at the end of every
transaction; a retry with the previous epoch gets the same answer), DescribeTransactions v0
and ListTransactions v0. A confluent-kafka (librdkafka) consumer checks what read_committed
and read_uncommitted readers see.
"""
import struct
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness import connect, kafka_request, read_frame, wait_for
import kafka_wire as kw

PRODUCE = 0
FIND_COORDINATOR = 10
API_VERSIONS = 18
INIT_PRODUCER_ID = 22
END_TXN = 26
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66

NONE = 0
INVALID_PRODUCER_EPOCH = 47
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105
TRANSACTION_ABORTABLE = 120
INVALID_REGULAR_EXPRESSION = 128

NO_TAGS = kw.NO_TAGS


# --- the wire client -------------------------------------------------------------------------

class Wire:
    """One connection; every request flexible (header v2). Responses use header v1, except
    ApiVersions (always header v0)."""

    def __init__(self, port):
        self.sock = connect(port)
        self.correlation_id = 0

    def close(self):
        self.sock.close()

    def call(self, api_key, version, body):
        self.correlation_id += 1
        self.sock.sendall(kafka_request(api_key, version, self.correlation_id, body,
                                        client_id="tv2-wire", flexible_header=True))
        r = kw.FlexReader(read_frame(self.sock))
        assert r.int32() == self.correlation_id
        if api_key != API_VERSIONS:
            r.tags()
        return r


def api_versions_v3(wire):
    """(error, {api_key: (min, max)}, tagged fields of the body)."""
    r = wire.call(API_VERSIONS, 3,
                  kw.compact_string("sluice-tests") + kw.compact_string("1.0") + NO_TAGS)
    error = r.int16()
    apis = {}
    for key, lo, hi, _ in r.compact_array(lambda r: (r.int16(), r.int16(), r.int16(), r.tags())):
        apis[key] = (lo, hi)
    r.int32()  # throttle_time_ms
    tags = r.tags()
    assert r.at_end()
    return error, apis, tags


def find_transaction_coordinator_v4(wire, txn_id):
    """The single coordinators entry: (key, node_id, host, port, error_code)."""
    r = wire.call(FIND_COORDINATOR, 4,
                  struct.pack(">b", 1) + kw.compact_array([kw.compact_string(txn_id)]) + NO_TAGS)
    r.int32()  # throttle_time_ms
    coordinators = r.compact_array(lambda r: (r.compact_string(), r.int32(), r.compact_string(),
                                              r.int32(), r.int16(), r.compact_string(),
                                              r.tags())[:5])
    r.tags()
    assert r.at_end()
    assert len(coordinators) == 1
    return coordinators[0]


def init_producer_id_v5(wire, txn_id, timeout_ms=60000):
    """(error, producer_id, producer_epoch)."""
    r = wire.call(INIT_PRODUCER_ID, 5, kw.compact_string(txn_id) +
                  struct.pack(">iqh", timeout_ms, -1, -1) + NO_TAGS)
    r.int32()  # throttle_time_ms
    out = (r.int16(), r.int64(), r.int16())
    r.tags()
    assert r.at_end()
    return out


def produce_v12(wire, txn_id, topic, partition, records, version=12):
    """(error, base_offset) of the one partition, acks=all. Versions 9-12 share this layout."""
    part = struct.pack(">i", partition) + kw.compact_bytes(records) + NO_TAGS
    topic_data = kw.compact_string(topic) + kw.compact_array([part]) + NO_TAGS
    r = wire.call(PRODUCE, version, kw.compact_string(txn_id) + struct.pack(">hi", -1, 10000) +
                  kw.compact_array([topic_data]) + NO_TAGS)

    def partition_response(r):
        index, error, base = r.int32(), r.int16(), r.int64()
        r.int64()  # log_append_time_ms
        r.int64()  # log_start_offset
        r.compact_array(lambda r: (r.int32(), r.compact_string(), r.tags()))  # record_errors
        r.compact_string()  # error_message
        r.tags()
        return index, error, base

    responses = r.compact_array(
        lambda r: (r.compact_string(), r.compact_array(partition_response), r.tags())[:2])
    r.int32()  # throttle_time_ms
    r.tags()
    assert r.at_end()
    assert len(responses) == 1 and responses[0][0] == topic
    ((index, error, base),) = responses[0][1]
    assert index == partition
    return error, base


def end_txn_v5(wire, txn_id, producer_id, epoch, commit):
    """(error, producer_id, producer_epoch) for the next transaction."""
    r = wire.call(END_TXN, 5, kw.compact_string(txn_id) +
                  struct.pack(">qhb", producer_id, epoch, 1 if commit else 0) + NO_TAGS)
    r.int32()  # throttle_time_ms
    out = (r.int16(), r.int64(), r.int16())
    r.tags()
    assert r.at_end()
    return out


def describe_transaction_v0(wire, txn_id):
    """The one transaction state as a dict; topics as {topic: sorted partitions}."""
    r = wire.call(DESCRIBE_TRANSACTIONS, 0,
                  kw.compact_array([kw.compact_string(txn_id)]) + NO_TAGS)
    r.int32()  # throttle_time_ms

    def state(r):
        s = {"error": r.int16(), "transactional_id": r.compact_string(),
             "state": r.compact_string(), "timeout_ms": r.int32(), "start_ms": r.int64(),
             "producer_id": r.int64(), "producer_epoch": r.int16()}
        topics = r.compact_array(
            lambda r: (r.compact_string(), r.compact_array(lambda r: r.int32()), r.tags())[:2])
        s["topics"] = {t: sorted(p) for t, p in topics}
        r.tags()
        return s

    states = r.compact_array(state)
    r.tags()
    assert r.at_end()
    assert len(states) == 1 and states[0]["transactional_id"] == txn_id
    return states[0]


def list_transactions_v0(wire, state_filters=()):
    """(error, unknown_state_filters, {transactional_id: (producer_id, state)})."""
    r = wire.call(LIST_TRANSACTIONS, 0,
                  kw.compact_array([kw.compact_string(s) for s in state_filters]) +
                  kw.compact_array([]) + NO_TAGS)
    r.int32()  # throttle_time_ms
    error = r.int16()
    unknown = r.compact_array(lambda r: r.compact_string())
    states = r.compact_array(
        lambda r: (r.compact_string(), r.int64(), r.compact_string(), r.tags())[:3])
    r.tags()
    assert r.at_end()
    return error, unknown, {t: (pid, state) for t, pid, state in states}


class TxnV2Producer:
    """What a transaction-version-2 producer does: FindCoordinator, InitProducerId, then per
    transaction Produce v12 (sequences per partition, from 0 for each epoch) and EndTxn v5."""

    def __init__(self, wire, txn_id, port):
        self.wire = wire
        self.txn_id = txn_id
        key, _node, _host, coord_port, error = find_transaction_coordinator_v4(wire, txn_id)
        assert (key, error, coord_port) == (txn_id, NONE, port)
        error, self.producer_id, self.epoch = init_producer_id_v5(wire, txn_id)
        assert error == NONE and self.producer_id >= 0 and self.epoch >= 0
        self.next_sequence = {}

    def produce(self, topic, partition, values, epoch=None, sequence=None):
        epoch = self.epoch if epoch is None else epoch
        if sequence is None:
            sequence = self.next_sequence.get((topic, partition), 0)
        records = kw.producer_batch([v.encode() for v in values], self.producer_id, epoch,
                                    sequence, transactional=True,
                                    base_timestamp=int(time.time() * 1000))
        error, base = produce_v12(self.wire, self.txn_id, topic, partition, records)
        if error == NONE:
            self.next_sequence[(topic, partition)] = sequence + len(values)
        return error, base

    def end(self, commit):
        """EndTxn v5 with the current epoch; on success adopts the returned id/epoch."""
        error, pid, epoch = end_txn_v5(self.wire, self.txn_id, self.producer_id, self.epoch,
                                       commit)
        if error == NONE:
            self.producer_id, self.epoch = pid, epoch
            self.next_sequence = {}
        return error, pid, epoch


# --- readers ---------------------------------------------------------------------------------

def create_topic(bootstrap, name, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(15)


def consume_until(bootstrap, topic, partition, last_value, committed, timeout=20):
    """Values of one partition from offset 0, in order, up to and including `last_value`."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"tv2-{time.monotonic()}",
                  "enable.auto.commit": False, "log_level": 0,
                  "isolation.level": "read_committed" if committed else "read_uncommitted"})
    c.assign([TopicPartition(topic, partition, 0)])
    out = []

    def step():
        for m in c.consume(100, 0.2):
            if not m.error():
                out.append(m.value().decode())
        return last_value in out

    try:
        wait_for(step, timeout, f"{last_value!r} in {topic}-{partition} (so far {out})",
                 interval=0)
    finally:
        c.close()
    return out


def high_watermark(bootstrap, topic, partition):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tv2-watermarks",
                  "isolation.level": "read_uncommitted", "log_level": 0})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10,
                                       cached=False)[1]
    finally:
        c.close()


# --- tests -----------------------------------------------------------------------------------

def test_api_versions_v3_finalizes_transaction_version_2(broker):
    wire = Wire(broker.kafka_port)
    try:
        error, apis, tags = api_versions_v3(wire)
    finally:
        wire.close()
    assert error == NONE
    assert apis[PRODUCE][1] >= 12
    assert apis[END_TXN][1] >= 5
    assert apis[INIT_PRODUCER_ID][1] >= 5
    assert apis[FIND_COORDINATOR][1] >= 4
    assert apis[DESCRIBE_TRANSACTIONS][0] == 0 and apis[LIST_TRANSACTIONS][0] == 0

    supported = kw.FlexReader(tags[0]).compact_array(
        lambda r: (r.compact_string(), r.int16(), r.int16(), r.tags())[:3])
    assert ("transaction.version", 0, 2) in supported
    assert kw.FlexReader(tags[1]).int64() >= 0  # clients ignore finalized features at epoch -1
    finalized = kw.FlexReader(tags[2]).compact_array(
        lambda r: (r.compact_string(), r.int16(), r.int16(), r.tags())[:3])
    # (name, max_version_level, min_version_level)
    assert ("transaction.version", 2, 2) in finalized


def test_commit_adds_partitions_implicitly_and_bumps_the_epoch(broker):
    create_topic(broker.bootstrap, "tv2-commit", 2)
    wire = Wire(broker.kafka_port)
    try:
        p = TxnV2Producer(wire, "tv2-commit-id", broker.kafka_port)
        pid, epoch0 = p.producer_id, p.epoch

        # No AddPartitionsToTxn: Produce v12 adds each partition to the transaction.
        assert p.produce("tv2-commit", 0, ["c0", "c1", "c2"]) == (NONE, 0)
        assert p.produce("tv2-commit", 1, ["c3"]) == (NONE, 0)
        ongoing = describe_transaction_v0(wire, "tv2-commit-id")
        assert ongoing["error"] == NONE and ongoing["state"] == "Ongoing"
        assert ongoing["topics"] == {"tv2-commit": [0, 1]}
        assert (ongoing["producer_id"], ongoing["producer_epoch"]) == (pid, epoch0)

        # KIP-890: EndTxn v5 bumps the epoch and hands it back.
        assert p.end(commit=True) == (NONE, pid, epoch0 + 1)
        # A retry (the answer was lost) carries the old epoch and gets the same answer.
        assert end_txn_v5(wire, "tv2-commit-id", pid, epoch0, True) == (NONE, pid, epoch0 + 1)
        done = describe_transaction_v0(wire, "tv2-commit-id")
        assert done["state"] == "CompleteCommit"
        assert (done["producer_id"], done["producer_epoch"]) == (pid, epoch0 + 1)
        assert done["topics"] == {}
    finally:
        wire.close()

    assert consume_until(broker.bootstrap, "tv2-commit", 0, "c2", committed=True) == \
        ["c0", "c1", "c2"]
    assert consume_until(broker.bootstrap, "tv2-commit", 1, "c3", committed=True) == ["c3"]
    # One commit marker after the data of each partition.
    assert high_watermark(broker.bootstrap, "tv2-commit", 0) == 4
    assert high_watermark(broker.bootstrap, "tv2-commit", 1) == 2


def test_produce_v11_does_not_add_the_partition(broker):
    """The implicit add belongs to Produce v12: a v11 producer must call AddPartitionsToTxn."""
    create_topic(broker.bootstrap, "tv2-v11")
    wire = Wire(broker.kafka_port)
    try:
        p = TxnV2Producer(wire, "tv2-v11-id", broker.kafka_port)
        records = kw.producer_batch([b"v11"], p.producer_id, p.epoch, 0, transactional=True,
                                    base_timestamp=int(time.time() * 1000))
        error, _ = produce_v12(wire, "tv2-v11-id", "tv2-v11", 0, records, version=11)
        assert error == TRANSACTION_ABORTABLE
        assert describe_transaction_v0(wire, "tv2-v11-id")["state"] == "Empty"
        # The same batch at v12 is accepted at offset 0: the refused one wrote nothing.
        assert produce_v12(wire, "tv2-v11-id", "tv2-v11", 0, records) == (NONE, 0)
    finally:
        wire.close()


def test_aborted_transaction_is_hidden_from_read_committed(broker):
    create_topic(broker.bootstrap, "tv2-abort")
    wire = Wire(broker.kafka_port)
    try:
        p = TxnV2Producer(wire, "tv2-abort-id", broker.kafka_port)
        pid, epoch0 = p.producer_id, p.epoch
        assert p.produce("tv2-abort", 0, ["a0", "a1"]) == (NONE, 0)
        assert p.end(commit=True) == (NONE, pid, epoch0 + 1)

        # The new epoch starts again at sequence 0; the commit marker took offset 2.
        assert p.produce("tv2-abort", 0, ["x0", "x1", "x2"]) == (NONE, 3)
        assert p.end(commit=False) == (NONE, pid, epoch0 + 2)
        assert end_txn_v5(wire, "tv2-abort-id", pid, epoch0 + 1, False) == \
            (NONE, pid, epoch0 + 2)
        assert describe_transaction_v0(wire, "tv2-abort-id")["state"] == "CompleteAbort"

        # A committed record after the aborted ones: a read_committed reader must skip the
        # aborted range, not just stop before it. The abort marker took offset 6.
        assert p.produce("tv2-abort", 0, ["a2"]) == (NONE, 7)
        assert p.end(commit=True) == (NONE, pid, epoch0 + 3)
    finally:
        wire.close()

    assert consume_until(broker.bootstrap, "tv2-abort", 0, "a2", committed=True) == \
        ["a0", "a1", "a2"]
    assert consume_until(broker.bootstrap, "tv2-abort", 0, "a2", committed=False) == \
        ["a0", "a1", "x0", "x1", "x2", "a2"]
    assert high_watermark(broker.bootstrap, "tv2-abort", 0) == 9


def test_produce_with_the_epoch_before_the_bump_is_fenced(broker):
    create_topic(broker.bootstrap, "tv2-fence")
    wire = Wire(broker.kafka_port)
    try:
        p = TxnV2Producer(wire, "tv2-fence-id", broker.kafka_port)
        epoch0 = p.epoch
        assert p.produce("tv2-fence", 0, ["f0"]) == (NONE, 0)
        assert p.end(commit=True)[0] == NONE
        assert p.epoch == epoch0 + 1

        # A zombie of the previous transaction: old epoch, next sequence of that epoch.
        error, _ = p.produce("tv2-fence", 0, ["zombie"], epoch=epoch0, sequence=1)
        assert error in (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED)
        # Nor does it start a transaction for the id.
        assert describe_transaction_v0(wire, "tv2-fence-id")["state"] == "CompleteCommit"

        # Nothing was appended: the next record follows f0 and its commit marker.
        assert p.produce("tv2-fence", 0, ["f1"]) == (NONE, 2)
        assert p.end(commit=True)[0] == NONE
    finally:
        wire.close()

    assert consume_until(broker.bootstrap, "tv2-fence", 0, "f1", committed=False) == \
        ["f0", "f1"]


def test_describe_and_list_transactions_follow_the_states(broker):
    create_topic(broker.bootstrap, "tv2-states")
    wire = Wire(broker.kafka_port)
    try:
        p = TxnV2Producer(wire, "tv2-states-id", broker.kafka_port)
        pid = p.producer_id

        def listed(*states):
            error, unknown, txns = list_transactions_v0(wire, states)
            assert (error, unknown) == (NONE, [])
            return txns

        empty = describe_transaction_v0(wire, "tv2-states-id")
        assert (empty["error"], empty["state"], empty["topics"]) == (NONE, "Empty", {})
        assert empty["timeout_ms"] == 60000
        assert listed()["tv2-states-id"] == (pid, "Empty")

        assert p.produce("tv2-states", 0, ["s0"]) == (NONE, 0)
        ongoing = describe_transaction_v0(wire, "tv2-states-id")
        assert ongoing["state"] == "Ongoing" and ongoing["topics"] == {"tv2-states": [0]}
        assert ongoing["start_ms"] > 0
        assert listed("Ongoing") == {"tv2-states-id": (pid, "Ongoing")}

        assert p.end(commit=True)[0] == NONE
        assert describe_transaction_v0(wire, "tv2-states-id")["state"] == "CompleteCommit"
        assert listed("CompleteCommit") == {"tv2-states-id": (pid, "CompleteCommit")}
        assert listed("Ongoing") == {}

        assert p.produce("tv2-states", 0, ["s1"]) == (NONE, 2)
        assert p.end(commit=False)[0] == NONE
        assert describe_transaction_v0(wire, "tv2-states-id")["state"] == "CompleteAbort"
        assert listed("CompleteAbort", "CompleteCommit") == \
            {"tv2-states-id": (pid, "CompleteAbort")}

        error, unknown, txns = list_transactions_v0(wire, ["NoSuchState"])
        assert (error, unknown, txns) == (NONE, ["NoSuchState"], {})
        missing = describe_transaction_v0(wire, "tv2-never-initialized")
        assert missing["error"] == TRANSACTIONAL_ID_NOT_FOUND
    finally:
        wire.close()


def list_transactions_v2(wire, pattern):
    """(error, {transactional_id: state}) for ListTransactions v2 with an id pattern."""
    r = wire.call(LIST_TRANSACTIONS, 2,
                  kw.compact_array([]) + kw.compact_array([]) + struct.pack(">q", -1) +
                  kw.compact_string(pattern) + NO_TAGS)
    r.int32()  # throttle_time_ms
    error = r.int16()
    r.compact_array(lambda r: r.compact_string())
    states = r.compact_array(
        lambda r: (r.compact_string(), r.int64(), r.compact_string(), r.tags())[:3])
    r.tags()
    assert r.at_end()
    return error, {t: state for t, _pid, state in states}


def test_list_transactions_patterns_run_in_linear_time(broker):
    """The pattern is matched with RE2: a backtracking matcher (std::regex, as before) takes
    longer than the age of the universe on '(a|aa)*c' against sixty a's, and meanwhile the
    coordinator's lock stalls every transaction. Here it answers within the read deadline,
    and an invalid pattern is INVALID_REGULAR_EXPRESSION."""
    victim = "a" * 60
    wire = Wire(broker.kafka_port)
    other = Wire(broker.kafka_port)
    try:
        assert init_producer_id_v5(wire, victim)[0] == NONE
        assert init_producer_id_v5(wire, "ab-1")[0] == NONE
        assert list_transactions_v2(wire, "(a|aa)*c") == (NONE, {})
        assert list_transactions_v2(wire, "(a|aa)*") == (NONE, {victim: "Empty"})
        assert list_transactions_v2(wire, "ab-[0-9]+") == (NONE, {"ab-1": "Empty"})
        assert list_transactions_v2(wire, "ab-(") == (INVALID_REGULAR_EXPRESSION, {})
        # The coordinator still serves others.
        assert init_producer_id_v5(other, "after-patterns")[0] == NONE
    finally:
        wire.close()
        other.close()
