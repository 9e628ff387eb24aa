"""SQS over a Kafka cluster served by a fleet of gateways: three `sluice --upstream BOOTSTRAP
--sqs ...` over one native sluice playing the cluster. The gateways elect one owner of the queue
state through the group _sluice_queue_owner (over the lease topic
_sluice_queue_owners); the owner serves, the others send a standard queue's messages to its
topic themselves and forward every other SQS request to it; a new owner fences the old one through the transactional id
_sluice_queue_state-0. boto3 (the Query protocol) and the AWS JS SDK drive the gateways.

One cluster and three gateways for the whole file; the tests run in order: the failover test
SIGKILLs the owner, the deposed-owner test SIGSTOPs the next one past the group's session
timeout."""
import json
import os
import signal
import subprocess
import threading
import time

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from harness import wait_for
from sqs_support import REGION, client, md5, metric
from upstream_support import Gateway, NativeUpstream

HERE = os.path.dirname(os.path.abspath(__file__))
SESSION_MS = 6000
OWNS = "this gateway owns the SQS queues now"


@pytest.fixture(scope="module")
def fleet():
    up = NativeUpstream(settings={"group.min.session.timeout.ms": 1000}).start()
    gws = []
    try:
        for _ in range(3):
            gw = Gateway(up.bootstrap, args=["--sqs", "127.0.0.1:0"],
                         settings={"sqs.fleet.session.timeout.ms": SESSION_MS})
            gw.start(timeout=60)
            gws.append(gw)
        wait_for(lambda: owner_of(gws) is not None, 60, "one gateway to own the queues")
        yield up, gws
    finally:
        if os.environ.get("SLUICE_FLEET_LOGS"):
            for i, gw in enumerate(gws):
                print(f"--- gateway {i} ---\n" + gw.log_text())
        for gw in gws:
            try:
                if gw.proc and gw.proc.poll() is None:
                    os.kill(gw.proc.pid, signal.SIGCONT)
                gw.close()
            except Exception:  # noqa: BLE001 - the others still close
                pass
        up.close()


def owns_count(gw):
    with gw._log_lock:
        return sum(1 for line in gw.log_lines if OWNS in line)


def stopped_serving(gw):
    return gw._find_line("no longer holds") or gw._find_line("refused this gateway's queue "
                                                             "state write as fenced")


def owner_of(gws):
    """The gateway that owns the queues now: the last to log so among the live ones."""
    live = [g for g in gws if g.alive()]
    owners = [g for g in live if owns_count(g) > 0 and not
              (stopped_serving(g) and last_index(g, OWNS) < last_index_stop(g))]
    return owners[0] if len(owners) == 1 else None


def last_index(gw, needle):
    with gw._log_lock:
        idx = [i for i, line in enumerate(gw.log_lines) if needle in line]
    return idx[-1] if idx else -1


def last_index_stop(gw):
    return max(last_index(gw, "no longer holds"),
               last_index(gw, "refused this gateway's queue state write as fenced"))


def test_one_owner_and_every_gateway_serves_every_call(fleet):
    _, gws = fleet
    owner = owner_of(gws)
    assert owner is not None
    a, b, c = (client(g) for g in gws)
    url = a.create_queue(QueueName="fleet-life")["QueueUrl"]
    # Queue URLs name the gateway the client called (its Host header, forwarded as it came).
    assert b.list_queues()["QueueUrls"] == [gws[1].sqs_url + "/000000000000/fleet-life"]
    sent = [a.send_message(QueueUrl=url, MessageBody=f"m{i}")["MessageId"] for i in range(5)]
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        got += b.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                 WaitTimeSeconds=2).get("Messages", [])
    assert sorted(m["MessageId"] for m in got) == sorted(sent)
    for m in got:
        c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert b.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"][
        "ApproximateNumberOfMessages"] == "0"
    assert a.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []


