"""SigV4 covers what an SQS request does, not only who sent it. Requests are signed by botocore
(a boto3 client's own request, caught before it leaves, or botocore.auth's signers), then
replayed with `requests` as an attacker who captured them would: another body under the same
signature (with X-Amz-Content-Sha256 claiming the signed body's hash, or without it),
UNSIGNED-PAYLOAD, an X-Amz-Target added after signing, a presigned ListQueues URL carrying a
SendMessage body or an X-Amz-Target. Each is refused with AWS's error, and a legitimate client
then finds in the queue only what it sent itself. An untouched replay within the 15 minutes is
accepted, as on AWS (docs/security.md#sqs). Last, the SDKs' own paths still work with
sqs.authentication=sigv4: boto3 (Query, and JSON where a newer botocore is installed), the AWS
CLI and @aws-sdk/client-sqs."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import urllib.parse

import boto3
import botocore.auth
import pytest
import requests
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from harness import Sluice
from sasl_support import users
from test_sqs_boto3_json import json_boto3_python

HERE = os.path.dirname(os.path.abspath(__file__))
KEY_ID = "AKIAALICE0000000BODY"
SECRET = "alice/Body+Secret/Key0123456789abcdefghij"
REGION = "us-east-1"
AWS_MISMATCH = ("The request signature we calculated does not match the signature you "
                "provided. Check your AWS Secret Access Key and signing method. Consult the "
                "service documentation for details.")
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@pytest.fixture(scope="module")
def broker():
    d = tempfile.TemporaryDirectory(prefix="sluice-sigv4-body-")
    r = users("set", "alice", "--data-dir", d.name, "--aws-access-key-id", KEY_ID,
              stdin=SECRET + "\n")
    assert r.returncode == 0, r.stderr
    s = Sluice(data_dir=d.name, sqs=True, settings={"sqs.authentication": "sigv4"})
    s.start()
    yield s
    s.close()
    d.cleanup()


def client(broker):
    """Alice's boto3 client (Debian's botocore: the Query protocol), without retries."""
    return boto3.client("sqs", endpoint_url=broker.sqs_url, region_name=REGION,
                        aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                        config=Config(retries={"max_attempts": 1}, read_timeout=60,
                                      connect_timeout=10))


def queue(broker, name):
    return client(broker).create_queue(QueueName=name)["QueueUrl"]


def bodies_in(broker, url):
    """Every message body in the queue, received (and deleted) by alice's own client; bounded:
    stops at the first empty one-second long poll."""
    c = client(broker)
    out = []
    for _ in range(50):
        got = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                WaitTimeSeconds=1).get("Messages", [])
        if not got:
            return sorted(out)
        for m in got:
            out.append(m["Body"])
            c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    raise AssertionError("the queue did not run dry")


class Captured(Exception):
    def __init__(self, request):
        super().__init__("captured")
        self.request = request


def capture(broker, operation, **params):
    """The request alice's boto3 client signs for `operation`, caught before it is sent:
    (method, url, headers, body bytes)."""
    c = client(broker)

    def hook(request, **_):
        raise Captured(request)

    c.meta.events.register_first("before-send.sqs", hook)
    with pytest.raises(Captured) as e:
        getattr(c, operation)(**params)
    p = e.value.request
    headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in p.headers.items()}
    body = p.body.encode() if isinstance(p.body, str) else (p.body or b"")
    return p.method, p.url, headers, body


def sign(broker, body, headers, context=None):
    """A POST to / signed by botocore.auth.SigV4Auth (the signer boto3 uses for SQS)."""
    req = AWSRequest(method="POST", url=broker.sqs_url + "/", headers=dict(headers), data=body)
    req.context.update(context or {})
    botocore.auth.SigV4Auth(Credentials(KEY_ID, SECRET), "sqs", REGION).add_auth(req)
    p = req.prepare()
    body = p.body.encode() if isinstance(p.body, str) else (p.body or b"")
    return p.url, dict(p.headers.items()), body


def replay(method, url, headers, body, drop=(), **extra):
    """Sends a captured request again: its headers (less `drop`, plus `extra`) and `body`."""
    h = {k: v for k, v in headers.items()
         if k.lower() not in {"content-length", *(d.lower() for d in drop)}}
    h.update(extra)
    return requests.request(method, url, headers=h, data=body, timeout=30)


def query_error(r):
    """(status, Query <Code>, <Message>) of an XML error answer."""
    assert "<Code>" in r.text, f"not refused: {r.status_code} {r.text}"
    code = r.text.split("<Code>")[1].split("</Code>")[0]
    message = r.text.split("<Message>")[1].split("</Message>")[0]
    assert r.headers["x-amzn-query-error"] == code + ";Sender"
    return r.status_code, code, message


def json_error(r):
    """(status, code, message) of a JSON error answer."""
    doc = r.json()
    assert "__type" in doc, f"not refused: {r.status_code} {r.text}"
    return r.status_code, doc["__type"].split("#")[-1], doc.get("message", doc.get("Message"))


def form(**params):
    return urllib.parse.urlencode(params).encode()


FORM = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
JSON = {"Content-Type": "application/x-amz-json-1.0"}


def test_captured_send_message_does_not_carry_another_body(broker):
    url = queue(broker, "body-forgery")
    method, target, headers, body = capture(broker, "send_message", QueueUrl=url,
                                            MessageBody="original")
    assert b"MessageBody=original" in body
    assert not any(k.lower() == "x-amz-content-sha256" for k in headers)  # boto3 sends none
    signed_hash = hashlib.sha256(body).hexdigest()
    forged = body.replace(b"MessageBody=original", b"MessageBody=forged")

    # Another body, its hash claimed to be the signed one's: the hash is the body's own.
    r = replay(method, target, headers, forged, **{"X-Amz-Content-Sha256": signed_hash})
    assert query_error(r) == (403, "SignatureDoesNotMatch", AWS_MISMATCH), r.text
    # Another body, nothing claimed.
    r = replay(method, target, headers, forged)
    assert query_error(r) == (403, "SignatureDoesNotMatch", AWS_MISMATCH), r.text
    # The signed body with a header that names another body's hash.
    r = replay(method, target, headers, body,
               **{"X-Amz-Content-Sha256": hashlib.sha256(forged).hexdigest()})
    assert query_error(r) == (403, "SignatureDoesNotMatch", AWS_MISMATCH), r.text
    broker.wait_log("X-Amz-Content-Sha256 is not the SHA-256 of the body received")

    assert bodies_in(broker, url) == []

    # The untouched request, replayed within the 15 minutes, is accepted as on AWS (with or
    # without a header that states its true hash).
    assert replay(method, target, headers, body).status_code == 200
    r = replay(method, target, headers, body, **{"X-Amz-Content-Sha256": signed_hash})
    assert r.status_code == 200, r.text
    assert bodies_in(broker, url) == ["original", "original"]


def test_captured_request_cannot_become_a_purge(broker):
    url = queue(broker, "purge-forgery")
    client(broker).send_message(QueueUrl=url, MessageBody="keep me")
    method, target, headers, body = capture(broker, "send_message", QueueUrl=url,
                                            MessageBody="original")
    purge = form(Action="PurgeQueue", QueueUrl=url, Version="2012-11-05")
    r = replay(method, target, headers, purge,
               **{"X-Amz-Content-Sha256": hashlib.sha256(body).hexdigest()})
    assert query_error(r) == (403, "SignatureDoesNotMatch", AWS_MISMATCH), r.text
    assert bodies_in(broker, url) == ["keep me"]


def test_json_protocol_body_is_covered(broker):
    url = queue(broker, "json-forgery")
    original = json.dumps({"QueueUrl": url, "MessageBody": "original"})
    target, headers, body = sign(broker, original,
                                 {**JSON, "X-Amz-Target": "AmazonSQS.SendMessage"})
    assert "x-amz-target" in headers["Authorization"]  # botocore signs it
    forged = json.dumps({"QueueUrl": url, "MessageBody": "forged"}).encode()
    r = replay("POST", target, headers, forged,
               **{"X-Amz-Content-Sha256": hashlib.sha256(body).hexdigest()})
    assert json_error(r) == (403, "SignatureDoesNotMatch", AWS_MISMATCH), r.text
    assert bodies_in(broker, url) == []
    r = replay("POST", target, headers, body)
    assert r.status_code == 200, r.text
    assert bodies_in(broker, url) == ["original"]


def test_unsigned_payload_is_refused(broker):
    url = queue(broker, "unsigned-payload")
    body = form(Action="SendMessage", QueueUrl=url, MessageBody="unsigned", Version="2012-11-05")
    # botocore's signer with payload signing off (what it does for S3 over HTTPS): the header
    # says UNSIGNED-PAYLOAD and the signature covers that string instead of the body.
    target, headers, signed_body = sign(broker, body, FORM,
                                        context={"payload_signing_enabled": False})
    assert headers["X-Amz-Content-SHA256"] == "UNSIGNED-PAYLOAD"
    for b in (signed_body, body.replace(b"unsigned", b"forged")):
        status, code, message = query_error(replay("POST", target, headers, b))
        assert (status, code) == (403, "SignatureDoesNotMatch")
        assert "UNSIGNED-PAYLOAD is not accepted by sqs" in message
    # The JSON protocol alike.
    target, headers, signed_body = sign(
        broker, json.dumps({"QueueUrl": url, "MessageBody": "unsigned"}),
        {**JSON, "X-Amz-Target": "AmazonSQS.SendMessage"},
        context={"payload_signing_enabled": False})
    status, code, message = json_error(replay("POST", target, headers, signed_body))
    assert (status, code) == (403, "SignatureDoesNotMatch")
    assert "UNSIGNED-PAYLOAD" in message
    assert bodies_in(broker, url) == []


def test_unsigned_x_amz_target_is_refused(broker):
    url = queue(broker, "unsigned-target")
    client(broker).send_message(QueueUrl=url, MessageBody="keep me")
    # A JSON body signed without X-Amz-Target; the action is added after signing.
    target, headers, body = sign(broker, json.dumps({"QueueUrl": url}), JSON)
    assert "x-amz-target" not in headers["Authorization"]
    r = replay("POST", target, headers, body, **{"X-Amz-Target": "AmazonSQS.PurgeQueue"})
    status, code, message = json_error(r)
    assert (status, code) == (403, "SignatureDoesNotMatch"), r.text
    assert "X-Amz-Target" in message and "signed" in message
    assert bodies_in(broker, url) == ["keep me"]


def test_presigned_url_does_only_what_its_query_says(broker):
    url = queue(broker, "presigned")
    presigned = client(broker).generate_presigned_url("list_queues", ExpiresIn=300)  # a POST
    assert "Action=ListQueues" in presigned and "X-Amz-Signature=" in presigned
    send = form(Action="SendMessage", QueueUrl=url, MessageBody="forged", Version="2012-11-05")

    # A body of parameters, with the empty body's hash claimed or not.
    for extra in ({"X-Amz-Content-Sha256": EMPTY_SHA256}, {}):
        r = requests.post(presigned, headers={**FORM, **extra}, data=send, timeout=30)
        status, code, message = query_error(r)
        assert (status, code) == (400, "InvalidParameterCombination"), r.text
        assert "without a body" in message
    # The JSON protocol's action header.
    r = requests.post(presigned, headers={**JSON, "X-Amz-Target": "AmazonSQS.SendMessage"},
                      data=json.dumps({"QueueUrl": url, "MessageBody": "forged"}), timeout=30)
    status, code, message = json_error(r)
    assert (status, code) == (400, "InvalidParameterCombination"), r.text
    assert "X-Amz-Target" in message
    assert bodies_in(broker, url) == []

    # The URL itself still lists the queues (boto3 presigns a POST unless told GET).
    r = requests.post(presigned, timeout=30)
    assert r.status_code == 200, r.text
    assert url in r.text
    r = requests.get(client(broker).generate_presigned_url("list_queues", ExpiresIn=300,
                                                           HttpMethod="GET"), timeout=30)
    assert r.status_code == 200, r.text
    assert url in r.text


def test_sdks_still_work_with_sigv4(broker):
    """Regression: the ordinary clients sign what sluice now checks."""
    c = client(broker)
    url = queue(broker, "sdk-paths")
    c.send_message(QueueUrl=url, MessageBody="boto3 query")

    env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET,
               AWS_DEFAULT_REGION=REGION, AWS_PAGER="", AWS_MAX_ATTEMPTS="1")
    for aws in sorted({"/usr/bin/aws", shutil.which("aws") or "/usr/bin/aws"}):
        r = subprocess.run([aws, "--endpoint-url", broker.sqs_url, "sqs", "send-message",
                            "--queue-url", url, "--message-body", "cli " + aws],
                           capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, aws + ": " + r.stderr

    node = subprocess.run(
        ["node", "-e", """
