"""Browser origins over raw HTTP (issue 24, item 4): what each front answers to a request that
carries a browser's Origin header, and the JSON content type the state-changing /v1 routes
need. Chromium's side of the same rules is test_origins_browser.py.

- /ws and the SSE routes: another origin gets 403 before the upgrade or the stream; the
  request's own origin, a listed one, or none at all (curl, SDKs) is served.
- POST /v1/queues/{q}/redrive and /v1/console/session: text/plain, forms or no Content-Type
  are 415 (with or without an Origin), and nothing is redriven.
- The REST Proxy: another origin gets 403 {"error_code":40301}, and nothing is produced.
- The SQS front: another origin gets 403 AccessDenied in the request's protocol (Query XML,
  JSON 1.0), and nothing is sent; the console's origin and a listed one are served.
- http.allowed.origins from a --set or SLUICE_HTTP_ALLOWED_ORIGINS, a bad entry refused at
  start, and one list for CORS: access.control.allow.origin's origins are allowed too.
- `make run` listens on 127.0.0.1 unless BIND says otherwise.
"""
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading

import pytest
import requests

from harness import ROOT, Sluice, connect, sluice_binary, wait_for
from rest_support import V2_BINARY, create_topic, read_partition
from sqs_support import arn, client

EVIL = "http://evil.example"
FRIEND = "https://app.example.com"


@pytest.fixture(scope="module")
def server():
    s = Sluice(sqs=True, settings={"http.allowed.origins": FRIEND}).start()
    try:
        yield s
    finally:
        s.close()


def own(server):
    return f"http://127.0.0.1:{server.http_port}"


