"""Pages on other origins in headless Chromium against one sluice (issue 24, item 4).

Two small http.server instances on other 127.0.0.1 ports serve a blank page each: one origin
that sluice does not know ("evil"), and one listed in http.allowed.origins ("friend"). A third
page is sluice's own (the console's origin). From each, the browser tries what a page could do
to a developer's sluice: read a topic over /ws, join a group over an EventSource, redrive a
dead-letter queue with a text/plain fetch (a "simple request" no preflight guards) and with a
JSON one, send an SQS message with a plain HTML form, and produce over the REST Proxy with a
body that has no Content-Type (another simple request) and with the REST Proxy's own type.

The evil page gets nothing: no WebSocket, no group, no move task, no message, no record; the
server's state is checked with real clients afterwards. The friend's and the console's pages
get every action that is not a simple request, with readable answers (CORS for the friend),
and the 415 for the text/plain redrive.

Debian's Chromium via playwright-core (js/browser_driver.js through test_browser.Browser);
nothing is downloaded.
"""
import base64
import http.server
import json
import threading

import pytest
import requests

from harness import Sluice
from rest_support import create_topic
from sqs_support import arn, client
from test_browser import Browser, kcat_produce
from test_origins import bodies, dead_letter, move_tasks

PAGE = b"<!doctype html><html><head><title>elsewhere</title></head><body></body></html>"


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


class PageServer:
    """A blank page on its own 127.0.0.1 port: another origin than sluice's."""

    def __init__(self):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


# One async function per page: each action's outcome, every wait bounded by `ms`.
ATTEMPT = r"""
(async (cfg) => {
    const ms = 8000;
    const bounded = (p, fallback) =>
        Promise.race([p, new Promise((r) => setTimeout(() => r(fallback), ms))]);
    const status = (p) => p.then((r) => r.status, (e) => "failed");
    const out = {};
    out.ws = await bounded(new Promise((resolve) => {
        const ws = new WebSocket(cfg.ws);
        let opened = false;
        ws.onopen = () => {
            opened = true;
            ws.send(JSON.stringify({ op: "subscribe", topics: [cfg.topic], from: "earliest" }));
        };
        ws.onmessage = (ev) => {
            if (JSON.parse(ev.data).op === "records") {
                resolve({ opened, records: true });
                ws.close();
            }
        };
        ws.onclose = () => resolve({ opened, records: false });
    }), { opened: "timeout" });
    out.sse = await bounded(new Promise((resolve) => {
        const es = new EventSource(cfg.sse);
        es.onmessage = () => { es.close(); resolve("message"); };
        es.onerror = () => { es.close(); resolve("error"); };
    }), "timeout");
    out.redrivePlain = await bounded(status(fetch(cfg.redrive, { method: "POST", body: "{}" })),
                                     "timeout");
    out.redriveJson = await bounded(status(fetch(cfg.redrive, {
        method: "POST", body: "{}", headers: { "Content-Type": "application/json" } })),
        "timeout");
    out.form = await bounded(new Promise((resolve) => {
        const frame = document.createElement("iframe");
        frame.name = "sink";
        document.body.append(frame);
        const form = document.createElement("form");
        form.method = "POST";
        form.action = cfg.sqs;
        form.target = "sink";
        const fields = { Action: "SendMessage", QueueUrl: cfg.queueUrl, MessageBody: cfg.who };
        for (const [name, value] of Object.entries(fields)) {
            const input = document.createElement("input");
            input.type = "hidden";
            input.name = name;
            input.value = value;
            form.append(input);
        }
        document.body.append(form);
        let submitted = false;
        frame.onload = () => { if (submitted) { resolve("loaded"); } };
        form.submit();
        submitted = true;
    }), "timeout");
    // A Blob without a type: the request has no Content-Type at all.
    out.produceUntyped = await bounded(status(fetch(cfg.produce, {
        method: "POST", body: new Blob([cfg.record]) })), "timeout");
    out.produceTyped = await bounded(status(fetch(cfg.produce, {
        method: "POST", body: cfg.record,
        headers: { "Content-Type": "application/vnd.kafka.binary.v2+json" } })), "timeout");
    return out;
})
"""


