"""/metrics after a scripted workload on every front: every line parses as the Prometheus text
exposition format (HELP and TYPE before samples, one TYPE per family, counters named _total,
histograms with cumulative _bucket, _sum and _count), and every metric docs/operations.md
lists is present, with the values the workload implies for the ones it drives."""
import math
import os
import re
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, wait_for
from sqs_support import client

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                   "operations.md")

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\\\|\\"|\\n)*"'
SAMPLE = re.compile(rf"^({NAME})(\{{(?:{LABEL})(?:,{LABEL})*\}})? (\S+)$")
VALUE = re.compile(r"^(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|[+-]?Inf|NaN)$")


def parse(text):
    """{family: {"type": t, "help": h, "samples": [(name, labels_text, value)]}}; asserts the
    format's rules on the way."""
    families = {}
    current = None
    assert text.endswith("\n")
    for n, line in enumerate(text.split("\n")[:-1], 1):
        assert line == line.strip() and line, f"line {n}: {line!r}"
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert re.fullmatch(NAME, name), line
            fam = families.setdefault(name, {"type": None, "help": None, "samples": []})
            assert fam["help"] is None, f"second HELP for {name}"
            assert not fam["samples"], f"HELP for {name} after its samples"
            fam["help"] = help_text
            current = name
            continue
        if line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            fam = families.setdefault(name, {"type": None, "help": None, "samples": []})
            assert fam["type"] is None, f"second TYPE for {name}"
            assert not fam["samples"], f"TYPE for {name} after its samples"
            fam["type"] = kind
            current = name
            continue
        assert not line.startswith("#"), f"line {n}: {line!r}"
        m = SAMPLE.match(line)
        assert m, f"line {n} is not a sample: {line!r}"
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        assert VALUE.match(value), f"line {n}: bad value {value!r}"
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        family = name if name in families else base
        assert family in families, f"line {n}: {name} has no TYPE"
        assert family == current, f"line {n}: {name} outside its family's block"
        families[family]["samples"].append((name, labels, float(value)))
    for name, fam in families.items():
        assert fam["type"], f"{name}: no TYPE"
        if fam["type"] == "counter":
            assert name.endswith("_total"), f"counter {name} is not named _total"
            assert all(v >= 0 for _, _, v in fam["samples"]), name
        if fam["type"] == "histogram":
            check_histogram(name, fam["samples"])
    return families


def check_histogram(name, samples):
    series = {}
    for sample, labels, value in samples:
        key = re.sub(r',?le="[^"]*"', "", labels).replace("{}", "")
        s = series.setdefault(key, {"buckets": [], "sum": None, "count": None})
        if sample.endswith("_bucket"):
            le = re.search(r'le="([^"]*)"', labels).group(1)
            s["buckets"].append((math.inf if le == "+Inf" else float(le), value))
        elif sample.endswith("_sum"):
            s["sum"] = value
        elif sample.endswith("_count"):
            s["count"] = value
    for key, s in series.items():
        assert s["buckets"] and s["sum"] is not None and s["count"] is not None, (name, key)
        bounds = [b for b, _ in s["buckets"]]
        assert bounds == sorted(bounds) and bounds[-1] == math.inf, (name, key)
        counts = [c for _, c in s["buckets"]]
        assert counts == sorted(counts), f"{name}{key}: buckets not cumulative"
        assert counts[-1] == s["count"], (name, key)


def documented_metrics():
    with open(DOC) as f:
        text = f.read()
    names = re.findall(r"^\| `(sluice_[a-z0-9_]+)`", text, re.M)
    assert len(names) >= 30, "docs/operations.md lists the metrics in a table"
    return names


def scrape(broker):
    with urllib.request.urlopen(f"http://127.0.0.1:{broker.http_port}/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def value(families, name, family=None, **labels):
    want = {k: str(v) for k, v in labels.items()}
    found = []
    for sample, text, v in families[family or name]["samples"]:
        if sample != name:
            continue
        got = dict(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', text))
        if all(got.get(k) == w for k, w in want.items()):
            found.append(v)
    assert len(found) == 1, f"{name}{labels}: {len(found)} series"
    return found[0]


@pytest.fixture(scope="module")
def worked():
    """A sluice on which every front did some work: Kafka produce and a consumer group that
    committed half, REST produce, a WebSocket-free HTTP request, an SQS queue with a message
    in flight and a dead-letter queue."""
    s = Sluice(sqs=True).start()
    try:
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(timeout=10)
        p = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0})
        for i in range(100):
            p.produce("orders", b"v" * 100, partition=i % 2)
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "billing",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("orders", 0, 20), TopicPartition("orders", 1, 50)],
                 asynchronous=False)
        c.close()
        # A reader of all of partition 0 (records out).
        r = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "reader",
                      "enable.auto.commit": False})
        r.assign([TopicPartition("orders", 0, 0)])
        seen = 0
        deadline = time.time() + 30
        while seen < 50 and time.time() < deadline:
            m = r.poll(1)
            if m is not None and not m.error():
                seen += 1
        r.close()
        assert seen == 50
        body = (b'{"records":[{"value":{"n":1},"partition":1},'
                b'{"value":{"n":2},"partition":1}]}')
        req = urllib.request.Request(
            f"http://127.0.0.1:{s.http_port}/topics/orders", data=body, method="POST",
            headers={"Content-Type": "application/vnd.kafka.json.v2+json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
        sqs = client(s)
        dlq = sqs.create_queue(QueueName="jobs-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        q = sqs.create_queue(QueueName="jobs", Attributes={
            "RedrivePolicy": '{"deadLetterTargetArn":"%s","maxReceiveCount":"5"}' % dlq_arn})[
            "QueueUrl"]
        for i in range(3):
            sqs.send_message(QueueUrl=q, MessageBody=f"job {i}")
        sqs.send_message(QueueUrl=dlq, MessageBody="dead")
        got = wait_for(lambda: sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=1,
                                                   VisibilityTimeout=600).get("Messages"),
                       10, "a message to receive")
        assert len(got) == 1
        yield s
    finally:
        s.close()


