"""Client quotas (issue 12): producer_byte_rate and consumer_byte_rate per user (a SCRAM user
made with `sluice users set`) and for the default client, set with AlterClientQuotas and read
with DescribeClientQuotas (raw frames: neither python3-confluent-kafka 1.7 nor kafka-python 2.0
has these APIs), kept across a restart; a producer and a consumer running flat out reach a rate
within 10% of the quota (bytes as sluice counts them: its sluice_quota_bytes_total metric, over
the whole run) and the throttle reaches the client (librdkafka's throttle_cb); bad
AlterClientQuotas input gets Kafka's error codes and changes nothing; without quotas nothing is
throttled and throttle_time_ms is 0."""
import re
import struct
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, connect, kafka_request, read_frame
from kafka_wire import NO_TAGS, FlexReader, batch, compact_array, compact_string, produce_v3
from sasl_support import SaslSluice, client_config

INVALID_CONFIG, INVALID_REQUEST = 40, 42
RATE = 300_000  # bytes/s
RUN_SECONDS = 8  # below the 11 s the rate is measured over, so no sample ages out mid-run


# --- raw DescribeClientQuotas (48) / AlterClientQuotas (49) v1 ---------------------------------

def entity_bytes(entity):
    return compact_array([compact_string(t) + compact_string(n) + NO_TAGS for t, n in entity])


def alter(port, entries, validate_only=False, correlation_id=7):
    """entries: [(entity, ops)], entity [(type, name or None)], ops [(key, value, remove)].
    Returns [(error_code, error_message, entity)] in request order."""
    body = compact_array([
        entity_bytes(entity) + compact_array([compact_string(k) + struct.pack(">d?", v, rm) +
                                              NO_TAGS for k, v, rm in ops]) + NO_TAGS
        for entity, ops in entries]) + struct.pack(">?", validate_only) + NO_TAGS
    with connect(port) as s:
        s.sendall(kafka_request(49, 1, correlation_id, body, flexible_header=True))
        r = FlexReader(read_frame(s))
    assert r.int32() == correlation_id
    r.tags()
    assert r.int32() == 0  # throttle_time_ms

    def entry(r):
        code, message = r.int16(), r.compact_string()
        ent = r.compact_array(lambda r: (r.compact_string(), r.compact_string(), r.tags())[:2])
        r.tags()
        return code, message, ent
    out = r.compact_array(entry)
    r.tags()
    assert r.at_end()
    return out


def describe(port, components=(), strict=False, correlation_id=8):
    """components [(type, match_type, match)]; returns (error_code, message,
    {((type, name), ...): {key: value}} or None)."""
    body = compact_array([compact_string(t) + struct.pack(">b", mt) + compact_string(m) + NO_TAGS
                          for t, mt, m in components]) + struct.pack(">?", strict) + NO_TAGS
    with connect(port) as s:
        s.sendall(kafka_request(48, 1, correlation_id, body, flexible_header=True))
        r = FlexReader(read_frame(s))
    assert r.int32() == correlation_id
    r.tags()
    r.int32()
    code, message = r.int16(), r.compact_string()

    def entry(r):
        ent = r.compact_array(lambda r: (r.compact_string(), r.compact_string(), r.tags())[:2])
        values = r.compact_array(lambda r: (r.compact_string(), r._unpack(">d"), r.tags())[:2])
        r.tags()
        return tuple(ent), dict(values)
    entries = r.compact_array(entry)
    r.tags()
    assert r.at_end()
    return code, message, None if entries is None else dict(entries)


def set_quota(port, entity, key, value):
    assert alter(port, [(entity, [(key, value, False)])]) == [(0, None, entity)]


# --- measuring --------------------------------------------------------------------------------

def quota_bytes(server, quota):
    with urllib.request.urlopen(f"{server.http_url}/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r'^sluice_quota_bytes_total\{front="kafka",quota="%s"\} (\S+)$' % quota, text,
                  re.M)
    assert m, "no sluice_quota_bytes_total line for " + quota
    return float(m.group(1))


def create_topic(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the result is in
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)


