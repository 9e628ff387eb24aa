"""queued.max.request.bytes / queued.max.requests: many connections sending large Produce
requests at once. With the bound set, sluice's peak resident set stays within its baseline plus
the bound plus a small slack, and every request is still answered, in order and without error;
with the bound lifted, the same load goes well past that line (so this test notices when the
bound stops working).

Requests are hand-built Produce v3 frames (kafka_wire.py) sent over raw sockets: one 4 MiB
batch per request, the same bytes object for every request, so the client side costs one CRC
and no copies.

The allocator: sluice runs here with its allocator told to give freed memory back at once, so
that every frame is resident from its allocation to its release and no longer, and the resident
set measures the bytes held rather than what the allocator keeps for reuse. The executable
allocates through mimalloc (MIMALLOC_DECOMMIT_DELAY=0; by default it keeps freed pages 25 ms,
and a peak then counts frames already released: 52 to 56 MiB over the baseline at a 32 MiB
bound, against 30 to 32 MiB at once). A build with -DSLUICE_MIMALLOC=OFF uses glibc's malloc
(MALLOC_MMAP_THRESHOLD_ fixed at 1 MiB makes every frame its own mapping; with glibc's default
the threshold rises to 4 MiB after the first frame is freed and the io threads' arenas keep
freed frames: 64 to 76 MiB over the baseline, against 29 to 31 MiB with the fixed threshold)."""
import re
import struct
import threading
import urllib.request

import pytest

import kafka_wire
from harness import Sluice, connect, kafka_request, read_frame, wait_for

MIB = 1024 * 1024
CONNECTIONS = 64
REQUESTS_PER_CONNECTION = 2
REQUEST_BYTES = 4 * MIB          # each Produce frame, about
BOUND = 32 * MIB                 # queued.max.request.bytes in the bounded run
# 512 MiB sent per run. What sluice may hold at its peak beyond its baseline and the request
# bytes queued (at most BOUND here: every request is smaller than the bound, so none is let
# through alone above it):
# - per request in flight: its response, the decoded request, the handler's coroutine frame:
#   a few KiB each, and at most 8 fit in the bound;
# - per connection: socket, slots, three coroutine frames: about 10 KiB each, under 1 MiB for
#   all 64;
# - the allocator's pages for those small allocations in the io threads: a few MiB at most.
# 8 MiB covers that about twice over. Without the bound, each connection allocates its next
# 4 MiB frame as soon as its size prefix arrives, so 64 connections sending at once hold about
# 64 x 4 MiB (figures in the commit message).
SLACK = 8 * MIB
IO_THREADS = 2
TOPIC = "bulk"
TIMEOUT = 120  # seconds for any one socket operation or thread


@pytest.fixture(autouse=True)
def allocator_gives_freed_memory_back_at_once(monkeypatch):
    """Inherited by the sluice started in each test (see the module docstring)."""
    monkeypatch.setenv("MIMALLOC_DECOMMIT_DELAY", "0")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", str(1 * MIB))


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        m = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
    return int(m.group(1)) * 1024


