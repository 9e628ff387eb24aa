"""The HTTP listener over real sockets: keep-alive, pipelining, the router's own answers
(404, 405, HEAD), the request limits (413, 431), garbage on the port, shutdown with idle
connections open, and the listener metrics on /metrics."""
import json
import random
import socket
import threading
import time

import pytest

from harness import Sluice, connect

# The body limit is a setting (http.request.max.bytes, default 64 MiB); these tests set 16 MiB.
MAX_BODY = 16 * 1024 * 1024


@pytest.fixture
def limited():
    """A sluice whose HTTP body limit is MAX_BODY."""
    s = Sluice(settings={"http.request.max.bytes": MAX_BODY}).start()
    try:
        yield s
    finally:
        s.close()


def request(method, target, body=b"", headers=()):
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    lines += list(headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Reader:
    """Reads HTTP/1.1 responses, one after the other, from one socket."""

    def __init__(self, sock):
        self.f = sock.makefile("rb")

    def response(self, head=False):
        status_line = self.f.readline()
        if not status_line:
            raise ConnectionError("connection closed before a response")
        version, status, _ = status_line.decode().split(" ", 2)
        headers = {}
        while True:
            line = self.f.readline()
            if line in (b"\r\n", b""):
                break
            name, value = line.decode().split(":", 1)
            headers[name.strip().lower()] = value.strip()
        n = 0 if head else int(headers.get("content-length", "0"))
        body = self.f.read(n)
        assert len(body) == n
        return int(status), headers, body

    def closed(self):
        try:
            return self.f.read(1) == b""
        except (ConnectionError, socket.timeout, OSError):
            return True


def healthz_ok(port):
    with connect(port) as s:
        s.sendall(request("GET", "/healthz"))
        status, _, body = Reader(s).response()
    return status == 200 and json.loads(body) == {"status": "ok"}


def test_keep_alive_serves_several_requests_on_one_connection(broker):
    with connect(broker.http_port) as s:
        r = Reader(s)
        for _ in range(5):
            s.sendall(request("GET", "/healthz"))
            status, headers, body = r.response()
            assert status == 200
            assert headers["content-type"] == "application/json"
            assert headers.get("connection", "keep-alive").lower() != "close"
            assert body == b'{"status":"ok"}'
        s.sendall(request("GET", "/v1/groups"))
        status, _, body = r.response()
        assert status == 200 and json.loads(body) == {"groups": []}


def test_readyz_answers_ready_once_the_listeners_are_open(broker):
    # The harness returns after sluice logged its listening line, i.e. after every listener
    # started: readiness is then 200 (a Kubernetes readiness probe's success).
    with connect(broker.http_port) as s:
        s.sendall(request("GET", "/readyz"))
        status, headers, body = Reader(s).response()
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"status": "ready"}


def test_pipelined_requests_are_answered_in_order(broker):
    with connect(broker.http_port) as s:
        s.sendall(request("GET", "/healthz") + request("GET", "/nope-1") +
                  request("POST", "/healthz", b"x" * 1000) + request("GET", "/metrics") +
                  request("GET", "/nope-2"))
        r = Reader(s)
        answers = [r.response() for _ in range(5)]
    assert [a[0] for a in answers] == [200, 404, 405, 200, 404]
    assert b"/nope-1" in answers[1][2]
    assert b"sluice_http_requests_total" in answers[3][2]
    assert b"/nope-2" in answers[4][2]


def test_unknown_path_is_404_with_json_body(broker):
    with connect(broker.http_port) as s:
        s.sendall(request("GET", "/no/such/route?x=1"))
        status, headers, body = Reader(s).response()
    assert status == 404
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"error_code": 404, "message": "no route for GET /no/such/route"}


def test_other_method_is_405_with_allow_header(broker):
    with connect(broker.http_port) as s:
        r = Reader(s)
        for path in ["/healthz", "/metrics", "/v1/groups", "/v1/groups/g1"]:
            s.sendall(request("DELETE", path))
            status, headers, body = r.response()
            assert status == 405, path
            assert headers["allow"] == "GET, HEAD"
            assert json.loads(body) == {"error_code": 405, "message": "use GET"}


def test_head_answers_the_get_headers_without_a_body(broker):
    with connect(broker.http_port) as s:
        r = Reader(s)
        s.sendall(request("HEAD", "/healthz"))
        status, headers, _ = r.response(head=True)
        assert status == 200
        assert headers["content-length"] == str(len(b'{"status":"ok"}'))
        # No body bytes followed: the next response parses from the first byte.
        s.sendall(request("GET", "/healthz"))
        assert r.response()[2] == b'{"status":"ok"}'


def test_group_views_keep_their_answers(broker):
    with connect(broker.http_port) as s:
        r = Reader(s)
        s.sendall(request("GET", "/v1/groups/"))
        assert r.response()[2] == b'{"groups":[]}'
        s.sendall(request("GET", "/v1/groups/nope"))
        status, _, body = r.response()
        assert status == 404
        assert json.loads(body) == {"error_code": 404, "message": "group nope not found"}
        s.sendall(request("GET", "/v1/groups/a/b"))
        status, _, body = r.response()
        assert status == 404
        assert json.loads(body)["message"] == "no route for GET /v1/groups/a/b"
        s.sendall(request("GET", "/v1/groups/%zz"))
        status, _, body = r.response()
        assert status == 400
        assert json.loads(body)["message"] == "malformed group id in the path"
        s.sendall(request("GET", "/v1/groupsX"))
        assert r.response()[0] == 404


