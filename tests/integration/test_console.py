"""The built-in console (served at / to browsers) in headless Chromium, page by page, and the
HTTP routes it stands on (/v1/queues, /v1/console/...).

One sluice (SQS listener open) and one Chromium page (js/browser_driver.js, as in
test_browser.py) for the module. Real clients make the state each page shows and check the
effect of its actions: confluent-kafka and kcat produce and consume, AdminClient sees topics
created, deleted and reconfigured, a consumer sees offsets reset, boto3 sees messages redriven
and purged. Every page is checked with axe-core (serious and critical violations fail: labels,
names, contrast...) and walked with the Tab key (its actions are reachable from the keyboard).
Screenshots of every page are saved under $SLUICE_TEST_ARTIFACTS/console/ when that is set,
else under <build dir>/test-artifacts/console/.
"""
import json
import os
import socket
import struct
import time

import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from harness import (Sluice, kafka_request, read_frame, sluice_binary, upstream_rerun_mode,
                     wait_for)
from sqs_support import arn, client
from test_browser import Browser, kcat_produce, kcat_read_one

WAIT = 30  # seconds, the bound on each page wait
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def artifacts_dir():
    base = os.environ.get("SLUICE_TEST_ARTIFACTS") or os.path.join(
        os.path.dirname(os.path.abspath(sluice_binary())), "test-artifacts")
    path = os.path.join(base, "console")
    os.makedirs(path, exist_ok=True)
    return path


def screenshot(browser, name):
    browser.call("a screenshot", cmd="screenshot",
                 path=os.path.join(artifacts_dir(), name + ".png"))


@pytest.fixture(scope="module")
def server():
    s = Sluice(sqs=True).start()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def page(server):
    b = Browser()
    try:
        # A short poll interval: the page's waits see each change sooner.
        b.goto(f"{server.http_url}/?interval=300")
        b.wait("Number(document.body.dataset.polls) >= 1", "the console's first poll")
        yield b
    finally:
        b.close()


def page_errors(browser):
    """Script errors. An HTTP error status the page asked for is not one: the page shows it
    (a request racing a delete may meet a 404)."""
    return [e for e in browser.errors()
            if "net::ERR_" not in e and "Failed to load resource" not in e]


def queue_view(server, name):
    r = requests.get(f"{server.http_url}/v1/queues/{name}", timeout=10)
    return r.json() if r.status_code == 200 else None


# --- GET / and the queue endpoints over plain HTTP ---------------------------------------------

def test_root_is_the_console_for_browsers_and_the_rest_proxy_for_others(server):
    plain = requests.get(server.http_url + "/", timeout=10)
    assert plain.status_code == 200
    assert plain.headers["Content-Type"].startswith("application/vnd.kafka.v2+json")
    assert plain.json() == {}
    for accept in ("*/*", "application/json", "application/vnd.kafka.v2+json"):
        r = requests.get(server.http_url + "/", headers={"Accept": accept}, timeout=10)
        assert r.json() == {}, accept
    html = requests.get(server.http_url + "/", headers={"Accept": BROWSER_ACCEPT}, timeout=10)
    assert html.status_code == 200
    assert html.headers["Content-Type"] == "text/html; charset=utf-8"
    assert html.headers["Vary"] == "Accept"
    assert "<title>sluice console</title>" in html.text
    # The files it loads are served, the plotting library among them.
    for path in ("/ui/console/console.js", "/ui/console/console.css",
                 "/ui/console/vendor/uPlot.iife.min.js", "/ui/console/vendor/uPlot.min.css",
                 "/ui/sluice.js"):
        r = requests.get(server.http_url + path, timeout=10)
        assert r.status_code == 200 and len(r.content) > 0, path
        assert path.split("/")[-1] in html.text, path
    assert "uPlot" in requests.get(server.http_url + "/ui/console/vendor/uPlot.iife.min.js",
                                   timeout=10).text