@pytest.fixture(scope="module")
def pages():
    evil, friend = PageServer(), PageServer()
    try:
        yield evil, friend
    finally:
        evil.close()
        friend.close()


@pytest.fixture(scope="module")
def server(pages):
    _, friend = pages
    s = Sluice(sqs=True, settings={"http.allowed.origins": friend.origin}).start()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="module")
def queue_url(server):
    return client(server).create_queue(QueueName="br-q")["QueueUrl"]


@pytest.fixture(scope="module")
def readable_topic(server):
    kcat_produce(server, "br-read", ["k:secret"])
    return "br-read"


def attempt(server, browser, page_url, who, topic, queue_url):
    """Opens `page_url` and runs every action from it; returns their outcomes."""
    dead_letter(server, f"br-dlq-{who}")
    create_topic(server, f"br-produce-{who}")
    browser.goto(page_url)
    base = f"127.0.0.1:{server.http_port}"
    cfg = {
        "who": who, "topic": topic, "ws": f"ws://{base}/ws",
        "sse": f"http://{base}/topics/{topic}/events?from=earliest&group=br-sse-{who}",
        "redrive": f"http://{base}/v1/queues/br-dlq-{who}/redrive",
        "sqs": f"http://127.0.0.1:{server.sqs_port}/", "queueUrl": queue_url,
        "produce": f"http://{base}/topics/br-produce-{who}",
        "record": json.dumps({"records": [{"value": base64.b64encode(who.encode()).decode()}]}),
    }
    return browser.call(f"the actions from {who}'s page", timeout=90, cmd="eval",
                        expr=f"{ATTEMPT.strip()}({json.dumps(cfg)})")


def end_offset(server, topic):
    r = requests.get(f"{server.http_url}/topics/{topic}/partitions/0/offsets", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["end_offset"]


def group_exists(server, group):
    return requests.get(f"{server.http_url}/v1/groups/{group}", timeout=10).status_code == 200


def dlq_depth(server, name):
    return requests.get(f"{server.http_url}/v1/queues/{name}", timeout=10).json()["available"]


def test_a_page_on_another_origin_can_do_nothing(server, pages, browser, readable_topic,
                                                 queue_url):
    evil, _ = pages
    out = attempt(server, browser, evil.origin + "/", "evil", readable_topic, queue_url)
    assert out["ws"] == {"opened": False, "records": False}, out
    assert out["sse"] == "error", out
    assert not group_exists(server, "br-sse-evil")
    # The answers are unreadable to the page either way; what counts is that nothing happened.
    assert out["redrivePlain"] == "failed" and out["redriveJson"] == "failed", out
    assert move_tasks(server, "br-dlq-evil") == []
    assert dlq_depth(server, "br-dlq-evil") == 1
    assert out["form"] == "loaded", out
    assert out["produceUntyped"] == "failed" and out["produceTyped"] == "failed", out
    assert end_offset(server, "br-produce-evil") == 0
    assert bodies(server, queue_url) == []
    assert f"origin {evil.origin} is not allowed" in server.log_text()


@pytest.mark.parametrize("who", ["friend", "console"])
def test_the_allowed_origins_keep_every_action(server, pages, browser, readable_topic, queue_url,
                                               who):
    _, friend = pages
    page = friend.origin + "/" if who == "friend" else server.http_url + "/healthz"
    out = attempt(server, browser, page, who, readable_topic, queue_url)
    assert out["ws"] == {"opened": True, "records": True}, out
    assert out["sse"] == "message", out
    assert group_exists(server, f"br-sse-{who}")
    # A text/plain body is refused (and readable as such); JSON redrives.
    assert out["redrivePlain"] == 415, out
    assert out["redriveJson"] == 202, out
    tasks = move_tasks(server, f"br-dlq-{who}")
    assert len(tasks) == 1, tasks
    assert out["form"] == "loaded", out
    assert bodies(server, queue_url) == [who]
    assert out["produceUntyped"] == 200 and out["produceTyped"] == 200, out
    assert end_offset(server, f"br-produce-{who}") == 2
