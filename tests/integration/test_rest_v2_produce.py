"""REST Proxy v2 produce and metadata over real HTTP (python3-requests), checked with real Kafka
clients: records read by kcat at the offsets the REST answer gave, keyed records in the
partition librdkafka's murmur2 partitioner picks, headers and timestamps seen by a
confluent_kafka consumer, every error case of the produce and metadata routes (and the server
still serving after each), CORS off by default and on when configured."""
import json
import socket
import subprocess

import pytest
from confluent_kafka import Producer

from harness import Sluice, connect
from rest_support import (V2, V2_BINARY, V2_JSON, Rest, b64, create_topic, read_partition,
                          unb64)


def kcat_read(broker, topic, partition, offset, count):
    out = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-C", "-t", topic, "-p", str(partition), "-o",
         str(offset), "-c", str(count), "-e", "-q", "-f", "%o|%k|%s\n"],
        capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("|", 2) for line in out.splitlines()]


def assert_error(resp, status, code):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error_code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    return body


def test_binary_produce_answers_offsets_that_kcat_reads(broker):
    create_topic(broker, "bin", 1)
    rest = Rest(broker)
    records = [{"key": b64(f"k{i}"), "value": b64(f"value-{i}")} for i in range(10)]
    r = rest.post("/topics/bin", {"records": records}, V2_BINARY)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == V2
    body = r.json()
    assert body["key_schema_id"] is None and body["value_schema_id"] is None
    offsets = body["offsets"]
    assert [o["offset"] for o in offsets] == list(range(10))
    assert all(o["partition"] == 0 and o["error_code"] is None and o["error"] is None
               for o in offsets)
    # A second request continues the offsets.
    r = rest.post("/topics/bin", {"records": [{"value": b64("later")}]}, V2_BINARY)
    assert r.json()["offsets"][0]["offset"] == 10
    got = kcat_read(broker, "bin", 0, 3, 2)
    assert got == [["3", "k3", "value-3"], ["4", "k4", "value-4"]]
    assert kcat_read(broker, "bin", 0, 10, 1) == [["10", "", "later"]]


def test_json_produce_stores_the_json_text(broker):
    create_topic(broker, "js", 1)
    rest = Rest(broker)
    records = [{"key": {"id": 1}, "value": {"name": "a", "list": [1, 2.5, None, True]}},
               {"value": "plain string"}, {"value": None}, {"key": "k"}]
    r = rest.post("/topics/js", {"records": records}, V2_JSON)
    assert r.status_code == 200, r.text
    msgs = read_partition(broker, "js", 0, 0, 4)
    assert json.loads(msgs[0].key()) == {"id": 1}
    assert json.loads(msgs[0].value()) == {"name": "a", "list": [1, 2.5, None, True]}
    assert json.loads(msgs[1].value()) == "plain string"
    assert msgs[1].key() is None
    assert msgs[2].value() is None
    assert json.loads(msgs[3].key()) == "k" and msgs[3].value() is None


def test_generic_content_types_produce_binary(broker):
    create_topic(broker, "generic", 1)
    rest = Rest(broker)
    for ct in [V2, "application/json", None]:
        r = rest.post("/topics/generic", {"records": [{"value": b64("x")}]}, ct)
        assert r.status_code == 200, (ct, r.text)
    assert [m.value() for m in read_partition(broker, "generic", 0, 0, 3)] == [b"x"] * 3


def test_produce_to_a_partition(broker):
    create_topic(broker, "parts", 3)
    rest = Rest(broker)
    r = rest.post("/topics/parts/partitions/2", {"records": [{"value": b64("a")},
                                                            {"value": b64("b")}]}, V2_BINARY)
    assert r.status_code == 200, r.text
    assert [(o["partition"], o["offset"]) for o in r.json()["offsets"]] == [(2, 0), (2, 1)]
    # A record's own partition wins over the path's (compat: the REST Proxy).
    r = rest.post("/topics/parts", {"records": [{"value": b64("c"), "partition": 1}]}, V2_BINARY)
    assert r.json()["offsets"][0]["partition"] == 1


def test_keyed_records_land_where_the_java_partitioner_puts_them(broker):
    create_topic(broker, "keyed", 6)
    rest = Rest(broker)
    keys = [f"user-{i}" for i in range(30)]
    r = rest.post("/topics/keyed", {"records": [{"key": b64(k), "value": b64("v")} for k in keys]},
                  V2_BINARY)
    rest_partitions = [o["partition"] for o in r.json()["offsets"]]
    # librdkafka's murmur2 partitioner is the Java client's default.
    p = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2"})
    seen = {}

    def report(err, msg):
        assert err is None
        seen[msg.key().decode()] = msg.partition()

    for k in keys:
        p.produce("keyed", key=k.encode(), value=b"v", on_delivery=report)
    assert p.flush(30) == 0
    assert rest_partitions == [seen[k] for k in keys]
    assert len(set(rest_partitions)) > 1