def test_queue_endpoints_and_their_errors(server):
    c = client(server)
    c.create_queue(QueueName="errs-dlq")
    c.create_queue(QueueName="errs", Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn("errs-dlq"),
                                     "maxReceiveCount": 3})})
    url = server.http_url
    listed = {q["name"]: q for q in requests.get(url + "/v1/queues", timeout=10).json()["queues"]}
    assert listed["errs"]["dead_letter_queue"] == "errs-dlq"
    assert listed["errs"]["dead_letter_queue_depth"] == 0
    assert listed["errs-dlq"]["dead_letter_sources"] == ["errs"]
    assert listed["errs-dlq"]["available"] == 0

    def error(method, path, status, needle, **kw):
        kw.setdefault("headers", {"Content-Type": "application/json"})  # 415 without it
        r = requests.request(method, url + path, timeout=10, **kw)
        assert r.status_code == status, (path, r.status_code, r.text)
        body = r.json()
        assert body["error_code"] == status and needle in body["message"], body
        return body

    error("GET", "/v1/queues/missing", 404, "queue missing not found")
    error("GET", "/v1/queues/missing/move-tasks", 404, "queue missing not found")
    error("POST", "/v1/queues/missing/redrive", 404, "queue missing not found")
    error("POST", "/v1/queues/errs/redrive", 400, "not a dead-letter queue")
    error("POST", "/v1/queues/errs-dlq/redrive", 400, "not JSON", data="{nope")
    error("POST", "/v1/queues/errs-dlq/redrive", 400, "max_per_second",
          json={"max_per_second": 0})
    error("POST", "/v1/queues/errs-dlq/redrive", 400, "unknown field", json={"dest": "errs"})
    error("POST", "/v1/queues/errs-dlq/redrive", 404, "destination queue gone not found",
          json={"destination": "gone"})
    # Nothing was started by the bad requests.
    assert requests.get(url + "/v1/queues/errs-dlq/move-tasks", timeout=10).json()["tasks"] == []
    # The server still serves.
    assert requests.get(url + "/v1/queues/errs", timeout=10).json()["name"] == "errs"


# --- the console's own routes over plain HTTP ----------------------------------------------------

JSON_BODY = {"Content-Type": "application/json"}


def admin(server):
    return AdminClient({"bootstrap.servers": server.bootstrap})


def create_topics(server, names, partitions=1):
    a = admin(server)  # kept until every future is done (its destruction fails them)
    for f in a.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        f.result(30)


def topic_config(server, topic, name):
    """A topic config's value as AdminClient describes it."""
    a = admin(server)
    res = ConfigResource("topic", topic)
    return a.describe_configs([res])[res].result(30)[name].value


def produce(server, topic, records):
    """records: (key, value, headers, partition) tuples, sent with confluent-kafka."""
    p = Producer({"bootstrap.servers": server.bootstrap})
    for key, value, headers, partition in records:
        p.produce(topic, value=value, key=key, headers=headers, partition=partition)
    assert p.flush(30) == 0


def committed(server, group, topic, partitions):
    c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(topic, p) for p in partitions], timeout=30)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def commit_as(server, group, topic, offsets):
    """Commits {partition: offset} for a group with no live member (a consumer that leaves)."""
    c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                 asynchronous=False)
    finally:
        c.close()


def test_console_routes_answer_clear_errors(server):
    url = server.http_url
    info = requests.get(url + "/v1/console/overview", timeout=10).json()
    assert info["version"] and info["mode"] in ("native", "upstream")
    assert info["brokers"] and info["brokers"][0]["port"] > 0
    create_topics(server, ["resets"], 2)
    commit_as(server, "reset-errs", "resets", {0: 0})

    def error(method, path, status, needle, **kw):
        kw.setdefault("headers", JSON_BODY)
        r = requests.request(method, url + path, timeout=30, **kw)
        assert r.status_code == status, (path, r.status_code, r.text)
        assert needle in r.json()["message"], r.json()

    reset = "/v1/console/groups/reset-errs/reset-offsets"
    error("POST", reset, 400, "not JSON", data="{nope")
    error("POST", reset, 400, "topic", json={"to": "earliest"})
    error("POST", reset, 400, "to must be", json={"topic": "resets", "to": "soon"})
    error("POST", reset, 400, "timestamp", json={"topic": "resets", "to": "timestamp"})
    error("POST", reset, 400, "offset", json={"topic": "resets", "to": "offset", "offset": -1})
    error("POST", reset, 400, "unknown field", json={"topic": "resets", "to": "latest", "x": 1})
    error("POST", reset, 400, "no partition 7",
          json={"topic": "resets", "to": "latest", "partitions": [7]})
    error("POST", reset, 404, "missing-topic", json={"topic": "missing-topic", "to": "latest"})
    error("POST", reset, 415, "Content-Type", headers={}, data="{}")
    error("DELETE", "/v1/console/groups/no-such-group", 404, "no-such-group", json={})
    if info["queues"]:
        error("POST", "/v1/console/queues/no-such-queue/purge", 404, "no-such-queue", json={})
    # The group is untouched by the refused requests.
    assert committed(server, "reset-errs", "resets", [0]) == {0: 0}