def test_js_sdk_against_a_gateway_that_does_not_own_the_queues(fleet):
    _, gws = fleet
    owner = owner_of(gws)
    other = next(g for g in gws if g is not owner and g.alive())
    r = subprocess.run(["node", os.path.join(HERE, "js", "sqs_json.js"), other.sqs_url,
                        "lifecycle"], capture_output=True, text=True, timeout=120,
                       cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_forwarded_requests_reuse_a_bounded_number_of_connections(fleet):
    _, gws = fleet
    owner = owner_of(gws)
    other = next(g for g in gws if g is not owner and g.alive())
    threads_n, per_thread = 4, 10
    clients = [client(other) for _ in range(threads_n)]  # one keep-alive connection each
    # FIFO: its sends are forwarded too (a standard queue's are produced by the gateway).
    url = clients[0].create_queue(QueueName="fleet-pool.fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    before = metric(owner, "sluice_connections_accepted_total", listener="sqs")
    sent = {}
    errors = []

    def run(i):
        try:
            for k in range(per_thread):
                body = f"t{i}-m{k}"
                r = clients[i].send_message(QueueUrl=url, MessageBody=body,
                                            MessageGroupId=f"t{i}")
                assert r["MD5OfMessageBody"] == md5(body)
                sent[r["MessageId"]] = body
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert len(sent) == threads_n * per_thread
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < len(sent) and time.monotonic() < deadline:
        for m in clients[0].receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                            WaitTimeSeconds=1).get("Messages", []):
            got[m["MessageId"]] = m["Body"]
            clients[1].delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert got == sent
    # Over 60 forwarded requests on 4 client connections: the owner accepted at most one
    # connection per client connection (each request on a new one would be one per request).
    accepted = metric(owner, "sluice_connections_accepted_total", listener="sqs") - before
    assert accepted <= threads_n, accepted


def test_a_gateway_that_does_not_own_the_queues_sends_to_a_standard_queue_itself(fleet):
    """SendMessage(Batch) on a standard queue is produced by the gateway that got it: with the
    owner SIGSTOPped (shorter than the group's session timeout: it stays the owner) sends
    through another gateway are answered; the owner, back, delivers each once, and a delay
    set on a direct send is the owner's to keep. A FIFO queue's sends still go to the owner."""
    _, gws = fleet
    owner = owner_of(gws)
    other = next(g for g in gws if g is not owner and g.alive())
    c = client(other)
    url = c.create_queue(QueueName="fleet-direct")["QueueUrl"]
    fifo = c.create_queue(QueueName="fleet-direct.fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
    other.wait_log("queue fleet-direct known here (standard: its sends are produced here)", 30)
    other.wait_log("queue fleet-direct.fifo known here (FIFO: its sends go through the owner)",
                   30)
    sent = {}
    os.kill(owner.proc.pid, signal.SIGSTOP)
    try:
        # Bounded: a send forwarded to the stopped owner would not be answered in time.
        quick = boto3_client_with_timeout(other, 10)
        r = quick.send_message(QueueUrl=url, MessageBody="direct-0")
        assert r["MD5OfMessageBody"] == md5("direct-0")
        sent[r["MessageId"]] = "direct-0"
        entries = [{"Id": str(i), "MessageBody": f"direct-{i}",
                    "MessageAttributes": {"n": {"DataType": "Number", "StringValue": str(i)}}}
                   for i in range(1, 5)]
        b = quick.send_message_batch(QueueUrl=url, Entries=entries)
        assert not b.get("Failed"), b
        for e in b["Successful"]:
            assert e["MD5OfMessageBody"] == md5(f"direct-{e['Id']}")
            sent[e["MessageId"]] = f"direct-{e['Id']}"
        # The JSON protocol's SendMessage too.
        j = requests.post(other.sqs_url + "/", timeout=10, data=json.dumps(
            {"QueueUrl": url, "MessageBody": "direct-json"}), headers={
            "X-Amz-Target": "AmazonSQS.SendMessage",
            "Content-Type": "application/x-amz-json-1.0"})
        assert j.status_code == 200, j.text
        assert j.json()["MD5OfMessageBody"] == md5("direct-json")
        sent[j.json()["MessageId"]] = "direct-json"
        # Delayed past this test: the owner keeps it delayed (the record's sqs:visible-at).
        quick.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=900)
        # Bad input is refused here as the owner would refuse it.
        with pytest.raises(ClientError) as bad:
            quick.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=901)
        assert bad.value.response["Error"]["Code"] == "InvalidParameterValue"
    finally:
        os.kill(owner.proc.pid, signal.SIGCONT)
    assert len(sent) == 6
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < len(sent) and time.monotonic() < deadline:
        for m in c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                   MessageAttributeNames=["All"]).get("Messages", []):
            assert m["MessageId"] not in got, f"received twice: {m}"
            got[m["MessageId"]] = m["Body"]
            if m["Body"] not in ("direct-0", "direct-json"):
                assert m["MessageAttributes"]["n"]["StringValue"] == m["Body"][len("direct-"):]
            c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert got == sent
    wait_for(lambda: client(owner).get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])["Attributes"][
        "ApproximateNumberOfMessagesDelayed"] == "1", 30, "the delayed message to be counted")
    assert c.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []
    # FIFO through the gateway that does not own it: forwarded, deduplicated by the owner.
    first = c.send_message(QueueUrl=fifo, MessageBody="once", MessageGroupId="g")
    again = c.send_message(QueueUrl=fifo, MessageBody="once", MessageGroupId="g")
    assert first["MessageId"] == again["MessageId"]


