"""Consumer groups with python3-confluent-kafka 1.7.0 (librdkafka 2.0.2): three consumers in one
group while 100000 records are produced, one leaving and one killed, then a sluice restart that
resumes from the committed offsets; cooperative-sticky incremental rebalancing; two groups
reading the same topic (fan-out) and a reset to earliest.

Each consumer is its own process (so that one can be SIGKILLed) running CONSUMER below: it
writes every record it gets ("partition offset value") to a file before committing, so a
record is in some file before its offset is committed (at-least-once)."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, wait_for

CONSUMER = r'''
import json, signal, sys
from confluent_kafka import Consumer
bootstrap, group, topic, out_path, strategy = sys.argv[1:6]
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
events = open(out_path + ".events", "a", buffering=1)
def on_assign(c, parts):
    events.write(json.dumps({"assign": sorted(p.partition for p in parts)}) + "\n")
def on_revoke(c, parts):
    events.write(json.dumps({"revoke": sorted(p.partition for p in parts)}) + "\n")
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
              "auto.offset.reset": "earliest", "enable.auto.commit": False,
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
              "max.poll.interval.ms": 30000, "partition.assignment.strategy": strategy})
c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
out = open(out_path, "a")
while not stop:
    got = [m for m in c.consume(num_messages=500, timeout=0.2) if m.error() is None]
    if not got:
        continue
    for m in got:
        out.write("%d %d %s\n" % (m.partition(), m.offset(), m.value().decode()))
    out.flush()
    try:
        c.commit(asynchronous=False)
    except Exception as e:  # refused around a rebalance: those records come again
        events.write(json.dumps({"commit_error": str(e)}) + "\n")
c.close()
events.write(json.dumps({"closed": True}) + "\n")
'''


class ConsumerProcess:
    def __init__(self, broker, group, topic, path, strategy="range"):
        self.path = str(path)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CONSUMER, broker.bootstrap, group, topic, self.path, strategy],
            stderr=subprocess.DEVNULL)

    def records(self):
        """(partition, offset, value) of every record this consumer wrote down."""
        if not os.path.exists(self.path):
            return []
        out = []
        with open(self.path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    out.append((int(parts[0]), int(parts[1]), parts[2]))
        return out

    def events(self):
        p = self.path + ".events"
        if not os.path.exists(p):
            return []
        with open(p) as f:
            return [json.loads(line) for line in f if line.strip()]

    def leave(self, timeout=30):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout)

    def crash(self):
        self.proc.kill()
        self.proc.wait(10)

    def ensure_stopped(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def create_topic(broker, name, partitions):
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in a.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)


def produce(broker, topic, values, chunk=2000, pause=0.0):
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(0, len(values), chunk):
        for v in values[i:i + chunk]:
            while True:
                try:
                    p.produce(topic, key=str(v).encode(), value=str(v).encode())
                    break
                except BufferError:
                    p.poll(0.05)
        p.poll(0)
        if pause:
            time.sleep(pause)  # pacing: the records arrive while the group changes
    assert p.flush(60) == 0


def group_view(broker, group):
    r = requests.get(f"{broker.http_url}/v1/groups/{group}", timeout=10)
    return r.json() if r.status_code == 200 else None


def total_records(consumers):
    return sum(len(c.records()) for c in consumers)


def test_three_consumers_leave_crash_and_restart(tmp_path):
    broker = Sluice(settings={"group.initial.rebalance.delay.ms": "300"}).start()
    consumers = []
    try:
        create_topic(broker, "events", 6)
        consumers = [ConsumerProcess(broker, "g1", "events", tmp_path / f"c{i}.txt")
                     for i in range(3)]
        wait_for(lambda: (group_view(broker, "g1") or {}).get("state") == "Stable" and
                 len(group_view(broker, "g1")["members"]) == 3, 60, "three members, Stable")

        total = 100000
        producer = threading.Thread(target=produce,
                                    args=(broker, "events", list(range(total)), 2500, 0.2))
        producer.start()
        wait_for(lambda: total_records(consumers) >= 25000, 90, "25000 records consumed")
        consumers[0].leave()
        wait_for(lambda: total_records(consumers) >= 55000, 90, "55000 records consumed")
        consumers[1].crash()
        producer.join(120)
        assert not producer.is_alive()

        def all_seen():
            values = set()
            for c in consumers:
                values.update(v for _, _, v in c.records())
            return len(values) == total
        wait_for(all_seen, 120, "every record consumed by someone")
        # The survivor commits what it processed: the lag drops to zero.
        wait_for(lambda: (group_view(broker, "g1") or {}).get("lag") == 0 and
                 len(group_view(broker, "g1")["offsets"]) == 6, 60, "group lag 0")

        records = [r for c in consumers for r in c.records()]
        positions = {(p, o) for p, o, _ in records}
        assert len(positions) == total  # nothing skipped: every offset of every partition
        for p in range(6):
            offs = sorted(o for (q, o) in positions if q == p)
            assert offs == list(range(len(offs))), f"gap in partition {p}"
        duplicates = len(records) - len(positions)
        # Redelivery happens only for what was written down but not committed when a member
        # left, crashed or lost partitions in a rebalance: a few batches, not a replay.
        assert duplicates < 15000, duplicates

        view = group_view(broker, "g1")
        assert view["type"] == "classic" and view["protocol"] == "range"
        assert sum(o["committed_offset"] for o in view["offsets"]) == total
        metrics = requests.get(f"{broker.http_url}/metrics", timeout=10).text
        assert 'sluice_consumer_group_lag{group="g1",topic="events",partition="0"} 0' in metrics

        consumers[2].leave()
        wait_for(lambda: group_view(broker, "g1")["state"] == "Empty", 30, "group Empty")

        broker.restart()
        view = group_view(broker, "g1")
        assert view is not None and sum(o["committed_offset"] for o in view["offsets"]) == total

        # A new member resumes from the committed offsets: it sees only the new records.
        extra = list(range(total, total + 3000))
        produce(broker, "events", extra)
        fresh = ConsumerProcess(broker, "g1", "events", tmp_path / "after.txt")
        consumers.append(fresh)
        wait_for(lambda: len(fresh.records()) >= len(extra), 60, "new records after restart")
        values = [int(v) for _, _, v in fresh.records()]
        assert min(values) == total and set(values) == set(extra)
        fresh.leave()
    finally:
        for c in consumers:
            c.ensure_stopped()
        broker.close()


def test_cooperative_sticky_rebalances_incrementally(broker, tmp_path):
    create_topic(broker, "coop", 6)
    produce(broker, "coop", list(range(6000)))
    a = ConsumerProcess(broker, "coop-g", "coop", tmp_path / "a.txt", "cooperative-sticky")
    b = None
    try:
        wait_for(lambda: len(a.records()) >= 6000, 60, "a consumes everything")
        assert {"assign": [0, 1, 2, 3, 4, 5]} in a.events()
        b = ConsumerProcess(broker, "coop-g", "coop", tmp_path / "b.txt", "cooperative-sticky")

        def b_assigned():
            return [e["assign"] for e in b.events() if e.get("assign")]
        wait_for(b_assigned, 60, "b gets partitions")
        wait_for(lambda: sum(len(x) for x in b_assigned()) == 3, 60, "b owns three partitions")
        # Incremental: a gave up only what b took, and never everything at once.
        revoked = [e["revoke"] for e in a.events() if "revoke" in e]
        assert revoked, a.events()
        assert all(len(r) < 6 for r in revoked), revoked
        assert sorted(sum(revoked, [])) == sorted(sum(b_assigned(), []))
        view = group_view(broker, "coop-g")
        assert view["protocol"] == "cooperative-sticky"
        assert sorted(p for m in view["members"] for a_ in m["assignment"]
                      for p in a_["partitions"]) == [0, 1, 2, 3, 4, 5]

        # New records are split between the two; b leaving hands its partitions back to a.
        produce(broker, "coop", list(range(6000, 9000)))
        wait_for(lambda: len({v for c in (a, b) for _, _, v in c.records()}) == 9000, 60,
                 "all 9000 consumed")
        b.leave()
        wait_for(lambda: sum(len(e["assign"]) for e in a.events() if "assign" in e) == 9, 60,
                 "a takes b's partitions back incrementally")
    finally:
        a.ensure_stopped()
        if b:
            b.ensure_stopped()


def test_two_groups_fan_out_and_reset_to_earliest(broker, tmp_path):
    create_topic(broker, "fan", 3)
    produce(broker, "fan", list(range(3000)))
    ga = ConsumerProcess(broker, "ga", "fan", tmp_path / "ga.txt")
    gb = ConsumerProcess(broker, "gb", "fan", tmp_path / "gb.txt")
    replay = None
    try:
        for c in (ga, gb):
            wait_for(lambda: len({v for _, _, v in c.records()}) == 3000, 60, "a group reads all")
        wait_for(lambda: (group_view(broker, "ga") or {}).get("lag") == 0 and
                 (group_view(broker, "gb") or {}).get("lag") == 0, 30, "both groups committed")
        ga.leave()
        gb.leave()

        # Reset ga to the earliest offsets (what kafka-consumer-groups --reset-offsets does:
        # a commit for the empty group), leaving gb where it is.
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ga"})
        c.commit(offsets=[TopicPartition("fan", p, 0) for p in range(3)], asynchronous=False)
        c.close()
        assert [o["committed_offset"] for o in group_view(broker, "ga")["offsets"]] == [0, 0, 0]
        gb_offsets = group_view(broker, "gb")["offsets"]
        assert all(o["committed_offset"] == o["log_end_offset"] for o in gb_offsets)
        assert sum(o["committed_offset"] for o in gb_offsets) == 3000

        replay = ConsumerProcess(broker, "ga", "fan", tmp_path / "ga2.txt")
        wait_for(lambda: len({v for _, _, v in replay.records()}) == 3000, 60, "ga replays")
        assert len(replay.records()) == 3000
    finally:
        for c in (ga, gb, replay):
            if c:
                c.ensure_stopped()