# --- the console in Chromium ---------------------------------------------------------------------

SERIOUS = ("serious", "critical")


def show(browser, hash_, name):
    """Shows a page (again when it is the one shown) and waits for it to be drawn."""
    browser.eval(f"(window.sluiceConsole.show({json.dumps(hash_)}), null)")
    browser.wait(f"document.body.dataset.ready === '{name}'", f"the {name} page")


def polled(browser):
    """Waits for one more refresh of the page shown."""
    n = browser.eval("Number(document.body.dataset.polls || 0)")
    browser.wait(f"Number(document.body.dataset.polls || 0) > {n}", "a refresh")


def check_page(browser, name, actions=()):
    """axe-core on the page as it is (serious or critical violations fail), the actions named
    (element ids) reachable with the Tab key, numbers right-aligned, and a screenshot."""
    violations = browser.call(f"axe on the {name} page", timeout=60, cmd="axe")
    bad = [v for v in violations if v["impact"] in SERIOUS]
    assert bad == [], json.dumps(bad, indent=1)
    if actions:
        walk = browser.call(f"tabbing through the {name} page", timeout=60, cmd="tab_walk",
                            max=400)
        # An action is an element id, or data-name=value ("save=retention.ms").
        ids = {f["id"] for f in walk} | {f"{k}={v}" for f in walk for k, v in f["data"].items()}
        missing = [a for a in actions if a not in ids]
        assert missing == [], (missing, walk[:40])
    aligned = browser.eval("""Array.from(document.querySelectorAll('#view th.num, #view td.num'),
        c => getComputedStyle(c).textAlign).filter(a => a !== 'right')""")
    assert aligned == []
    screenshot(browser, name)


def confirm(browser):
    browser.wait("document.body.dataset.confirm === 'open'", "the confirmation dialog")
    browser.click("#confirm-ok")
    browser.wait("document.body.dataset.confirm === undefined", "the dialog to close")


def test_overview_page(server, page):
    create_topics(server, ["overview-a", "overview-b"], 3)
    show(page, "#/overview", "overview")
    page.wait("document.getElementById('ov-version') !== null", "the overview's figures")
    assert page.eval("document.getElementById('ov-version').textContent").startswith("sluice ")
    topics = int(page.wait("Number(document.getElementById('ov-topics').textContent) >= 2 && "
                           "document.getElementById('ov-topics').textContent", "topic count"))
    assert topics >= 2
    broker = page.eval("document.querySelector('#broker-table tbody tr').children[1].textContent")
    assert broker.endswith(":" + str(server.kafka_port)), broker
    # Nothing but the table under the brokers' heading when they are known.
    assert page.eval("document.getElementById('overview-brokers').textContent"
                     ".includes('null')") is False
    mode = page.eval("document.getElementById('ov-mode').textContent")
    assert mode.startswith("upstream" if upstream_rerun_mode() else "native"), mode
    check_page(page, "overview")


