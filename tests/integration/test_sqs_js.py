"""@aws-sdk/client-sqs (Node.js, the AWS JSON 1.0 protocol) against the SQS front: the whole
lifecycle, visibility, MD5 digests checked by the SDK (bodies) and by an independent library
(attributes), dead-letter queues redriven with message move tasks, FIFO."""
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("scenario", ["lifecycle", "visibility", "md5", "movetask", "fifo"])
def test_js_sdk(sqs_broker, scenario):
    r = subprocess.run(["node", os.path.join(HERE, "js", "sqs_json.js"), sqs_broker.sqs_url, scenario],
                       capture_output=True, text=True, timeout=180, cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr
