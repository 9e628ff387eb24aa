"""acks=all durability: every acknowledged record survives SIGKILL of sluice, exactly once."""
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from harness import Sluice, wait_for

TOPIC = "durable"
PARTITIONS = 3


def read_all(bootstrap, timeout=60):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "verifier",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    values = []
    eof = set()
    deadline = time.monotonic() + timeout
    while len(eof) < PARTITIONS and time.monotonic() < deadline:
        msg = c.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == msg.error()._PARTITION_EOF:
                eof.add(msg.partition())
                continue
            raise AssertionError(msg.error())
        values.append(msg.value())
    c.close()
    assert len(eof) == PARTITIONS, "did not reach the end of every partition"
    return values


def test_acknowledged_records_survive_sigkill():
    s = Sluice(settings={"num.partitions": str(PARTITIONS)}).start()
    acked = []
    next_value = 0
    try:
        for round_ in range(3):
            p = Producer({"bootstrap.servers": s.bootstrap, "acks": "all", "linger.ms": 2,
                          "message.send.max.retries": 0, "socket.timeout.ms": 5000,
                          "message.timeout.ms": 10000})
            lock = threading.Lock()

            def on_delivery(err, msg):
                if err is None:
                    with lock:
                        acked.append(msg.value())

            target = len(acked) + 20000
            stop = threading.Event()

            def pump():
                nonlocal next_value
                while not stop.is_set():
                    try:
                        p.produce(TOPIC, value=b"v%09d" % next_value, on_delivery=on_delivery)
                        next_value += 1
                    except BufferError:
                        p.poll(0.05)
                    p.poll(0)

            t = threading.Thread(target=pump)
            t.start()
            try:
                wait_for(lambda: len(acked) >= target, 60, "20000 acknowledged records")
            except TimeoutError:
                stop.set()
                t.join(30)
                raise AssertionError(f"round {round_}: only {len(acked)} of {target} acked; "
                                     f"sluice log:\n{s.log_text()[-3000:]}")
            s.kill()  # SIGKILL while the producer is still sending
            stop.set()
            t.join(30)
            p.flush(15)  # whatever is still queued fails: it was never acknowledged
            s.start()
        values = read_all(s.bootstrap)
    finally:
        s.close()
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    missing = [v for v in acked if v not in counts]
    dupes = [v for v, n in counts.items() if n > 1]
    assert missing == [], f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    assert dupes == [], f"{len(dupes)} records stored twice, e.g. {dupes[:5]}"
    assert len(acked) >= 60000