def test_topics_page_search_sort_paging_create_and_delete(server, page):
    names = [f"bulk-{i:03d}" for i in range(60)]
    create_topics(server, names)
    produce(server, "bulk-007", [(b"k", b"v", None, 0)] * 3)
    show(page, "#/topics", "topics")
    page.wait("Number(document.getElementById('topic-count').textContent) >= 60", "60 topics")
    # Paging: 50 a page.
    assert page.eval("document.querySelectorAll('#topic-rows tr').length") == 50
    page.fill("#topic-search", "bulk-0")
    page.wait("document.getElementById('topic-count').textContent === '60'", "the search")
    page.click("#topic-next")
    page.wait("document.querySelectorAll('#topic-rows tr').length === 10", "the second page")
    page.fill("#topic-search", "bulk-007")
    page.wait("document.getElementById('topic-count').textContent === '1'", "one match")
    row = "document.querySelector('#topic-rows tr[data-topic=\"bulk-007\"]')"
    page.wait(f"{row} && {row}.children[3].textContent === '3'", "its record count")
    # Sorting by name, descending.
    page.fill("#topic-search", "bulk-")
    page.click("button.sort[data-sort='name']")  # by name already: now descending
    page.wait("document.querySelector('#topic-rows tr').dataset.topic === 'bulk-059'",
              "the descending sort")
    check_page(page, "topics", actions=["topic-search", "create-topic-name",
                                        "create-topic-submit", "topic-next"])

    # Create: AdminClient sees it with its partitions and config.
    page.fill("#create-topic-name", "made-in-console")
    page.fill("#create-topic-partitions", "3")
    page.fill("#create-topic-configs", "retention.ms=123456")
    page.click("#create-topic-submit")
    page.wait("document.getElementById('topic-action').dataset.created === 'made-in-console'",
              "the topic created")
    md = admin(server).list_topics(timeout=30)
    assert len(md.topics["made-in-console"].partitions) == 3
    assert topic_config(server, "made-in-console", "retention.ms") == "123456"

    # Delete, after the confirmation: gone for AdminClient.
    page.fill("#topic-search", "made-in-console")
    button = "button[data-delete-topic='made-in-console']"
    page.wait(f"document.querySelector(\"{button}\") !== null", "the delete button")
    page.click(button)
    screenshot(page, "topics-confirm-delete")
    confirm(page)
    page.wait("document.getElementById('topic-action').dataset.deleted === 'made-in-console'",
              "the topic deleted")
    wait_for(lambda: "made-in-console" not in admin(server).list_topics(timeout=30).topics, 30,
             "the topic gone")
    page.fill("#topic-search", "")


def test_topic_page_partitions_configs_and_groups(server, page):
    create_topics(server, ["detail"], 2)
    produce(server, "detail", [(b"k", b"v0", None, 0), (b"k", b"v1", None, 0),
                               (b"k", b"v2", None, 1)])
    commit_as(server, "detail-readers", "detail", {0: 1})
    show(page, "#/topic/detail", "topic")
    rows = "Array.from(document.querySelectorAll('#partition-rows tr'), tr => Array.from(" \
           "tr.children, td => td.textContent))"
    cells = page.eval(rows)
    assert [c[0] for c in cells] == ["0", "1"]
    assert cells[0][2:5] == ["0", "2", "2"] and cells[1][3] == "1"
    # Sizes in both modes (over a gateway each broker is asked with DescribeLogDirs; its
    # answer is kept 5 s, so a new topic's may take a refresh or two), and no note saying why
    # they are unknown.
    size_cell = "document.querySelector('#partition-rows tr:first-child td:nth-child(6)')"
    page.wait(f"{size_cell} !== null && {size_cell}.textContent !== '–'", "partition 0's size")
    assert page.eval("document.getElementById('sizes-note')") is None
    page.wait("document.querySelector('#topic-group-table tr[data-group=\"detail-readers\"]')"
              " !== null", "the group reading it")
    # Edit a config: AdminClient sees the new value.
    page.wait("document.querySelector('input[data-config=\"retention.ms\"]') !== null",
              "the configs")
    page.fill("input[data-config='retention.ms']", "98765")
    page.click("button[data-save='retention.ms']")
    page.wait("document.getElementById('config-result').dataset.saved === 'retention.ms'",
              "the config saved")
    assert topic_config(server, "detail", "retention.ms") == "98765"
    check_page(page, "topic", actions=["save=retention.ms", "reset=retention.ms"])
    # Reset it: back to the default for AdminClient, and the page offers no Reset any more.
    page.eval("delete document.getElementById('config-result').dataset.saved")
    page.click("button[data-reset='retention.ms']")
    page.wait("document.getElementById('config-result').dataset.saved === 'retention.ms'",
              "the config reset")
    assert topic_config(server, "detail", "retention.ms") == "604800000"
    assert page.eval("document.querySelector(\"button[data-reset='retention.ms']\")") is None


