"""The built-in console (served at / to browsers) in headless Chromium, and the queue views of
the HTTP front it uses (/v1/queues).

One sluice (SQS listener open) and one Chromium page (js/browser_driver.js, as in
test_browser.py) for the module. Real clients make the state the console shows: kcat creates
and fills topics, a confluent-kafka consumer commits partway (lag), boto3 moves a message into
a dead-letter queue. Screenshots are saved under <build dir>/test-artifacts/console/.
"""
import json
import os

import pytest
import requests
from confluent_kafka import Consumer, TopicPartition

from harness import Sluice, sluice_binary, wait_for
from sqs_support import arn, client
from test_browser import Browser, kcat_produce, kcat_read_one

WAIT = 30  # seconds, the bound on each page wait
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def artifacts_dir():
    path = os.path.join(os.path.dirname(os.path.abspath(sluice_binary())), "test-artifacts",
                        "console")
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
    return [e for e in browser.errors() if "net::ERR_" not in e]


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


# --- the console in Chromium ---------------------------------------------------------------------

def test_topic_list_shows_a_topic_kcat_created(server, page):
    kcat_produce(server, "kcat-made", [f"k{i}:v{i}" for i in range(3)])
    row = "document.querySelector('#topic-rows tr[data-topic=\"kcat-made\"][data-partition=\"0\"]')"
    page.wait(f"{row} !== null", "the kcat topic in the topic list")
    # Columns: topic, partition, start offset, end offset, records, size, records/s, bytes/s.
    page.wait(f"{row}.children[3].textContent === '3'", "its end offset")
    cells = page.eval(f"Array.from({row}.children, td => td.textContent)")
    assert cells[0] == "kcat-made" and cells[2] == "0" and cells[4] == "3"
    assert cells[5].endswith("B"), cells  # the partition's size from /metrics
    screenshot(page, "topics")

    # The produce form writes through /ws; kcat reads the record back.
    page.fill("#produce-topic", "kcat-made")
    page.fill("#produce-key", "form-key")
    page.fill("#produce-value", "from the console")
    page.click("#produce-send")
    offset = int(page.wait("document.getElementById('produce-result').dataset.offset",
                           "the produce ack"))
    assert offset == 3
    assert kcat_read_one(server, "kcat-made", offset) == f"form-key|from the console|0|{offset}"


def test_group_lag_and_its_plot(server, page):
    topic, group = "lagging", "console-group"
    kcat_produce(server, topic, [f"k{i}:v{i}" for i in range(10)])
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                         "client.id": "console-consumer", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        got = []

        def four():
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
            return len(got) >= 4

        wait_for(four, 60, "four records for the consumer", interval=0)
        consumer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)

        row = f"document.querySelector('#group-rows tr[data-group=\"{group}\"]')"
        page.wait(f"{row} !== null && {row}.dataset.lag === '6'", "the group's lag of 6")
        page.wait(f"{row}.children[2].textContent.includes('console-consumer')",
                  "the group's member", timeout=60)
        assert f"{topic}[0]" in page.eval(f"{row}.children[3].textContent")
        # The plot's series for the group has points (several polls' worth), the last one 6.
        series = ("(() => { const s = window.sluiceConsole; if (!s.plot) return null;"
                  f" const i = s.plotGroups.indexOf('{group}'); if (i < 0) return null;"
                  " return s.plot.data[i + 1].filter(v => v !== null); })()")
        points = page.wait(f"(({series}) || []).length >= 3 && {series}", "points on the plot")
        assert points[-1] == 6
        assert page.eval("document.querySelector('#lag-plot canvas') !== null")
        screenshot(page, "groups")
    finally:
        consumer.close()


def test_live_tail_shows_a_record_produced_after_it_started(server, page):
    kcat_produce(server, "tailed", ["old:before the tail"])
    page.fill("#tail-topic", "tailed")
    page.click("#tail-start")
    page.wait("document.body.dataset.tailing === 'tailed'", "the tail's subscription")
    kcat_produce(server, "tailed", ["new:after the tail"])
    rows = ("Array.from(document.querySelectorAll('#tail-rows tr'),"
            " tr => tr.children[4].textContent)")
    page.wait(f"{rows}.includes('after the tail')", "the record in the live tail")
    assert page.eval(rows) == ["after the tail"]
    screenshot(page, "tail")


def test_redrive_button_moves_a_dead_letter_back(server, page):
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

    src_row = "document.querySelector('#queue-rows tr[data-queue=\"console-src\"]')"
    page.wait(f"{src_row} !== null && {src_row}.children[6].textContent === '1'",
              "the source queue's DLQ depth of 1")
    button = "button.redrive[data-queue=\"console-dlq\"]"
    page.wait(f"document.querySelector('{button}') !== null", "the Redrive button")
    screenshot(page, "queues-before-redrive")
    page.click(button)
    status = "document.querySelector('output.redrive-status[data-queue=\"console-dlq\"]')"
    page.wait(f"{status} && {status}.dataset.status === 'COMPLETED'", "the move task to complete")
    assert page.eval(f"{status}.dataset.moved") == "1"
    page.wait(f"{src_row}.dataset.available === '1'", "the message back in the source queue")
    screenshot(page, "queues-after-redrive")
    back = c.receive_message(QueueUrl=src, WaitTimeSeconds=5)["Messages"]
    assert [m["Body"] for m in back] == ["poison"]
    assert c.receive_message(QueueUrl=dlq, WaitTimeSeconds=0).get("Messages", []) == []
    assert page_errors(page) == []
