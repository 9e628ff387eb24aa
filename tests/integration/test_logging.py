"""--log-format json and per-area --log-level on a real sluice: every line sluice writes is one
JSON object, the area named at debug logs its debug lines, the others stay at the default
level; a bad level or area stops sluice at start with one line naming it."""
import json
import os
import re
import subprocess
import urllib.request

from confluent_kafka import Consumer

from harness import Sluice, sluice_binary, wait_for


def test_json_lines_and_a_debug_area_beside_info_ones():
    s = Sluice(args=["--log-format", "json", "--log-level", "info,http=debug"]).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{s.http_port}/healthz", timeout=10) as r:
            assert r.status == 200
        # A consumer's FindCoordinator is logged at debug by the kafka area: not shown here.
        c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "g"})
        c.list_topics(timeout=10)
        c.close()
        wait_for(lambda: any('"logger":"http"' in l and '"level":"debug"' in l
                             for l in s.log_lines), 10, "an http debug line")
    finally:
        s.close()
    lines = [json.loads(l) for l in s.log_lines if l.strip()]
    assert lines and all(set(l) >= {"time", "level", "logger", "message"} for l in lines)
    assert all(l["time"].endswith("Z") for l in lines)
    assert any(l["logger"] == "server" and l["message"].startswith("listening:") for l in lines)
    assert any(l["logger"] == "http" and l["level"] == "debug" for l in lines)
    assert not any(l["level"] in ("debug", "trace") and l["logger"] != "http" for l in lines)


def test_bad_log_flags_stop_sluice_with_one_line():
    for args, needle in ((["--log-level", "info,storag=debug"], "did you mean storage?"),
                         (["--log-level", "verbose"], "unknown level 'verbose'"),
                         (["--log-format", "xml"], "expected text or json")):
        r = subprocess.run([sluice_binary(), "--data-dir", "/nonexistent-never-created"] + args,
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr


AREAS = {"server", "storage", "group", "producer", "txn", "kafka", "http", "sqs", "queue", "auth",
         "upstream"}


def test_every_line_names_its_area_the_console_redrive_too():
    """A line logged through spdlog's default logger has an empty area ("info [] ...")."""
    import boto3
    import requests
    s = Sluice(sqs=True).start()
    try:
        sqs = boto3.client("sqs", endpoint_url=s.sqs_url, region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="y")
        dlq = sqs.create_queue(QueueName="area-dlq")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        sqs.create_queue(QueueName="area", Attributes={"RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": arn, "maxReceiveCount": 1})})
        r = requests.post(f"{s.http_url}/v1/queues/area-dlq/redrive", json={}, timeout=10)
        assert r.status_code == 202, r.text
        line = s.wait_log("redrive of queue area-dlq started")
    finally:
        s.close()
    assert re.search(r" info \[http\] redrive of queue area-dlq started", line), line
    for l in s.log_lines:
        m = re.match(r"\S+ \S+ \[([^\]]*)\] ", l)
        assert m and m.group(1) in AREAS, l


def test_no_source_logs_through_the_unnamed_default_logger():
    """Each area has its named logger (backend/logger.h, gateway/kafka/logger.h,
    gateway/sqs/logger.h); spdlog::info(...) and friends would log with an empty area."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    call = re.compile(r"spdlog::(trace|debug|info|warn|error|critical|log)\(")
    found = []
    for top in ("auth", "backend", "gateway", "protocol"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if name.endswith((".cc", ".h")):
                    with open(os.path.join(dirpath, name), errors="replace") as f:
                        for n, text in enumerate(f, 1):
                            if call.search(text):
                                found.append(f"{os.path.relpath(dirpath, root)}/{name}:{n}")
    assert found == []
