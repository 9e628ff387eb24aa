"""HTTPS on the HTTP and SQS listeners (--http https://..., --sqs https://...), with certificates
made by the openssl command line (tls_support.Pki): python3-requests against the REST Proxy (v2
produce and a consumer instance whose base_uri says https://, v3 produce plain and streamed,
GET /topics), WebSocket over wss:// with python3-websockets, SSE, SQS with boto3 and
/usr/bin/aws (QueueUrl says https://); ssl.client.auth=required refusing clients without a
trusted certificate and mapping a trusted one to the principal; plaintext HTTP, garbage and a
silent client on the HTTPS port (each cut, the server serving others); SIGHUP giving new
connections the new certificate; the start-up error without a certificate."""
import asyncio
import json
import os
import re
import signal
import socket
import ssl
import subprocess

import boto3
import pytest
import requests
import websockets
from botocore.config import Config

from harness import Sluice, sluice_binary, wait_for
from rest_support import V2, V2_BINARY, b64, create_topic, unb64
from tls_support import Pki, client_context, peer_serial, tls_connect

AWS = "/usr/bin/aws"


class HttpsSluice:
    """A sluice whose HTTP and SQS listeners are HTTPS, on the PKI's live certificate."""

    def __init__(self, pki, data_dir=None, settings=None):
        s = pki.settings(**{"group.initial.rebalance.delay.ms": 0})
        s.update(settings or {})
        self.server = Sluice(data_dir=data_dir, settings=s,
                             args=["--http", "https://127.0.0.1:0", "--sqs", "https://127.0.0.1:0"])
        self.pki = pki
        self.https_port = None
        self.sqs_port = None

    def start(self):
        self.server.start()
        line = self.server._find_line("listening:")
        self.https_port = int(re.search(r" https=[^ ]*:(\d+)", line).group(1))
        self.sqs_port = int(re.search(r" sqs_https=[^ ]*:(\d+)", line).group(1))
        return self

    def close(self):
        self.server.close()

    @property
    def bootstrap(self):
        return self.server.bootstrap

    @property
    def url(self):
        return f"https://localhost:{self.https_port}"

    @property
    def sqs_url(self):
        return f"https://localhost:{self.sqs_port}"

    @property
    def ca(self):
        return self.pki.path("ca.pem")

    def session(self):
        s = requests.Session()
        s.trust_env = False  # REQUESTS_CA_BUNDLE would win over verify
        s.verify = self.ca
        return s


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("https-pki"))


@pytest.fixture(scope="module")
def https(pki, tmp_path_factory):
    s = HttpsSluice(pki, data_dir=str(tmp_path_factory.mktemp("https-data"))).start()
    yield s
    s.close()


def healthy(h):
    r = requests.get(h.url + "/healthz", verify=h.ca, timeout=10)
    return r.status_code == 200


def test_rest_v2_produce_and_a_consumer_instance_round_trip(https):
    create_topic(https, "hv2", 1)
    s = https.session()
    records = [{"key": b64(f"k{i}"), "value": b64(f"v{i}")} for i in range(5)]
    r = s.post(https.url + "/topics/hv2", data=json.dumps({"records": records}),
               headers={"Content-Type": V2_BINARY}, timeout=30)
    assert r.status_code == 200, r.text
    assert [o["offset"] for o in r.json()["offsets"]] == list(range(5))
    r = s.get(https.url + "/topics", timeout=30)
    assert r.status_code == 200 and "hv2" in r.json()
    r = s.post(https.url + "/consumers/hg", data=json.dumps(
        {"name": "c1", "format": "binary", "auto.offset.reset": "earliest"}),
        headers={"Content-Type": V2}, timeout=30)
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    assert base == f"{https.url}/consumers/hg/instances/c1"
    r = s.post(base + "/subscription", data=json.dumps({"topics": ["hv2"]}),
               headers={"Content-Type": V2}, timeout=30)
    assert r.status_code == 204, r.text
    got = []

    def poll():
        r = s.get(base + "/records?timeout=1000", headers={"Accept": V2_BINARY}, timeout=30)
        assert r.status_code == 200, r.text
        got.extend(r.json())
        return len(got) >= 5

    wait_for(poll, 30, "5 records through the consumer instance")
    assert [unb64(g["value"]) for g in got] == [f"v{i}".encode() for i in range(5)]
    assert s.delete(base, timeout=30).status_code == 204


