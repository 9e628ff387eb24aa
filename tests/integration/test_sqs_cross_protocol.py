"""Queue Q is topic Q: what Kafka producers write, SQS consumers receive; what SQS senders
send, Kafka consumers read (message attributes as record headers); CreateQueue and GetQueueUrl
adopt a topic that exists; records posted to the REST Proxy API reach the queue as well."""
import json
import subprocess

from confluent_kafka import Producer

from rest_support import V2_BINARY, Rest, b64
from sqs_support import client, receive_all

KCAT = "/usr/bin/kcat"


def kcat(args, stdin=None):
    r = subprocess.run([KCAT] + args, input=stdin, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_kcat_in_sqs_out(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="from-kafka")["QueueUrl"]
    lines = [f"k{i}:v{i}" for i in range(20)]
    kcat(["-b", sqs_broker.bootstrap, "-t", "from-kafka", "-P", "-K:", "-H", "trace=abc"],
         stdin="\n".join(lines) + "\n")
    got = receive_all(c, url, 20, MessageAttributeNames=["All"], AttributeNames=["All"])
    assert sorted(m["Body"] for m in got) == sorted(f"v{i}" for i in range(20))
    assert all(m["MessageAttributes"]["trace"] == {"DataType": "String", "StringValue": "abc"}
               for m in got)
    # A record key is the message group id.
    assert {m["Attributes"]["MessageGroupId"] for m in got} == {f"k{i}" for i in range(20)}
    for m in got:
        c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def test_rest_proxy_in_sqs_out(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="from-rest")["QueueUrl"]
    records = [{"key": b64(f"k{i % 3}"), "value": b64(f"rest {i}")} for i in range(12)]
    r = Rest(sqs_broker).post("/topics/from-rest", {"records": records}, content_type=V2_BINARY)
    assert r.status_code == 200, r.text
    assert all(o.get("error_code") is None for o in r.json()["offsets"])
    got = receive_all(c, url, 12, AttributeNames=["All"])
    assert sorted(m["Body"] for m in got) == sorted(f"rest {i}" for i in range(12))
    assert {m["Attributes"]["MessageGroupId"] for m in got} == {"k0", "k1", "k2"}
    for m in got:
        c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def test_sqs_in_kcat_out(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="to-kafka")["QueueUrl"]
    for i in range(5):
        c.send_message(QueueUrl=url, MessageBody=f"sqs {i}", MessageAttributes={
            "colour": {"DataType": "String", "StringValue": "red"},
            "count": {"DataType": "Number", "StringValue": str(i)}})
    out = kcat(["-b", sqs_broker.bootstrap, "-t", "to-kafka", "-C", "-e", "-o", "beginning", "-J"])
    msgs = [json.loads(l) for l in out.splitlines() if l.strip()]
    assert [m["payload"] for m in msgs] == [f"sqs {i}" for i in range(5)]
    headers = dict(zip(msgs[2]["headers"][::2], msgs[2]["headers"][1::2]))
    assert headers["colour"] == "red" and headers["count"] == "2"
    assert headers["sqs:type:count"] == "Number"
    # Kafka readers see every message, also after SQS consumers deleted them.
    for m in receive_all(c, url, 5):
        c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    again = kcat(["-b", sqs_broker.bootstrap, "-t", "to-kafka", "-C", "-e", "-o", "beginning", "-J"])
    assert len([l for l in again.splitlines() if l.strip()]) == 5


def test_a_producer_in_feeds_the_queue_and_topics_are_adopted(sqs_broker):
    p = Producer({"bootstrap.servers": sqs_broker.bootstrap})
    for i in range(10):
        p.produce("existing", key=None, value=f"produced {i}".encode(),
                  headers=[("source", b"producer"), ("blob", b"\x00\xff")])
    assert p.flush(30) == 0
    c = client(sqs_broker)
    # The topic exists before any queue does: GetQueueUrl finds it.
    url = c.get_queue_url(QueueName="existing")["QueueUrl"]
    assert url.endswith("/existing")
    got = receive_all(c, url, 10, MessageAttributeNames=["All"])
    assert sorted(m["Body"] for m in got) == sorted(f"produced {i}" for i in range(10))
    attrs = got[0]["MessageAttributes"]
    assert attrs["source"]["StringValue"] == "producer"
    assert attrs["blob"] == {"DataType": "Binary", "BinaryValue": b"\x00\xff"}

    # CreateQueue on an existing topic adopts it; SluiceStartPosition=latest skips what is there.
    for i in range(3):
        p.produce("adopt-latest", value=b"old")
    assert p.flush(30) == 0
    url2 = c.create_queue(QueueName="adopt-latest", Attributes={"SluiceStartPosition": "latest"})["QueueUrl"]
    p.produce("adopt-latest", value=b"new")
    assert p.flush(30) == 0
    assert [m["Body"] for m in receive_all(c, url2, 1)] == ["new"]