def produce_flat_out(server, cfg, topic, seconds, value_size=1000):
    """Produces as fast as the producer goes for `seconds`, then flushes. Returns (the bytes
    sluice counted against producer_byte_rate, the seconds from the first produce call to the
    end of the flush, throttle times seen). One record delivered first, outside the
    measurement, so that the run does not include connecting and finding the leader."""
    throttles, errors = [], []
    # Batches of 128 KiB: each throttle cycle (about 0.4 s at the quota) is long next to what
    # a cycle costs the client (linger, round trip), which would otherwise read as a lower rate.
    p = Producer(dict(cfg, **{"acks": "1", "linger.ms": 5, "batch.size": 131072,
                              "queue.buffering.max.kbytes": 256,
                              "throttle_cb": lambda ev: throttles.append(ev.throttle_time)}))
    value = b"x" * value_size
    p.produce(topic, value, partition=0)
    assert p.flush(30) == 0
    before = quota_bytes(server, "producer_byte_rate")
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            p.produce(topic, value, partition=0,
                      on_delivery=lambda err, msg: errors.append(err) if err else None)
        except BufferError:
            p.poll(0.05)
            continue
        p.poll(0)
    left = p.flush(60)
    elapsed = time.monotonic() - start
    assert left == 0, f"{left} records not delivered"
    assert not errors, errors[:3]
    return quota_bytes(server, "producer_byte_rate") - before, elapsed, throttles


def assert_within_10_percent(rate, quota):
    print(f"measured {rate:.0f} B/s against a quota of {quota} B/s ({(rate - quota) / quota:+.1%})")
    assert abs(rate - quota) <= 0.10 * quota, f"rate {rate:.0f} B/s vs quota {quota} B/s"


# --- the tests ----------------------------------------------------------------------------------

def test_user_producer_rate_within_10_percent():
    broker = SaslSluice().start()
    try:
        create_topic(broker.plain_bootstrap, "q-user")
        set_quota(broker.server.kafka_port, [("user", "alice")], "producer_byte_rate", RATE)
        produced, elapsed, throttles = produce_flat_out(
            broker.server, client_config(broker, "SCRAM-SHA-256"), "q-user", RUN_SECONDS)
        assert_within_10_percent(produced / elapsed, RATE)
        assert throttles and max(throttles) > 0, "the producer never saw throttle_time_ms"
    finally:
        broker.close()


def test_default_client_producer_rate_within_10_percent():
    with Sluice() as server:
        create_topic(server.bootstrap, "q-default")
        set_quota(server.kafka_port, [("client-id", None)], "producer_byte_rate", RATE)
        produced, elapsed, throttles = produce_flat_out(
            server, {"bootstrap.servers": server.bootstrap}, "q-default", RUN_SECONDS)
        assert_within_10_percent(produced / elapsed, RATE)
        assert throttles and max(throttles) > 0


def test_consumer_rate_within_10_percent():
    with Sluice() as server:
        create_topic(server.bootstrap, "q-fetch")
        # More than the run can read at the quota, written before any quota is set.
        # Small batches: a fetch returns whole batches, so they are the measure's grain.
        p = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 5,
                      "batch.size": 16384})
        for _ in range(4000):
            p.produce("q-fetch", b"y" * 1000, partition=0)
            p.poll(0)
        assert p.flush(60) == 0
        set_quota(server.kafka_port, [("client-id", None)], "consumer_byte_rate", RATE)
        throttles = []
        before = quota_bytes(server, "consumer_byte_rate")
        start = time.monotonic()
        c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "q",
                      "enable.auto.commit": False,
                      "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
        c.assign([TopicPartition("q-fetch", 0, 0)])
        got = 0
        try:
            while time.monotonic() - start < RUN_SECONDS:
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    got += 1
            fetched = quota_bytes(server, "consumer_byte_rate") - before
            elapsed = time.monotonic() - start
        finally:
            c.close()
        assert got > 0
        assert got < 4000, "the consumer read everything: the quota did not hold it back"
        assert_within_10_percent(fetched / elapsed, RATE)
        assert throttles and max(throttles) > 0, "the consumer never saw throttle_time_ms"