def test_every_line_parses_and_every_documented_metric_is_there(worked):
    families = parse(scrape(worked))
    missing = [n for n in documented_metrics() if n not in families]
    assert missing == [], f"documented but absent from /metrics: {missing}"
    undocumented = [n for n in families if n not in documented_metrics()]
    assert undocumented == [], f"on /metrics but not in docs/operations.md: {undocumented}"


def test_the_workloads_figures(worked):
    families = parse(scrape(worked))
    # 50 Kafka records on each partition, and the 2 REST records on partition 1.
    assert value(families, "sluice_partition_log_end_offset", topic="orders", partition=0) == 50
    assert value(families, "sluice_partition_log_end_offset", topic="orders", partition=1) == 52
    assert value(families, "sluice_partition_records_in_total", topic="orders", partition=1) == 52
    assert value(families, "sluice_partition_records_out_total", topic="orders", partition=0) >= 50
    assert value(families, "sluice_consumer_group_lag", group="billing", topic="orders",
                 partition=0) == 30
    assert value(families, "sluice_consumer_group_lag", group="billing", topic="orders",
                 partition=1) == 2
    # The oldest unconsumed record was produced during this test's set-up: its age is
    # positive and small (a wrong timestamp would give decades), and the retention ratio is
    # that age over the default retention.ms (7 days).
    lag_s = value(families, "sluice_consumer_group_lag_seconds", group="billing",
                  topic="orders", partition=0)
    assert 0 <= lag_s < 900
    ratio = value(families, "sluice_consumer_group_lag_retention_ratio", group="billing",
                  topic="orders", partition=0)
    assert abs(ratio - lag_s / 604800) < 1e-9
    assert value(families, "sluice_sqs_queue_messages", queue="jobs", state="available") == 2
    assert value(families, "sluice_sqs_queue_messages", queue="jobs", state="in_flight") == 1
    assert value(families, "sluice_sqs_dead_letter_queue_messages", queue="jobs",
                 dead_letter_queue="jobs-dlq") == 1
    assert value(families, "sluice_listener_open_connections", listener="http") >= 1
    # The REST produce was answered 200; the SQS calls (create, send, receive) 200 too.
    assert value(families, "sluice_http_request_seconds_count", "sluice_http_request_seconds",
                 front="http", code="2xx") >= 1
    assert value(families, "sluice_http_request_seconds_count", "sluice_http_request_seconds",
                 front="sqs", code="2xx") >= 7
    # acks=all produce waited for fdatasyncs, and creating topics synced their folders.
    assert value(families, "sluice_fsync_seconds_count", "sluice_fsync_seconds",
                 kind="file") >= 1
    assert value(families, "sluice_fsync_seconds_count", "sluice_fsync_seconds",
                 kind="directory") >= 1
    assert value(families, "sluice_process_resident_memory_bytes") > 1 << 20
    assert value(families, "sluice_process_open_fds") > 3
    assert (value(families, "sluice_process_start_time_seconds") <= time.time() + 1)


def test_every_partition_of_a_wide_topic_is_rendered():
    # The render's cost with many partitions is measured in docs/benchmarks.md; here, that
    # all of them are there and the page still parses.
    with Sluice() as s:
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        admin.create_topics([NewTopic("wide", 2000, 1)])["wide"].result(timeout=60)
        families = parse(scrape(s))
        leo = [x for x in families["sluice_partition_log_end_offset"]["samples"]
               if 'topic="wide"' in x[1]]
        assert len(leo) == 2000


def test_lag_seconds_follow_the_committed_offset_across_scrapes():
    # The time lag is the timestamp of the batch at the committed offset, remembered between
    # scrapes while the offset stays: a moved offset must give the new batch's age.
    now_ms = int(time.time() * 1000)
    with Sluice() as s:
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        admin.create_topics([NewTopic("aged", 1, 1)])["aged"].result(timeout=60)
        p = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0})
        # Three batches: an hour old, a minute old, and a newer record that stays unconsumed.
        for age_ms in (3_600_000, 60_000, 1_000):
            p.produce("aged", b"v", partition=0, timestamp=now_ms - age_ms)
            assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "slow",
                      "enable.auto.commit": False})
        try:
            def lag_after_commit(offset):
                c.commit(offsets=[TopicPartition("aged", 0, offset)], asynchronous=False)
                got = []
                for _ in range(2):  # the second scrape answers from what the first read
                    got.append(value(parse(scrape(s)), "sluice_consumer_group_lag_seconds",
                                     group="slow", topic="aged", partition=0))
                return got

            hour = lag_after_commit(0)
            assert all(3_590 <= float(x) <= 3_900 for x in hour), hour
            minute = lag_after_commit(1)
            assert all(50 <= float(x) <= 360 for x in minute), minute
            back = lag_after_commit(0)
            assert all(3_590 <= float(x) <= 3_900 for x in back), back
        finally:
            c.close()
