"""The SQS front through Debian's boto3 (the Query protocol): the whole lifecycle, visibility
and redelivery, dead-letter queues, long polls, batches, FIFO order and deduplication, purge,
delays, retention, and the MD5 digests of bodies and attributes of every type."""
import threading
import time

import pytest
from botocore.exceptions import ClientError

from harness import wait_for
from sqs_support import (arn, client, error_code, md5, md5_of_attributes, metric, receive_all,
                         wait_waiting_receives)


def test_lifecycle(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="life", Attributes={"VisibilityTimeout": "45"},
                         tags={"team": "blue"})["QueueUrl"]
    assert url.endswith("/000000000000/life")
    assert c.get_queue_url(QueueName="life")["QueueUrl"] == url
    assert url in c.list_queues()["QueueUrls"]
    assert c.list_queues(QueueNamePrefix="li")["QueueUrls"] == [url]
    assert c.list_queues(QueueNamePrefix="zz").get("QueueUrls", []) == []
    # Creating it again with the same attributes answers the same queue.
    assert c.create_queue(QueueName="life", Attributes={"VisibilityTimeout": "45"})["QueueUrl"] == url

    attrs = c.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "45"
    assert attrs["QueueArn"] == arn("life")
    assert attrs["MaximumMessageSize"] == "1048576"
    assert attrs["MessageRetentionPeriod"] == "345600"
    c.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds": "0", "ReceiveMessageWaitTimeSeconds": "1"})
    assert c.get_queue_attributes(QueueUrl=url, AttributeNames=["ReceiveMessageWaitTimeSeconds"])[
        "Attributes"] == {"ReceiveMessageWaitTimeSeconds": "1"}

    assert c.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "blue"}
    c.tag_queue(QueueUrl=url, Tags={"env": "test"})
    c.untag_queue(QueueUrl=url, TagKeys=["team"])
    assert c.list_queue_tags(QueueUrl=url)["Tags"] == {"env": "test"}

    c.add_permission(QueueUrl=url, Label="others", AWSAccountIds=["111122223333"],
                     Actions=["SendMessage", "ReceiveMessage"])
    policy = c.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]["Policy"]
    assert '"Sid":"others"' in policy and "arn:aws:iam::111122223333:root" in policy
    c.remove_permission(QueueUrl=url, Label="others")
    assert "Policy" not in c.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]

    sent = c.send_message(QueueUrl=url, MessageBody="hello")
    assert sent["MD5OfMessageBody"] == md5("hello")
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, AttributeNames=["All"])["Messages"]
    assert [m["Body"] for m in got] == ["hello"]
    assert got[0]["MessageId"] == sent["MessageId"]
    assert got[0]["MD5OfBody"] == md5("hello")
    assert got[0]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert int(got[0]["Attributes"]["SentTimestamp"]) > 0
    c.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []

    c.delete_queue(QueueUrl=url)
    with pytest.raises(ClientError) as e:
        c.get_queue_url(QueueName="life")
    assert error_code(e.value) == "AWS.SimpleQueueService.NonExistentQueue"


def test_visibility_expiry_redelivers_with_a_higher_receive_count(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="vis")["QueueUrl"]
    c.send_message(QueueUrl=url, MessageBody="again")
    first = c.receive_message(QueueUrl=url, VisibilityTimeout=1, WaitTimeSeconds=5,
                              AttributeNames=["ApproximateReceiveCount"])["Messages"]
    assert first[0]["Attributes"]["ApproximateReceiveCount"] == "1"
    # In flight: not visible.
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
    attrs = c.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"])
    assert attrs["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "1"

    again = c.receive_message(QueueUrl=url, WaitTimeSeconds=10, AttributeNames=["All"])["Messages"]
    assert again[0]["Body"] == "again"
    assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"
    assert again[0]["ReceiptHandle"] != first[0]["ReceiptHandle"]

    # ChangeMessageVisibility to 0 makes it visible at once.
    c.change_message_visibility(QueueUrl=url, ReceiptHandle=again[0]["ReceiptHandle"], VisibilityTimeout=0)
    third = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, AttributeNames=["All"])["Messages"]
    assert third[0]["Attributes"]["ApproximateReceiveCount"] == "3"


