"""Bad input to the SQS front, in both protocols: every error SQS names for it, AWS-shaped
(the Query protocol's <Error><Code>, the JSON protocol's __type and x-amzn-query-error), and
after each one the server still serves."""
import json

import pytest
import requests
from botocore.exceptions import ClientError

from sqs_support import client, error_code

JSON_TYPE = "application/x-amz-json-1.0"


def json_call(broker, action, body, raw=None):
    data = raw if raw is not None else json.dumps(body)
    return requests.post(broker.sqs_url + "/", data=data, timeout=30,
                         headers={"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": JSON_TYPE})


def query_call(broker, body):
    return requests.post(broker.sqs_url + "/", data=body, timeout=30,
                         headers={"Content-Type": "application/x-www-form-urlencoded"})


def still_serves(broker):
    assert broker.alive()
    r = json_call(broker, "ListQueues", {})
    assert r.status_code == 200, r.text
    client(broker).list_queues()


def boto_error(fn, **kwargs):
    with pytest.raises(ClientError) as e:
        fn(**kwargs)
    return error_code(e.value)


@pytest.fixture
def queue(sqs_broker):
    c = client(sqs_broker)
    return c, c.create_queue(QueueName="bad")["QueueUrl"]


def test_unknown_actions_and_malformed_bodies(sqs_broker):
    r = json_call(sqs_broker, "FlyToTheMoon", {})
    assert r.status_code == 400
    assert r.json()["__type"] == "com.amazon.coral.service#UnknownOperationException"
    assert r.headers["x-amzn-query-error"] == "InvalidAction;Sender"
    still_serves(sqs_broker)

    r = query_call(sqs_broker, "Action=FlyToTheMoon&Version=2012-11-05")
    assert r.status_code == 400 and "<Code>InvalidAction</Code>" in r.text and "<Type>Sender</Type>" in r.text
    still_serves(sqs_broker)

    r = query_call(sqs_broker, "Version=2012-11-05")
    assert r.status_code == 400 and "<Code>MissingAction</Code>" in r.text
    still_serves(sqs_broker)

    for raw in ['{"QueueName": ', "[1, 2]", "\xff\xfe", '{"QueueName": "a"} trailing', "[" * 100000]:
        r = json_call(sqs_broker, "CreateQueue", None, raw=raw.encode("latin-1"))
        assert r.status_code == 400, raw[:20]
        assert r.json()["__type"] == "com.amazon.coral.service#SerializationException"
        still_serves(sqs_broker)

    r = query_call(sqs_broker, "Action=CreateQueue&QueueName=%zz")
    assert r.status_code == 400 and "MalformedQueryString" in r.text
    still_serves(sqs_broker)

    # Wrong types in JSON.
    r = json_call(sqs_broker, "CreateQueue", {"QueueName": 42})
    assert r.status_code == 400 and r.json()["__type"].endswith("#InvalidParameterValue")
    r = json_call(sqs_broker, "ReceiveMessage", {"QueueUrl": "x/bad", "MaxNumberOfMessages": "ten"})
    assert r.status_code == 400 and r.json()["__type"].endswith("#InvalidParameterValue")
    still_serves(sqs_broker)


def test_missing_and_invalid_parameters(sqs_broker, queue):
    c, url = queue
    r = json_call(sqs_broker, "SendMessage", {"MessageBody": "x"})
    assert r.status_code == 400 and r.json()["__type"].endswith("#MissingParameter")
    assert r.headers["x-amzn-query-error"] == "MissingParameter;Sender"
    r = json_call(sqs_broker, "GetQueueUrl", {"QueueName": "nope"})
    assert r.json()["__type"] == "com.amazonaws.sqs#QueueDoesNotExist"
    assert r.headers["x-amzn-query-error"] == "AWS.SimpleQueueService.NonExistentQueue;Sender"
    assert boto_error(c.create_queue, QueueName="no spaces allowed") == "InvalidParameterValue"
    assert boto_error(c.create_queue, QueueName="x" * 81) == "InvalidParameterValue"
    assert boto_error(c.create_queue, QueueName="attr", Attributes={"Colour": "blue"}) == "InvalidAttributeName"
    assert boto_error(c.create_queue, QueueName="attr", Attributes={"VisibilityTimeout": "-1"}) == "InvalidAttributeValue"
    assert boto_error(c.set_queue_attributes, QueueUrl=url, Attributes={"MaximumMessageSize": "10"}) == "InvalidAttributeValue"
    assert boto_error(c.set_queue_attributes, QueueUrl=url, Attributes={"QueueArn": "x"}) == "InvalidAttributeName"
    assert boto_error(c.set_queue_attributes, QueueUrl=url, Attributes={"RedrivePolicy": "{not json"}) == "InvalidAttributeValue"
    assert boto_error(c.get_queue_attributes, QueueUrl=url, AttributeNames=["Nonsense"]) == "InvalidAttributeName"
    assert boto_error(c.create_queue, QueueName="bad", Attributes={"VisibilityTimeout": "99"}) == "QueueAlreadyExists"
    c.delete_queue(QueueUrl=c.create_queue(QueueName="recent")["QueueUrl"])
    assert boto_error(c.create_queue, QueueName="recent") == "AWS.SimpleQueueService.QueueDeletedRecently"
    assert boto_error(c.receive_message, QueueUrl=url, MaxNumberOfMessages=11) == "InvalidParameterValue"
    assert boto_error(c.receive_message, QueueUrl=url, WaitTimeSeconds=21) == "InvalidParameterValue"
    assert boto_error(c.receive_message, QueueUrl=url, VisibilityTimeout=43201) == "InvalidParameterValue"
    assert boto_error(c.send_message, QueueUrl=url + "-missing", MessageBody="x") == "AWS.SimpleQueueService.NonExistentQueue"
    assert boto_error(c.remove_permission, QueueUrl=url, Label="none") == "InvalidParameterValue"
    assert boto_error(c.add_permission, QueueUrl=url, Label="l", AWSAccountIds=["1"], Actions=["DeleteQueue"]) == "InvalidParameterValue"
    c.purge_queue(QueueUrl=url)
    assert boto_error(c.purge_queue, QueueUrl=url) == "AWS.SimpleQueueService.PurgeQueueInProgress"
    still_serves(sqs_broker)


