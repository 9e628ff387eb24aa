"""boto3 in the AWS JSON 1.0 protocol: Debian's boto3 speaks only the Query protocol, so this
runs sqs_boto3_json.py under another Python whose botocore has the JSON model (1.34 or later;
the machine's `python3` on PATH), and is skipped where there is none."""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def json_boto3_python():
    for candidate in [os.environ.get("SLUICE_JSON_BOTO3_PYTHON"), shutil.which("python3"),
                      os.path.expanduser("~/.pyenv/shims/python3")]:
        if not candidate or os.path.realpath(candidate) == os.path.realpath("/usr/bin/python3"):
            continue
        r = subprocess.run([candidate, "-c", "import botocore.session as s;"
                            "print(s.get_session().get_service_model('sqs').protocol)"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0 and r.stdout.strip() == "json":
            return candidate
    return None


def test_boto3_json_protocol(sqs_broker):
    python = json_boto3_python()
    if python is None:
        pytest.skip("no Python with a botocore that speaks the SQS JSON protocol")
    r = subprocess.run([python, os.path.join(HERE, "sqs_boto3_json.py"), sqs_broker.sqs_url],
                       capture_output=True, text=True, timeout=180, cwd=HERE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr
