"""Request bodies and authentication over raw sockets: with http.authentication on, and on the
SQS front with sqs.authentication=sigv4, a request the header already refuses (no credentials,
wrong ones; for SigV4 no signature, a malformed one, an unknown access key, a date out of range)
is answered before its body is sent, and sluice does not read that body: several connections
announcing 60 MB bodies leave its peak memory where it was. Bodies being read across the HTTP
and SQS listeners share http.request.body.budget.bytes: one that finds no room within
http.request.body.budget.wait.ms is answered 503 with Retry-After, on either listener."""
import base64
import datetime
import json
import os
import socket
import tempfile
import threading

import boto3
import pytest
import requests
from botocore.config import Config

from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, connect, wait_for
from sasl_support import PASSWORDS, set_user, users

HUGE = 60_000_000
# The SQS listener's body limit is 16 MiB: a larger Content-Length is answered 413 at once.
SQS_HUGE = 15_000_000
KEY_ID = "AKIAALICE0000000TEST"
SECRET = "alice/Secret+Access/Key0123456789abcdefgh"


@pytest.fixture(scope="module")
def broker():
    d = tempfile.TemporaryDirectory(prefix="sluice-body-auth-")
    set_user(d.name, "alice", PASSWORDS["alice"])
    r = users("set", "alice", "--data-dir", d.name, "--aws-access-key-id", KEY_ID,
              stdin=SECRET + "\n")
    assert r.returncode == 0, r.stderr
    s = Sluice(data_dir=d.name, sqs=True, settings={"http.authentication": "basic",
                                                     "sqs.authentication": "sigv4"})
    s.start()
    yield s
    s.close()
    d.cleanup()


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def head(method, target, length, fields=()):
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {length}"]
    return ("\r\n".join(lines + list(fields)) + "\r\n\r\n").encode()