def test_describe_alter_and_restart():
    with Sluice() as server:
        port = server.kafka_port
        assert describe(port) == (0, None, {})
        assert alter(port, [([("user", "alice")], [("producer_byte_rate", 1048576, False),
                                                   ("consumer_byte_rate", 2097152, False)]),
                            ([("user", None), ("client-id", "app")],
                             [("request_percentage", 12.5, False)])]) == [
            (0, None, [("user", "alice")]), (0, None, [("user", None), ("client-id", "app")])]
        # validate_only changes nothing.
        assert alter(port, [([("client-id", "x")], [("producer_byte_rate", 5, False)])],
                     validate_only=True) == [(0, None, [("client-id", "x")])]
        want = {(("user", "alice"),): {"producer_byte_rate": 1048576.0,
                                       "consumer_byte_rate": 2097152.0},
                (("user", None), ("client-id", "app")): {"request_percentage": 12.5}}
        assert describe(port) == (0, None, want)
        assert describe(port, [("user", 0, "alice")], strict=True)[2] == {
            (("user", "alice"),): want[(("user", "alice"),)]}
        assert describe(port, [("user", 1, None)])[2] == {
            (("user", None), ("client-id", "app")): {"request_percentage": 12.5}}
        assert describe(port, [("client-id", 2, None)], strict=True)[2] == {}
        server.restart()
        assert describe(server.kafka_port) == (0, None, want)
        # Removing the last value removes the entity.
        assert alter(server.kafka_port, [([("user", None), ("client-id", "app")],
                                          [("request_percentage", 0, True)])])[0][0] == 0
        assert set(describe(server.kafka_port)[2]) == {(("user", "alice"),)}


def test_bad_alter_input_changes_nothing():
    with Sluice() as server:
        port = server.kafka_port
        set_quota(port, [("user", "bob")], "producer_byte_rate", 1000)
        results = alter(port, [
            ([("user", "bob")], [("bogus_rate", 5, False)]),
            ([("user", "bob")], [("producer_byte_rate", -5, False)]),
            ([("user", "bob")], [("producer_byte_rate", 1.5, False)]),
            ([("ip", "1.2.3.4")], [("producer_byte_rate", 5, False)]),
            ([("user", "a"), ("user", "b")], [("producer_byte_rate", 5, False)]),
            ([], [("producer_byte_rate", 5, False)]),
            ([("user", "bob")], [("producer_byte_rate", 5, False),
                                 ("producer_byte_rate", 6, False)]),
        ])
        assert [code for code, _, _ in results] == [
            INVALID_REQUEST, INVALID_CONFIG, INVALID_REQUEST, INVALID_REQUEST, INVALID_REQUEST,
            INVALID_REQUEST, INVALID_REQUEST]
        assert all(message for _, message, _ in results)
        assert describe(port) == (0, None, {(("user", "bob"),): {"producer_byte_rate": 1000.0}})
        code, message, entries = describe(port, [("ip", 2, None)])
        assert (code, entries) == (INVALID_REQUEST, None) and message
        assert describe(port, [("user", 0, None)])[0] == INVALID_REQUEST
        assert server.alive()


def test_no_quota_no_throttle(broker):
    records = batch([b"v%d" % i for i in range(10)])
    with connect(broker.kafka_port) as s:
        for i in range(20):
            s.sendall(kafka_request(0, 3, i, produce_v3("q-none", 0, records)))
            body = read_frame(s)
            assert struct.unpack(">i", body[-4:])[0] == 0  # throttle_time_ms


def test_http_produce_over_the_quota_gets_429():
    from rest_support import V2_JSON, Rest, create_topic as rest_create_topic
    with Sluice() as server:
        rest_create_topic(server, "q-http")
        set_quota(server.kafka_port, [("user", "ANONYMOUS")], "producer_byte_rate", 1000)
        rest = Rest(server)
        body = {"records": [{"value": "z" * 5000}]}
        first = rest.post("/topics/q-http", body, content_type=V2_JSON)
        assert first.status_code == 200, first.text
        second = rest.post("/topics/q-http", body, content_type=V2_JSON)
        assert second.status_code == 429, second.text
        assert int(second.headers["Retry-After"]) >= 1
        assert second.json()["error_code"] == 42901 and second.json()["message"]
        # Reads are not produce: they pass.
        assert rest.get("/topics/q-http").status_code == 200


