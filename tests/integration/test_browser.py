"""Headless Chromium against the pages sluice serves at /ui/ (issue 10's browser tests).

Debian's Chromium (/usr/bin/chromium) is driven by playwright-core (js/browser_driver.js, one
JSON command per line) with a fresh profile and the flags of js/chromium.js; nothing is
downloaded. kcat produces and reads the records on the Kafka side. Screenshots are saved under
<build dir>/test-artifacts/browser/.

- The example page against a fake /ws server (js/browser_page_fake.js): runs on its own.
- Against the real binary: sluice.js in the page gets the same records from compact frames
  (its default) as from the default frames; the page tails records kcat produced, posts a
  record kcat reads, resumes with its group where it committed after a reload, and resumes
  after its connection drops; the Server-Sent Events page resumes with Last-Event-ID after its
  stream drops. These need the server side of the WebSocket and SSE fronts: each is skipped,
  saying so, while a real request to /ws (or to the SSE endpoint) is not answered by one.
"""
import base64
import json
import os
import queue
import subprocess
import threading

import pytest

from harness import connect, sluice_binary
from tcp_proxy import CuttingProxy

HERE = os.path.dirname(os.path.abspath(__file__))
JS = os.path.join(HERE, "js")
KCAT = "/usr/bin/kcat"
CHROMIUM = "/usr/bin/chromium"
WAIT = 30  # seconds, the bound on each page wait
GROUP_WAIT = 60  # a group's old member may hold its partition until it is seen to leave


def artifacts_dir():
    path = os.path.join(os.path.dirname(os.path.abspath(sluice_binary())), "test-artifacts",
                        "browser")
    os.makedirs(path, exist_ok=True)
    return path


def require_chromium():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: scripts/install-deps installs Debian's chromium")


# --- is the server side there? (a real request each, not a flag) ----------------------------

def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n\r\n", 1)[0].decode("latin-1")


def ws_upgrade_answer(port):
    """The status line and headers sluice answers to a WebSocket upgrade of GET /ws."""
    key = base64.b64encode(os.urandom(16)).decode()
    with connect(port) as s:
        s.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                   f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
        return read_head(s)