# A route that takes a POST and reads its body (here to refuse it as malformed JSON: 400).
BODY_ROUTE = "/consumers/grp"


def test_body_within_the_limit_is_read_and_the_connection_stays(limited):
    broker = limited
    with connect(broker.http_port) as s:
        r = Reader(s)
        s.sendall(request("POST", BODY_ROUTE, b"y" * (1024 * 1024)))
        assert r.response()[0] == 400
        s.sendall(request("GET", "/healthz"))
        assert r.response()[0] == 200


def test_a_request_refused_on_its_header_is_answered_without_its_body(limited):
    """405 (like 401, 403, 404) is decided on the header: a small body is dropped and the
    connection goes on; a large one is not read and the connection closes."""
    broker = limited
    with connect(broker.http_port) as s:
        r = Reader(s)
        s.sendall(request("POST", "/healthz", b"y" * 1000))
        status, headers, _ = r.response()
        assert status == 405 and headers.get("connection") != "close"
        s.sendall(request("GET", "/healthz"))
        assert r.response()[0] == 200
    with connect(broker.http_port) as s:
        s.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n")
        status, headers, _ = Reader(s).response()  # before any of the body is sent
        assert status == 405 and headers["connection"] == "close"


def test_oversized_declared_body_is_413_and_the_server_still_serves(limited):
    broker = limited
    with connect(broker.http_port) as s:
        s.sendall(request("POST", "/healthz").replace(b"Content-Length: 0",
                                                      b"Content-Length: %d" % (MAX_BODY + 1)))
        r = Reader(s)
        status, headers, body = r.response()
        assert status == 413
        assert headers["connection"].lower() == "close"
        assert json.loads(body)["error_code"] == 413
        assert r.closed()
    assert healthz_ok(broker.http_port)


def test_oversized_body_sent_in_full_is_413(limited):
    broker = limited
    with connect(broker.http_port, timeout=30) as s:
        payload = request("POST", "/healthz", b"z" * (MAX_BODY + 1))
        errors = []

        def send():
            try:
                s.sendall(payload)
            except OSError as e:  # the server may stop draining once it has answered
                errors.append(e)

        sender = threading.Thread(target=send)
        sender.start()
        status, _, _ = Reader(s).response()
        sender.join(30)
        assert status == 413
    assert healthz_ok(broker.http_port)


def test_oversized_chunked_body_is_413(limited):
    broker = limited
    with connect(broker.http_port, timeout=30) as s:
        head = (b"POST " + BODY_ROUTE.encode() +
                b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n" % (MAX_BODY + 1) + b"c" * 1024
        s.sendall(head + chunk)
        assert Reader(s).response()[0] == 413
    assert healthz_ok(broker.http_port)


def test_oversized_header_is_431(broker):
    with connect(broker.http_port) as s:
        s.sendall(request("GET", "/healthz", headers=["X-Big: " + "b" * 20000]))
        status, _, _ = Reader(s).response()
        assert status == 431
    assert healthz_ok(broker.http_port)


def test_expect_100_continue(broker):
    with connect(broker.http_port) as s:
        s.sendall(b"POST " + BODY_ROUTE.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        r = Reader(s)
        assert r.response()[0] == 100
        s.sendall(b"hello")
        assert r.response()[0] == 400
    # Refused on its header: the final answer at once, no 100, and the body is not awaited.
    with connect(broker.http_port) as s:
        s.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        status, headers, _ = Reader(s).response()
        assert status == 405 and headers["connection"] == "close"


def test_garbage_is_answered_400_or_closed_and_the_server_still_serves(broker):
    rng = random.Random(42)
    payloads = [b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(100),  # TLS hello
                b"GARBAGE\r\n\r\n", b"GET /healthz HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                b"\r\n" * 50 + b"\x00\xff"]
    payloads += [rng.randbytes(rng.randint(1, 3000)) for _ in range(30)]
    for p in payloads:
        with connect(broker.http_port) as s:
            s.settimeout(5)
            try:
                s.sendall(p)
                s.shutdown(socket.SHUT_WR)
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except (ConnectionError, socket.timeout, OSError):
                data = b""
            assert data == b"" or data.startswith(b"HTTP/1.1 400 "), data[:80]
    assert healthz_ok(broker.http_port)
    assert broker.alive()


def test_metrics_show_the_listener_families(broker):
    with connect(broker.http_port) as s:
        s.sendall(request("GET", "/metrics"))
        _, _, body = Reader(s).response()
    text = body.decode()
    assert "# TYPE sluice_connection_failures_total counter" in text
    assert 'sluice_connection_failures_total{listener="http"} 0' in text
    assert 'sluice_connection_failures_total{listener="kafka"} 0' in text
    assert 'sluice_connections_accepted_total{listener="http"}' in text
    assert "sluice_kafka_connections_accepted_total" in text


def test_shutdown_does_not_wait_for_idle_keep_alive_connections(broker):
    sockets = []
    for _ in range(3):
        s = connect(broker.http_port)
        s.sendall(request("GET", "/healthz"))
        Reader(s).response()
        sockets.append(s)
    started = time.monotonic()
    assert broker.stop() == 0
    # The grace period is 10 s; idle connections are closed at once.
    assert time.monotonic() - started < 5
    for s in sockets:
        s.settimeout(5)
        assert s.recv(1) == b""
        s.close()