def test_sqs_send_over_the_quota_gets_request_throttled():
    from botocore.exceptions import ClientError
    import sqs_support
    with Sluice(sqs=True) as server:
        sqs = sqs_support.client(server)
        url = sqs.create_queue(QueueName="q-sqs")["QueueUrl"]
        set_quota(server.kafka_port, [("user", "ANONYMOUS")], "producer_byte_rate", 1000)
        sqs.send_message(QueueUrl=url, MessageBody="m" * 5000)
        with pytest.raises(ClientError) as e:
            sqs.send_message(QueueUrl=url, MessageBody="m" * 5000)
        assert e.value.response["Error"]["Code"] == "RequestThrottled"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        # Receiving is another quota (none set): it still works.
        assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)["Messages"]


def test_websocket_produce_over_the_quota_gets_42901_and_the_stream_is_paced():
    from rest_support import create_topic as rest_create_topic
    from sqs_support import metric
    from ws_support import WsClient
    with Sluice() as server:
        rest_create_topic(server, "q-ws")
        set_quota(server.kafka_port, [("user", "ANONYMOUS")], "producer_byte_rate", 1000)
        set_quota(server.kafka_port, [("user", "ANONYMOUS")], "consumer_byte_rate", 1000)
        with WsClient(server.http_port) as c:
            c.send({"op": "produce", "id": "a", "topic": "q-ws", "value": "w" * 5000})
            assert c.recv_op("ack")[0]["id"] == "a"
            c.send({"op": "produce", "id": "b", "topic": "q-ws", "value": "w" * 5000})
            err, _ = c.recv_op("error")
            assert err["code"] == 42901 and err["id"] == "b" and err["message"]
            # The stream is paced, not dropped: the record still comes, and the frame that
            # took the principal over its quota is counted as throttled.
            c.send({"op": "subscribe", "topics": ["q-ws"], "from": {"offset": 0},
                    "format": "string"})
            c.recv_op("subscribed")
            assert c.recv_op("records")[0]["records"][0]["value"] == "w" * 5000
        assert metric(server, "sluice_throttled_requests_total", front="websocket",
                      quota="consumer_byte_rate") >= 1


# --- request_percentage: the io-thread time of each request ------------------------------------

REQUEST_PERCENT = 1.0  # 10 ms of io-thread time per second


def request_time(server, front):
    from sqs_support import metric
    return metric(server, "sluice_quota_request_time_seconds_total", front=front)


def test_request_percentage_throttles_a_kafka_client_to_its_share_of_a_thread():
    from sqs_support import metric
    with Sluice() as server:
        create_topic(server.bootstrap, "q-req")
        set_quota(server.kafka_port, [("client-id", None)], "request_percentage", REQUEST_PERCENT)
        records = batch([b"r%d" % i for i in range(10)])
        throttled, sent = [], 0
        before = request_time(server, "kafka")
        start = time.monotonic()
        # One connection sending Produce requests back to back: the muted connection (after a
        # throttled answer sluice reads nothing from it for the throttle time) holds it back.
        with connect(server.kafka_port) as s:
            while time.monotonic() - start < RUN_SECONDS:
                s.sendall(kafka_request(0, 3, sent, produce_v3("q-req", 0, records)))
                ms = struct.unpack(">i", read_frame(s)[-4:])[0]  # throttle_time_ms
                if ms > 0:
                    throttled.append(ms)
                sent += 1
        elapsed = time.monotonic() - start
        used = request_time(server, "kafka") - before
        percent = used / elapsed * 100
        print(f"{sent} requests, {len(throttled)} throttled, io-thread time {percent:.2f}% "
              f"against a quota of {REQUEST_PERCENT}%")
        assert throttled, "no response carried throttle_time_ms"
        assert used > 0
        # The time counted is the io thread's, so the whole run stays near the quota: one
        # window's worth of overshoot at most (the first second allows one second's worth).
        assert percent <= REQUEST_PERCENT * 1.5, percent
        assert metric(server, "sluice_throttled_requests_total", front="kafka",
                      quota="request_percentage") >= 1
        # librdkafka hears of it too (throttle_cb), on a producer sending flat out.
        seen = []
        p = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0,
                      "throttle_cb": lambda ev: seen.append(ev.throttle_time)})
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            try:
                p.produce("q-req", b"x", partition=0)
            except BufferError:
                pass
            p.poll(0.001)
        assert p.flush(60) == 0
        assert seen and max(seen) > 0, "the producer never saw throttle_time_ms"