def test_unkeyed_records_of_one_request_share_a_partition(broker):
    create_topic(broker, "sticky", 4)
    rest = Rest(broker)
    used = set()
    for _ in range(8):
        r = rest.post("/topics/sticky", {"records": [{"value": b64("v")}] * 5}, V2_BINARY)
        parts = {o["partition"] for o in r.json()["offsets"]}
        assert len(parts) == 1
        used |= parts
    assert len(used) > 1  # requests rotate over the partitions


def test_headers_and_timestamps_reach_kafka_consumers(broker):
    create_topic(broker, "hdr", 1)
    rest = Rest(broker)
    records = [
        {"value": b64("one"), "timestamp": 1612552482000,
         "headers": [{"name": "trace", "value": b64("abc")}, {"name": "empty", "value": None}]},
        {"value": b64("two"), "timestamp": "2021-02-05T19:14:43.250Z"},
    ]
    r = rest.post("/topics/hdr", {"records": records}, V2_BINARY)
    assert r.status_code == 200, r.text
    msgs = read_partition(broker, "hdr", 0, 0, 2)
    assert msgs[0].headers() == [("trace", b"abc"), ("empty", None)]
    assert msgs[0].timestamp()[1] == 1612552482000
    assert msgs[1].timestamp()[1] == 1612552483250


def test_metadata_routes(broker):
    create_topic(broker, "meta", 2, {"cleanup.policy": "compact"})
    create_topic(broker, "other", 1)
    rest = Rest(broker)
    r = rest.get("/")
    assert r.status_code == 200 and r.json() == {}
    assert rest.post("/", {}).json() == {}
    r = rest.get("/topics")
    assert r.headers["content-type"] == V2
    assert sorted(r.json()) == ["meta", "other"]  # internal topics are not listed
    t = rest.get("/topics/meta").json()
    assert t["name"] == "meta"
    assert t["configs"]["cleanup.policy"] == "compact"
    assert [p["partition"] for p in t["partitions"]] == [0, 1]
    assert t["partitions"][0]["replicas"] == [{"broker": 0, "leader": True, "in_sync": True}]
    assert t["partitions"][0]["leader"] == 0
    parts = rest.get("/topics/meta/partitions").json()
    assert [p["partition"] for p in parts] == [0, 1]
    assert rest.get("/topics/meta/partitions/1").json()["partition"] == 1
    assert rest.get("/brokers").json() == {"brokers": [0]}
    assert rest.get("/topics/meta/partitions/1/offsets").json() == {
        "beginning_offset": 0, "end_offset": 0}
    rest.post("/topics/meta/partitions/1", {"records": [{"key": b64("k"), "value": b64("v")}] * 3},
              V2_BINARY)
    assert rest.get("/topics/meta/partitions/1/offsets").json() == {
        "beginning_offset": 0, "end_offset": 3}


def test_metadata_errors(broker):
    create_topic(broker, "m", 1)
    rest = Rest(broker)
    assert_error(rest.get("/topics/nope"), 404, 40401)
    assert_error(rest.get("/topics/nope/partitions"), 404, 40401)
    assert_error(rest.get("/topics/nope/partitions/0"), 404, 40401)
    assert_error(rest.get("/topics/m/partitions/1"), 404, 40402)
    assert_error(rest.get("/topics/m/partitions/x"), 404, 40402)
    assert_error(rest.get("/topics/m/partitions/5/offsets"), 404, 40402)
    assert rest.get("/topics/m").status_code == 200


def test_produce_errors_and_the_server_still_serves(broker):
    create_topic(broker, "e", 2)
    rest = Rest(broker)
    good = {"records": [{"value": b64("ok")}]}
    # A missing topic is created (auto.create.topics.enable): test_http_autocreate.py.
    cases = [
        (rest.post("/topics/e/partitions/7", good, V2_BINARY), 404, 40402),
        (rest.post("/topics/e", {"records": [{"value": b64("v"), "partition": 9}]}, V2_BINARY),
         404, 40402),
        (rest.post("/topics/e", None, V2_BINARY, raw=b'{"records": [ {"value": '), 400, 400),
        (rest.post("/topics/e", None, V2_BINARY, raw=b"\xff\xfe"), 400, 400),
        (rest.post("/topics/e", None, V2_BINARY, raw=b"[1,2]"), 400, 400),
        (rest.post("/topics/e", good, "text/plain"), 415, 415),
        (rest.post("/topics/e", {"records": []}, V2_BINARY), 422, 42206),
        (rest.post("/topics/e", {"value": "x"}, V2_BINARY), 422, 42206),
        (rest.post("/topics/e", {"records": [5]}, V2_BINARY), 422, 42206),
        (rest.post("/topics/e", {"records": [{"value": "not base64!"}]}, V2_BINARY), 422, 42207),
        (rest.post("/topics/e", {"records": [{"value": 12}]}, V2_BINARY), 422, 42207),
        # A number no double holds (RapidJSON reads it as an infinity): refused, not stored.
        (rest.post("/topics/e", None, V2_JSON,
                   raw=b'{"records": [{"value": -30630657516852034110e306}]}'), 422, 42207),
        (rest.post("/topics/e", {"records": [{"value": b64("v"), "partition": -1}]}, V2_BINARY),
         422, 42206),
        (rest.post("/topics/e", {"records": [{"value": b64("v"), "timestamp": "yesterday"}]},
                   V2_BINARY), 422, 42206),
        (rest.post("/topics/e", {"records": [{"value": b64("v"), "headers": {"a": "b"}}]},
                   V2_BINARY), 422, 42206),
        (rest.post("/topics/e", {"records": [{"key": "k", "value": "v"}]},
                   "application/vnd.kafka.avro.v2+json"), 422, 42201),
        (rest.post("/topics/e", {"records": [{"value": "v"}]},
                   "application/vnd.kafka.avro.v2+json"), 422, 42202),
        (rest.post("/topics/e", {"value_schema": '"string"', "records": [{"value": "v"}]},
                   "application/vnd.kafka.avro.v2+json"), 422, 42205),
    ]
    for resp, status, code in cases:
        assert_error(resp, status, code)
        assert resp.headers["content-type"] == V2
    r = rest.post("/topics/e", good, V2_BINARY)
    assert r.status_code == 200 and r.json()["offsets"][0]["error_code"] is None


