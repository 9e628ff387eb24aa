"""The sqs.* settings (docs/configuration.md): known to the configuration (so reject_unknown
lets them through), acted on, checked, and a misspelt one stops the start naming it."""
import subprocess
import tempfile

from harness import Sluice, sluice_binary
from sqs_support import client


def run(args, timeout=30):
    return subprocess.run([sluice_binary()] + args, capture_output=True, text=True, timeout=timeout)


def test_settings_shape_urls_arns_and_topics():
    s = Sluice(sqs=True, settings={"sqs.region": "eu-west-1", "sqs.account.id": "123456789012",
                                    "sqs.advertised.url": "https://queues.example:8443/",
                                    "sqs.queue.partitions": "3",
                                    "sqs.max.inflight.messages": "1000",
                                    "sqs.read.ahead.bytes": "1048576",
                                    "sqs.read.ahead.messages": "1000",
                                    "sqs.deleted.name.reuse.ms": "0",
                                    "sqs.purge.interval.ms": "0",
                                    "sqs.state.segment.bytes": "1048576"}).start()
    try:
        c = client(s)
        url = c.create_queue(QueueName="shaped")["QueueUrl"]
        assert url == "https://queues.example:8443/123456789012/shaped"
        attrs = c.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
        assert attrs["QueueArn"] == "arn:aws:sqs:eu-west-1:123456789012:shaped"
        # The queue's topic has sqs.queue.partitions partitions (kcat's metadata listing).
        md = subprocess.run(["/usr/bin/kcat", "-b", s.bootstrap, "-L", "-t", "shaped", "-J"],
                            capture_output=True, text=True, timeout=60)
        assert md.returncode == 0, md.stderr
        assert md.stdout.count('"partition":') == 3
        # purge.interval.ms=0: purges need not wait; deleted.name.reuse.ms=0: names come back.
        c.purge_queue(QueueUrl=url)
        c.purge_queue(QueueUrl=url)
        c.delete_queue(QueueUrl=url)
        assert c.create_queue(QueueName="shaped")["QueueUrl"] == url
    finally:
        s.close()


def test_a_misspelt_or_invalid_sqs_setting_stops_the_start():
    with tempfile.TemporaryDirectory() as d:
        base = ["--data-dir", d, "--kafka", "127.0.0.1:0", "--http", "off", "--sqs", "127.0.0.1:0"]
        r = run(base + ["--set", "sqs.acount.id=123456789012"])
        assert r.returncode != 0
        assert "sqs.acount.id: unknown setting (did you mean sqs.account.id?)" in r.stderr
        assert "listening:" not in r.stderr
        for bad, says in [("sqs.account.id=12", "sqs.account.id: must be 12 digits"),
                          ("sqs.queue.partitions=0", "sqs.queue.partitions: must be between"),
                          ("sqs.advertised.url=ftp://x", "sqs.advertised.url: must start with")]:
            r = run(base + ["--set", bad])
            assert r.returncode != 0 and says in r.stderr, (bad, r.stderr)
