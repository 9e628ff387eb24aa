"""Helpers for the SQS tests: clients of Debian's boto3 (the Query protocol) on a broker's SQS
listener, the SQS Developer Guide's MD5 of message attributes (written here from the guide, to
check the server's digests independently), and the broker's /metrics."""
import hashlib
import re
import struct
import urllib.request

import boto3
from botocore.config import Config

from harness import wait_for

ACCOUNT = "000000000000"
REGION = "us-east-1"


def client(broker):
    """A boto3 SQS client (Query protocol, Debian's botocore) that does not retry."""
    return boto3.client(
        "sqs", endpoint_url=broker.sqs_url, region_name=REGION, aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}, read_timeout=60, connect_timeout=10))


def arn(name):
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


def md5_of_attributes(attributes):
    """MD5OfMessageAttributes as the developer guide defines it: sorted by name; name, data
    type each length-prefixed (4 bytes, big-endian); transport byte 1 (String, Number) or 2
    (Binary); the value length-prefixed."""
    buf = b""
    for name in sorted(attributes):
        a = attributes[name]
        data_type = a["DataType"]
        buf += struct.pack(">I", len(name.encode())) + name.encode()
        buf += struct.pack(">I", len(data_type.encode())) + data_type.encode()
        if data_type.split(".")[0] == "Binary":
            value = a["BinaryValue"]
            buf += b"\x02" + struct.pack(">I", len(value)) + value
        else:
            value = a["StringValue"].encode()
            buf += b"\x01" + struct.pack(">I", len(value)) + value
    return hashlib.md5(buf).hexdigest()


def md5(text):
    return hashlib.md5(text.encode() if isinstance(text, str) else text).hexdigest()


def metrics_text(broker):
    with urllib.request.urlopen(broker.http_url + "/metrics", timeout=10) as r:
        return r.read().decode()


def metric(broker, name, **labels):
    """The value of one series on /metrics (None when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = re.compile(r"^" + re.escape(name) + r"\{" + re.escape(want) + r"\} (\S+)$", re.M)
    m = pattern.search(metrics_text(broker))
    return float(m.group(1)) if m else None


def wait_waiting_receives(broker, queue, n, timeout=10):
    """Waits until `n` long polls are parked on `queue` (the server's own gauge)."""
    return wait_for(lambda: metric(broker, "sluice_sqs_queue_waiting_receives", queue=queue) == n,
                    timeout, f"{n} parked receives on {queue}")


def error_code(exc):
    return exc.response["Error"]["Code"]


def receive_all(c, url, expected, timeout=20, **kwargs):
    """Receives (long polling) until `expected` messages came or `timeout` passed."""
    import time
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        r = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1, **kwargs)
        got += r.get("Messages", [])
    return got
