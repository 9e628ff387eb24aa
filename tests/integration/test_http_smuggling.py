"""Request smuggling over raw sockets: a request whose body framing two HTTP parsers could read
differently (CL.TE, TE.CL, TE.TE with obfuscated Transfer-Encoding, repeated Content-Length,
obsolete line folding) is answered 400 (501 for a compression coding sluice does not decode)
and the connection closes, on the HTTP front and on the SQS front; the request hidden behind it
never runs (the topic and the queue are read back). Valid spellings of chunked (case, tabs,
spaces) are read as chunked."""
import json
import socket

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import sqs_support
from harness import Sluice, connect

TOPIC = "smuggle"
QUEUE = "smuggle-q"


@pytest.fixture(scope="module")
def broker():
    s = Sluice(sqs=True).start()
    admin = AdminClient({"bootstrap.servers": s.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        f.result(30)
    sqs_support.client(s).create_queue(QueueName=QUEUE)
    yield s
    s.close()


def produce_request(value, extra=b""):
    """A complete REST v2 produce of one JSON record: the request a smuggler hides."""
    body = json.dumps({"records": [{"value": value}]}).encode()
    return (b"POST /topics/" + TOPIC.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/vnd.kafka.json.v2+json\r\n" + extra +
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def chunked(data):
    return b"%x\r\n" % len(data) + data + b"\r\n0\r\n\r\n"


def exchange(port, payload, timeout=10):
    """Sends `payload`, then reads until the server closes (bounded); returns what was read.
    The connection must close: a server that waits for more is a failure."""
    got = b""
    with connect(port) as s:
        s.settimeout(timeout)
        s.sendall(payload)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            raise AssertionError(f"the connection stayed open {timeout}s; read {got[:300]!r}")
        except ConnectionResetError:
            pass
    return got


def assert_refused_and_closed(got, status=b"400"):
    assert got.startswith(b"HTTP/1.1 " + status), got[:300]
    # One answer only: nothing behind the refused request was served.
    assert got.count(b"Server: sluice") == 1, got
    assert b"connection: close" in got.lower(), got[:300]


def smuggled_values(broker):
    """Every record value of the topic, read back with a Kafka consumer."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check",
                  "enable.auto.commit": False})
    try:
        tp = TopicPartition(TOPIC, 0, 0)
        low, high = c.get_watermark_offsets(tp, timeout=10)
        c.assign([tp])
        values = []
        while len(values) < high:
            m = c.poll(10)
            assert m is not None, "timed out reading the topic back"
            if not m.error():
                values.append(m.value().decode())
        return values
    finally:
        c.close()


SMUGGLED = produce_request("smuggled")

# Each case: a request head (without its final CRLF) and what follows it on the wire. Sluice
# today (before the fix) reads several of these as two requests and stores "smuggled".
TE_CASES = {
    # TE.TE: a Transfer-Encoding sluice ignored, so the request had no body.
    "xchunked": b"Transfer-Encoding: xchunked\r\n",
    "identity": b"Transfer-Encoding: identity\r\n",
    "chunked-then-identity": b"Transfer-Encoding: chunked, identity\r\n",
    "identity-field-then-chunked": b"Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n",
    "chunked-field-then-identity": b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
    "chunked-twice": b"Transfer-Encoding: chunked, chunked\r\n",
    "chunked-field-twice": b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
    "empty": b"Transfer-Encoding: \r\n",
    "space-before-colon": b"Transfer-Encoding : chunked\r\n",
    "obs-fold": b"X-Padding: a\r\n Transfer-Encoding: chunked\r\n",
    "bare-lf": b"X-Padding: a\nTransfer-Encoding: chunked\r\n",
}


@pytest.mark.parametrize("case", sorted(TE_CASES))
def test_te_te_obfuscations_are_refused(broker, case):
    head = b"POST /topics/" + TOPIC.encode() + b" HTTP/1.1\r\nHost: x\r\n" + TE_CASES[case]
    # The chunked reading of the body ends at "0"; a parser that ignores the Transfer-Encoding
    # sees no body and runs the produce behind it.
    got = exchange(broker.http_port, head + b"\r\n" + b"0\r\n\r\n" + SMUGGLED)
    assert_refused_and_closed(got)
    assert "smuggled" not in "".join(smuggled_values(broker))


def test_cl_te(broker):
    # A front-end that reads Content-Length sends it all; one that reads chunked stops at "0".
    body = b"0\r\n\r\n" + SMUGGLED
    head = (b"POST /topics/" + TOPIC.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " +
            str(len(body)).encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert_refused_and_closed(exchange(broker.http_port, head + body))
    assert "smuggled" not in "".join(smuggled_values(broker))


@pytest.mark.parametrize("te", [b"chunked", b"xchunked", b"identity"])
def test_te_cl(broker, te):
    # A front-end that reads chunked sends the whole chunk; one that reads Content-Length (4:
    # the chunk-size line) runs the chunk's contents as the next request.
    chunk = b"%x\r\n" % len(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n"
    head = (b"POST /topics/" + TOPIC.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: " + te + b"\r\nContent-Length: 4\r\n\r\n")
    assert_refused_and_closed(exchange(broker.http_port, head + chunk))
    cl_first = (b"POST /topics/" + TOPIC.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: 4\r\nTransfer-Encoding: " + te + b"\r\n\r\n")
    assert_refused_and_closed(exchange(broker.http_port, cl_first + chunk))
    assert "smuggled" not in "".join(smuggled_values(broker))


@pytest.mark.parametrize("lengths", [
    b"Content-Length: 0\r\nContent-Length: 0\r\n",
    b"Content-Length: 0, 0\r\n",
    b"Content-Length: 0\r\nContent-Length: 5\r\n",
    b"Content-Length: +0\r\n",
])
def test_repeated_or_malformed_content_length(broker, lengths):
    head = b"POST /topics/" + TOPIC.encode() + b" HTTP/1.1\r\nHost: x\r\n" + lengths + b"\r\n"
    assert_refused_and_closed(exchange(broker.http_port, head + SMUGGLED))
    assert "smuggled" not in "".join(smuggled_values(broker))


def test_unsupported_coding_before_chunked_is_501(broker):
    head = (b"POST /topics/" + TOPIC.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: gzip, chunked\r\n\r\n")
    assert_refused_and_closed(exchange(broker.http_port, head + b"0\r\n\r\n" + SMUGGLED), b"501")


def test_transfer_encoding_in_http_1_0_is_refused(broker):
    head = (b"POST /topics/" + TOPIC.encode() + b" HTTP/1.0\r\nHost: x\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    got = exchange(broker.http_port, head + b"0\r\n\r\n" + SMUGGLED)
    assert got.startswith(b"HTTP/1.0 400") or got.startswith(b"HTTP/1.1 400"), got[:200]
    assert got.count(b"Server: sluice") == 1, got


@pytest.mark.parametrize("te", [b"chunked", b"Chunked", b"CHUNKED", b" chunked", b"\tchunked",
                                b"chunked ", b"chunked\t"])
def test_valid_spellings_of_chunked_are_read_as_chunked(broker, te):
    """Transfer codings are case-insensitive and a field value may have blanks around it:
    these are chunked bodies, read whole as one request."""
    value = "chunked-" + te.hex()
    body = json.dumps({"records": [{"value": value}]}).encode()
    request = (b"POST /topics/" + TOPIC.encode() + b" HTTP/1.1\r\nHost: x\r\n"
               b"Content-Type: application/vnd.kafka.json.v2+json\r\n"
               b"Connection: close\r\nTransfer-Encoding:" + te + b"\r\n\r\n" + chunked(body))
    got = exchange(broker.http_port, request)
    assert got.startswith(b"HTTP/1.1 200"), got[:300]
    assert got.count(b"Server: sluice") == 1, got
    assert smuggled_values(broker).count(json.dumps(value)) == 1


def sqs_send(value):
    body = (f"Action=SendMessage&QueueUrl=http%3A%2F%2Flocalhost%2F000000000000%2F{QUEUE}"
            f"&MessageBody={value}").encode()
    return (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def queue_bodies(broker):
    c = sqs_support.client(broker)
    url = c.get_queue_url(QueueName=QUEUE)["QueueUrl"]
    out = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    return [m["Body"] for m in out.get("Messages", [])]


@pytest.mark.parametrize("case", ["xchunked", "identity", "chunked-then-identity", "obs-fold"])
def test_sqs_front_refuses_the_same(broker, case):
    smuggled = sqs_send("smuggled-" + case)  # a valid SendMessage on its own (see below)
    head = b"POST / HTTP/1.1\r\nHost: x\r\n" + TE_CASES[case]
    got = exchange(broker.sqs_port, head + b"\r\n" + b"0\r\n\r\n" + smuggled)
    assert_refused_and_closed(got)
    assert b"<Code>InvalidRequest</Code>" in got
    got = exchange(broker.sqs_port, (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                                     b"Transfer-Encoding: " + b"xchunked" + b"\r\n\r\n") +
                   b"%x\r\n" % len(smuggled) + smuggled + b"\r\n0\r\n\r\n")
    assert_refused_and_closed(got)
    assert not any(b.startswith("smuggled") for b in queue_bodies(broker))


def test_sqs_hidden_request_is_valid_on_its_own(broker):
    """The control for the SQS cases: the same SendMessage, sent plainly, is stored."""
    got = exchange(broker.sqs_port, sqs_send("plain").replace(
        b"Host: x\r\n", b"Host: x\r\nConnection: close\r\n"))
    assert got.startswith(b"HTTP/1.1 200"), got[:300]
    assert "plain" in queue_bodies(broker)


def test_hidden_produce_is_valid_on_its_own(broker):
    """The control for the HTTP cases: the same produce, sent plainly, is stored."""
    got = exchange(broker.http_port, produce_request("plain", b"Connection: close\r\n"))
    assert got.startswith(b"HTTP/1.1 200"), got[:300]
    assert json.dumps("plain") in smuggled_values(broker)