def boto3_client_with_timeout(gw, seconds):
    """A boto3 SQS client of `gw` whose calls give up after `seconds` (no retries)."""
    return boto3.client(
        "sqs", endpoint_url=gw.sqs_url, region_name=REGION, aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}, read_timeout=seconds, connect_timeout=5))


def receive_everything(gws, url, expected, deleted, timeout=60):
    """Receives through every live gateway at once (a thread each), deleting what comes:
    answers (message id -> body). Fails on a message received twice or a deleted one."""
    seen = {}
    held = set()
    problems = []
    lock = threading.Lock()
    stop = threading.Event()

    def run(gw):
        c = client(gw)
        while not stop.is_set():
            try:
                r = c.receive_message(QueueUrl=url, MaxNumberOfMessages=3, WaitTimeSeconds=1,
                                      VisibilityTimeout=30)
            except Exception as e:  # noqa: BLE001 - 503 while the owner moves
                if "ServiceUnavailable" not in str(e) and "InternalError" not in str(e):
                    problems.append(repr(e))
                continue
            for m in r.get("Messages", []):
                mid = m["MessageId"]
                with lock:
                    if mid in held or mid in seen:
                        problems.append(f"{mid} handed out twice")
                    if mid in deleted:
                        problems.append(f"{mid} came back after its delete")
                    held.add(mid)
                c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
                with lock:
                    held.discard(mid)
                    seen[mid] = m["Body"]
            with lock:
                if len(seen) >= expected:
                    stop.set()

    threads = [threading.Thread(target=run, args=(g,), daemon=True) for g in gws if g.alive()]
    for t in threads:
        t.start()
    stop.wait(timeout)
    stop.set()
    for t in threads:
        t.join(90)
    assert problems == []
    return seen


def test_a_killed_owner_s_messages_come_back_once_and_fifo_keeps_its_order(fleet):
    _, gws = fleet
    owner = owner_of(gws)
    other = next(g for g in gws if g is not owner)
    c = client(other)
    url = c.create_queue(QueueName="fleet-kill",
                         Attributes={"VisibilityTimeout": "5"})["QueueUrl"]
    furl = c.create_queue(QueueName="fleet-order.fifo",
                          Attributes={"FifoQueue": "true",
                                      "ContentBasedDeduplication": "true",
                                      "VisibilityTimeout": "5"})["QueueUrl"]
    ids = {c.send_message(QueueUrl=url, MessageBody=f"k{i}")["MessageId"]: f"k{i}"
           for i in range(20)}
    for i in range(10):
        c.send_message(QueueUrl=furl, MessageBody=f"f{i}", MessageGroupId="g")
    # 10 in flight at the owner, 5 of them deleted; 3 FIFO messages received and deleted, the
    # next 2 in flight.
    inflight = []
    deadline = time.monotonic() + 30
    while len(inflight) < 10 and time.monotonic() < deadline:
        inflight += c.receive_message(QueueUrl=url, MaxNumberOfMessages=10 - len(inflight),
                                      WaitTimeSeconds=2).get("Messages", [])
    assert len(inflight) == 10
    deleted = set()
    for m in inflight[:5]:
        c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        deleted.add(m["MessageId"])
    fifo = c.receive_message(QueueUrl=furl, MaxNumberOfMessages=3,
                             WaitTimeSeconds=2)["Messages"]
    assert [m["Body"] for m in fifo] == ["f0", "f1", "f2"]
    for m in fifo:
        c.delete_message(QueueUrl=furl, ReceiptHandle=m["ReceiptHandle"])
    held = c.receive_message(QueueUrl=furl, MaxNumberOfMessages=2,
                             WaitTimeSeconds=2)["Messages"]
    assert [m["Body"] for m in held] == ["f3", "f4"]

    t0 = time.monotonic()
    owner.kill()
    seen = receive_everything(gws, url, 15, deleted, timeout=90)
    took = time.monotonic() - t0
    assert set(seen) == set(ids) - deleted, took
    assert all(ids[k] == v for k, v in seen.items())
    survivor = owner_of(gws)
    assert survivor is not None and survivor is not owner

    # FIFO: the rest in order, the held two first once their visibility timeout ran out.
    got = []
    fc = client(other)
    deadline = time.monotonic() + 30
    while len(got) < 7 and time.monotonic() < deadline:
        r = fc.receive_message(QueueUrl=furl, MaxNumberOfMessages=10, WaitTimeSeconds=2)
        for m in r.get("Messages", []):
            got.append(m["Body"])
            fc.delete_message(QueueUrl=furl, ReceiptHandle=m["ReceiptHandle"])
    assert got == [f"f{i}" for i in range(3, 10)]


