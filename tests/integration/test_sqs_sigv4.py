"""SQS with sqs.authentication=sigv4: boto3 and awscli (Query protocol) with the right key, a
wrong secret and an unknown key id; botocore's signer by hand for the JSON protocol, a stale
X-Amz-Date, the presigned query form and no signature at all."""
import datetime
import json
import os
import stat
import subprocess
import tempfile
from unittest import mock

import boto3
import botocore.auth
import pytest
import requests
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from harness import Sluice
from sasl_support import users

KEY_ID = "AKIAALICE0000000TEST"
SECRET = "alice/Secret+Access/Key0123456789abcdefgh"
REGION = "us-east-1"


@pytest.fixture(scope="module")
def broker():
    d = tempfile.TemporaryDirectory(prefix="sluice-sigv4-")
    r = users("set", "alice", "--data-dir", d.name, "--aws-access-key-id", KEY_ID,
              stdin=SECRET + "\n")
    assert r.returncode == 0, r.stderr
    s = Sluice(data_dir=d.name, sqs=True, settings={"sqs.authentication": "sigv4"})
    s.start()
    yield s
    s.close()
    d.cleanup()


def client(broker, key_id=KEY_ID, secret=SECRET):
    return boto3.client("sqs", endpoint_url=broker.sqs_url, region_name=REGION,
                        aws_access_key_id=key_id, aws_secret_access_key=secret,
                        config=Config(retries={"max_attempts": 1}, read_timeout=60,
                                      connect_timeout=10))


def error_code(call):
    with pytest.raises(ClientError) as e:
        call()
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_users_command_stores_the_key_privately_and_lists_it(tmp_path):
    d = str(tmp_path)
    r = users("set", "bob", "--data-dir", d, "--aws-access-key-id", "AKIABOB000000000TEST",
              stdin="bob-secret\n")
    assert r.returncode == 0, r.stderr
    path = os.path.join(d, "aws-keys")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "bob-secret" not in r.stdout + r.stderr
    assert users("list", "--data-dir", d).stdout.split() == ["bob",
                                                             "aws-access-key-id=AKIABOB000000000TEST"]
    assert users("set", "bob", "--data-dir", d, "--aws-access-key-id", "bad id",
                 stdin="x\n").returncode != 0
    assert users("delete", "bob", "--data-dir", d).returncode == 0
    assert users("list", "--data-dir", d).stdout == ""


def test_boto3_with_the_right_key(broker):
    c = client(broker)
    url = c.create_queue(QueueName="signed")["QueueUrl"]
    c.send_message(QueueUrl=url, MessageBody="hello")
    got = c.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]
    assert [m["Body"] for m in got] == ["hello"]


def test_boto3_wrong_secret_and_unknown_key(broker):
    assert error_code(lambda: client(broker, secret="wrong").list_queues()) == \
        ("SignatureDoesNotMatch", 403)
    assert error_code(lambda: client(broker, key_id="AKIAUNKNOWN00000TEST").list_queues()) == \
        ("InvalidClientTokenId", 403)
    # The log is read by a thread: wait (bounded) for the line.
    broker.wait_log("SignatureDoesNotMatch")
    assert SECRET not in broker.log_text()


def aws(broker, key_id, secret, *args):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret,
               AWS_DEFAULT_REGION=REGION, AWS_PAGER="", AWS_MAX_ATTEMPTS="1")
    return subprocess.run(["/usr/bin/aws", "--endpoint-url", broker.sqs_url, "--output", "json",
                           "sqs", *args], capture_output=True, text=True, timeout=60, env=env)


def test_awscli_right_and_wrong_key(broker):
    client(broker).create_queue(QueueName="cli-signed")
    r = aws(broker, KEY_ID, SECRET, "list-queues")
    assert r.returncode == 0, r.stderr
    assert any(u.endswith("/cli-signed") for u in json.loads(r.stdout)["QueueUrls"])
    r = aws(broker, KEY_ID, "not-the-secret", "list-queues")
    assert r.returncode != 0 and "SignatureDoesNotMatch" in r.stderr


