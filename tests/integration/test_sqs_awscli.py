"""Debian's awscli (the Query protocol) against the SQS front: the commands an operator types."""
import json
import os
import subprocess

from sqs_support import md5

AWS = "/usr/bin/aws"


def aws(broker, *args):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
               AWS_DEFAULT_REGION="us-east-1", AWS_PAGER="", AWS_MAX_ATTEMPTS="1")
    r = subprocess.run([AWS, "--endpoint-url", broker.sqs_url, "--output", "json", "sqs", *args],
                       capture_output=True, text=True, timeout=60, env=env)
    return r


def ok(broker, *args):
    r = aws(broker, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout) if r.stdout.strip() else {}


def test_awscli_lifecycle(sqs_broker):
    url = ok(sqs_broker, "create-queue", "--queue-name", "cli",
             "--attributes", "VisibilityTimeout=60,DelaySeconds=0")["QueueUrl"]
    assert ok(sqs_broker, "get-queue-url", "--queue-name", "cli")["QueueUrl"] == url
    assert url in ok(sqs_broker, "list-queues")["QueueUrls"]
    sent = ok(sqs_broker, "send-message", "--queue-url", url, "--message-body", "from the cli",
              "--message-attributes", '{"kind":{"DataType":"String","StringValue":"cli"}}')
    assert sent["MD5OfMessageBody"] == md5("from the cli")
    batch = ok(sqs_broker, "send-message-batch", "--queue-url", url, "--entries",
               json.dumps([{"Id": str(i), "MessageBody": f"b{i}"} for i in range(3)]))
    assert len(batch["Successful"]) == 3
    got = ok(sqs_broker, "receive-message", "--queue-url", url, "--max-number-of-messages", "10",
             "--wait-time-seconds", "5", "--attribute-names", "All", "--message-attribute-names", "All")
    bodies = [m["Body"] for m in got["Messages"]]
    assert "from the cli" in bodies
    for m in got["Messages"]:
        assert m["MD5OfBody"] == md5(m["Body"])
        ok(sqs_broker, "delete-message", "--queue-url", url, "--receipt-handle", m["ReceiptHandle"])
    attrs = ok(sqs_broker, "get-queue-attributes", "--queue-url", url, "--attribute-names", "All")["Attributes"]
    assert attrs["VisibilityTimeout"] == "60"
    ok(sqs_broker, "set-queue-attributes", "--queue-url", url, "--attributes", "MessageRetentionPeriod=600")
    ok(sqs_broker, "tag-queue", "--queue-url", url, "--tags", "a=b")
    assert ok(sqs_broker, "list-queue-tags", "--queue-url", url)["Tags"] == {"a": "b"}
    ok(sqs_broker, "purge-queue", "--queue-url", url)
    ok(sqs_broker, "delete-queue", "--queue-url", url)
    r = aws(sqs_broker, "get-queue-url", "--queue-name", "cli")
    assert r.returncode != 0 and "NonExistentQueue" in r.stderr