def test_body_limit_is_a_setting():
    with Sluice(settings={"http.request.max.bytes": 4096}) as b:
        create_topic(b, "lim", 1)
        rest = Rest(b)
        big = {"records": [{"value": b64("x" * 5000)}]}
        r = rest.post("/topics/lim", big, V2_BINARY)
        assert r.status_code == 413
        assert r.json()["error_code"] == 413
        rest = Rest(b)  # the connection was closed after the 413
        small = {"records": [{"value": b64("x" * 100)}]}
        assert rest.post("/topics/lim", small, V2_BINARY).status_code == 200


def test_default_body_limit_is_64_mib(broker):
    with connect(broker.http_port) as s:
        s.sendall(b"POST /topics/x HTTP/1.1\r\nHost: x\r\nContent-Type: " + V2_BINARY.encode() +
                  b"\r\nContent-Length: %d\r\n\r\n" % (64 * 1024 * 1024 + 1))
        assert s.recv(100).startswith(b"HTTP/1.1 413 ")
    with connect(broker.http_port) as s:
        s.sendall(b"POST /topics/x HTTP/1.1\r\nHost: x\r\nContent-Type: " + V2_BINARY.encode() +
                  b"\r\nContent-Length: %d\r\n\r\n" % (64 * 1024 * 1024))
        s.shutdown(socket.SHUT_WR)  # the body never comes: the server waits for it, no 413
        s.settimeout(10)
        data = s.recv(100)
        assert not data.startswith(b"HTTP/1.1 413 ")


def test_cors_is_off_by_default(broker):
    rest = Rest(broker)
    # A page on another origin is refused (http.allowed.origins lists none by default).
    r = rest.get("/topics", headers={"Origin": "https://app.example.com"})
    assert r.status_code == 403 and r.json()["error_code"] == 40301
    assert "access-control-allow-origin" not in r.headers
    r = rest.s.options(broker.http_url + "/topics", timeout=10,
                       headers={"Origin": "https://app.example.com",
                                "Access-Control-Request-Method": "POST"})
    assert r.status_code == 405


def test_cors_when_configured():
    settings = {"access.control.allow.origin": "https://app.example.com",
                "access.control.allow.methods": "GET,POST"}
    with Sluice(settings=settings) as b:
        rest = Rest(b)
        r = rest.get("/topics", headers={"Origin": "https://app.example.com"})
        assert r.headers["access-control-allow-origin"] == "https://app.example.com"
        r = rest.get("/topics", headers={"Origin": "https://evil.example.com"})
        assert r.status_code == 403
        assert "access-control-allow-origin" not in r.headers
        r = rest.s.options(b.http_url + "/topics", timeout=10,
                           headers={"Origin": "https://app.example.com",
                                    "Access-Control-Request-Method": "POST",
                                    "Access-Control-Request-Headers": "content-type"})
        assert r.status_code == 204
        assert r.headers["access-control-allow-origin"] == "https://app.example.com"
        assert r.headers["access-control-allow-methods"] == "GET,POST"
        # Errors carry the header too, so a browser can read them.
        r = rest.get("/topics/none", headers={"Origin": "https://app.example.com"})
        assert r.status_code == 404
        assert r.headers["access-control-allow-origin"] == "https://app.example.com"


def test_unknown_http_setting_is_refused():
    s = Sluice(settings={"access.control.allow.orgin": "*"})
    try:
        with pytest.raises(RuntimeError) as e:
            s.start()
    finally:
        s.close()
    assert "access.control.allow.orgin: unknown setting" in str(e.value)
    assert "access.control.allow.origin" in str(e.value)