def log_dirs(bootstrap):
    """{(topic, partition): bytes} from a DescribeLogDirs v1 asked of the broker itself (the
    cluster's own answer, which the console's sizes must repeat)."""
    with socket.create_connection(("127.0.0.1", int(bootstrap.rsplit(":", 1)[1])), 10) as s:
        s.sendall(kafka_request(35, 1, 7, struct.pack(">i", -1)))  # null topics: every one
        frame = read_frame(s)
    pos = 8  # correlation id, throttle time
    def take(fmt):
        nonlocal pos
        values = struct.unpack_from(fmt, frame, pos)
        pos += struct.calcsize(fmt)
        return values
    def string():
        nonlocal pos
        (n,) = take(">h")
        pos += n
        return frame[pos - n:pos].decode()
    out = {}
    for _ in range(take(">i")[0]):
        error, _dir = take(">h")[0], string()
        assert error == 0, error
        for _ in range(take(">i")[0]):
            topic = string()
            for _ in range(take(">i")[0]):
                partition, size, _lag, _future = take(">iqq?")
                out[(topic, partition)] = size
    return out


def test_partition_sizes_are_the_brokers_log_sizes(server):
    """GET /v1/console/partition-sizes: each partition's size as DescribeLogDirs tells it,
    embedded from the log and over a gateway from the cluster's brokers."""
    create_topics(server, ["sized"], 2)
    produce(server, "sized", [(b"k", b"x" * 1000, None, 0)] * 5)
    truth = log_dirs(server.bootstrap)
    assert truth[("sized", 0)] > 5000 and ("sized", 1) in truth

    def sizes():
        r = requests.get(server.http_url + "/v1/console/partition-sizes", timeout=30)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["unknown"] == [], body
        return {(p["topic"], p["partition"]): p["size_bytes"] for p in body["partitions"]}

    # (Over a gateway the answer is kept 5 s: wait for one asked after the produce.)
    got = wait_for(lambda: (lambda s: s if ("sized", 0) in s else None)(sizes()), 30,
                   "sizes with the new topic")
    assert got[("sized", 0)] == truth[("sized", 0)]
    assert got[("sized", 1)] == truth[("sized", 1)]


def test_message_browser(server, page):
    create_topics(server, ["browse"], 2)
    t0 = int(time.time() * 1000)
    records = [(f"k{i}".encode(), f"plain {i}".encode(), [("trace", f"t-{i}".encode())], 0)
               for i in range(5)]
    records.append((b"jk", b'{"order": 7, "items": ["a", "b"]}', [("type", b"json")], 0))
    records.append((b"bin", bytes([0, 1, 2, 0xfe, 0xff]), None, 0))
    records.append((b"other", b"on partition 1", None, 1))
    produce(server, "browse", records)
    show(page, "#/messages?topic=browse&partition=0", "messages")
    page.wait("document.body.dataset.browsed === '7'", "the last records of partition 0")
    values = "Array.from(document.querySelectorAll('#browse-rows td.value'), td => td.textContent)"
    got = page.eval(values)
    assert got[0] == "plain 0" and len(got) == 7
    # JSON pretty-printed, binary as hex, then base64.
    assert got[5] == json.dumps({"order": 7, "items": ["a", "b"]}, indent=2)
    assert got[6] == "00 01 02 fe ff"
    assert page.eval("document.querySelectorAll('#browse-rows td.headers')[1].textContent") == \
        "trace: t-1"
    page.eval("(() => { const s = document.getElementById('browse-binary');"
              " s.value = 'base64'; s.dispatchEvent(new Event('change')); })()")
    assert page.eval(f"{values}[6]") == "AAEC/v8="
    # A search over what was fetched.
    page.fill("#browse-filter", "t-3")
    assert page.eval("Array.from(document.querySelectorAll('#browse-rows tr'))"
                     ".filter(tr => !tr.hidden).map(tr => tr.dataset.offset)") == ["3"]
    assert page.eval("document.getElementById('browse-count').textContent") == "1 of 7"
    page.fill("#browse-filter", "")
    # Download: the records fetched, as JSON.
    page.click("#browse-download")
    page.wait("window.sluiceConsole.last.download === 7", "the download")
    check_page(page, "messages", actions=["browse-topic", "browse-fetch", "browse-filter",
                                          "browse-download"])
    # From an offset, with a limit.
    page.call("from", cmd="select", selector="#browse-from", value="offset")
    page.fill("#browse-offset", "2")
    page.fill("#browse-limit", "2")
    page.click("#browse-fetch")
    page.wait("document.body.dataset.browsed === '2'", "two records from offset 2")
    assert page.eval("Array.from(document.querySelectorAll('#browse-rows tr'),"
                     " tr => tr.dataset.offset)") == ["2", "3"]
    # From a time: everything produced after t0 on partition 1.
    page.call("from", cmd="select", selector="#browse-from", value="timestamp")
    page.eval("document.getElementById('browse-time').value = new Date(%d - "
              "new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 19)" % (t0 - 1000))
    page.fill("#browse-partition", "1")
    page.fill("#browse-limit", "50")
    page.click("#browse-fetch")
    page.wait("document.body.dataset.browsed === '1'", "the record of partition 1")
    assert page.eval(f"{values}") == ["on partition 1"]