def test_dead_letter_queue_after_max_receive_count(sqs_broker):
    c = client(sqs_broker)
    dlq = c.create_queue(QueueName="dead")["QueueUrl"]
    src = c.create_queue(QueueName="src", Attributes={
        "RedrivePolicy": '{"deadLetterTargetArn":"%s","maxReceiveCount":"2"}' % arn("dead")})["QueueUrl"]
    c.send_message(QueueUrl=src, MessageBody="poison")
    for _ in range(2):
        got = c.receive_message(QueueUrl=src, VisibilityTimeout=0, WaitTimeSeconds=5)["Messages"]
        assert got[0]["Body"] == "poison"
    # The third receive moves it instead of delivering it.
    assert c.receive_message(QueueUrl=src, WaitTimeSeconds=1).get("Messages", []) == []
    dead = c.receive_message(QueueUrl=dlq, WaitTimeSeconds=5, AttributeNames=["All"])["Messages"]
    assert dead[0]["Body"] == "poison"
    assert dead[0]["Attributes"]["DeadLetterQueueSourceArn"] == arn("src")
    assert c.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"] == [src]
    policy = c.get_queue_attributes(QueueUrl=src, AttributeNames=["RedrivePolicy"])["Attributes"]
    assert '"maxReceiveCount":2' in policy["RedrivePolicy"]


def test_long_poll_returns_as_soon_as_a_message_arrives(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="lp")["QueueUrl"]
    result = {}

    def poll():
        result["r"] = c.receive_message(QueueUrl=url, WaitTimeSeconds=20)

    t = threading.Thread(target=poll)
    t.start()
    wait_waiting_receives(sqs_broker, "lp", 1)
    client(sqs_broker).send_message(QueueUrl=url, MessageBody="now")
    # Far less than the 20 s the poll may wait: it returned because the message came.
    t.join(timeout=10)
    assert not t.is_alive()
    assert [m["Body"] for m in result["r"]["Messages"]] == ["now"]


def test_long_poll_waits_when_nothing_comes(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="quiet")["QueueUrl"]
    result = {}

    def poll():
        result["r"] = c.receive_message(QueueUrl=url, WaitTimeSeconds=2)

    t = threading.Thread(target=poll)
    t.start()
    # The server holds the request: it is parked, not answered.
    wait_waiting_receives(sqs_broker, "quiet", 1)
    t.join(timeout=15)
    assert not t.is_alive()
    assert result["r"].get("Messages", []) == []
    assert metric(sqs_broker, "sluice_sqs_queue_waiting_receives", queue="quiet") == 0


