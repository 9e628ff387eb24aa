"""Kafka front behaviours: long-poll fetch wake-up, idle reaping, graceful shutdown, metrics."""
import os
import select
import struct
import subprocess
import threading
import time
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition

from harness import Sluice, connect, kafka_request, read_frame, wait_for


def kcat_produce(broker, topic, lines, partition=0):
    subprocess.run(["kcat", "-b", broker.bootstrap, "-t", topic, "-P", "-p", str(partition)],
                   input="".join(l + "\n" for l in lines), text=True, check=True, timeout=60,
                   capture_output=True)


def fetch_v4_request(topic, partition, fetch_offset, max_wait_ms, correlation_id=1):
    t = topic.encode()
    body = struct.pack(">iiiib", -1, max_wait_ms, 1, 1 << 20, 0)  # replica, wait, min, max, iso
    body += struct.pack(">i", 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, fetch_offset, 1 << 20)
    return kafka_request(1, 4, correlation_id, body)


def fetch_parked(broker):
    """The sluice_fetch_parked gauge from /metrics; None before any fetch has parked."""
    with urllib.request.urlopen(broker.http_url + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("sluice_fetch_parked "):
                return int(line.split()[1])
    return None


def test_parked_fetch_is_answered_when_data_arrives(broker):
    kcat_produce(broker, "longpoll", ["first"])
    with connect(broker.kafka_port, timeout=30) as s:
        # Ask for offset 1 (nothing there yet) and allow the broker to wait 120 s.
        s.sendall(fetch_v4_request("longpoll", 0, 1, 120000))
        wait_for(lambda: fetch_parked(broker) == 1, 30, "the fetch to park")
        kcat_produce(broker, "longpoll", ["second"])
        frame = read_frame(s, timeout=30)  # a fetch left parked would time out here
    assert b"second" in frame
    assert b"first" not in frame
    assert fetch_parked(broker) == 0  # uncounted before its response was sent


def test_idle_connections_are_closed():
    s = Sluice(settings={"connections.max.idle.ms": "300"}).start()
    try:
        with connect(s.kafka_port) as c:
            c.sendall(kafka_request(18, 0, 1))
            read_frame(c)
            c.settimeout(30)
            assert c.recv(1) == b""  # the broker closed the idle connection
        s.wait_log("idle for")
    finally:
        s.close()


def test_sigterm_finishes_in_flight_acks_all_produces():
    s = Sluice().start()
    try:
        p = Producer({"bootstrap.servers": s.bootstrap, "acks": "all", "linger.ms": 1})
        acked = []
        p.produce("graceful", value=b"warm-up", on_delivery=lambda e, m: None)
        p.flush(30)
        for i in range(20000):
            p.produce("graceful", value=b"%d" % i,
                      on_delivery=lambda e, m: acked.append(m.value()) if e is None else None)
            if i % 1000 == 0:
                p.poll(0)
        p.poll(0.05)
        assert s.stop() == 0
        p.flush(10)
        s.start()
        c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "g",
                      "enable.partition.eof": True})
        c.assign([TopicPartition("graceful", 0, 0)])
        got = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                break  # end of partition
            got.add(m.value())
        c.close()
        assert set(acked) <= got
        assert len(acked) > 0
    finally:
        s.close()


def test_metrics_show_partition_offsets_and_traffic(broker):
    kcat_produce(broker, "metered", [f"m{i}" for i in range(25)])
    subprocess.run(["kcat", "-b", broker.bootstrap, "-t", "metered", "-C", "-e"], check=True,
                   timeout=60, capture_output=True)
    with urllib.request.urlopen(broker.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    assert 'sluice_partition_log_end_offset{topic="metered",partition="0"} 25' in text
    assert 'sluice_partition_records_in_total{topic="metered",partition="0"} 25' in text
    line = [l for l in text.splitlines()
            if l.startswith('sluice_partition_bytes_out_total{topic="metered",partition="0"}')]
    assert line and int(line[0].split()[-1]) > 0
    assert 'sluice_kafka_requests_total{api="Produce"}' in text


def test_offsets_for_times_finds_the_exact_record(broker):
    base = 1_700_000_000_000
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    for i in range(100):
        p.produce("timed", value=b"%d" % i, partition=0, timestamp=base + i * 10)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "times"})
    try:
        for target, expected in [(base, 0), (base + 1, 1), (base + 555, 56), (base + 990, 99)]:
            res = c.offsets_for_times([TopicPartition("timed", 0, target)], timeout=10)
            assert res[0].offset == expected, (target, res[0].offset)
        res = c.offsets_for_times([TopicPartition("timed", 0, base + 10_000)], timeout=10)
        assert res[0].offset == -1  # later than every record: the end (-1 in librdkafka)
        low, high = c.get_watermark_offsets(TopicPartition("timed", 0), timeout=10)
        assert (low, high) == (0, 100)
    finally:
        c.close()