def read_response(sock):
    """One response (status, lower-cased headers, body) from `sock`, within its timeout."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a whole response: {data!r}")
        data += chunk
    top, rest = data.split(b"\r\n\r\n", 1)
    lines = top.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, value = line.split(":", 1)
        headers[name.strip().lower()] = value.strip()
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return int(lines[0].split(" ")[1]), headers, rest[:n]


def refused_before_the_body(port, request_head, timeout=10):
    """Sends only a request's header announcing a HUGE body and reads the answer, which must
    come without the body; returns (status, headers, body)."""
    with connect(port, timeout=timeout) as s:
        s.sendall(request_head)
        try:
            status, headers, body = read_response(s)
        except socket.timeout:
            raise AssertionError("no answer before the body was sent: the server waits for it")
        assert headers.get("connection", "").lower() == "close", headers
        return status, headers, body


def bytes_accepted(port, request_head, limit=HUGE, timeout=10):
    """Sends a header and then up to `limit` body bytes as fast as the server takes them;
    returns how many it took before closing (a refused request's body is not read whole)."""
    sent = 0
    block = b"x" * (1 << 20)
    with connect(port, timeout=timeout) as s:
        s.sendall(request_head)
        try:
            while sent < limit:
                sent += s.send(block[:min(len(block), limit - sent)])
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass
    return sent


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


def test_http_401_before_the_body_without_credentials(broker):
    status, headers, body = refused_before_the_body(
        broker.http_port, head("POST", "/topics/t", HUGE,
                               ["Content-Type: application/vnd.kafka.json.v2+json"]))
    assert status == 401
    assert json.loads(body)["error_code"] == 40101
    assert "basic" in headers["www-authenticate"].lower()


def test_http_401_before_the_body_with_a_wrong_password(broker):
    status, _, body = refused_before_the_body(
        broker.http_port, head("POST", "/topics/t", HUGE,
                               ["Authorization: " + basic("alice", "wrong"),
                                "Content-Type: application/vnd.kafka.json.v2+json"]))
    assert status == 401
    assert json.loads(body)["error_code"] == 40101


def test_refused_body_is_not_read(broker):
    """After the refusal the server stops reading: a client pushing the body gets the
    connection closed long before it is through."""
    sent = bytes_accepted(broker.http_port, head("POST", "/topics/t", HUGE))
    assert sent < HUGE // 4, f"the server took {sent} bytes of a refused body"
    sent = bytes_accepted(broker.sqs_port, sigv4_head(None, amz_now()), limit=SQS_HUGE)
    assert sent < SQS_HUGE, f"the server took {sent} bytes of a refused body"


def test_huge_bodies_without_credentials_leave_memory_bounded(broker):
    """Three connections at once, each pushing a 60 MB body without credentials (at main
    before the fix each body was read whole: 21 -> 179 MB)."""
    before = peak_rss_kib(broker.proc.pid)
    sent = []
    targets = [(broker.http_port, head("POST", "/topics/t", HUGE)),
               (broker.http_port, head("PUT", "/v1/queues/q/redrive", HUGE)),
               (broker.sqs_port, head("POST", "/", SQS_HUGE,
                                      ["Content-Type: application/x-www-form-urlencoded"]))]
    threads = [threading.Thread(target=lambda p=p, h=h: sent.append(bytes_accepted(p, h)))
               for p, h in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(sent) == 3
    grown_mib = (peak_rss_kib(broker.proc.pid) - before) / 1024
    assert grown_mib < 30, f"peak RSS grew by {grown_mib:.0f} MiB"
    assert max(sent) < SQS_HUGE, sent
    # The server is well and still answers an authenticated request.
    r = requests.get(broker.http_url + "/topics",
                     headers={"Authorization": basic("alice", PASSWORDS["alice"])}, timeout=30)
    assert r.status_code == 200, r.text


def amz_now(delta=datetime.timedelta()):
    t = datetime.datetime.now(datetime.timezone.utc) + delta
    return t.strftime("%Y%m%dT%H%M%SZ")


def sigv4_head(authorization, amz_date):
    fields = ["Content-Type: application/x-www-form-urlencoded", f"X-Amz-Date: {amz_date}"]
    if authorization is not None:
        fields.append("Authorization: " + authorization)
    return head("POST", "/", SQS_HUGE, fields)


def authorization(key_id, amz_date, signature="0" * 64):
    return (f"AWS4-HMAC-SHA256 Credential={key_id}/{amz_date[:8]}/us-east-1/sqs/aws4_request, "
            f"SignedHeaders=content-type;host;x-amz-date, Signature={signature}")


def query_error(body):
    return body.decode().split("<Code>")[1].split("</Code>")[0]


def test_sqs_no_signature_refused_before_the_body(broker):
    status, _, body = refused_before_the_body(broker.sqs_port, sigv4_head(None, amz_now()))
    assert (status, query_error(body)) == (403, "MissingAuthenticationToken")


def test_sqs_unknown_access_key_refused_before_the_body(broker):
    date = amz_now()
    status, _, body = refused_before_the_body(
        broker.sqs_port, sigv4_head(authorization("AKIANOBODY000000TEST", date), date))
    assert (status, query_error(body)) == (403, "InvalidClientTokenId")


def test_sqs_malformed_signature_refused_before_the_body(broker):
    date = amz_now()
    status, _, body = refused_before_the_body(
        broker.sqs_port, sigv4_head("AWS4-HMAC-SHA256 Credential=" + KEY_ID, date))
    assert (status, query_error(body)) == (400, "IncompleteSignature")


def test_sqs_date_out_of_range_refused_before_the_body(broker):
    date = amz_now(-datetime.timedelta(hours=1))
    status, _, body = refused_before_the_body(broker.sqs_port,
                                              sigv4_head(authorization(KEY_ID, date), date))
    assert (status, query_error(body)) == (400, "RequestExpired")


def test_sqs_signature_itself_is_checked_over_the_body(broker):
    """A known key and a date in range: only the body can tell whether the signature holds,
    so the body is read, then the signature refused."""
    date = amz_now()
    body = b"Action=ListQueues"
    request = head("POST", "/", len(body), ["Content-Type: application/x-www-form-urlencoded",
                                            f"X-Amz-Date: {date}",
                                            "Authorization: " + authorization(KEY_ID, date)])
    with connect(broker.sqs_port) as s:
        s.sendall(request + body)
        status, _, answer = read_response(s)
    assert (status, query_error(answer)) == (403, "SignatureDoesNotMatch")


def test_signed_clients_still_work(broker):
    c = boto3.client("sqs", endpoint_url=broker.sqs_url, region_name="us-east-1",
                     aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                     config=Config(retries={"max_attempts": 1}))
    url = c.create_queue(QueueName="signed-body")["QueueUrl"]
    c.send_message(QueueUrl=url, MessageBody="y" * 200_000)
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]
    assert got[0]["Body"] == "y" * 200_000


BUDGET = 1 << 20


@pytest.fixture
def budgeted():
    s = Sluice(sqs=True, settings={"http.request.body.budget.bytes": BUDGET,
                                   "http.request.body.budget.wait.ms": 300}).start()
    admin = AdminClient({"bootstrap.servers": s.bootstrap})
    for f in admin.create_topics([NewTopic("b", 1, 1), NewTopic("big", 1, 1)]).values():
        f.result(30)
    try:
        yield s
    finally:
        s.close()


def produce_body(length):
    """A REST v2 produce body of exactly `length` bytes."""
    empty = json.dumps({"records": [{"value": ""}]})
    return json.dumps({"records": [{"value": "v" * (length - len(empty))}]}).encode()


def metric(broker, name):
    text = requests.get(broker.http_url + "/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_body_without_room_is_503_on_either_listener(budgeted):
    length = BUDGET - 100_000
    body = produce_body(length)
    fields = ["Content-Type: application/vnd.kafka.json.v2+json"]
    with connect(budgeted.http_port, timeout=30) as holder:
        # Most of the budget, held while its body is half sent.
        holder.sendall(head("POST", "/topics/b", length, fields) + body[:1000])
        wait_for(lambda: metric(budgeted, "sluice_http_request_body_bytes") >= length, 10,
                 "the first body to take its room")
        with connect(budgeted.http_port, timeout=30) as second:
            second.sendall(head("POST", "/topics/b", 200_000, fields))
            status, headers, answer = read_response(second)
            assert status == 503, answer
            assert headers["retry-after"] == "1"
            assert headers["connection"] == "close"
            assert "http.request.body.budget.bytes" in json.loads(answer)["message"]
        with connect(budgeted.sqs_port, timeout=30) as sqs:
            sqs.sendall(head("POST", "/", 200_000,
                             ["Content-Type: application/x-www-form-urlencoded"]))
            status, headers, answer = read_response(sqs)
            assert status == 503
            assert query_error(answer) == "ServiceUnavailable"
        holder.sendall(body[1000:])
        status, _, answer = read_response(holder)
        assert status == 200, answer
    assert metric(budgeted, "sluice_http_body_budget_refused_total") == 2
    # The room is given back once answered: a body as large again is read at once.
    r = requests.post(budgeted.http_url + "/topics/b", data=produce_body(length), timeout=30,
                      headers={"Content-Type": "application/vnd.kafka.json.v2+json"})
    assert r.status_code == 200, r.text
    assert metric(budgeted, "sluice_http_request_body_bytes") == 0


def test_a_body_larger_than_the_budget_is_read_alone(budgeted):
    r = requests.post(budgeted.http_url + "/topics/big", timeout=30,
                      headers={"Content-Type": "application/vnd.kafka.json.v2+json"},
                      data=produce_body(3 * BUDGET))
    assert r.status_code == 200, r.text


def test_budget_settings_are_range_checked(tmp_path):
    for bad in ({"http.request.body.budget.bytes": 10},
                {"http.request.body.budget.wait.ms": -1}):
        s = Sluice(data_dir=str(tmp_path), settings=bad)
        with pytest.raises(RuntimeError, match=list(bad)[0].replace(".", r"\.")):
            s.start()


def test_sqs_foreign_origin_refused_before_the_body(broker):
    """A page on another origin is refused on the header too, before its body is read."""
    status, _, body = refused_before_the_body(
        broker.sqs_port, head("POST", "/", SQS_HUGE,
                              ["Content-Type: application/x-www-form-urlencoded",
                               "Origin: http://elsewhere.example"]))
    assert (status, query_error(body)) == (403, "AccessDenied")