def test_batches_of_ten_with_partial_failures(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="batch")["QueueUrl"]
    entries = [{"Id": f"m{i}", "MessageBody": f"body {i}"} for i in range(10)]
    entries[3]["MessageBody"] = "bad \x01 character"
    entries[7]["DelaySeconds"] = 901
    r = c.send_message_batch(QueueUrl=url, Entries=entries)
    assert sorted(s["Id"] for s in r["Successful"]) == sorted(f"m{i}" for i in range(10) if i not in (3, 7))
    failed = {f["Id"]: f for f in r["Failed"]}
    assert set(failed) == {"m3", "m7"}
    assert failed["m3"]["Code"] == "InvalidMessageContents" and failed["m3"]["SenderFault"]
    assert failed["m7"]["Code"] == "InvalidParameterValue"
    for s in r["Successful"]:
        assert s["MD5OfMessageBody"] == md5(entries[int(s["Id"][1:])]["MessageBody"])

    got = receive_all(c, url, 8)
    assert sorted(m["Body"] for m in got) == sorted(f"body {i}" for i in range(10) if i not in (3, 7))
    handles = [{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
    handles.append({"Id": "forged", "ReceiptHandle": "AAAA" + got[0]["ReceiptHandle"][4:]})
    handles.append({"Id": "garbage", "ReceiptHandle": "not-a-receipt-handle"})
    d = c.delete_message_batch(QueueUrl=url, Entries=handles)
    assert len(d["Successful"]) == 8
    assert {f["Id"]: f["Code"] for f in d["Failed"]} == {
        "forged": "ReceiptHandleIsInvalid", "garbage": "ReceiptHandleIsInvalid"}

    v = c.change_message_visibility_batch(QueueUrl=url, Entries=[
        {"Id": "gone", "ReceiptHandle": got[0]["ReceiptHandle"], "VisibilityTimeout": 5},
        {"Id": "bad", "ReceiptHandle": "nope", "VisibilityTimeout": 5}])
    assert {f["Id"] for f in v["Failed"]} == {"gone", "bad"}


def test_fifo_order_under_concurrent_consumers(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="order.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    groups = [f"g{g}" for g in range(5)]
    for i in range(20):
        entries = [{"Id": g, "MessageBody": f"{g}:{i}", "MessageGroupId": g,
                    "MessageDeduplicationId": f"{g}-{i}"} for g in groups]
        assert len(c.send_message_batch(QueueUrl=url, Entries=entries)["Successful"]) == 5
    seen = []
    lock = threading.Lock()
    done = threading.Event()

    def consume():
        cc = client(sqs_broker)
        deadline = time.monotonic() + 60
        while not done.is_set() and time.monotonic() < deadline:
            r = cc.receive_message(QueueUrl=url, MaxNumberOfMessages=3, WaitTimeSeconds=1,
                                   VisibilityTimeout=30, AttributeNames=["All"])
            msgs = r.get("Messages", [])
            with lock:
                seen.extend(m["Body"] for m in msgs)
                if len(seen) >= 100:
                    done.set()
            for m in msgs:
                cc.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])

    threads = [threading.Thread(target=consume) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert len(seen) == 100 and len(set(seen)) == 100
    for g in groups:
        order = [int(b.split(":")[1]) for b in seen if b.startswith(g + ":")]
        assert order == list(range(20)), g


def test_fifo_deduplication(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="dedup.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    a = c.send_message(QueueUrl=url, MessageBody="one", MessageGroupId="g", MessageDeduplicationId="x")
    b = c.send_message(QueueUrl=url, MessageBody="other body, same id", MessageGroupId="g",
                       MessageDeduplicationId="x")
    assert a["MessageId"] == b["MessageId"]
    assert a["SequenceNumber"] == b["SequenceNumber"]

    cb = c.create_queue(QueueName="content.fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    x = c.send_message(QueueUrl=cb, MessageBody="same", MessageGroupId="g")
    y = c.send_message(QueueUrl=cb, MessageBody="same", MessageGroupId="g")
    z = c.send_message(QueueUrl=cb, MessageBody="different", MessageGroupId="g")
    assert x["MessageId"] == y["MessageId"] != z["MessageId"]
    got = receive_all(c, cb, 2, AttributeNames=["All"])
    assert [m["Body"] for m in got] == ["same", "different"]
    assert got[0]["Attributes"]["MessageGroupId"] == "g"
    assert int(got[0]["Attributes"]["SequenceNumber"]) < int(got[1]["Attributes"]["SequenceNumber"])
    assert len(got[0]["Attributes"]["MessageDeduplicationId"]) == 64  # SHA-256 of the body


def test_purge(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="purge")["QueueUrl"]
    for i in range(5):
        c.send_message(QueueUrl=url, MessageBody=f"old {i}")
    c.purge_queue(QueueUrl=url)
    c.send_message(QueueUrl=url, MessageBody="new")
    assert [m["Body"] for m in receive_all(c, url, 1)] == ["new"]
    with pytest.raises(ClientError) as e:
        c.purge_queue(QueueUrl=url)
    assert error_code(e.value) == "AWS.SimpleQueueService.PurgeQueueInProgress"


def test_delays(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="delay")["QueueUrl"]
    c.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=2)
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
    # Approximate, as in SQS: over a cluster the queue counts the message once it has read it
    # back from the topic (well within the 2 s delay).
    def delayed():
        attrs = c.get_queue_attributes(QueueUrl=url,
                                       AttributeNames=["ApproximateNumberOfMessagesDelayed"])
        return attrs["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    wait_for(delayed, 1.5, "the delayed message counted", interval=0.05)
    # A long poll wakes when the delay ends.
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=10)["Messages"]
    assert [m["Body"] for m in got] == ["later"]

    # The queue's DelaySeconds applies to messages without their own.
    c.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds": "1"})
    c.send_message(QueueUrl=url, MessageBody="queue delay")
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
    assert [m["Body"] for m in receive_all(c, url, 1)] == ["queue delay"]


def test_md5_of_every_attribute_type(sqs_broker):
    c = client(sqs_broker)
    url = c.create_queue(QueueName="md5")["QueueUrl"]
    attributes = {
        "s": {"DataType": "String", "StringValue": "text ✓"},
        "n": {"DataType": "Number", "StringValue": "-12.5e3"},
        "f": {"DataType": "Number.float", "StringValue": "4563442423554324324264524243.32543234"},
        "j": {"DataType": "String.json", "StringValue": '{"a": [1, 2]}'},
        "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
        "z": {"DataType": "Binary.gzip", "BinaryValue": b"\x1f\x8b\x08\x00"},
    }
    sent = c.send_message(QueueUrl=url, MessageBody="with attributes", MessageAttributes=attributes)
    assert sent["MD5OfMessageAttributes"] == md5_of_attributes(attributes)
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, MessageAttributeNames=["All"])["Messages"][0]
    assert got["MessageAttributes"] == attributes
    assert got["MD5OfMessageAttributes"] == md5_of_attributes(attributes)
    assert got["MD5OfBody"] == md5("with attributes")
    c.change_message_visibility(QueueUrl=url, ReceiptHandle=got["ReceiptHandle"], VisibilityTimeout=0)
    # Asking for some attributes: the digest is of those returned.
    some = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, MessageAttributeNames=["s", "z"])["Messages"][0]
    assert set(some["MessageAttributes"]) == {"s", "z"}
    assert some["MD5OfMessageAttributes"] == md5_of_attributes({k: attributes[k] for k in ("s", "z")})


def test_retention_drops_expired_messages(sqs_broker):
    from confluent_kafka import Producer
    c = client(sqs_broker)
    url = c.create_queue(QueueName="retained", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
    # Records whose send time is long past the retention period are never delivered.
    p = Producer({"bootstrap.servers": sqs_broker.bootstrap})
    now_ms = int(time.time() * 1000)
    p.produce("retained", value=b"expired", timestamp=now_ms - 120_000)
    p.produce("retained", value=b"fresh", timestamp=now_ms - 10_000)
    assert p.flush(30) == 0
    got = receive_all(c, url, 1)
    assert [m["Body"] for m in got] == ["fresh"]
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []


def test_queue_metrics(sqs_broker):
    c = client(sqs_broker)
    dlq = c.create_queue(QueueName="m-dlq")["QueueUrl"]
    url = c.create_queue(QueueName="m", Attributes={
        "RedrivePolicy": '{"deadLetterTargetArn":"%s","maxReceiveCount":"5"}' % arn("m-dlq")})["QueueUrl"]
    for i in range(3):
        c.send_message(QueueUrl=url, MessageBody=str(i))
    c.send_message(QueueUrl=url, MessageBody="delayed", DelaySeconds=60)
    c.send_message(QueueUrl=dlq, MessageBody="dead")
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, VisibilityTimeout=60)["Messages"]
    assert len(got) == 1
    wait_for(lambda: metric(sqs_broker, "sluice_sqs_queue_messages", queue="m", state="available") == 2,
             10, "2 available")
    assert metric(sqs_broker, "sluice_sqs_queue_messages", queue="m", state="in_flight") == 1
    assert metric(sqs_broker, "sluice_sqs_queue_messages", queue="m", state="delayed") == 1
    assert metric(sqs_broker, "sluice_sqs_queue_oldest_message_age_seconds", queue="m") >= 0
    wait_for(lambda: metric(sqs_broker, "sluice_sqs_dead_letter_queue_messages", queue="m",
                            dead_letter_queue="m-dlq") == 1, 10, "DLQ depth 1")
