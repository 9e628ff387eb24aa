"""Consumer groups with kafka-python 2.0.2 (JoinGroup v2, OffsetCommit v2, OffsetFetch v1):
three consumers share a topic while it is produced to, one leaves; every record is consumed
and committed; the admin client lists, describes, reads offsets of and deletes groups."""
import threading

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import GroupIdNotFoundError, NoError, NonEmptyGroupError

from harness import Sluice, wait_for


class Member(threading.Thread):
    def __init__(self, bootstrap, group, topic):
        super().__init__(daemon=True)
        self.consumer = KafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
            max_poll_interval_ms=30000, consumer_timeout_ms=200)
        self.values = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        while not self.stop.is_set():
            batch = self.consumer.poll(timeout_ms=200, max_records=500)
            got = [r.value.decode() for records in batch.values() for r in records]
            if got:
                with self.lock:
                    self.values.extend(got)
                try:
                    self.consumer.commit()
                except Exception:  # refused around a rebalance: the records come again
                    pass
        self.consumer.close()  # LeaveGroup

    def seen(self):
        with self.lock:
            return list(self.values)


@pytest.fixture
def fast_broker():
    s = Sluice(settings={"group.initial.rebalance.delay.ms": "300"}).start()
    try:
        yield s
    finally:
        s.close()


def test_kafka_python_group_and_admin(fast_broker):
    bootstrap = fast_broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("kp", 6, 1)])
    members = [Member(bootstrap, "kp-g", "kp") for _ in range(3)]
    for m in members:
        m.start()
    try:
        total = 20000
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        for i in range(total):
            producer.send("kp", value=str(i).encode())
            if i == 8000:
                members[0].stop.set()  # one member leaves while records keep coming
        producer.flush(60)

        def everything():
            return len({v for m in members for v in m.seen()}) == total
        wait_for(everything, 120, "every record consumed")

        def committed():
            offsets = admin.list_consumer_group_offsets("kp-g")
            return sum(o.offset for o in offsets.values()) == total
        wait_for(committed, 60, "offsets committed to the end")
        dups = sum(len(m.seen()) for m in members) - total
        assert dups < 6000, dups

        listed = dict(admin.list_consumer_groups())
        assert listed.get("kp-g") == "consumer"
        desc = admin.describe_consumer_groups(["kp-g"])[0]
        assert desc.state == "Stable" and len(desc.members) == 2
        owned = sorted(p for m in desc.members for _, parts in
                       m.member_assignment.assignment for p in parts)
        assert owned == [0, 1, 2, 3, 4, 5]

        res = admin.delete_consumer_groups(["kp-g", "nope"])
        errors = dict(res)
        assert errors["kp-g"] is NonEmptyGroupError
        assert errors["nope"] is GroupIdNotFoundError
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.join(30)
    assert dict(admin.delete_consumer_groups(["kp-g"]))["kp-g"] is NoError
    assert "kp-g" not in dict(admin.list_consumer_groups())
    admin.close()
