"""Topics of sluice's own state are no queues and are not deleted by clients (issue 24, item 6).

One sluice (SQS open) where every such topic exists: __consumer_offsets (a Kafka consumer
commits), __transaction_state (a transactional producer starts), __queue_state (a queue is made)
and _sluice_rest_consumers (a REST consumer instance is made). Then:

- SQS (boto3) lists none of them, answers QueueDoesNotExist to GetQueueUrl, ReceiveMessage,
  PurgeQueue and DeleteQueue on them, and refuses CreateQueue of them (or of any new "_sluice*"
  name) with InvalidParameterValue;
- the console's /v1/queues lists none and answers 404 for each;
- Kafka DeleteTopics answers POLICY_VIOLATION and DeleteRecords INVALID_TOPIC_EXCEPTION for each
  (DeleteRecords in raw frames: no client library here has it);
- the REST consumer instance still works afterwards.
"""
import struct

import pytest
import requests
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from harness import Sluice, connect, kafka_request, read_frame, wait_for
from rest_support import V2, V2_BINARY, Rest, b64, create_topic
from sqs_support import client, error_code

OWNED = ["__consumer_offsets", "__transaction_state", "__queue_state", "_sluice_rest_consumers"]


@pytest.fixture(scope="module")
def server():
    s = Sluice(sqs=True, settings={"group.initial.rebalance.delay.ms": 0}).start()
    try:
        create_topic(s, "plain", 1)
        client(s).create_queue(QueueName="q")
        # A consumer commits (__consumer_offsets), a transactional producer starts
        # (__transaction_state), a REST consumer instance is stored (_sluice_rest_consumers).
        c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "committer",
                      "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("plain", 0, 0)], asynchronous=False)
        c.close()
        p = Producer({"bootstrap.servers": s.bootstrap, "transactional.id": "tx"})
        p.init_transactions(30)
        rest = Rest(s)
        r = rest.post("/consumers/rg", {"name": "keep", "auto.offset.reset": "earliest"})
        assert r.status_code == 200, r.text
        r = rest.post("/consumers/rg/instances/keep/subscription", {"topics": ["plain"]})
        assert r.status_code == 204, r.text
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        wait_for(lambda: all(t in admin.list_topics(timeout=30).topics for t in OWNED), 30,
                 "every topic of sluice's own state to exist")
        yield s
    finally:
        s.close()


def url(server, name):
    return f"{server.sqs_url}/000000000000/{name}"


def sqs_error(call):
    with pytest.raises(ClientError) as e:
        call()
    return error_code(e.value), e.value.response["Error"]["Message"]


def test_sqs_lists_and_finds_none_of_them(server):
    c = client(server)
    names = [u.rsplit("/", 1)[1] for u in c.list_queues()["QueueUrls"]]
    assert names == ["plain", "q"]
    for prefix in ("_", "__", "_sluice"):
        assert c.list_queues(QueueNamePrefix=prefix).get("QueueUrls", []) == []
    for t in OWNED:
        assert sqs_error(lambda: c.get_queue_url(QueueName=t))[0] == \
            "AWS.SimpleQueueService.NonExistentQueue", t
        for call in (lambda: c.receive_message(QueueUrl=url(server, t), WaitTimeSeconds=0),
                     lambda: c.purge_queue(QueueUrl=url(server, t)),
                     lambda: c.delete_queue(QueueUrl=url(server, t)),
                     lambda: c.get_queue_attributes(QueueUrl=url(server, t),
                                                    AttributeNames=["All"])):
            assert sqs_error(call)[0] == "AWS.SimpleQueueService.NonExistentQueue", t


def test_sqs_create_queue_refuses_their_names(server):
    c = client(server)
    for t in OWNED + ["_sluice_new"]:
        code, message = sqs_error(lambda: c.create_queue(QueueName=t))
        assert code == "InvalidParameterValue", (t, code)
        assert "sluice's own state" in message, message
    assert c.list_queues(QueueNamePrefix="_sluice").get("QueueUrls", []) == []


def test_console_shows_none_of_them(server):
    # An SQS lookup first (which adopts a topic as a queue), then the console's views.
    for t in OWNED:
        try:
            client(server).get_queue_url(QueueName=t)
        except ClientError:
            pass
    listed = requests.get(server.http_url + "/v1/queues", timeout=30).json()["queues"]
    assert sorted(q["name"] for q in listed) == ["q"]
    for t in OWNED:
        assert requests.get(f"{server.http_url}/v1/queues/{t}", timeout=30).status_code == 404
        r = requests.post(f"{server.http_url}/v1/queues/{t}/redrive", json={}, timeout=30)
        assert r.status_code == 404, r.text


def delete_records(port, topic):
    """DeleteRecords v1 (api 21) of partition 0 up to the high watermark; its error code."""
    s = connect(port)
    try:
        name = topic.encode()
        body = (struct.pack(">ih", 1, len(name)) + name + struct.pack(">iiq", 1, 0, -1) +
                struct.pack(">i", 10000))
        s.sendall(kafka_request(21, 1, 7, body))
        r = read_frame(s)
        assert struct.unpack(">i", r[:4])[0] == 7
        pos = 4 + 4 + 4  # correlation id, throttle, topic count
        n = struct.unpack(">h", r[pos:pos + 2])[0]
        pos += 2 + n + 4  # name, partition count
        _partition, _low, code = struct.unpack(">iqh", r[pos:pos + 14])
        return code
    finally:
        s.close()


def test_kafka_deletes_none_of_them(server):
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    for t, f in admin.delete_topics(OWNED, operation_timeout=30).items():
        with pytest.raises(KafkaException) as e:
            f.result(30)
        assert e.value.args[0].code() == KafkaError.POLICY_VIOLATION, (t, e.value)
    for t in OWNED:
        assert delete_records(server.kafka_port, t) == 17, t  # INVALID_TOPIC_EXCEPTION
    assert delete_records(server.kafka_port, "plain") == 0
    assert all(t in admin.list_topics(timeout=30).topics for t in OWNED)


def test_rest_consumers_still_work_after_the_attempts(server):
    c = client(server)
    sqs_error(lambda: c.delete_queue(QueueUrl=url(server, "_sluice_rest_consumers")))
    rest = Rest(server)
    r = rest.post("/topics/plain", {"records": [{"value": b64("after")}]}, V2_BINARY)
    assert r.status_code == 200, r.text
    r = rest.post("/consumers/rg", {"name": "later"})
    assert r.status_code == 200, r.text
    r = rest.post("/consumers/rg/instances/later/subscription", {"topics": ["plain"]})
    assert r.status_code == 204, r.text
    assert rest.get("/consumers/rg/instances/later/subscription").json() == {"topics": ["plain"]}
    assert rest.get("/consumers/rg/instances/keep/subscription", headers={"Accept": V2}).json() \
        == {"topics": ["plain"]}