def sse_answer(port, topic):
    with connect(port) as s:
        s.sendall((f"GET /topics/{topic}/events?from=earliest HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   f"Accept: text/event-stream\r\n\r\n").encode())
        return read_head(s)


def skip_unless_ws(broker):
    head = ws_upgrade_answer(broker.http_port)
    if not head.startswith("HTTP/1.1 101"):
        pytest.skip("sluice does not answer on /ws yet (a WebSocket upgrade of GET /ws was "
                    f"answered '{head.splitlines()[0] if head else 'nothing'}'): this test "
                    "runs once the WebSocket front of issue 10 is in")


def skip_unless_sse(broker, topic):
    head = sse_answer(broker.http_port, topic)
    lines = head.splitlines()
    is_stream = any(l.lower().startswith("content-type:") and "text/event-stream" in l.lower()
                    for l in lines[1:])
    if not (lines and lines[0].startswith("HTTP/1.1 200") and is_stream):
        pytest.skip(f"sluice does not stream GET /topics/{topic}/events yet (answered "
                    f"'{lines[0] if lines else 'nothing'}'): this test runs once the SSE "
                    "front of issue 10 is in")


# --- Kafka side -------------------------------------------------------------------------------

def kcat_produce(broker, topic, lines):
    """Produces "key:value" lines to partition 0 (kcat creates the topic if needed)."""
    r = subprocess.run([KCAT, "-b", broker.bootstrap, "-t", topic, "-P", "-K:", "-p", "0"],
                       input="".join(l + "\n" for l in lines), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def kcat_read_one(broker, topic, offset):
    r = subprocess.run([KCAT, "-b", broker.bootstrap, "-t", topic, "-C", "-p", "0", "-o",
                        str(offset), "-c", "1", "-e", "-f", "%k|%s|%p|%o"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def committed_offset(broker, group, topic):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=15)[0].offset
    finally:
        c.close()


# --- the browser ------------------------------------------------------------------------------

class Browser:
    """One Chromium page behind js/browser_driver.js; every call has a bound."""

    def __init__(self):
        require_chromium()
        self.proc = subprocess.Popen(["node", os.path.join(JS, "browser_driver.js")], cwd=JS,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self._answers = queue.Queue()
        self._stderr = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self._answers.put),
                         daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self._stderr.append),
                         daemon=True).start()
        self._answer(90, "Chromium to start")

    @staticmethod
    def _read(stream, sink):
        for line in stream:
            sink(line)
        sink(None)

    def _answer(self, timeout, what):
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no answer from the browser driver within {timeout}s for {what}")
        if line is None:
            raise RuntimeError("the browser driver exited:\n" + "".join(
                l for l in self._stderr if l))
        answer = json.loads(line)
        if not answer["ok"]:
            raise AssertionError(f"{what} failed in the browser:\n{answer['error']}")
        return answer["value"]

    def call(self, what, timeout=WAIT, **command):
        command["timeout"] = int(timeout * 1000)
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self._answer(timeout + 15, what)

    def goto(self, url):
        return self.call(f"opening {url}", cmd="goto", url=url)

    def reload(self):
        return self.call("reloading", cmd="reload")

    def wait(self, expr, what, timeout=WAIT):
        return self.call(f"waiting for {what} ({expr})", timeout=timeout, cmd="wait", expr=expr)

    def eval(self, expr):
        return self.call(expr, cmd="eval", expr=expr)

    def fill(self, selector, value):
        return self.call(f"filling {selector}", cmd="fill", selector=selector, value=value)

    def click(self, selector):
        return self.call(f"clicking {selector}", cmd="click", selector=selector)

    def screenshot(self, name):
        return self.call("a screenshot", cmd="screenshot",
                         path=os.path.join(artifacts_dir(), name + ".png"))

    def errors(self):
        return self.call("the page's errors", cmd="errors")

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def browser():
    b = Browser()
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def proxy(broker):
    """A proxy in front of the HTTP port that can drop every connection on demand."""
    p = CuttingProxy(cut_every_bytes=1 << 62, record_requests=True, idle_timeout=None).start(
        broker.http_port)
    try:
        yield p
    finally:
        p.close()


ROWS = ("Array.from(document.querySelectorAll('#records tr'), tr => [Number(tr.dataset.partition),"
        " Number(tr.dataset.offset), tr.children[4].textContent, tr.children[5].textContent])")
EVENT_ROWS = ("Array.from(document.querySelectorAll('#records tr'), tr => "
              "[Number(tr.dataset.partition), Number(tr.dataset.offset), tr.dataset.eventId])")


def errors_but_the_drop(browser):
    """The page's errors, less the network errors the test's own drop causes (Chromium logs
    the cut stream, or a reconnect attempt made while the connection was down)."""
    return [e for e in browser.errors()
            if "net::ERR_" not in e and "WebSocket connection to" not in e]


def rows_at_least(n):
    return f"document.querySelectorAll('#records tr').length >= {n}"


def row_at(offset):
    return f"document.querySelector('#records tr[data-offset=\"{offset}\"]') !== null"


# --- the page against a fake server: runs without the server side -----------------------------

def test_example_page_against_a_fake_ws_server():
    require_chromium()
    r = subprocess.run(["node", "browser_page_fake.js", artifacts_dir()], capture_output=True,
                       text=True, timeout=300, cwd=JS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr


# --- against the real binary ------------------------------------------------------------------

def test_page_tails_records_produced_by_kcat(broker, browser):
    skip_unless_ws(broker)
    kcat_produce(broker, "tail", [f"k{i}:v{i}" for i in range(3)])
    browser.goto(f"{broker.http_url}/ui/?topic=tail&from=earliest")
    browser.wait(rows_at_least(3), "the records produced before the page opened")
    kcat_produce(broker, "tail", [f"k{i}:v{i}" for i in range(3, 5)])
    browser.wait(rows_at_least(5), "the records produced while the page is open")
    assert browser.eval(ROWS) == [[0, i, f"k{i}", f"v{i}"] for i in range(5)]
    assert browser.eval("document.getElementById('status').dataset.state") == "open"
    browser.screenshot("tail")
    assert browser.errors() == []


def test_page_posts_a_record_that_kcat_reads(broker, browser):
    skip_unless_ws(broker)
    kcat_produce(broker, "posted", ["seed:seed"])
    browser.goto(f"{broker.http_url}/ui/?topic=posted&from=earliest")
    browser.wait(rows_at_least(1), "the seed record")
    browser.fill("#key", "page-key")
    browser.fill("#value", "posted from Chromium")
    browser.click("#send")
    offset = int(browser.wait("document.getElementById('produce-result').dataset.offset",
                              "the produce ack"))
    assert offset == 1
    assert kcat_read_one(broker, "posted", offset) == f"page-key|posted from Chromium|0|{offset}"
    browser.wait(row_at(offset), "the page to tail its own record")
    assert browser.eval(ROWS)[-1] == [0, offset, "page-key", "posted from Chromium"]
    browser.screenshot("posted")
    assert browser.errors() == []


def test_page_resumes_with_its_group_where_it_committed_after_a_reload(broker, browser):
    skip_unless_ws(broker)
    topic, group = "resume", "browser-group"
    kcat_produce(broker, topic, [f"k{i}:v{i}" for i in range(5)])
    browser.goto(f"{broker.http_url}/ui/?topic={topic}&group={group}&from=earliest")
    browser.wait(rows_at_least(5), "the first five records", timeout=GROUP_WAIT)
    assert [r[1] for r in browser.eval(ROWS)] == [0, 1, 2, 3, 4]
    browser.click("#commit")
    committed = browser.wait("document.getElementById('commit-result').dataset.offsets",
                             "the commit answer")
    assert committed == f"{topic}[0]@5"
    assert committed_offset(broker, group, topic) == 5  # a real consumer group's offset

    # Read past the commit without committing: the reload goes back to the commit.
    kcat_produce(broker, topic, [f"k{i}:v{i}" for i in range(5, 8)])
    browser.wait(rows_at_least(8), "the records after the commit")
    browser.screenshot("resume-before-reload")
    browser.reload()
    browser.wait(rows_at_least(3), "the records after the committed offset", timeout=GROUP_WAIT)
    kcat_produce(broker, topic, ["k8:v8"])  # a marker: everything before it has arrived
    browser.wait(row_at(8), "the marker record")
    assert browser.eval(ROWS) == [[0, i, f"k{i}", f"v{i}"] for i in range(5, 9)]
    browser.screenshot("resume-after-reload")
    assert browser.errors() == []


def test_page_resumes_after_its_connection_drops(broker, browser, proxy):
    skip_unless_ws(broker)
    kcat_produce(broker, "dropped", [f"k{i}:v{i}" for i in range(3)])
    browser.goto(f"http://127.0.0.1:{proxy.port}/ui/?topic=dropped&from=earliest")
    browser.wait(rows_at_least(3), "the first records")
    proxy.cut_all()
    browser.wait("Number(document.body.dataset.connections) >= 2", "the page to reconnect")
    kcat_produce(broker, "dropped", [f"k{i}:v{i}" for i in range(3, 6)])
    browser.wait(row_at(5), "the records after the drop")
    # Resumed after the last record shown: nothing twice, nothing missing.
    assert browser.eval(ROWS) == [[0, i, f"k{i}", f"v{i}"] for i in range(6)]
    browser.screenshot("reconnect")
    assert errors_but_the_drop(browser) == []


TAKE_RECORDS = """(async () => {
    // sluice.js in the page, as a page's own code uses it: `count` records of `topic`, and the
    // encodings of the records frames they came in.
    const take = (topic, count, encoding) => new Promise((resolve, reject) => {
        const client = sluice.connect(undefined, { reconnect: false });
        const seen = [];
        const encodings = new Set();
        client.on("message", (m) => {
            if (m.op === "records") {
                encodings.add(m.encoding || "records");
            }
        });
        client.on("error", (e) => reject(new Error(e.code + ": " + e.message)));
        const options = { topics: [topic], from: "earliest", onRecords: (records) => {
            seen.push(...records);
            if (seen.length >= count) {
                client.close();
                resolve({ records: seen, encodings: Array.from(encodings) });
            }
        } };
        if (encoding) {
            options.encoding = encoding;
        }
        client.subscribe(options);
    });
    return { compact: await take(TOPIC, COUNT), records: await take(TOPIC, COUNT, "records") };
})()"""


def test_sluice_js_in_chromium_decodes_compact_frames_from_sluice(broker, browser):
    skip_unless_ws(broker)
    kcat_produce(broker, "compact", [f"k{i}:v{i}" for i in range(50)])
    browser.goto(f"{broker.http_url}/ui/")
    got = browser.eval(TAKE_RECORDS.replace("TOPIC", '"compact"').replace("COUNT", "50"))
    assert got["compact"]["encodings"] == ["compact"]
    assert got["records"]["encodings"] == ["records"]
    assert got["compact"]["records"] == got["records"]["records"]
    assert [(r["topic"], r["partition"], r["offset"], r["key"], r["value"], r["headers"])
            for r in got["compact"]["records"]] == \
        [("compact", 0, i, f"k{i}", f"v{i}", {}) for i in range(50)]
    assert all(isinstance(r["timestamp"], int) and r["timestamp"] > 0
               for r in got["compact"]["records"])
    assert browser.errors() == []


def test_event_source_resumes_with_last_event_id_after_the_stream_drops(broker, browser, proxy):
    kcat_produce(broker, "events", [f"k{i}:v{i}" for i in range(3)])
    skip_unless_sse(broker, "events")
    browser.goto(f"http://127.0.0.1:{proxy.port}/ui/events.html?topic=events&from=earliest")
    browser.wait(rows_at_least(3), "the first events")
    last_id = browser.eval("document.getElementById('last-event-id').textContent")
    assert last_id, "the events carry no id"
    streams_before = len(proxy.requests_text())
    proxy.cut_all()
    browser.wait("Number(document.getElementById('reconnects').textContent) >= 1",
                 "the EventSource to see the drop")
    kcat_produce(broker, "events", [f"k{i}:v{i}" for i in range(3, 6)])
    browser.wait(row_at(5), "the events after the drop")
    rows = browser.eval(EVENT_ROWS)
    assert [(r[0], r[1]) for r in rows] == [(0, i) for i in range(6)]
    # The browser's own reconnect asked to resume after the last event it had seen.
    resumed = [t for t in proxy.requests_text()[streams_before:]
               if t.startswith("GET /topics/events/events")]
    assert resumed, "no new request for the stream after the drop"
    assert any(f"\r\nlast-event-id: {last_id}\r\n" in t.lower() for t in resumed), resumed
    browser.screenshot("events-resume")
    assert errors_but_the_drop(browser) == []