def test_live_tail_and_produce(server, page):
    create_topics(server, ["tailed"], 2)
    produce(server, "tailed", [(b"old", b"before the tail", [("h", b"1")], 0)])
    show(page, "#/tail", "tail")
    page.fill("#tail-topic", "tailed")
    page.call("from", cmd="select", selector="#tail-from", value="earliest")
    page.click("#tail-start")
    page.wait("document.body.dataset.tailing === 'tailed'", "the tail's subscription")
    values = "Array.from(document.querySelectorAll('#tail-rows td.value'), td => td.textContent)"
    page.wait(f"{values}.includes('before the tail')", "the earlier record (from earliest)")
    produce(server, "tailed", [(b"new", b"after the tail", [("trace", b"abc")], 1)])
    page.wait(f"{values}[0] === 'after the tail'", "the new record on top")
    assert page.eval("document.querySelector('#tail-rows td.headers').textContent") == \
        "trace: abc"
    check_page(page, "tail", actions=["tail-topic", "tail-start", "tail-stop"])
    page.click("#tail-stop")

    # Produce with a key, headers and a partition: a Kafka consumer reads them back.
    show(page, "#/produce?topic=tailed", "produce")
    page.fill("#produce-partition", "1")
    page.fill("#produce-key", "form-key")
    page.fill("#produce-value", "from the console")
    page.fill("#produce-headers", "source: console\ntrace: xyz")
    page.click("#produce-send")
    offset = int(page.wait("document.getElementById('produce-result').dataset.offset",
                           "the produce ack"))
    assert page.eval("document.getElementById('produce-result').dataset.partition") == "1"
    c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "produce-check",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("tailed", 1, offset)])
        msg = wait_for(lambda: c.poll(0.5), 30, "the record produced by the console")
        assert msg.key() == b"form-key" and msg.value() == b"from the console"
        assert sorted(msg.headers()) == [("source", b"console"), ("trace", b"xyz")]
    finally:
        c.close()
    check_page(page, "produce", actions=["produce-topic", "produce-headers", "produce-send"])


