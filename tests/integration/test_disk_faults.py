"""Disk faults under a real sluice, injected by the LD_PRELOAD shim of tests/faults/shim
(fault_shim.c): a full disk (write/pwrite fail with ENOSPC), a failed fsync (EIO) and an fsync
that hangs until released. The shim's control file says what fails; its log says when a fault
hit, so the tests wait for that instead of guessing with timers."""
import os
import sys
import threading

import pytest
import requests
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "faults"))
from harness import sluice_binary, wait_for  # noqa: E402
from node import Node  # noqa: E402
from test_groups_protocol import Client  # noqa: E402
from workers import sqs_client  # noqa: E402


def shim_path():
    path = os.environ.get("SLUICE_FAULT_SHIM") or os.path.join(
        os.path.dirname(sluice_binary()), "libsluice_fault_shim.so")
    if not os.path.exists(path):
        pytest.fail(f"fault shim not found at {path}: build the sluice_fault_shim target")
    return path


class Disk:
    """A sluice under the shim, and the shim's control file."""

    def __init__(self, tmp):
        self.data = str(tmp / "data")
        os.makedirs(self.data)
        self.control = str(tmp / "control")
        self.prefix = self.data
        self.set("")
        self.node = Node(self.data, settings={"num.partitions": "1"}, proxies=False,
                         env={"LD_PRELOAD": shim_path(), "SLUICE_FAULT_CONTROL": self.control})

    def set(self, directives, prefix=None):
        """Replaces the control file at once (rename), so the shim never reads half of it."""
        tmp = self.control + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"prefix {prefix or self.prefix}\n{directives}\n")
        os.replace(tmp, self.control)

    def clear(self):
        self.set("")

    def shim_log(self):
        try:
            with open(self.control + ".log") as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def wait_fault(self, kind, path_part="", timeout=30):
        return wait_for(lambda: [l for l in self.shim_log()
                                 if l.startswith(kind + " ") and path_part in l],
                        timeout, f"the shim to inject '{kind}' on '{path_part}'")

    # --- clients ------------------------------------------------------------------------------
    def create_topic(self, name, config=None):
        a = AdminClient({"bootstrap.servers": self.node.bootstrap})
        for f in a.create_topics([NewTopic(name, 1, 1, config=config or {})]).values():
            f.result(30)

    def producer(self):
        # No retries and no idempotence: each delivery report is the answer to one Produce.
        return Producer({"bootstrap.servers": self.node.bootstrap, "acks": "all",
                         "enable.idempotence": False, "message.send.max.retries": 0,
                         "linger.ms": 0, "message.timeout.ms": 30000})

    def produce(self, topic, values, producer=None):
        """The error code (None: acknowledged) of each value, produced one at a time."""
        p = producer or self.producer()
        out = []
        for v in values:
            got = []
            p.produce(topic, value=v, on_delivery=lambda err, msg: got.append(err))
            p.flush(40)
            assert got, "no delivery report"
            out.append(None if got[0] is None else got[0].code())
        return out

    def read_all(self, topic, timeout=30):
        c = Consumer({"bootstrap.servers": self.node.bootstrap, "group.id": "reader",
                      "enable.auto.commit": False})
        try:
            tp = TopicPartition(topic, 0)
            end = c.get_watermark_offsets(tp, timeout=10, cached=False)[1]
            c.assign([TopicPartition(topic, 0, 0)])
            values = []
            wait_for(lambda: values.extend(m.value() for m in c.consume(100, 0.2)
                                           if m.error() is None) or
                     max(c.position([tp])[0].offset, 0) >= end, timeout, f"{topic} to {end}")
            return values
        finally:
            c.close()


@pytest.fixture
def disk(tmp_path):
    d = Disk(tmp_path)
    d.node.start()
    try:
        yield d
    finally:
        d.clear()
        d.node.close()


def test_full_disk_refuses_writes_keeps_reads_and_recovers_without_restart(disk):
    disk.create_topic("full")
    acked = [b"a%d" % i for i in range(20)]
    assert disk.produce("full", acked) == [None] * 20
    p = disk.producer()
    sqs = sqs_client(disk.node.sqs_url)
    url = sqs.create_queue(QueueName="q-full")["QueueUrl"]

    disk.set("write enospc")
    refused = disk.produce("full", [b"x0", b"x1"], p)

    assert refused == [KafkaError.KAFKA_STORAGE_ERROR] * 2
    disk.wait_fault("enospc")
    assert disk.read_all("full") == acked
    # REST and SQS writes get their fronts' storage errors.
    r = requests.post(f"{disk.node.http_url}/topics/full", timeout=30,
                      headers={"Content-Type": "application/vnd.kafka.binary.v2+json"},
                      json={"records": [{"value": "eDI="}]})
    # Every record refused for want of space: 507, with each record's result in the body.
    assert r.status_code == 507, r.text
    assert r.json()["offsets"][0]["error_code"] == 50701, r.text
    assert r.json()["offsets"][0]["error"] == "disk full", r.text
    with pytest.raises(ClientError) as e:
        sqs.send_message(QueueUrl=url, MessageBody="m")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] >= 500

    disk.clear()
    # Space is back: the same producer's next write goes through, no restart.
    sqs.send_message(QueueUrl=url, MessageBody="m")
    assert disk.produce("full", [b"b0", b"b1"], p) == [None, None]
    # The log is read from sluice's stderr by another thread: once the line saying appends
    # resumed is in, every line written before it is too.
    wait_for(lambda: disk.node.find("full-0: appends resumed"), 30, "appends to resume")
    # One error line for the episode, however many appends it refused (Kafka, REST and SQS).
    assert len([l for l in disk.node.log_text().splitlines()
                if " full-0:" in l and "appends are refused until space returns" in l]) == 1
    assert disk.read_all("full") == acked + [b"b0", b"b1"]
    disk.node.kill()
    disk.node.start()
    assert disk.read_all("full") == acked + [b"b0", b"b1"]