def test_messages_over_the_limits_and_outside_the_character_set(sqs_broker, queue):
    c, url = queue
    assert boto_error(c.send_message, QueueUrl=url, MessageBody="x" * (1048576 + 1)) == "InvalidParameterValue"
    c.send_message(QueueUrl=url, MessageBody="x" * 1048576)  # exactly the limit
    assert boto_error(c.send_message, QueueUrl=url, MessageBody="") == "MissingParameter"
    for bad in ["nul \x00", "bell \x07", "\ufffe"]:
        code = boto_error(c.send_message, QueueUrl=url, MessageBody=bad)
        assert code == "InvalidMessageContents", repr(bad)
    # Bytes that are not UTF-8 at all (a lone surrogate's encoding, a stray continuation byte),
    # percent-encoded in a Query body: boto3 cannot send them, a raw request can.
    for raw in ["%ED%BF%BF", "%80abc", "abc%FF"]:
        r = query_call(sqs_broker, f"Action=SendMessage&Version=2012-11-05&QueueUrl={url}&MessageBody={raw}")
        assert r.status_code == 400 and "<Code>InvalidMessageContents</Code>" in r.text, (raw, r.text)
    # Through JSON, escaped.
    r = json_call(sqs_broker, "SendMessage", {"QueueUrl": url, "MessageBody": "\u0000"})
    assert r.json()["__type"].endswith("#InvalidMessageContents")
    too_many = {f"a{i}": {"DataType": "String", "StringValue": "v"} for i in range(11)}
    assert boto_error(c.send_message, QueueUrl=url, MessageBody="x", MessageAttributes=too_many) == "InvalidParameterValue"
    for attrs in [{"AWS.x": {"DataType": "String", "StringValue": "v"}},
                  {"n": {"DataType": "Number", "StringValue": "twelve"}},
                  {"t": {"DataType": "Text", "StringValue": "v"}},
                  {"e": {"DataType": "String", "StringValue": ""}},
                  {"b": {"DataType": "Binary", "StringValue": "not binary"}}]:
        assert boto_error(c.send_message, QueueUrl=url, MessageBody="x", MessageAttributes=attrs) == "InvalidParameterValue", attrs
    assert boto_error(c.send_message, QueueUrl=url, MessageBody="x", DelaySeconds=901) == "InvalidParameterValue"
    # A 1 MiB body and a 1 MiB attribute together are over the message limit.
    assert boto_error(c.send_message, QueueUrl=url, MessageBody="y" * 600000,
                      MessageAttributes={"a": {"DataType": "String", "StringValue": "z" * 600000}}) == "InvalidParameterValue"
    still_serves(sqs_broker)


