"""boto3 speaking AWS JSON 1.0 (a botocore of 1.34 or later, whose SQS model is JSON) against the
SQS front: MD5 digests of every data type, the batch and move-task actions Debian's older model
lacks. Run by test_sqs_boto3_json.py with that interpreter (no pytest there):

    python3 sqs_boto3_json.py SQS_URL
"""
import sys
import time

import botocore

from sqs_support import arn, client, md5, md5_of_attributes


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def wait_until(pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


class Broker:
    def __init__(self, url):
        self.sqs_url = url


def main():
    c = client(Broker(sys.argv[1]))
    check(c.meta.service_model.protocol == "json", "botocore speaks " + c.meta.service_model.protocol)

    # MD5s of every data type, in the JSON protocol.
    url = c.create_queue(QueueName="json-md5")["QueueUrl"]
    attributes = {
        "s": {"DataType": "String", "StringValue": "text ✓"},
        "n": {"DataType": "Number", "StringValue": "-12.5e3"},
        "f": {"DataType": "Number.float", "StringValue": "3.14159"},
        "j": {"DataType": "String.json", "StringValue": '{"a": [1, 2]}'},
        "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
        "z": {"DataType": "Binary.gzip", "BinaryValue": b"\x1f\x8b\x08\x00"},
    }
    sent = c.send_message(QueueUrl=url, MessageBody="json body", MessageAttributes=attributes,
                          MessageSystemAttributes={"AWSTraceHeader": {
                              "DataType": "String", "StringValue": "Root=1-abc"}})
    check(sent["MD5OfMessageBody"] == md5("json body"), "MD5OfMessageBody")
    check(sent["MD5OfMessageAttributes"] == md5_of_attributes(attributes), "MD5OfMessageAttributes")
    check(sent["MD5OfMessageSystemAttributes"] == md5_of_attributes(
        {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}}),
        "MD5OfMessageSystemAttributes")
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, MessageAttributeNames=["All"],
                            MessageSystemAttributeNames=["All"])["Messages"][0]
    check(got["MessageAttributes"] == attributes, f"attributes round trip: {got['MessageAttributes']}")
    check(got["MD5OfMessageAttributes"] == md5_of_attributes(attributes), "received MD5")
    check(got["MD5OfBody"] == md5("json body"), "MD5OfBody")
    check(got["Attributes"]["AWSTraceHeader"] == "Root=1-abc", "AWSTraceHeader")

    # A batch with a failing entry.
    r = c.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "ok", "MessageBody": "fine"},
        {"Id": "bad", "MessageBody": "nul \x00"}])
    check([e["Id"] for e in r["Successful"]] == ["ok"], "batch success")
    check([e["Code"] for e in r.get("Failed", [])] == ["InvalidMessageContents"], f"batch failure {r}")

    # A dead letter redriven back to its source with a message move task.
    dlq = c.create_queue(QueueName="json-dlq")["QueueUrl"]
    src = c.create_queue(QueueName="json-src", Attributes={
        "RedrivePolicy": '{"deadLetterTargetArn":"%s","maxReceiveCount":"1"}' % arn("json-dlq")})["QueueUrl"]
    c.send_message(QueueUrl=src, MessageBody="poison")
    first = c.receive_message(QueueUrl=src, VisibilityTimeout=0, WaitTimeSeconds=5)["Messages"]
    check(first[0]["Body"] == "poison", "first receive")
    check(c.receive_message(QueueUrl=src, WaitTimeSeconds=1).get("Messages", []) == [], "moved away")
    wait_until(lambda: c.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])
               ["Attributes"]["ApproximateNumberOfMessages"] == "1", "the DLQ to hold it")
    task = c.start_message_move_task(SourceArn=arn("json-dlq"))["TaskHandle"]
    wait_until(lambda: c.list_message_move_tasks(SourceArn=arn("json-dlq"))["Results"][0]["Status"]
               == "COMPLETED", "the move task to complete")
    check(task, "a task handle")
    back = c.receive_message(QueueUrl=src, WaitTimeSeconds=5)["Messages"]
    check(back[0]["Body"] == "poison", "redriven to the source")

    # Errors in the JSON protocol's shape, read by botocore.
    try:
        c.get_queue_url(QueueName="json-none")
        check(False, "GetQueueUrl of a missing queue")
    except botocore.exceptions.ClientError as e:
        check(e.response["Error"]["Code"] in ("AWS.SimpleQueueService.NonExistentQueue",
                                              "QueueDoesNotExist"), e.response["Error"]["Code"])
    print("ok")


if __name__ == "__main__":
    main()