def test_full_disk_and_consumer_groups(disk):
    disk.create_topic("g")
    assert disk.produce("g", [b"v%d" % i for i in range(5)]) == [None] * 5
    c = Client(disk.node.ports["kafka"])
    old = c.join_new("old-group")
    assert c.sync("old-group", old["generation"], old["member_id"])[0] == 0
    assert c.commit_v2("old-group", old["generation"], old["member_id"], "g", [(0, 2)]) == {
        ("g", 0): 0}

    disk.set("write enospc")
    new = c.join_new("new-group")
    sync_error = c.sync("new-group", new["generation"], new["member_id"])[0]
    beat = c.heartbeat("old-group", old["generation"], old["member_id"])
    commit = c.commit_v2("old-group", old["generation"], old["member_id"], "g", [(0, 3)])
    fetched = c.offset_fetch_v8([("old-group", None)])

    # What a full disk does to groups: a group's state and its commits are appends to the
    # offsets log, so a new group can join but its SyncGroup, and every OffsetCommit, get the
    # coordinator error Kafka gives for a failed offsets append (NOT_COORDINATOR: clients
    # look the coordinator up again and retry). Members of existing groups keep heartbeating
    # and their committed offsets stay readable.
    NOT_COORDINATOR = 16
    assert new["error"] == 0
    assert sync_error == NOT_COORDINATOR
    assert beat == 0
    assert commit == {("g", 0): NOT_COORDINATOR}
    assert fetched["old-group"][1] == {("g", 0): 2}
    disk.clear()
    rejoined = c.join("new-group", new["member_id"])
    assert rejoined["error"] == 0
    assert c.sync("new-group", rejoined["generation"], new["member_id"])[0] == 0
    again = c.commit_v2("new-group", rejoined["generation"], new["member_id"], "g", [(0, 3)])
    assert again == {("g", 0): 0}
    assert c.offset_fetch_v8([("new-group", None)])["new-group"][1] == {("g", 0): 3}


def test_failed_fsync_fences_the_partition_until_restart(disk):
    disk.create_topic("fs")
    disk.create_topic("other")
    acked = [b"a%d" % i for i in range(10)]
    assert disk.produce("fs", acked) == [None] * 10
    p = disk.producer()

    disk.set("fsync eio", prefix=os.path.join(disk.data, "fs-0"))
    first = disk.produce("fs", [b"lost0"], p)
    disk.wait_fault("eio")
    disk.clear()
    later = disk.produce("fs", [b"lost1", b"lost2"], p)

    assert first == [KafkaError.KAFKA_STORAGE_ERROR]
    assert later == [KafkaError.KAFKA_STORAGE_ERROR] * 2
    # Awaited: sluice's stderr is read by another thread, maybe behind the produce's answer.
    line = wait_for(lambda: disk.node.find("fsync of segment"), 30, "the failed fsync's line")
    assert line and "refuses writes" in line and "fs-0" in line
    assert disk.node.count("refuses writes") == 1
    assert disk.produce("other", [b"o0"], p) == [None]
    assert disk.read_all("fs") == acked
    disk.node.kill()
    disk.node.start()
    assert disk.produce("fs", [b"after"]) == [None]
    assert disk.read_all("fs") == acked + [b"after"]


def test_stalled_fsync_stalls_only_the_producers_waiting_for_it(disk):
    disk.create_topic("slow")
    acked = [b"a%d" % i for i in range(10)]
    assert disk.produce("slow", acked) == [None] * 10
    c = Client(disk.node.ports["kafka"])
    member = c.join_new("g-slow")
    assert c.sync("g-slow", member["generation"], member["member_id"])[0] == 0
    sqs = sqs_client(disk.node.sqs_url)
    sqs.create_queue(QueueName="q-slow")

    disk.set("fsync hold")  # every fsync under the data directory hangs
    p = disk.producer()
    delivered = []
    p.produce("slow", value=b"held", on_delivery=lambda err, msg: delivered.append(err))
    stop = threading.Event()
    poller = threading.Thread(target=lambda: [p.poll(0.1) for _ in iter(stop.is_set, True)])
    poller.start()
    try:
        disk.wait_fault("held", "/slow-0/")
        # While the fsync of that record's segment hangs: a fetch of durable data, a
        # heartbeat, HTTP and SQS reads.
        assert disk.read_all("slow")[:10] == acked
        assert c.heartbeat("g-slow", member["generation"], member["member_id"]) == 0
        assert requests.get(f"{disk.node.http_url}/healthz", timeout=30).status_code == 200
        topics = requests.get(f"{disk.node.http_url}/topics", timeout=30)
        assert topics.status_code == 200 and "slow" in topics.json()
        assert any("q-slow" in u for u in sqs.list_queues().get("QueueUrls", []))
        # ... all answered while the fsync was still held, the producer still waiting.
        assert delivered == []
        assert not [l for l in disk.shim_log() if l.startswith("released ")]
    finally:
        disk.clear()
        wait_for(lambda: delivered, 30, "the held produce to be answered")
        stop.set()
        poller.join(10)
    assert delivered == [None]
    assert disk.read_all("slow") == acked + [b"held"]