def signed(broker, method, path, headers, body, secret=SECRET, shift=None, presign=False):
    """A request signed by botocore's own signer (optionally `shift` in the past)."""
    req = AWSRequest(method=method, url=broker.sqs_url + path, headers=headers, data=body)
    creds = Credentials(KEY_ID, secret)
    signer = (botocore.auth.SigV4QueryAuth(creds, "sqs", REGION, expires=60) if presign
              else botocore.auth.SigV4Auth(creds, "sqs", REGION))
    if shift is None:
        signer.add_auth(req)
    else:
        real = datetime.datetime

        class Shifted(real):
            @classmethod
            def utcnow(cls):
                return real.utcnow() - shift

        with mock.patch.object(botocore.auth.datetime, "datetime", Shifted):
            signer.add_auth(req)
    p = req.prepare()
    return requests.request(p.method, p.url, headers=dict(p.headers), data=p.body, timeout=30)


QUERY_BODY = "Action=ListQueues&Version=2012-11-05"
FORM = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
JSON = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.ListQueues"}


def query_code(r):
    return r.text.split("<Code>")[1].split("</Code>")[0]


def test_query_protocol_signed_by_hand(broker):
    r = signed(broker, "POST", "/", FORM, QUERY_BODY)
    assert r.status_code == 200, r.text
    r = signed(broker, "POST", "/", FORM, QUERY_BODY, secret="wrong")
    assert (r.status_code, query_code(r)) == (403, "SignatureDoesNotMatch")
    assert r.headers["x-amzn-query-error"] == "SignatureDoesNotMatch;Sender"


def test_stale_date_is_request_expired(broker):
    r = signed(broker, "POST", "/", FORM, QUERY_BODY, shift=datetime.timedelta(minutes=20))
    assert (r.status_code, query_code(r)) == (400, "RequestExpired")
    # Within the 15 minutes: accepted.
    r = signed(broker, "POST", "/", FORM, QUERY_BODY, shift=datetime.timedelta(minutes=5))
    assert r.status_code == 200, r.text


def test_json_protocol_errors_carry_the_type(broker):
    r = signed(broker, "POST", "/", JSON, "{}")
    assert r.status_code == 200, r.text
    r = signed(broker, "POST", "/", JSON, "{}", secret="wrong")
    assert r.status_code == 403
    assert r.json()["__type"].endswith("SignatureDoesNotMatch")
    r = requests.post(broker.sqs_url + "/", headers=JSON, data="{}", timeout=30)
    assert r.status_code == 403
    assert r.json()["__type"].endswith("MissingAuthenticationToken")


def test_no_signature_is_missing_authentication_token(broker):
    r = requests.post(broker.sqs_url + "/", headers=FORM, data=QUERY_BODY, timeout=30)
    assert (r.status_code, query_code(r)) == (403, "MissingAuthenticationToken")
    r = requests.get(broker.sqs_url + "/?" + QUERY_BODY, timeout=30)
    assert (r.status_code, query_code(r)) == (403, "MissingAuthenticationToken")


def test_presigned_query_form(broker):
    r = signed(broker, "GET", "/?" + QUERY_BODY, {}, None, presign=True)
    assert r.status_code == 200, r.text
    r = signed(broker, "GET", "/?" + QUERY_BODY, {}, None, presign=True, secret="wrong")
    assert (r.status_code, query_code(r)) == (403, "SignatureDoesNotMatch")
    r = signed(broker, "GET", "/?" + QUERY_BODY, {}, None, presign=True,
               shift=datetime.timedelta(minutes=5))
    assert (r.status_code, query_code(r)) == (400, "RequestExpired")  # X-Amz-Expires=60


def test_sigv4_counted_in_metrics(broker):
    text = requests.get(broker.http_url + "/metrics", timeout=30).text
    assert 'sluice_authentications_total{front="sqs",mechanism="sigv4"}' in text
    assert 'sluice_authentication_failures_total{front="sqs",mechanism="sigv4"}' in text