def fetch_v4_partitions(topic, offsets, max_bytes, partition_max_bytes, correlation_id,
                        max_wait_ms=0, min_bytes=1):
    """Fetch v4 of several partitions of one topic: offsets is {partition: fetch offset}."""
    t = topic.encode()
    body = struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, 0)  # replica .. isolation
    body += struct.pack(">i", 1) + struct.pack(">h", len(t)) + t
    body += struct.pack(">i", len(offsets))
    for p, off in offsets.items():
        body += struct.pack(">iqi", p, off, partition_max_bytes)
    return kafka_request(1, 4, correlation_id, body)


def parse_fetch_v4(frame):
    """{partition: (error_code, high_watermark, records bytes)} from a Fetch v4 response frame."""
    pos = 4 + 4  # correlation id, throttle time
    out = {}
    (n_topics,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    for _ in range(n_topics):
        (ln,) = struct.unpack_from(">h", frame, pos)
        pos += 2 + ln
        (n_parts,) = struct.unpack_from(">i", frame, pos)
        pos += 4
        for _ in range(n_parts):
            p, err, hw, _lso = struct.unpack_from(">ihqq", frame, pos)
            pos += 22
            (n_aborted,) = struct.unpack_from(">i", frame, pos)
            pos += 4 + max(n_aborted, 0) * 16
            (size,) = struct.unpack_from(">i", frame, pos)
            pos += 4
            out[p] = (err, hw, frame[pos:pos + max(size, 0)])
            pos += max(size, 0)
    return out


def fill_partitions(broker, topic, partitions, megabytes):
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    value = b"v" * 1000
    for part in range(partitions):
        for _ in range(megabytes * 1000):
            while True:
                try:
                    p.produce(topic, value, partition=part)
                    break
                except BufferError:
                    p.poll(0.1)
    assert p.flush(60) == 0


def test_fetch_responses_are_capped_and_rotate_over_partitions():
    # A client asking for 50 MB gets at most fetch.response.max.bytes (here 1 MiB) per
    # response, and successive requests start at different partitions, so none is starved.
    with Sluice(settings={"fetch.response.max.bytes": 1 << 20,
                          "num.partitions": 3}) as broker:
        fill_partitions(broker, "capped", 3, 3)  # 3 MB in each of 3 partitions
        with connect(broker.kafka_port, timeout=30) as s:
            served = set()
            for cid in range(1, 4):
                s.sendall(fetch_v4_partitions("capped", {0: 0, 1: 0, 2: 0}, 50 << 20, 10 << 20, cid))
                parts = parse_fetch_v4(read_frame(s, timeout=30))
                sizes = {p: len(v[2]) for p, v in parts.items()}
                assert all(v[0] == 0 for v in parts.values()), parts
                # The cap, plus at most one batch that straddles it (a batch here is < 1 MB).
                assert 0 < sum(sizes.values()) <= 2 << 20, sizes
                served |= {p for p, n in sizes.items() if n > 0}
            assert served == {0, 1, 2}


def test_fetch_response_cap_off_leaves_the_client_limits():
    with Sluice(settings={"fetch.response.max.bytes": 0, "num.partitions": 3}) as broker:
        fill_partitions(broker, "uncapped", 3, 3)
        with connect(broker.kafka_port, timeout=30) as s:
            s.sendall(fetch_v4_partitions("uncapped", {0: 0, 1: 0, 2: 0}, 50 << 20, 10 << 20, 1))
            parts = parse_fetch_v4(read_frame(s, timeout=30))
        assert sum(len(v[2]) for v in parts.values()) > 8_000_000


def test_min_bytes_above_the_cap_does_not_wait_out_max_wait():
    # fetch.min.bytes of 10 MB with 3 MB stored and a 1 MiB cap: the response is as full as it
    # can get, so it comes at once rather than after the 120 s max_wait.
    with Sluice(settings={"fetch.response.max.bytes": 1 << 20}) as broker:
        fill_partitions(broker, "eager", 1, 3)
        with connect(broker.kafka_port, timeout=60) as s:
            s.sendall(fetch_v4_partitions("eager", {0: 0}, 50 << 20, 10 << 20, 1,
                                          max_wait_ms=120000, min_bytes=10 << 20))
            parts = parse_fetch_v4(read_frame(s, timeout=30))
        assert parts[0][0] == 0
        # Whole batches up to the cap: how many depends on how the producer batched.
        assert 0 < len(parts[0][2]) <= 2 << 20


def test_min_bytes_above_the_cap_with_a_next_batch_that_does_not_fit():
    # A 300 kB batch, then an 800 kB one, and a 1 MiB cap: the response holds the first only
    # (the second would pass the cap) and is as full as it can get, so it must not wait for
    # fetch.min.bytes (10 MB) until max_wait (120 s) ends.
    with Sluice(settings={"fetch.response.max.bytes": 1 << 20}) as broker:
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for size in (300_000, 800_000):
            p.produce("uneven", b"v" * size, partition=0)
            assert p.flush(30) == 0
        with connect(broker.kafka_port, timeout=60) as s:
            s.sendall(fetch_v4_partitions("uneven", {0: 0}, 50 << 20, 10 << 20, 1,
                                          max_wait_ms=120000, min_bytes=10 << 20))
            parts = parse_fetch_v4(read_frame(s, timeout=30))
        assert parts[0][0] == 0
        assert 300_000 <= len(parts[0][2]) < 800_000


def create_topics_v0(name, partitions, correlation_id):
    n = name.encode()
    body = struct.pack(">i", 1) + struct.pack(">h", len(n)) + n
    body += struct.pack(">ihii", partitions, 1, 0, 0)  # partitions, replication, no assignments, no configs
    body += struct.pack(">i", 60000)
    return kafka_request(19, 0, correlation_id, body)


def has_data(sock):
    """Whether bytes (or the peer's close) are waiting on sock; never blocks."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def round_trips_while_pending(pending, other, wanted):
    """ApiVersions and Metadata round trips on `other`, in turn, until `wanted` of them were
    answered while `pending` still had nothing to read; returns how many were (fewer when an
    answer arrived on `pending` first)."""
    done = 0
    while done < wanted:
        if done % 2 == 0:
            other.sendall(kafka_request(18, 0, 100 + done))
        else:
            other.sendall(kafka_request(3, 0, 100 + done, struct.pack(">i", 0)))  # all topics
        read_frame(other, timeout=300)
        if has_data(pending):
            break
        done += 1
    return done


def test_topic_creation_does_not_stall_other_connections():
    # One io thread serves every connection. While a CreateTopics of thousands of partitions is
    # in flight (its first partition exists on disk, its answer has not arrived), round trips on
    # another connection are answered: the creation runs elsewhere. Run on the io thread, it
    # would hold every round trip until after its own answer. Nothing here depends on how fast
    # the machine is: one that finishes the creation too soon gets a bigger one.
    wanted = 4
    with Sluice(args=["--io-threads", "1"]) as broker:
        with connect(broker.kafka_port, timeout=300) as other:
            for attempt, partitions in enumerate([8000, 40000]):
                topic = f"wide{attempt}"
                with connect(broker.kafka_port, timeout=300) as a:
                    a.sendall(create_topics_v0(topic, partitions, 1))
                    first = os.path.join(broker.data_dir, f"{topic}-0")
                    wait_for(lambda: os.path.exists(first), 60, "the creation to start")
                    answered = round_trips_while_pending(a, other, wanted)
                    frame = read_frame(a, timeout=300)
                (n_topics,) = struct.unpack_from(">i", frame, 4)
                assert n_topics == 1
                (ln,) = struct.unpack_from(">h", frame, 8)
                (err,) = struct.unpack_from(">h", frame, 10 + ln)
                assert err == 0
                if answered == wanted:
                    break
            assert answered == wanted, \
                f"only {answered} of {wanted} round trips were answered during the creation"
