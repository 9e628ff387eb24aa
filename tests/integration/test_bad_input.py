"""Malformed input over raw TCP: the gateway answers or closes that connection, keeps serving
everyone else, and stored data stays intact."""
import glob
import os
import random
import socket
import struct
import subprocess

from harness import ROOT, connect, kafka_request, read_frame

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "kafka")


def produce_and_count(broker, topic, n):
    data = "".join(f"r{i}\n" for i in range(n))
    subprocess.run(["kcat", "-b", broker.bootstrap, "-t", topic, "-P", "-p", "0"], input=data,
                   text=True, check=True, timeout=60, capture_output=True)


def consume_values(broker, topic):
    r = subprocess.run(["kcat", "-b", broker.bootstrap, "-t", topic, "-C", "-e", "-o",
                        "beginning", "-f", "%s\n"], capture_output=True, text=True, check=True,
                       timeout=60)
    return r.stdout.splitlines()


def send_and_drain(port, payload, timeout=2.0, expect_close=False):
    """Sends bytes and half-closes, then reads until the server closes; returns the bytes read.
    With expect_close the close must come within `timeout` seconds, or the test fails; without,
    reading stops after `timeout` seconds of silence (fuzz cases, whose answers are not checked:
    a mutated request may legitimately keep its connection open, e.g. a parked fetch)."""
    got = b""
    try:
        with connect(port) as s:
            s.settimeout(timeout)
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
    except socket.timeout:
        if expect_close:
            raise AssertionError(f"the server kept the connection open {timeout}s after "
                                 f"{payload[:16]!r}... (read {got!r})")
    except (ConnectionError, OSError):
        pass  # a reset is a close too
    return got


def api_versions_ok(port):
    with connect(port) as s:
        s.sendall(kafka_request(18, 0, 1))
        frame = read_frame(s)
    return struct.unpack(">ih", frame[:6]) == (1, 0)


def test_garbage_huge_lengths_and_unknown_apis(broker):
    produce_and_count(broker, "precious", 500)
    rng = random.Random(1234)
    # Random bytes.
    for _ in range(300):
        send_and_drain(broker.kafka_port, rng.randbytes(rng.randint(1, 2000)), timeout=0.5)
    # Length prefixes that lie: huge, negative, tiny.
    for size in [0x7fffffff, 200 * 1024 * 1024, -1, -100, 0, 3, 7]:
        assert send_and_drain(broker.kafka_port, struct.pack(">i", size) + b"\x00" * 16,
                              timeout=30, expect_close=True) == b""
    # Unknown API key and an unsupported version of a known one: closed without an answer.
    assert send_and_drain(broker.kafka_port, kafka_request(999, 0, 5), timeout=30,
                          expect_close=True) == b""
    assert send_and_drain(broker.kafka_port, kafka_request(3, 99, 5), timeout=30,
                          expect_close=True) == b""
    assert broker.alive()
    assert api_versions_ok(broker.kafka_port)
    assert consume_values(broker, "precious") == [f"r{i}" for i in range(500)]


def test_truncated_and_mutated_real_requests(broker):
    produce_and_count(broker, "precious", 300)
    fixtures = [open(f, "rb").read() for f in sorted(glob.glob(os.path.join(FIXTURES, "*.bin")))]
    assert len(fixtures) >= 20, "golden fixtures missing"
    rng = random.Random(99)
    cases = 0
    for body in fixtures:
        # Truncations: the length prefix matches the cut body, so the frame parses as a frame.
        for _ in range(4):
            cut = body[:rng.randint(0, len(body) - 1)]
            send_and_drain(broker.kafka_port, struct.pack(">i", len(cut)) + cut, timeout=0.3)
            cases += 1
        # Mutations: flip a few random bytes (keep the API key so the decoder is exercised).
        for _ in range(8):
            m = bytearray(body)
            for _ in range(rng.randint(1, 4)):
                i = rng.randint(2, len(m) - 1)
                m[i] = rng.randint(0, 255)
            send_and_drain(broker.kafka_port, struct.pack(">i", len(m)) + bytes(m), timeout=0.3)
            cases += 1
    assert cases >= 1000
    assert broker.alive()
    assert api_versions_ok(broker.kafka_port)
    values = consume_values(broker, "precious")
    assert values[:300] == [f"r{i}" for i in range(300)]