def test_batches_over_the_limits(sqs_broker, queue):
    c, url = queue
    assert boto_error(c.send_message_batch, QueueUrl=url, Entries=[]) == "AWS.SimpleQueueService.EmptyBatchRequest"
    eleven = [{"Id": str(i), "MessageBody": "x"} for i in range(11)]
    assert boto_error(c.send_message_batch, QueueUrl=url, Entries=eleven) == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"
    same = [{"Id": "a", "MessageBody": "x"}, {"Id": "a", "MessageBody": "y"}]
    assert boto_error(c.send_message_batch, QueueUrl=url, Entries=same) == "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"
    assert boto_error(c.send_message_batch, QueueUrl=url,
                      Entries=[{"Id": "no spaces", "MessageBody": "x"}]) == "AWS.SimpleQueueService.InvalidBatchEntryId"
    big = [{"Id": str(i), "MessageBody": "x" * 200000} for i in range(6)]
    assert boto_error(c.send_message_batch, QueueUrl=url, Entries=big) == "AWS.SimpleQueueService.BatchRequestTooLong"
    assert boto_error(c.delete_message_batch, QueueUrl=url, Entries=[]) == "AWS.SimpleQueueService.EmptyBatchRequest"
    assert boto_error(c.change_message_visibility_batch, QueueUrl=url,
                      Entries=[{"Id": str(i), "ReceiptHandle": "x"} for i in range(11)]) == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"
    # A request body past the HTTP limit is refused before it is read whole.
    r = query_call(sqs_broker, "Action=SendMessage&MessageBody=" + "x" * (17 * 1024 * 1024))
    assert r.status_code == 413
    still_serves(sqs_broker)


def test_invalid_and_forged_receipt_handles(sqs_broker, queue):
    c, url = queue
    other = c.create_queue(QueueName="other")["QueueUrl"]
    c.send_message(QueueUrl=url, MessageBody="m")
    m = c.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"][0]
    handle = m["ReceiptHandle"]
    forged = handle[:-3] + ("AAA" if not handle.endswith("AAA") else "BBB")
    for h in ["", "garbage", forged, handle + "x", "A" * 2000]:
        code = boto_error(c.delete_message, QueueUrl=url, ReceiptHandle=h) if h else None
        if h:
            assert code == "ReceiptHandleIsInvalid", h[:20]
    assert boto_error(c.delete_message, QueueUrl=other, ReceiptHandle=handle) == "ReceiptHandleIsInvalid"
    assert boto_error(c.change_message_visibility, QueueUrl=url, ReceiptHandle=forged,
                      VisibilityTimeout=5) == "ReceiptHandleIsInvalid"
    r = json_call(sqs_broker, "DeleteMessage", {"QueueUrl": url, "ReceiptHandle": forged})
    assert r.status_code == 404 and r.json()["__type"] == "com.amazonaws.sqs#ReceiptHandleIsInvalid"
    c.delete_message(QueueUrl=url, ReceiptHandle=handle)
    # Deleted: deleting again is harmless, but the handle changes nothing any more.
    c.delete_message(QueueUrl=url, ReceiptHandle=handle)
    assert boto_error(c.change_message_visibility, QueueUrl=url, ReceiptHandle=handle,
                      VisibilityTimeout=5) == "ReceiptHandleIsInvalid"
    still_serves(sqs_broker)


def test_fifo_rules(sqs_broker):
    c = client(sqs_broker)
    assert boto_error(c.create_queue, QueueName="f.fifo", Attributes={"FifoQueue": "false"}) == "InvalidParameterValue"
    assert boto_error(c.create_queue, QueueName="nofifo", Attributes={"FifoQueue": "true"}) == "InvalidParameterValue"
    url = c.create_queue(QueueName="rules.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    assert boto_error(c.send_message, QueueUrl=url, MessageBody="x") == "MissingParameter"
    assert boto_error(c.send_message, QueueUrl=url, MessageBody="x", MessageGroupId="g") == "InvalidParameterValue"
    assert boto_error(c.send_message, QueueUrl=url, MessageBody="x", MessageGroupId="g",
                      MessageDeduplicationId="d", DelaySeconds=5) == "InvalidParameterValue"
    std = c.create_queue(QueueName="standard")["QueueUrl"]
    assert boto_error(c.send_message, QueueUrl=std, MessageBody="x", MessageDeduplicationId="d") == "InvalidParameterValue"
    assert boto_error(c.set_queue_attributes, QueueUrl=std, Attributes={"ContentBasedDeduplication": "true"}) == "InvalidAttributeName"
    assert boto_error(c.set_queue_attributes, QueueUrl=std, Attributes={"RedrivePolicy": json.dumps(
        {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:rules.fifo", "maxReceiveCount": 3})}) == "InvalidAttributeValue"
    still_serves(sqs_broker)


def test_get_requests_of_the_query_protocol(sqs_broker, queue):
    c, url = queue
    r = requests.get(sqs_broker.sqs_url + "/", params={"Action": "GetQueueUrl", "QueueName": "bad"}, timeout=30)
    assert r.status_code == 200 and "<QueueUrl>" in r.text and "GetQueueUrlResult" in r.text
    r = requests.get(sqs_broker.sqs_url + "/", params={"Action": "GetQueueUrl"}, timeout=30)
    assert r.status_code == 400 and "<Code>MissingParameter</Code>" in r.text
    still_serves(sqs_broker)