const sqs = require('@aws-sdk/client-sqs');
const [endpoint, url, id, secret] = process.argv.slice(1);
const c = new sqs.SQSClient({endpoint, region: 'us-east-1', maxAttempts: 1,
                             credentials: {accessKeyId: id, secretAccessKey: secret}});
c.send(new sqs.SendMessageCommand({QueueUrl: url, MessageBody: 'js sdk'}))
  .then(() => console.log('ok'), (e) => { console.error(e.name, e.message); process.exit(1); });
""", broker.sqs_url, url, KEY_ID, SECRET],
        capture_output=True, text=True, timeout=120, cwd=os.path.join(HERE, "js"))
    assert node.returncode == 0 and node.stdout.strip() == "ok", node.stdout + node.stderr

    expected = ["boto3 query", "js sdk"] + [
        "cli " + a for a in sorted({"/usr/bin/aws", shutil.which("aws") or "/usr/bin/aws"})]
    python = json_boto3_python()
    if python is not None:
        r = subprocess.run([python, "-c", """
import sys, boto3
from botocore.config import Config
endpoint, url, key, secret = sys.argv[1:]
c = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key,
                 aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))
assert c.meta.service_model.protocol == "json"
c.send_message(QueueUrl=url, MessageBody="boto3 json")
print("ok")
""", broker.sqs_url, url, KEY_ID, SECRET], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
        expected.append("boto3 json")
    assert bodies_in(broker, url) == sorted(expected)
