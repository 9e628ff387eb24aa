"""SQS in upstream mode across a restart of the cluster: messages received and not deleted
before a native sluice playing the cluster is SIGKILLed and restarted come back after their
visibility timeout (a redelivery reads the message from the topic again; a read that fails
while the cluster comes back must leave the message in the queue, never drop it), standard and
FIFO (in group order), and none comes back twice once deleted. boto3 against the gateway."""
import contextlib
import os
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "faults"))
from node import Node, free_port  # noqa: E402
import workers  # noqa: E402

VT = 2


@pytest.fixture(scope="module")
def fleet():
    """A native sluice as the cluster on fixed ports (so that its restart comes back where
    the gateway looks), reached through a loopback proxy as a cluster behind a load balancer
    is (the proxy takes the connection while the cluster is down, then closes it), and one
    gateway serving SQS over it. Both log into one file (each line prefixed with its node's
    name, across the cluster's restarts), whose tail a failing test prints."""
    with tempfile.TemporaryDirectory(prefix="sluice-sqs-restart-") as d:
        log_path = os.path.join(d, "sluice.log")
        cluster = Node(os.path.join(d, "cluster"), sqs=False, name="cluster", log_path=log_path)
        gateway = Node(os.path.join(d, "gateway"), proxies=False, name="gateway",
                       args=["--upstream", cluster.bootstrap], log_path=log_path,
                       settings={"proxy.node.port.base": str(free_port())})
        try:
            cluster.start()
            gateway.start()
            yield cluster, gateway, log_path
        finally:
            gateway.close()
            cluster.close()


@contextlib.contextmanager
def logs_on_failure(log_path, lines=400):
    """A failure inside prints the last `lines` lines of both nodes' log (pytest shows them)."""
    try:
        yield
    except BaseException:
        with open(log_path, errors="replace") as f:
            tail = f.readlines()[-lines:]
        print(f"--- the last {len(tail)} lines of {log_path} ---\n" + "".join(tail))
        raise


def receive_all(c, url, want, timeout, visibility):
    """Receives (and leaves in flight for `visibility` s) until `want` distinct messages came
    back; every message received, in order (one whose visibility ends during the loop comes
    again: with a visibility longer than the loop, a message received twice is a fault)."""
    got = []
    deadline = time.monotonic() + timeout
    while len({m["Body"] for m in got}) < want:
        assert time.monotonic() < deadline, f"{len(got)} of {want} messages came back: {got}"
        r = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                              AttributeNames=["All"], VisibilityTimeout=visibility)
        got += r.get("Messages", [])
    return got


def distinct(messages):
    """The bodies in the order each was first received."""
    return list(dict.fromkeys(m["Body"] for m in messages))


def restart(cluster):
    cluster.kill()
    cluster.start()


@pytest.mark.parametrize("kind", ["standard", "fifo"])
def test_messages_in_flight_across_a_cluster_restart_come_back(fleet, kind):
    cluster, gateway, log_path = fleet
    with logs_on_failure(log_path):
        in_flight_across_restarts(cluster, gateway, kind)


def in_flight_across_restarts(cluster, gateway, kind):
    c = workers.sqs_client(gateway.sqs_url)
    fifo = kind == "fifo"
    name = "restart-fifo.fifo" if fifo else "restart-std"
    attrs = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if fifo else {}
    url = c.create_queue(QueueName=name, Attributes=attrs)["QueueUrl"]
    bodies = [f"{kind}-{i}" for i in range(5)]
    for b in bodies:
        extra = {"MessageGroupId": "g"} if fifo else {}
        c.send_message(QueueUrl=url, MessageBody=b, **extra)
    for round_ in range(2):
        # Everything in flight, then the cluster dies and comes back.
        first = receive_all(c, url, len(bodies), 30, VT)
        if fifo:
            assert distinct(first) == bodies
        else:
            assert sorted(distinct(first)) == sorted(bodies)
        restart(cluster)
        # Each comes back after its visibility timeout: none lost, none twice.
        again = receive_all(c, url, len(bodies), 90, 120)
        assert sorted(m["Body"] for m in again) == sorted(bodies), (round_, again)
        if fifo:
            assert [m["Body"] for m in again] == bodies, round_
        counts = {m["Body"]: int(m["Attributes"]["ApproximateReceiveCount"]) for m in again}
        assert all(n >= 2 * round_ + 2 for n in counts.values()), counts
        # Back in the queue for the next round (FIFO: visible again once the group's
        # messages all are).
        for m in again:
            c.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                        VisibilityTimeout=0)
    # Deleted, they stay deleted, across one more restart.
    last = receive_all(c, url, len(bodies), 30, 120)
    for m in last:
        c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    restart(cluster)
    deadline = time.monotonic() + VT + 3
    while time.monotonic() < deadline:
        r = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        assert not r.get("Messages"), r["Messages"]