def test_groups_lag_plot_reset_and_delete(server, page):
    topic, group = "lagging", "console-group"
    create_topics(server, [topic], 2)
    produce(server, topic, [(b"k", f"v{i}".encode(), None, 0) for i in range(10)] +
            [(b"k", b"p1", None, 1)])
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                         "client.id": "console-consumer", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        got = []

        def four():
            m = consumer.poll(0.5)
            if m is not None and not m.error() and m.partition() == 0:
                got.append(m)
            return len(got) >= 4

        wait_for(four, 60, "four records for the consumer", interval=0)
        # Partition 0 committed at 4 (lag 6); partition 1 nothing committed.
        consumer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)

        show(page, "#/groups", "groups")
        row = f"document.querySelector('#group-rows tr[data-group=\"{group}\"]')"
        page.wait(f"{row} !== null && {row}.dataset.lag === '6'", "the group's lag of 6")
        series = ("(() => { const s = window.sluiceConsole; if (!s.plot) return null;"
                  f" const i = s.plotGroups.indexOf('{group}'); if (i < 0) return null;"
                  " return s.plot.data[i + 1].filter(v => v !== null); })()")
        points = page.wait(f"(({series}) || []).length >= 3 && {series}", "points on the plot")
        assert points[-1] == 6
        # The time axis reads in minutes and seconds before now.
        assert page.eval("window.sluiceConsole.plot.axes[0].values("
                         "window.sluiceConsole.plot, [-65, -5, 0])") == ["-1:05", "-0:05", "0:00"]
        assert page.eval("document.querySelector('#lag-plot canvas') !== null")
        # No two ticks of the time axis read the same.
        ticks = page.eval("window.sluiceConsole.plotTicks")  # as last drawn
        assert ticks and len(ticks) == len(set(ticks)), ticks
        check_page(page, "groups")

        show(page, f"#/group/{group}", "group")
        lag_row = "document.querySelector('#lag-rows tr[data-topic=\"lagging\"][data-partition=\"%d\"]')"
        page.wait(f"{lag_row % 1} !== null", "the uncommitted partition", timeout=60)
        assert page.eval(f"{lag_row % 0}.dataset.lag") == "6"
        assert page.eval(f"{lag_row % 1}.dataset.lag") == "none"
        assert page.eval(f"{lag_row % 1}.children[2].textContent") == "nothing committed"
        assert page.eval(f"{lag_row % 1}.children[3].textContent") == "1"  # its end offset
        assert page.eval(f"{lag_row % 1}.children[4].textContent") == "no commit"
        assert "console-consumer" in page.eval(
            "document.getElementById('member-table').textContent")
        # A group with members: no reset, and the page says why.
        assert page.eval("document.getElementById('reset-submit').disabled") is True
        check_page(page, "group-with-members", actions=["reset-topic"])
    finally:
        consumer.close()

    # Empty now: reset to earliest, then to an offset, then to the latest; a consumer sees each.
    page.wait("document.getElementById('reset-submit').disabled === false", "an empty group",
              timeout=60)
    page.fill("#reset-topic", topic)
    page.call("to", cmd="select", selector="#reset-to", value="earliest")
    page.click("#reset-submit")
    confirm(page)
    page.wait("document.getElementById('group-action').dataset.reset === '0:0,1:0'",
              "the reset to earliest")
    assert committed(server, group, topic, [0, 1]) == {0: 0, 1: 0}
    page.call("to", cmd="select", selector="#reset-to", value="offset")
    page.fill("#reset-offset", "7")
    page.click("#reset-submit")
    confirm(page)
    # Beyond partition 1's end (1): clamped to it.
    page.wait("document.getElementById('group-action').dataset.reset === '0:7,1:1'",
              "the reset to offset 7")
    assert committed(server, group, topic, [0, 1]) == {0: 7, 1: 1}
    page.call("to", cmd="select", selector="#reset-to", value="timestamp")
    page.eval("document.getElementById('reset-time').value = new Date(Date.now() + 3600000 - "
              "new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 19)")
    page.click("#reset-submit")
    confirm(page)
    page.wait("document.getElementById('group-action').dataset.reset === '0:10,1:1'",
              "the reset to a time after every record (the end)")
    assert committed(server, group, topic, [0, 1]) == {0: 10, 1: 1}
    check_page(page, "group-empty", actions=["reset-topic", "reset-to", "reset-submit",
                                             "group-delete"])

    # Delete, after the confirmation: AdminClient no longer lists it.
    page.click("#group-delete")
    confirm(page)
    page.wait("document.body.dataset.ready === 'groups'", "back on the groups page")
    listed = [g.id for g in admin(server).list_groups(timeout=30)]
    assert group not in listed