def test_rest_v3_produce_plain_and_streamed(https):
    create_topic(https, "hv3", 1)
    s = https.session()
    cid = s.get(https.url + "/v3/clusters", timeout=30).json()["data"][0]["cluster_id"]
    url = f"{https.url}/v3/clusters/{cid}/topics/hv3/records"
    r = s.post(url, data=json.dumps({"value": {"type": "STRING", "data": "one"}}),
               headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 200 and r.json()["offset"] == 0, r.text

    def records():
        for i in range(50):
            yield json.dumps({"value": {"type": "STRING", "data": f"g{i}"}}).encode()

    r = s.post(url, data=records(), headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 200
    reports = [json.loads(x) for x in r.text.replace("}{", "}\n{").splitlines() if x.strip()]
    assert [rep["error_code"] for rep in reports] == [200] * 50
    assert [rep["offset"] for rep in reports] == list(range(1, 51))


def test_websocket_over_wss_subscribes_produces_and_receives(https):
    create_topic(https, "hws", 1)
    ctx = client_context(https.pki)

    async def session():
        async with websockets.connect(f"wss://localhost:{https.https_port}/ws", ssl=ctx,
                                      open_timeout=10) as ws:
            async def recv():
                return json.loads(await asyncio.wait_for(ws.recv(), 30))

            await ws.send(json.dumps({"op": "subscribe", "id": 1, "topics": ["hws"],
                                      "from": "earliest"}))
            assert await recv() == {"op": "subscribed", "id": 1, "topics": ["hws"]}
            await ws.send(json.dumps({"op": "produce", "id": "a", "topic": "hws",
                                      "value": "over-tls"}))
            seen_ack, values = False, []
            while not seen_ack or not values:
                m = await recv()
                if m["op"] == "ack":
                    assert m["id"] == "a" and m["offset"] == 0, m
                    seen_ack = True
                elif m["op"] == "records":
                    values += [rec["value"] for rec in m["records"]]
            assert values == ["over-tls"]

    asyncio.run(asyncio.wait_for(session(), 60))


def test_sse_over_https(https):
    create_topic(https, "hsse", 1)
    s = https.session()
    r = s.post(https.url + "/topics/hsse", data=json.dumps({"records": [{"value": b64("e0")}]}),
               headers={"Content-Type": V2_BINARY}, timeout=30)
    assert r.status_code == 200, r.text
    with s.get(https.url + "/topics/hsse/events?from=earliest", stream=True, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/event-stream"
        data = None
        for line in r.iter_lines(decode_unicode=True):
            if line and line.startswith("data: "):
                data = json.loads(line[len("data: "):])
                break
    assert data["topic"] == "hsse" and data["offset"] == 0


def test_sqs_over_https_with_boto3(https):
    c = boto3.client("sqs", endpoint_url=https.sqs_url, region_name="us-east-1",
                     aws_access_key_id="test", aws_secret_access_key="test", verify=https.ca,
                     config=Config(retries={"max_attempts": 1}))
    url = c.create_queue(QueueName="hq")["QueueUrl"]
    assert url.startswith(f"https://localhost:{https.sqs_port}/"), url
    c.send_message(QueueUrl=url, MessageBody="secret")
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=5).get("Messages", [])
    assert [m["Body"] for m in got] == ["secret"]
    c.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []


def test_sqs_over_https_with_the_aws_cli(https):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
               AWS_DEFAULT_REGION="us-east-1", AWS_PAGER="", AWS_MAX_ATTEMPTS="1")

    def aws(*args):
        r = subprocess.run([AWS, "--endpoint-url", https.sqs_url, "--ca-bundle", https.ca,
                            "--output", "json", "sqs", *args],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(r.stdout) if r.stdout.strip() else {}

    url = aws("create-queue", "--queue-name", "hcli")["QueueUrl"]
    assert url.startswith("https://"), url
    aws("send-message", "--queue-url", url, "--message-body", "from the cli")
    got = aws("receive-message", "--queue-url", url, "--wait-time-seconds", "5")["Messages"]
    assert [m["Body"] for m in got] == ["from the cli"]
    aws("delete-message", "--queue-url", url, "--receipt-handle", got[0]["ReceiptHandle"])


def test_plaintext_http_to_the_https_port_is_cut_and_the_server_keeps_serving(https):
    with socket.create_connection(("127.0.0.1", https.https_port), timeout=15) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b"".join(iter(lambda: s.recv(4096), b""))  # until the server closes
        assert b"HTTP/1.1 200" not in got
    assert healthy(https)


def test_garbage_during_the_handshake_is_cut_and_the_server_keeps_serving(https):
    for port in (https.https_port, https.sqs_port):
        with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
            s.sendall(bytes(range(256)) * 8)
            try:
                while s.recv(4096):
                    pass
            except ConnectionResetError:
                pass
    assert healthy(https)


def test_a_handshake_that_never_completes_is_cut_at_its_bound(https):
    silent = socket.create_connection(("127.0.0.1", https.https_port), timeout=30)
    try:
        # Others are served while the silent client holds its connection.
        assert healthy(https)
        silent.settimeout(25)  # the bound is 10 s
        assert silent.recv(1) == b""
    finally:
        silent.close()
    https.server.wait_log("TLS handshake not done within 10 s")
    assert healthy(https)


def test_sighup_gives_new_connections_the_new_certificate(pki, tmp_path):
    h = HttpsSluice(pki, data_dir=str(tmp_path)).start()
    try:
        ctx = client_context(pki)
        with tls_connect(h.https_port, ctx) as old:
            assert peer_serial(old) == "1001"
            pki.use_server(2)
            h.server.proc.send_signal(signal.SIGHUP)
            h.server.wait_log("HTTP listener https://127.0.0.1:0: TLS certificate reloaded "
                              "(serial 1002)")
            h.server.wait_log("SQS listener https://127.0.0.1:0: TLS certificate reloaded")
            with tls_connect(h.https_port, ctx) as new:
                assert peer_serial(new) == "1002"
            with tls_connect(h.sqs_port, ctx) as new:
                assert peer_serial(new) == "1002"
            # The open connection keeps its context and is still served.
            old.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert old.recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        pki.use_server(1)
        h.close()


def test_required_client_auth_refuses_untrusted_and_maps_a_trusted_certificate(pki, tmp_path):
    h = HttpsSluice(pki, data_dir=str(tmp_path),
                    settings={"listener.name.https.ssl.client.auth": "required"}).start()
    try:
        for cert in (None, "other-server"):
            ctx = client_context(pki, cert=cert and f"{cert}.pem", key=cert and f"{cert}.key")
            with pytest.raises((ssl.SSLError, ConnectionError, requests.exceptions.SSLError,
                                requests.exceptions.ConnectionError)):
                with tls_connect(h.https_port, ctx) as s:
                    # TLS 1.3: the refusal arrives after the client's side of the handshake.
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    if s.recv(4096) == b"":
                        raise ConnectionError("closed")
        r = requests.get(h.url + "/healthz", verify=h.ca, timeout=10,
                         cert=(pki.path("client.pem"), pki.path("client.key")))
        assert r.status_code == 200
        h.server.wait_log("authenticated as User:CN=Client-Alice,O=sluice by TLS client "
                          "certificate")
        # The SQS listener takes listener.name.sqs.*: no client certificate asked for there.
        c = boto3.client("sqs", endpoint_url=h.sqs_url, region_name="us-east-1",
                         aws_access_key_id="test", aws_secret_access_key="test", verify=h.ca)
        assert c.list_queues()["ResponseMetadata"]["HTTPStatusCode"] == 200
    finally:
        h.close()


def test_https_without_a_certificate_is_one_clear_start_up_error(tmp_path):
    r = subprocess.run([sluice_binary(), "--data-dir", str(tmp_path), "--kafka", "127.0.0.1:0",
                        "--http", "https://127.0.0.1:0", "--sqs", "off"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "listener.name.https.ssl.certificate.location" in r.stderr


def test_a_client_certificate_is_the_principal_acls_see(pki, tmp_path):
    # The mapped subject (client-alice) is a super user; a client without a certificate is
    # User:ANONYMOUS, which no ACL allows.
    h = HttpsSluice(pki, data_dir=str(tmp_path), settings={
        "ssl.client.auth": "requested", "authorizer.enabled": "true",
        "super.users": "User:client-alice",
        "ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/L,DEFAULT"}).start()
    try:
        alice = (pki.path("client.pem"), pki.path("client.key"))

        def sqs(cert):
            return boto3.client("sqs", endpoint_url=h.sqs_url, region_name="us-east-1",
                                aws_access_key_id="test", aws_secret_access_key="test",
                                verify=h.ca, config=Config(client_cert=cert,
                                                           retries={"max_attempts": 1}))

        url = sqs(alice).create_queue(QueueName="mine")["QueueUrl"]
        sqs(alice).send_message(QueueUrl=url, MessageBody="m")
        with pytest.raises(Exception) as denied:
            sqs(None).send_message(QueueUrl=url, MessageBody="m")
        assert "AccessDenied" in str(denied.value)
        body = json.dumps({"records": [{"value": b64("x")}]})
        # No such topic: the super user's produce creates it (auto.create.topics.enable);
        # anyone else is denied before that.
        r = requests.post(h.url + "/topics/mtls", data=body, verify=h.ca, cert=alice,
                          headers={"Content-Type": V2_BINARY}, timeout=30)
        assert r.status_code == 200, r.text
        r = requests.post(h.url + "/topics/mtls", data=body, verify=h.ca,
                          headers={"Content-Type": V2_BINARY}, timeout=30)
        assert r.status_code == 403, r.text
        h.server.wait_log("authenticated as User:client-alice by TLS client certificate")
    finally:
        h.close()


def keep_alive_request(sock, target):
    """GET `target` on a kept-alive TLS connection; reads the whole response (any status that
    keeps the connection open)."""
    sock.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(4096)
        assert chunk, got
        got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), head
    assert b"connection: close" not in head.lower()
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(body) < length:
        chunk = sock.recv(4096)
        assert chunk
        body += chunk


def test_sigterm_closes_idle_keep_alive_clients_with_close_notify(pki, tmp_path):
    h = HttpsSluice(pki, data_dir=str(tmp_path)).start()
    ctx = client_context(pki)
    clients = []
    try:
        for port in (h.https_port, h.https_port, h.https_port, h.sqs_port, h.sqs_port):
            raw = socket.create_connection(("127.0.0.1", port), timeout=30)
            # A TCP close without close_notify must show as an error, not as an end.
            c = ctx.wrap_socket(raw, server_hostname="localhost", suppress_ragged_eofs=False)
            clients.append(c)
        # One request each: the server has finished its side of the handshake and the
        # connection waits, idle, for the next request.
        for c in clients[:3]:
            keep_alive_request(c, b"/healthz")
        for c in clients[3:]:
            keep_alive_request(c, b"/?Action=ListQueues")
        # The clients never answer the server's close_notify: sluice must not wait for them.
        h.server.proc.send_signal(signal.SIGTERM)
        assert h.server.proc.wait(30) == 0
        for c in clients:
            # close_notify: recv returns b"" (a reset raises ConnectionResetError, a TCP close
            # without close_notify raises SSLEOFError).
            assert c.recv(1) == b""
    finally:
        for c in clients:
            c.close()
        h.close()