def test_a_deposed_owner_cannot_write_and_stops_serving(fleet):
    _, gws = fleet
    owner = owner_of(gws)
    assert owner is not None
    others = [g for g in gws if g is not owner and g.alive()]
    c = client(others[0])
    url = c.create_queue(QueueName="fleet-deposed")["QueueUrl"]
    ids = {c.send_message(QueueUrl=url, MessageBody=f"d{i}")["MessageId"] for i in range(6)}
    before = {id(g): owns_count(g) for g in others}

    def new_owner():
        return next((g for g in others if owns_count(g) > before[id(g)]), None)

    # The owner stops past the session timeout with a receive waiting at its socket.
    late = {}
    stale = client(owner)
    stale.list_queues()  # the connection is open before the stop
    os.kill(owner.proc.pid, signal.SIGSTOP)
    try:
        def late_receive():
            try:
                late["r"] = stale.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                                  VisibilityTimeout=60)
            except Exception as e:  # noqa: BLE001 - the expected outcome
                late["e"] = e
        t = threading.Thread(target=late_receive, daemon=True)
        t.start()
        wait_for(new_owner, 60, "another gateway to take over")
        # Everything through the new owner, held for a minute.
        c = client(new_owner())
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            got += c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2,
                                     VisibilityTimeout=60).get("Messages", [])
        assert {m["MessageId"] for m in got} == ids
    finally:
        os.kill(owner.proc.pid, signal.SIGCONT)
    t.join(60)
    # The late receive hands nothing out: the messages are held by the new owner's receiver.
    assert not late.get("r", {}).get("Messages"), late
    wait_for(lambda: stopped_serving(owner), 30, "the deposed owner to stop serving")
    # It forwards now: a call through it reaches the new owner.
    assert owner.sqs_url + "/000000000000/fleet-deposed" in \
        client(owner).list_queues()["QueueUrls"]


def test_a_write_fenced_by_a_newer_producer_is_refused_and_the_fleet_recovers(fleet):
    """A producer of the owner's transactional id (here not a gateway) fences it: the owner's
    next state write is refused by the cluster, the owner stops serving and gives its lease up,
    and a gateway takes the queues over (the same one, here, or another) with nothing lost and
    nothing handed out twice."""
    from botocore.exceptions import ClientError
    from confluent_kafka import Producer
    up, gws = fleet
    wait_for(lambda: owner_of(gws), 60, "an owner")
    owner = owner_of(gws)
    c = client(owner)
    url = c.create_queue(QueueName="fleet-fenced")["QueueUrl"]
    ids = [c.send_message(QueueUrl=url, MessageBody=f"x{i}")["MessageId"] for i in range(4)]
    counts = {id(g): owns_count(g) for g in gws}
    # Counted over the fleet: `owner` is who owned the queues when asked, and the fencing may
    # meet whoever owns them by the time of the next write.
    def refusals():
        return sum(1 for g in gws for line in g.log_text().splitlines()
                   if "refused this gateway's queue state write as fenced" in line)
    fenced_before = refusals()
    fencer = Producer({"bootstrap.servers": up.bootstrap,
                       "transactional.id": "_sluice_queue_state-0"})
    fencer.init_transactions(30)
    got = []
    others = [client(g) for g in gws if g.alive()]
    deadline = time.monotonic() + 60
    while len(got) < 4 and time.monotonic() < deadline:
        for one in others:  # held for a minute: a message handed out twice shows
            try:
                got += one.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                           VisibilityTimeout=60,
                                           WaitTimeSeconds=1).get("Messages", [])
            except ClientError as e:  # refused writes and the takeover: 500 / 503
                assert "ServiceUnavailable" in str(e) or "InternalError" in str(e), e
    assert sorted(m["MessageId"] for m in got) == sorted(ids)
    # The cluster refused the owner's first write after the fencing; it rejoined the group and
    # a gateway took the queues over again.
    try:
        wait_for(lambda: refusals() > fenced_before, 30, "the owner's fenced write refused")
        wait_for(lambda: any(owns_count(g) > counts[id(g)] for g in gws if g.alive()), 30,
                 "a gateway to take the queues over")
    except TimeoutError:
        for g in gws:
            print("\n".join(g.log_text().splitlines()[-100:]))
        raise