def head_of(sock):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def ws_upgrade(server, origin=None, path="/ws"):
    """The status line sluice answers to a WebSocket upgrade (and the body of a refusal)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{server.http_port}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    if origin:
        lines.append(f"Origin: {origin}")
    with connect(server.http_port) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head, rest = head_of(s)
        return head.splitlines()[0], rest


def sse_head(server, topic, origin=None, query="from=earliest"):
    lines = [f"GET /topics/{topic}/events?{query} HTTP/1.1", f"Host: 127.0.0.1:{server.http_port}",
             "Accept: text/event-stream"]
    if origin:
        lines.append(f"Origin: {origin}")
    with connect(server.http_port) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head, _ = head_of(s)
        return head


def dead_letter(server, name):
    """A dead-letter queue `name` holding one message, moved there from `name`-src by boto3."""
    c = client(server)
    c.create_queue(QueueName=name)
    src = c.create_queue(QueueName=name + "-src", Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn(name), "maxReceiveCount": 1})})
    c.send_message(QueueUrl=src["QueueUrl"], MessageBody="poison")
    assert c.receive_message(QueueUrl=src["QueueUrl"], VisibilityTimeout=0,
                             WaitTimeSeconds=5)["Messages"]
    assert c.receive_message(QueueUrl=src["QueueUrl"], VisibilityTimeout=0,
                             WaitTimeSeconds=1).get("Messages", []) == []

    def depth():
        r = requests.get(f"{server.http_url}/v1/queues/{name}", timeout=10)
        return r.status_code == 200 and r.json()["available"] == 1
    wait_for(depth, 30, f"the message in {name}")


def move_tasks(server, name):
    return requests.get(f"{server.http_url}/v1/queues/{name}/move-tasks", timeout=10).json()["tasks"]


# --- /ws and SSE ---------------------------------------------------------------------------------

def test_ws_upgrade_from_another_origin_is_refused_before_the_upgrade(server):
    status, body = ws_upgrade(server, EVIL)
    assert status.startswith("HTTP/1.1 403"), status
    assert b"http.allowed.origins" in body
    assert ws_upgrade(server, "null")[0].startswith("HTTP/1.1 403")
    # The same host on another port is another origin.
    assert ws_upgrade(server, f"http://127.0.0.1:{server.http_port + 1}")[0].startswith(
        "HTTP/1.1 403")


def test_ws_upgrade_from_its_own_a_listed_or_no_origin_is_served(server):
    for origin in (None, own(server), FRIEND):
        status, _ = ws_upgrade(server, origin)
        assert status.startswith("HTTP/1.1 101"), (origin, status)


def test_sse_from_another_origin_is_refused_and_joins_no_group(server):
    create_topic(server, "sse-origins")
    head = sse_head(server, "sse-origins", EVIL, "from=earliest&group=sse-evil")
    assert head.startswith("HTTP/1.1 403"), head
    assert requests.get(f"{server.http_url}/v1/groups/sse-evil", timeout=10).status_code == 404
    head = sse_head(server, "sse-origins", own(server))
    assert head.startswith("HTTP/1.1 200") and "text/event-stream" in head, head
    head = sse_head(server, "sse-origins", FRIEND)
    assert head.startswith("HTTP/1.1 200"), head
    assert f"Access-Control-Allow-Origin: {FRIEND}" in head
    assert sse_head(server, "sse-origins").startswith("HTTP/1.1 200")


# --- state-changing /v1 routes --------------------------------------------------------------------

@pytest.mark.parametrize("content_type", [
    "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x", None])
def test_redrive_without_a_json_body_type_is_415_and_redrives_nothing(server, content_type):
    name = "ct-dlq-" + re.sub(r"[^a-z]", "", (content_type or "none").lower())[:20]
    dead_letter(server, name)
    headers = {} if content_type is None else {"Content-Type": content_type}
    r = requests.post(f"{server.http_url}/v1/queues/{name}/redrive", data="{}", headers=headers,
                      timeout=10)
    assert r.status_code == 415, r.text
    body = r.json()
    assert body["error_code"] == 415 and "Content-Type: application/json" in body["message"]
    assert move_tasks(server, name) == []
    # JSON is served.
    r = requests.post(f"{server.http_url}/v1/queues/{name}/redrive", json={}, timeout=10)
    assert r.status_code == 202, r.text


def test_redrive_from_another_origin_is_403_and_from_its_own_202(server):
    dead_letter(server, "origin-dlq")
    url = f"{server.http_url}/v1/queues/origin-dlq/redrive"
    r = requests.post(url, json={}, headers={"Origin": EVIL}, timeout=10)
    assert r.status_code == 403 and r.json()["error_code"] == 403, r.text
    assert "access-control-allow-origin" not in r.headers
    assert move_tasks(server, "origin-dlq") == []
    r = requests.post(url, json={}, headers={"Origin": own(server)}, timeout=10)
    assert r.status_code == 202, r.text


def test_console_sign_in_needs_json_too(server):
    r = requests.post(f"{server.http_url}/v1/console/session", timeout=10)
    assert r.status_code == 415
    r = requests.post(f"{server.http_url}/v1/console/session", timeout=10,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["token"] is None  # authentication is off


def test_listed_origin_gets_cors_preflight_and_answers(server):
    url = f"{server.http_url}/v1/queues/none/redrive"
    r = requests.options(url, timeout=10, headers={
        "Origin": FRIEND, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == FRIEND
    r = requests.options(url, timeout=10, headers={
        "Origin": EVIL, "Access-Control-Request-Method": "POST"})
    assert r.status_code != 204 and "access-control-allow-origin" not in r.headers
    r = requests.post(url, json={}, headers={"Origin": FRIEND}, timeout=10)
    assert r.status_code == 404 and r.headers["Access-Control-Allow-Origin"] == FRIEND


# --- the REST Proxy -------------------------------------------------------------------------------

def test_rest_produce_from_another_origin_is_403_and_writes_nothing(server):
    create_topic(server, "rest-origins")
    record = json.dumps({"records": [{"value": base64.b64encode(b"evil").decode()}]})
    for path, ct in (("/topics/rest-origins", V2_BINARY), ("/topics/rest-origins", None)):
        headers = {"Origin": EVIL}
        if ct:
            headers["Content-Type"] = ct
        r = requests.post(server.http_url + path, data=record, headers=headers, timeout=10)
        assert r.status_code == 403, r.text
        assert r.json()["error_code"] == 40301 and "http.allowed.origins" in r.json()["message"]
    cluster = requests.get(server.http_url + "/v3/clusters", timeout=10).json()["data"][0][
        "cluster_id"]
    r = requests.post(f"{server.http_url}/v3/clusters/{cluster}/topics/rest-origins/records",
                      data=json.dumps({"value": {"type": "STRING", "data": "evil"}}),
                      headers={"Origin": EVIL, "Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 403 and r.json()["error_code"] == 40301, r.text
    # The friend's record is the first the topic holds.
    r = requests.post(server.http_url + "/topics/rest-origins",
                      data=json.dumps({"records": [{"value": base64.b64encode(b"ok").decode()}]}),
                      headers={"Origin": FRIEND, "Content-Type": V2_BINARY}, timeout=10)
    assert r.status_code == 200 and r.json()["offsets"][0]["offset"] == 0, r.text
    assert r.headers["Access-Control-Allow-Origin"] == FRIEND
    assert [m.value() for m in read_partition(server, "rest-origins", 0, 0, 1)] == [b"ok"]


def test_rest_reads_from_another_origin_are_refused_too(server):
    r = requests.get(server.http_url + "/topics", headers={"Origin": EVIL}, timeout=10)
    assert r.status_code == 403 and r.json()["error_code"] == 40301
    assert requests.get(server.http_url + "/topics", timeout=10).status_code == 200


# --- the SQS front --------------------------------------------------------------------------------

def sqs_form(server, origin, queue_url, body):
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if origin:
        headers["Origin"] = origin
    return requests.post(server.sqs_url + "/", timeout=10, headers=headers, data={
        "Action": "SendMessage", "QueueUrl": queue_url, "MessageBody": body})


def bodies(server, queue_url):
    c = client(server)
    out = []
    while True:
        got = c.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10,
                                WaitTimeSeconds=0).get("Messages", [])
        if not got:
            return sorted(out)
        for m in got:
            out.append(m["Body"])
            c.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])


def test_sqs_form_post_from_another_origin_is_403_access_denied(server):
    url = client(server).create_queue(QueueName="sqs-origins")["QueueUrl"]
    r = sqs_form(server, EVIL, url, "evil")
    assert r.status_code == 403, r.text
    assert "<Code>AccessDenied</Code>" in r.text and "http.allowed.origins" in r.text
    assert r.headers["x-amzn-query-error"] == "AccessDenied;Sender"
    # JSON 1.0 answers in JSON.
    r = requests.post(server.sqs_url + "/", timeout=10, data=json.dumps(
        {"QueueUrl": url, "MessageBody": "evil-json"}), headers={
        "Origin": EVIL, "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": "AmazonSQS.SendMessage"})
    assert r.status_code == 403, r.text
    assert "AccessDenied" in r.json()["__type"]
    # The console's origin (the HTTP listener's), a listed one and none are served.
    for origin, body in ((own(server), "console"), (FRIEND, "friend"), (None, "no-origin")):
        r = sqs_form(server, origin, url, body)
        assert r.status_code == 200, (origin, r.text)
    assert bodies(server, url) == ["console", "friend", "no-origin"]


def test_sqs_clients_without_origin_are_unaffected(server):
    c = client(server)
    url = c.create_queue(QueueName="sqs-plain")["QueueUrl"]
    c.send_message(QueueUrl=url, MessageBody="boto3")
    assert bodies(server, url) == ["boto3"]


# --- settings -------------------------------------------------------------------------------------

def test_allowed_origins_from_the_environment_and_the_rest_proxy_name():
    env = {"SLUICE_HTTP_ALLOWED_ORIGINS": "http://env.example:3000"}
    with Sluice(env=env, settings={"access.control.allow.origin": "https://cors.example"}) as s:
        for origin in ("http://env.example:3000", "https://cors.example"):
            status, _ = ws_upgrade(s, origin)
            assert status.startswith("HTTP/1.1 101"), (origin, status)
            r = requests.get(s.http_url + "/topics", headers={"Origin": origin}, timeout=10)
            assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == origin
        assert ws_upgrade(s, EVIL)[0].startswith("HTTP/1.1 403")


def test_star_allows_every_origin():
    with Sluice(settings={"http.allowed.origins": "*"}) as s:
        assert ws_upgrade(s, EVIL)[0].startswith("HTTP/1.1 101")
        r = requests.get(s.http_url + "/topics", headers={"Origin": EVIL}, timeout=10)
        assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "*"


def test_an_entry_that_is_not_an_origin_stops_the_start():
    s = Sluice(settings={"http.allowed.origins": "https://ok.example,app.example.com/x"})
    try:
        with pytest.raises(RuntimeError) as e:
            s.start()
    finally:
        s.close()
    assert "http.allowed.origins: 'app.example.com/x' is not an origin" in str(e.value)


# --- make run -------------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_run_command(bind=None):
    """The command `make run` starts sluice with (make -n prints it without building)."""
    args = ["make", "-s", "-n", "run", f"BUILD={os.path.dirname(sluice_binary())}"]
    if bind:
        args.append(f"BIND={bind}")
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
                         env={k: v for k, v in os.environ.items()
                              if not k.startswith("SLUICE_") or k == "SLUICE_BIN"}).stdout
    joined = out.replace("\\\n", " ")
    return [l for l in joined.splitlines() if "sluice --data-dir" in l][-1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_listens_on_loopback_unless_bind_says_otherwise():
    line = make_run_command()
    for port in ("9092", "8082", "9324"):
        assert f"127.0.0.1:{port}" in line, line
    assert "0.0.0.0" not in line
    assert "0.0.0.0:8082" in make_run_command("0.0.0.0")
    # The command itself, on free ports: every listener is on 127.0.0.1.
    ports = {"9092": free_port(), "8082": free_port(), "9324": free_port()}
    for old, new in ports.items():
        line = line.replace(f":{old}", f":{new}")
    with tempfile.TemporaryDirectory(prefix="sluice-make-run-") as d:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
        proc = subprocess.Popen(["bash", "-c", line], cwd=d, env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines = []

        def read():
            for text in proc.stderr:
                lines.append(text)
        threading.Thread(target=read, daemon=True).start()
        try:
            listening = wait_for(lambda: next((l for l in list(lines) if "listening:" in l), None)
                                 or proc.poll() is not None, 30, "sluice to start listening")
            assert listening is not True, "sluice exited:\n" + "".join(lines)
            found = re.findall(r"(\w+)=([\d.]+):(\d+)", listening.split("listening:")[1])
            assert {name for name, _, _ in found} >= {"kafka", "http", "sqs"}, listening
            assert all(addr == "127.0.0.1" for _, addr, _ in found), listening
        finally:
            os.killpg(proc.pid, signal.SIGTERM)  # the shell and the sluice it started
            proc.wait(30)