def test_request_percentage_on_http_and_sqs():
    import sqs_support
    from botocore.exceptions import ClientError
    from rest_support import Rest
    with Sluice() as server:
        set_quota(server.kafka_port, [("user", "ANONYMOUS")], "request_percentage", 0.001)
        rest = Rest(server)
        statuses = []
        for _ in range(2000):
            r = rest.get("/topics")
            statuses.append(r.status_code)
            if r.status_code == 429:
                break
        assert statuses[0] == 200 and statuses[-1] == 429, statuses[-3:]
        assert r.json()["error_code"] == 42901 and "request_percentage" in r.json()["message"]
        assert int(r.headers["Retry-After"]) >= 1
        # Probes and scrapes are not counted nor refused (request_time reads /metrics).
        assert rest.get("/healthz").status_code == 200
        assert request_time(server, "http") > 0
    # A server of its own: the HTTP requests above used the same principal's share.
    with Sluice(sqs=True) as server:
        sqs = sqs_support.client(server)
        url = sqs.create_queue(QueueName="q-req")["QueueUrl"]
        set_quota(server.kafka_port, [("user", "ANONYMOUS")], "request_percentage", 0.001)
        codes = []
        for _ in range(2000):
            try:
                sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
            except ClientError as e:
                codes.append(sqs_support.error_code(e))
                assert "request_percentage" in e.response["Error"]["Message"]
                break
        assert codes == ["RequestThrottled"]
        assert request_time(server, "sqs") > 0


def test_http_consumer_reads_and_streamed_v3_bodies_count_against_the_byte_quotas():
    from rest_support import V2_BINARY, Rest, b64, create_topic as rest_create_topic
    with Sluice() as server:
        rest_create_topic(server, "q-read")
        rest = Rest(server)
        value = b64(b"r" * 5000)
        assert rest.post("/topics/q-read", {"records": [{"value": value}] * 2},
                         V2_BINARY).status_code == 200
        set_quota(server.kafka_port, [("user", "ANONYMOUS")], "consumer_byte_rate", 1000)
        r = rest.post("/consumers/qg", {"format": "binary", "auto.offset.reset": "earliest",
                                        "consumer.request.timeout.ms": 1000})
        assert r.status_code == 200, r.text
        path = r.json()["base_uri"][r.json()["base_uri"].index("/consumers/"):]
        assert rest.post(path + "/subscription", {"topics": ["q-read"]}).status_code == 204
        statuses = []
        deadline = time.monotonic() + 30
        # The first reads get the 10 KB of records (once the group is joined); the answer that
        # carried them put the principal over 1,000 B/s, so the next read is refused.
        while time.monotonic() < deadline and (not statuses or statuses[-1][0] != 429):
            r = rest.get(path + "/records?timeout=1000", headers={"Accept": V2_BINARY})
            statuses.append((r.status_code, len(r.json()) if r.status_code == 200 else None))
        assert statuses[-1][0] == 429, statuses
        assert any(n for code, n in statuses if code == 200), statuses
        assert r.json()["error_code"] == 42901 and "consumer_byte_rate" in r.json()["message"]

        # REST v3 produce reads its body as it streams in: counted once read.
        set_quota(server.kafka_port, [("user", "ANONYMOUS")], "producer_byte_rate", 1000)
        cid = rest.get("/v3/clusters").json()["data"][0]["cluster_id"]
        url = f"/v3/clusters/{cid}/topics/q-read/records"
        rec = {"value": {"type": "BINARY", "data": b64(b"p" * 5000)}}
        first = rest.post(url, rec, "application/json")
        assert first.status_code == 200 and first.json()["error_code"] == 200, first.text
        second = rest.post(url, rec, "application/json")
        assert second.status_code == 429, second.text
        assert second.json()["error_code"] == 42901
