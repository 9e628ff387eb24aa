import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sluice  # noqa: E402


@pytest.fixture
def broker():
    """A fresh sluice with an empty data directory, stopped after the test."""
    s = Sluice().start()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def sqs_broker():
    """A fresh sluice with its SQS listener open."""
    s = Sluice(sqs=True).start()
    try:
        yield s
    finally:
        s.close()