def reset_peak(pid):
    """Resets VmHWM to the current VmRSS (Linux >= 4.0; we own the process)."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def metric(broker, name):
    with urllib.request.urlopen(broker.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"{name} missing from /metrics"
    return float(m.group(1))


_BATCH = None


def big_batch():
    """One v2 batch of one record, sized so that the Produce frame is about REQUEST_BYTES."""
    global _BATCH
    if _BATCH is None:
        _BATCH = kafka_wire.batch([b"m" * (REQUEST_BYTES - 200)])
    return _BATCH


def produce_head(correlation_id, records, acks=1):
    """A Produce v3 frame up to (not including) its records, whose bytes follow: the large
    records object is sent as it is, never copied into one frame per request."""
    body = kafka_wire.produce_v3(TOPIC, 0, b"", acks=acks)[:-4] + struct.pack(">i", len(records))
    head = kafka_request(0, 3, correlation_id, body)
    (size,) = struct.unpack_from(">i", head)
    return struct.pack(">i", size + len(records)) + head[4:]


def send_produce(sock, correlation_id, records, acks=1):
    sock.sendall(produce_head(correlation_id, records, acks))
    sock.sendall(records)


def read_produce_answer(sock, correlation_id):
    frame = read_frame(sock, timeout=TIMEOUT)
    (cid,) = struct.unpack_from(">i", frame)
    assert cid == correlation_id, f"answers out of order: {cid} where {correlation_id} was due"
    [(topic, partition, error, base)] = kafka_wire.parse_produce_v3_response(frame[4:])
    assert (topic, partition, error) == (TOPIC, 0, 0)
    return base


def start_broker(bound, extra=None):
    settings = {"queued.max.request.bytes": bound, "message.max.bytes": 16 * MIB}
    settings.update(extra or {})
    broker = Sluice(args=["--io-threads", str(IO_THREADS)], settings=settings).start()
    # The topic exists (auto-created by Metadata, as a client's first request does) and every
    # path has run once before the baseline is taken.
    try:
        with connect(broker.kafka_port, timeout=TIMEOUT) as s:
            name = TOPIC.encode()
            s.sendall(kafka_request(3, 1, 0, struct.pack(">ih", 1, len(name)) + name))
            read_frame(s, timeout=TIMEOUT)
            send_produce(s, 1, kafka_wire.batch([b"warm-up"]))
            read_produce_answer(s, 1)
            send_produce(s, 2, big_batch())
            read_produce_answer(s, 2)
    except BaseException:
        broker.close()  # a failed start leaves no process behind
        raise
    return broker


def blast(broker, connections=CONNECTIONS, requests=REQUESTS_PER_CONNECTION, frame=None):
    """Every connection sends all its requests at once (pipelined), then reads the answers.
    Returns the base offsets answered and the errors seen by any connection."""
    payload = frame or big_batch()
    socks = [connect(broker.kafka_port, timeout=TIMEOUT) for _ in range(connections)]
    start = threading.Barrier(connections)
    offsets, errors = [], []
    lock = threading.Lock()

    def one(i, sock):
        try:
            first = 1000 * (i + 1)
            start.wait(TIMEOUT)
            for k in range(requests):
                send_produce(sock, first + k, payload)
            got = [read_produce_answer(sock, first + k) for k in range(requests)]
            with lock:
                offsets.extend(got)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            with lock:
                errors.append(f"connection {i}: {e!r}")
        finally:
            sock.close()

    threads = [threading.Thread(target=one, args=(i, s), daemon=True) for i, s in enumerate(socks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a connection got no answer in time"
    return offsets, errors


def peak_over_baseline(bound):
    """Starts sluice with queued.max.request.bytes=bound, runs the load, and returns
    (peak RSS - baseline RSS, broker) with every request checked answered."""
    broker = start_broker(bound)
    try:
        pid = broker.proc.pid
        baseline = status_kib(pid, "VmRSS")
        reset_peak(pid)
        offsets, errors = blast(broker)
        peak = status_kib(pid, "VmHWM")
        assert errors == []
        # Every request appended exactly once, after the two warm-up batches (offsets 0, 1).
        n = CONNECTIONS * REQUESTS_PER_CONNECTION
        assert sorted(offsets) == list(range(2, 2 + n))
        print(f"bound={bound}: baseline {baseline / MIB:.1f} MiB, peak {peak / MIB:.1f} MiB, "
              f"over baseline {(peak - baseline) / MIB:.1f} MiB")
        return peak - baseline, broker
    except BaseException:
        broker.close()
        raise


def given_back(broker, name):
    """Whether the gauge `name` returns to 0. A request's reservation is released once its
    answer has been written, which the client can read a moment before: wait (bounded)."""
    wait_for(lambda: metric(broker, name) == 0, 10, f"{name} to return to 0")
    return True


def test_the_bound_holds_the_peak_and_every_request_is_answered():
    grown, broker = peak_over_baseline(BOUND)
    try:
        assert grown <= BOUND + SLACK, (
            f"sluice grew {grown / MIB:.1f} MiB with queued.max.request.bytes={BOUND // MIB} MiB")
        # The bound was actually reached (connections waited), and everything was given back.
        assert metric(broker, "sluice_kafka_queue_waits_total") > 0
        assert given_back(broker, "sluice_kafka_queued_request_bytes")
        assert given_back(broker, "sluice_kafka_queued_requests")
        assert given_back(broker, "sluice_kafka_connections_waiting_for_queue")
    finally:
        broker.close()


def test_without_the_bound_the_same_load_exceeds_that_line():
    grown, broker = peak_over_baseline(-1)
    try:
        assert grown > BOUND + SLACK, (
            f"sluice grew only {grown / MIB:.1f} MiB without a bound: the load is too light to "
            f"show the bounded test's limit means anything")
        assert metric(broker, "sluice_kafka_queue_waits_total") == 0
    finally:
        broker.close()


def test_a_request_larger_than_the_whole_budget_is_served():
    broker = start_broker(1 * MIB)
    try:
        offsets, errors = blast(broker, connections=4, requests=2)
        assert errors == []
        assert sorted(offsets) == list(range(2, 10))
    finally:
        broker.close()


def test_one_queued_request_at_a_time_keeps_every_connection_in_order():
    broker = start_broker(BOUND, {"queued.max.requests": 1})
    try:
        small = kafka_wire.batch([b"x" * 100])
        offsets, errors = blast(broker, connections=16, requests=20, frame=small)
        assert errors == []
        assert sorted(offsets) == list(range(2, 2 + 16 * 20))
        assert given_back(broker, "sluice_kafka_queued_requests")
    finally:
        broker.close()


def test_acks_zero_requests_give_their_bytes_back():
    # No answer is written for acks=0: the bytes count until the request is dropped.
    broker = start_broker(BOUND)
    try:
        with connect(broker.kafka_port, timeout=TIMEOUT) as s:
            for k in range(20):  # 80 MiB through a 32 MiB budget
                send_produce(s, 10 + k, big_batch(), acks=0)
            send_produce(s, 99, kafka_wire.batch([b"last"]))
            assert read_produce_answer(s, 99) == 22
        assert given_back(broker, "sluice_kafka_queued_request_bytes")
        assert given_back(broker, "sluice_kafka_queued_requests")
    finally:
        broker.close()


@pytest.mark.parametrize("key,value,needle", [
    ("queued.max.request.bytes", "0", "queued.max.request.bytes: must be -1"),
    ("queued.max.request.bytes", "-2", "queued.max.request.bytes: must be -1"),
    ("queued.max.requests", "0", "queued.max.requests: must be between 1"),
])
def test_bad_values_stop_the_start_with_the_setting_named(key, value, needle):
    broker = Sluice(settings={key: value})
    try:
        with pytest.raises(RuntimeError) as e:
            broker.start()
        assert needle in str(e.value)
        assert broker.proc.wait(10) != 0
    finally:
        broker.close()
