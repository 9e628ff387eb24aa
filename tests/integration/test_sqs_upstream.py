"""SQS in upstream mode: one gateway (`sluice --upstream BOOTSTRAP --sqs ...`) serves the queues
of a Kafka cluster, a queue being the upstream topic of the same name and the queues' state the
compacted topic _sluice_queue_state there. A native sluice plays the cluster. boto3 (the Query
protocol) drives the gateway; confluent-kafka reads the upstream directly. One upstream and one
gateway for the whole file; the crash case kills and restarts that gateway, so it runs last."""
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from sqs_support import arn, client, md5, receive_all
from upstream_support import Gateway, NativeUpstream


@pytest.fixture(scope="module")
def cluster():
    up = NativeUpstream().start()
    gw = Gateway(up.bootstrap, args=["--sqs", "127.0.0.1:0"])
    try:
        gw.start(timeout=60)
        yield up, gw
    finally:
        try:
            gw.close()
        finally:
            up.close()


def read_upstream(bootstrap, topic, count, timeout=30):
    """`count` records of partition 0 of `topic`, read straight from the upstream."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "sqs-upstream-reader",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and not m.error():
                got.append(m)
        return got
    finally:
        c.close()


def test_the_gateway_alone_owns_the_queues(cluster):
    _, gw = cluster
    assert gw.sqs_port
    gw.wait_log("this gateway owns the SQS queues now", timeout=30)


def test_send_receive_delete_and_the_records_on_the_upstream(cluster):
    up, gw = cluster
    c = client(gw)
    url = c.create_queue(QueueName="up-life")["QueueUrl"]
    assert url in c.list_queues()["QueueUrls"]
    sent = c.send_message(QueueUrl=url, MessageBody="hello upstream",
                          MessageAttributes={"colour": {"DataType": "String",
                                                        "StringValue": "blue"}})
    assert sent["MD5OfMessageBody"] == md5("hello upstream")
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=10, AttributeNames=["All"],
                            MessageAttributeNames=["All"])["Messages"]
    assert [m["Body"] for m in got] == ["hello upstream"]
    assert got[0]["MessageId"] == sent["MessageId"]
    assert got[0]["MessageAttributes"]["colour"]["StringValue"] == "blue"
    c.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []

    # The message is a record of the upstream topic of the queue's name.
    records = read_upstream(up.bootstrap, "up-life", 1)
    assert [r.value() for r in records] == [b"hello upstream"]
    assert ("colour", b"blue") in (records[0].headers() or [])


def test_visibility_timeout_redelivers(cluster):
    _, gw = cluster
    c = client(gw)
    url = c.create_queue(QueueName="up-vis")["QueueUrl"]
    c.send_message(QueueUrl=url, MessageBody="again")
    first = c.receive_message(QueueUrl=url, VisibilityTimeout=1, WaitTimeSeconds=10,
                              AttributeNames=["All"])["Messages"]
    assert first[0]["Attributes"]["ApproximateReceiveCount"] == "1"
    again = receive_all(c, url, 1, timeout=15, AttributeNames=["All"])
    assert [m["Body"] for m in again] == ["again"]
    assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"
    c.delete_message(QueueUrl=url, ReceiptHandle=again[0]["ReceiptHandle"])


def test_fifo_order_and_deduplication(cluster):
    _, gw = cluster
    c = client(gw)
    url = c.create_queue(QueueName="up-order.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    for i in range(5):
        c.send_message(QueueUrl=url, MessageBody=f"m{i}", MessageGroupId="g",
                       MessageDeduplicationId=f"d{i}")
    # The same deduplication id within the window: accepted, not stored twice.
    dup = c.send_message(QueueUrl=url, MessageBody="m0 again", MessageGroupId="g",
                         MessageDeduplicationId="d0")
    bodies = []
    deadline = time.monotonic() + 30
    while len(bodies) < 5 and time.monotonic() < deadline:
        got = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                VisibilityTimeout=30).get("Messages", [])
        for m in got:
            bodies.append(m["Body"])
            c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert bodies == [f"m{i}" for i in range(5)]
    assert dup["MessageId"]
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []


def test_dead_letter_queue_after_max_receive_count(cluster):
    _, gw = cluster
    c = client(gw)
    dlq = c.create_queue(QueueName="up-dead")["QueueUrl"]
    src = c.create_queue(QueueName="up-src", Attributes={
        "RedrivePolicy": '{"deadLetterTargetArn":"%s","maxReceiveCount":"2"}' % arn("up-dead")})[
        "QueueUrl"]
    c.send_message(QueueUrl=src, MessageBody="poison")
    for _ in range(2):
        got = c.receive_message(QueueUrl=src, VisibilityTimeout=0, WaitTimeSeconds=10)["Messages"]
        assert [m["Body"] for m in got] == ["poison"]
    # The third receive moves it to the dead-letter queue (a record of that queue's topic).
    assert c.receive_message(QueueUrl=src, WaitTimeSeconds=1).get("Messages", []) == []
    moved = receive_all(c, dlq, 1, timeout=20, AttributeNames=["All"])
    assert [m["Body"] for m in moved] == ["poison"]
    assert moved[0]["Attributes"]["DeadLetterQueueSourceArn"] == arn("up-src")


def test_state_survives_a_killed_gateway(cluster):
    _, gw = cluster
    c = client(gw)
    url = c.create_queue(QueueName="up-crash", Attributes={"VisibilityTimeout": "8"})["QueueUrl"]
    for i in range(6):
        c.send_message(QueueUrl=url, MessageBody=f"c{i}")
    got = receive_all(c, url, 6, timeout=20)
    received_at = time.monotonic()
    assert sorted(m["Body"] for m in got) == [f"c{i}" for i in range(6)]
    deleted = {m["Body"] for m in got[:3]}
    for m in got[:3]:
        c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    in_flight = {m["Body"] for m in got[3:]}

    gw.kill()
    gw.start(timeout=60)
    c = client(gw)
    assert c.get_queue_url(QueueName="up-crash")["QueueUrl"].endswith("/up-crash")
    # Still in flight right after the restart (when their 8 s have not passed) ...
    if time.monotonic() - received_at < 6:
        assert c.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
    # ... and back once their visibility timeout passes; the deleted ones never.
    back = receive_all(c, url, len(in_flight), timeout=25)
    assert {m["Body"] for m in back} == in_flight
    for m in back:
        c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=4).get("Messages", []) == []
    assert not deleted & {m["Body"] for m in back}