def test_queues_redrive_with_a_rate_and_purge(server, page):
    c = client(server)
    dlq = c.create_queue(QueueName="console-dlq")["QueueUrl"]
    src = c.create_queue(QueueName="console-src", Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn("console-dlq"),
                                     "maxReceiveCount": 1})})["QueueUrl"]
    c.send_message(QueueUrl=src, MessageBody="poison")
    got = c.receive_message(QueueUrl=src, VisibilityTimeout=0, WaitTimeSeconds=5)["Messages"]
    assert got[0]["Body"] == "poison"
    # The second receive moves it to the dead-letter queue instead of delivering it.
    assert c.receive_message(QueueUrl=src, VisibilityTimeout=0,
                             WaitTimeSeconds=1).get("Messages", []) == []
    wait_for(lambda: (queue_view(server, "console-dlq") or {}).get("available") == 1, 30,
             "the message in the dead-letter queue")

    show(page, "#/queues", "queues")
    src_row = "document.querySelector('#queue-rows tr[data-queue=\"console-src\"]')"
    page.wait(f"{src_row} !== null && {src_row}.children[6].textContent === '1'",
              "the source queue's DLQ depth of 1")
    button = "button.redrive[data-queue=\"console-dlq\"]"
    page.wait(f"document.querySelector('{button}') !== null", "the Redrive button")
    check_page(page, "queues", actions=["redrive-rate-console-dlq"])
    # A rate out of bounds is refused on the page, before any request.
    page.fill("#redrive-rate-console-dlq", "900")
    page.click(button)
    status = "document.querySelector('output.redrive-status[data-queue=\"console-dlq\"]')"
    page.wait(f"{status} && {status}.textContent.includes('1 to 500')", "the rate's refusal")
    page.fill("#redrive-rate-console-dlq", "50")
    page.click(button)
    confirm(page)
    page.wait(f"{status} && {status}.dataset.status === 'COMPLETED'", "the move task to complete")
    assert page.eval(f"{status}.dataset.moved") == "1"
    assert "at most 50/s" in page.eval(f"{status}.textContent")
    page.wait(f"{src_row}.dataset.available === '1'", "the message back in the source queue")
    screenshot(page, "queues-after-redrive")
    back = c.receive_message(QueueUrl=src, VisibilityTimeout=0, WaitTimeSeconds=5)["Messages"]
    assert [m["Body"] for m in back] == ["poison"]
    assert c.receive_message(QueueUrl=dlq, WaitTimeSeconds=0).get("Messages", []) == []

    # Purge, after the confirmation: boto3 receives nothing.
    c.send_message(QueueUrl=src, MessageBody="to be purged")
    page.wait(f"{src_row}.dataset.available === '2'", "two messages in the source queue")
    page.click("button.purge[data-queue=\"console-src\"]")
    confirm(page)
    page.wait("document.getElementById('queue-action').dataset.purged === 'console-src'",
              "the purge")
    page.wait(f"{src_row}.dataset.available === '0'", "the source queue empty")
    assert c.receive_message(QueueUrl=src, WaitTimeSeconds=1).get("Messages", []) == []
    assert page_errors(page) == []


def test_users_page_in_either_mode_and_acls_without_an_authorizer(server, page):
    """The users page changes the users where this mode keeps them (native: the data dir's
    file; upstream: the cluster's _sluice_security, which every gateway reads); with no
    authorizer, the ACLs page says why it has nothing to show."""
    show(page, "#/users", "users")
    page.fill("#user-create-name", "eve")
    page.fill("#user-create-password", "eve-Secret-7")
    page.click("#user-create-submit")
    page.wait("document.getElementById('user-action').dataset.created === 'eve'", "eve created")
    row = "document.querySelector('#user-rows tr[data-user=\"eve\"]')"
    page.wait(f"{row} !== null", "eve's row")
    assert page.eval(f"{row}.dataset.mechanisms") == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    if upstream_rerun_mode():
        c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "security-reader",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            c.assign([TopicPartition("_sluice_security", 0, 0)])
            found = wait_for(lambda: next((m for m in iter(lambda: c.poll(0.5), None)
                                           if not m.error() and m.key() == b"user:eve"), None),
                             30, "eve's record in _sluice_security")
            assert b"scram-sha-512=" in found.value() and b"eve-Secret-7" not in found.value()
        finally:
            c.close()
    else:
        with open(os.path.join(server.data_dir, "credentials")) as f:
            stored = f.read()
        assert "user eve " in stored and "eve-Secret-7" not in stored
    page.click("button[data-delete-user='eve']")
    confirm(page)
    page.wait(f"{row} === null", "eve's row gone")
    assert "eve-Secret-7" not in server.log_text()

    show(page, "#/acls", "acls")
    shown = page.wait("(document.querySelector('#view p.error') &&"
                      " document.querySelector('#view p.error').textContent) ||"
                      " (document.getElementById('acl-count').textContent === '0' && 'none')",
                      "the ACL listing")
    if upstream_rerun_mode():
        # The cluster's answer: its own ACLs (none here), or its refusal, shown.
        assert shown == "none" or "(400)" in shown, shown
    else:
        assert "ACLs:" in shown and "(400)" in shown, shown
    assert page_errors(page) == []
