"""REST Proxy v2 consumer instances over real HTTP: the whole lifecycle (create, subscribe, long
poll, commit, committed, delete), manual assignment and seeks, topic patterns, the json format,
every error case, a REST instance and a confluent_kafka consumer sharing one group's partitions,
idle expiry, base_uri behind a load balancer, and an instance that resumes where it read to
after sluice is SIGKILLed and restarted."""
import json
import os
import time

from confluent_kafka import Consumer, TopicPartition

from harness import Sluice, wait_for
from rest_support import V2, V2_BINARY, V2_JSON, Rest, b64, create_topic, unb64

SETTINGS = {"group.initial.rebalance.delay.ms": 0}


def sluice(**extra):
    s = dict(SETTINGS)
    s.update(extra)
    return Sluice(settings=s)


def new_instance(rest, group, **config):
    r = rest.post(f"/consumers/{group}", config)
    assert r.status_code == 200, r.text
    body = r.json()
    return body["instance_id"], body["base_uri"]


def path_of(base_uri):
    return base_uri[base_uri.index("/consumers/"):]


def poll(rest, path, want, timeout=30, accept=V2_BINARY):
    """Records of GET {path}/records until `want` have come (each call long-polls 1 s)."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want:
        if time.monotonic() > deadline:
            raise TimeoutError(f"got {len(got)} of {want} records")
        r = rest.get(path + "/records?timeout=1000", headers={"Accept": accept})
        assert r.status_code == 200, r.text
        got += r.json()
    return got


def assert_error(resp, status, code):
    assert resp.status_code == status, resp.text
    assert resp.json()["error_code"] == code, resp.text


def test_lifecycle_subscribe_read_commit_delete():
    with sluice() as b:
        create_topic(b, "life", 2)
        rest = Rest(b)
        name, base = new_instance(rest, "g1", name="c1", format="binary",
                                  **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"})
        assert name == "c1"
        assert base == f"{b.http_url}/consumers/g1/instances/c1"
        path = path_of(base)
        r = rest.post(path + "/subscription", {"topics": ["life"]})
        assert r.status_code == 204, r.text
        assert rest.get(path + "/subscription").json() == {"topics": ["life"]}
        records = [{"key": b64(f"k{i}"), "value": b64(f"v{i}"), "partition": i % 2,
                    "headers": [{"name": "h", "value": b64("x")}], "timestamp": 1000 + i}
                   for i in range(20)]
        assert rest.post("/topics/life", {"records": records}, V2_BINARY).status_code == 200
        got = poll(rest, path, 20)
        assert sorted(unb64(g["value"]).decode() for g in got) == sorted(f"v{i}" for i in range(20))
        first = next(g for g in got if unb64(g["value"]) == b"v3")
        assert first["topic"] == "life" and first["partition"] == 1 and unb64(first["key"]) == b"k3"
        assert first["timestamp"] == 1003
        assert first["headers"] == [{"name": "h", "value": b64("x")}]
        assert [g["offset"] for g in got if g["partition"] == 0] == list(range(10))
        # Both partitions are this member's.
        parts = rest.get(path + "/assignments").json()["partitions"]
        assert sorted((p["topic"], p["partition"]) for p in parts) == [("life", 0), ("life", 1)]
        # Nothing committed yet; an empty body commits every position.
        q = {"partitions": [{"topic": "life", "partition": 0}, {"topic": "life", "partition": 1}]}
        assert rest.s.get(b.http_url + path + "/offsets", data=json.dumps(q),
                          headers={"Content-Type": V2}, timeout=10).json() == {"offsets": []}
        r = rest.post(path + "/offsets", None)
        assert r.status_code == 200, r.text
        assert sorted((c["partition"], c["committed"]) for c in r.json()) == [(0, 10), (1, 10)]
        r = rest.s.get(b.http_url + path + "/offsets", data=json.dumps(q),
                       headers={"Content-Type": V2}, timeout=10)
        assert sorted((o["partition"], o["offset"]) for o in r.json()["offsets"]) == \
            [(0, 10), (1, 10)]
        # An explicit commit names the last consumed offset (committed = offset + 1).
        r = rest.post(path + "/offsets",
                      {"offsets": [{"topic": "life", "partition": 0, "offset": 4}]})
        assert r.json() == [{"topic": "life", "partition": 0, "consumed": 4, "committed": 5}]
        # A long poll with nothing new answers [] after the timeout.
        r = rest.get(path + "/records?timeout=200")
        assert r.status_code == 200 and r.json() == []
        assert rest.delete(path + "/subscription").status_code == 204
        assert rest.get(path + "/subscription").json() == {"topics": []}
        assert rest.delete(path).status_code == 204
        assert_error(rest.get(path + "/subscription"), 404, 40403)
        assert_error(rest.delete(path), 404, 40403)


def test_json_format_and_accept_negotiation():
    with sluice() as b:
        create_topic(b, "jf", 1)
        rest = Rest(b)
        _, base = new_instance(rest, "gj", format="json", **{"auto.offset.reset": "earliest"})
        path = path_of(base)
        rest.post(path + "/subscription", {"topics": ["jf"]})
        rest.post("/topics/jf", {"records": [{"key": {"a": 1}, "value": [1, "two", None]}]},
                  V2_JSON)
        got = poll(rest, path, 1, accept=V2_JSON)
        assert got[0]["key"] == {"a": 1} and got[0]["value"] == [1, "two", None]
        r = rest.get(path + "/records", headers={"Accept": V2_JSON})
        assert r.headers["content-type"] == V2_JSON
        assert_error(rest.get(path + "/records", headers={"Accept": V2_BINARY}), 406, 40601)
        # Something that is not JSON in a json-format read is 42203, and the position stays.
        rest.post("/topics/jf", {"records": [{"value": b64("not json")}]}, V2_BINARY)
        def answer():
            x = rest.get(path + "/records?timeout=500", headers={"Accept": V2_JSON})
            return [x] if x.status_code != 200 or x.json() else None

        assert_error(wait_for(answer, 30, "the bad record")[0], 422, 42203)
        assert_error(rest.get(path + "/records?timeout=100"), 422, 42203)


def test_manual_assignment_and_seeks():
    with sluice() as b:
        create_topic(b, "man", 2)
        rest = Rest(b)
        # Timestamps 1, 1001, ... 9001 ms: not 0, which librdkafka (upstream mode) takes for "now".
        rest.post("/topics/man/partitions/1",
                  {"records": [{"value": b64(f"m{i}"), "timestamp": 1000 * i + 1}
                               for i in range(10)]},
                  V2_BINARY)
        _, base = new_instance(rest, "gm", **{"auto.offset.reset": "earliest"})
        path = path_of(base)
        assert rest.post(path + "/assignments",
                         {"partitions": [{"topic": "man", "partition": 1}]}).status_code == 204
        assert rest.get(path + "/assignments").json() == {
            "partitions": [{"topic": "man", "partition": 1}]}
        got = poll(rest, path, 10)
        assert [g["offset"] for g in got] == list(range(10))
        assert rest.post(path + "/positions",
                         {"offsets": [{"topic": "man", "partition": 1, "offset": 7}]}
                         ).status_code == 204
        assert [g["offset"] for g in poll(rest, path, 3)] == [7, 8, 9]
        assert rest.post(path + "/positions/beginning",
                         {"partitions": [{"topic": "man", "partition": 1}]}).status_code == 204
        assert poll(rest, path, 10)[0]["offset"] == 0
        rest.post(path + "/positions",
                  {"timestamps": [{"topic": "man", "partition": 1,
                                   "timestamp": "1970-01-01T00:00:04.500Z"}]})
        assert poll(rest, path, 5)[0]["offset"] == 5
        rest.post(path + "/positions/end", {"partitions": [{"topic": "man", "partition": 1}]})
        assert rest.get(path + "/records?timeout=200").json() == []
        # max_bytes bounds an answer (at least one record comes).
        rest.post(path + "/positions/beginning", {"partitions": [{"topic": "man", "partition": 1}]})
        small = rest.get(path + "/records?timeout=1000&max_bytes=10").json()
        assert len(small) == 1


def test_topic_pattern_subscription():
    with sluice() as b:
        for t in ["metrics-a", "metrics-b", "logs"]:
            create_topic(b, t, 1)
        rest = Rest(b)
        _, base = new_instance(rest, "gp", **{"auto.offset.reset": "earliest"})
        path = path_of(base)
        assert rest.post(path + "/subscription", {"topic_pattern": "metrics-.*"}).status_code == 204
        for t in ["metrics-a", "metrics-b", "logs"]:
            rest.post(f"/topics/{t}", {"records": [{"value": b64(t)}]}, V2_BINARY)
        got = poll(rest, path, 2)
        assert sorted(g["topic"] for g in got) == ["metrics-a", "metrics-b"]
        assert sorted(rest.get(path + "/subscription").json()["topics"]) == ["metrics-a",
                                                                              "metrics-b"]


def test_consumer_errors():
    with sluice() as b:
        create_topic(b, "err", 1)
        rest = Rest(b)
        _, base = new_instance(rest, "ge", name="dup")
        path = path_of(base)
        assert_error(rest.post("/consumers/ge", {"name": "dup"}), 409, 40902)
        assert_error(rest.post("/consumers/ge", {"format": "avro"}), 422, 42204)
        assert_error(rest.post("/consumers/ge", {"format": "xml"}), 422, 42204)
        assert_error(rest.post("/consumers/ge", {"auto.offset.reset": "sometimes"}), 422, 42204)
        assert_error(rest.post("/consumers/ge", {"auto.commit.enable": "maybe"}), 422, 42204)
        assert_error(rest.post("/consumers/ge", None, raw=b"{nope"), 400, 400)
        assert_error(rest.post("/consumers/ge", {}, "text/plain"), 415, 415)
        missing = "/consumers/ge/instances/none"
        assert_error(rest.get(missing + "/records"), 404, 40403)
        assert_error(rest.post(missing + "/subscription", {"topics": ["err"]}), 404, 40403)
        assert_error(rest.get(missing + "/subscription"), 404, 40403)
        assert_error(rest.get(missing + "/assignments"), 404, 40403)
        assert_error(rest.post(missing + "/offsets", None), 404, 40403)
        assert_error(rest.post(missing + "/positions/end",
                               {"partitions": [{"topic": "err", "partition": 0}]}), 404, 40403)
        assert_error(rest.post(path + "/subscription", {"topics": ["err"], "topic_pattern": "e"}),
                     422, 42206)
        assert_error(rest.post(path + "/subscription", {}), 422, 42206)
        assert_error(rest.post(path + "/subscription", {"topic_pattern": "(unclosed"}), 422, 42204)
        assert_error(rest.post(path + "/assignments", {"partitions": [{"topic": "err"}]}),
                     422, 42206)
        assert_error(rest.post(path + "/positions",
                               {"offsets": [{"topic": "err", "partition": 0, "offset": 1}]}),
                     409, 40903)
        rest.post(path + "/assignments", {"partitions": [{"topic": "err", "partition": 0}]})
        assert_error(rest.post(path + "/subscription", {"topics": ["err"]}), 409, 40903)
        assert_error(rest.get(path + "/offsets"), 404, 40402)
        assert_error(rest.get(path + "/records", headers={"Accept": V2_JSON}), 406, 40601)
        # The server still serves.
        assert rest.get(path + "/assignments").status_code == 200


def test_rest_instance_and_kafka_consumer_share_a_group():
    with sluice() as b:
        create_topic(b, "shared", 4)
        rest = Rest(b)
        _, base = new_instance(rest, "mixed", name="rest-1",
                               **{"auto.offset.reset": "earliest", "auto.commit.enable": "true"})
        path = path_of(base)
        rest.post(path + "/subscription", {"topics": ["shared"]})
        wait_for(lambda: len(rest.get(path + "/assignments").json()["partitions"]) == 4, 30,
                 "the REST member to hold every partition")
        k = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "mixed",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "partition.assignment.strategy": "range",
                      "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        try:
            k.subscribe(["shared"])
            kafka_parts = set()

            def split():
                for m in k.consume(100, 0.2):
                    pass
                kafka_parts.clear()
                kafka_parts.update(tp.partition for tp in k.assignment())
                # The REST member's polls keep its side moving through the rebalance.
                rest.get(path + "/records?timeout=100")
                mine = {p["partition"] for p in rest.get(path + "/assignments").json()["partitions"]}
                return len(kafka_parts) == 2 and len(mine) == 2 and not (mine & kafka_parts)

            wait_for(split, 60, "the group to split the partitions between the two members")
            records = [{"value": b64(f"r{i}"), "partition": i % 4} for i in range(200)]
            assert rest.post("/topics/shared", {"records": records}, V2_BINARY).status_code == 200
            kafka_got, rest_got = [], []
            deadline = time.monotonic() + 60
            while len(kafka_got) + len(rest_got) < 200:
                assert time.monotonic() < deadline, (len(kafka_got), len(rest_got))
                kafka_got += [m for m in k.consume(200, 0.2) if m.error() is None]
                rest_got += rest.get(path + "/records?timeout=200").json()
            assert {m.partition() for m in kafka_got} == kafka_parts
            assert {g["partition"] for g in rest_got} == {0, 1, 2, 3} - kafka_parts
            values = sorted([m.value().decode() for m in kafka_got] +
                            [unb64(g["value"]).decode() for g in rest_got])
            assert values == sorted(f"r{i}" for i in range(200))
            # The REST member auto-committed what it read, in the group Kafka clients see.
            committed = k.committed([TopicPartition("shared", p) for p in range(4)], timeout=10)
            for tp in committed:
                if tp.partition not in kafka_parts:
                    assert tp.offset == 50
        finally:
            k.close()


def test_idle_instances_expire():
    with sluice(**{"consumer.instance.timeout.ms": 300}) as b:
        rest = Rest(b)
        _, base = new_instance(rest, "gx", name="idle")
        b.wait_log("instance idle of group gx expired", timeout=30)
        assert_error(rest.get(path_of(base) + "/subscription"), 404, 40403)
        # The name is free again.
        assert rest.post("/consumers/gx", {"name": "idle"}).status_code == 200


def test_base_uri_behind_a_load_balancer():
    with sluice(**{"http.advertised.url": "https://lb.example.com/kafka/"}) as b:
        rest = Rest(b)
        _, base = new_instance(rest, "g b", name="n 1")
        assert base == "https://lb.example.com/kafka/consumers/g%20b/instances/n%201"
    with sluice() as b:
        rest = Rest(b)
        r = rest.post("/consumers/g", {"name": "fwd"},
                      headers={"X-Forwarded-Host": "proxy.example.com:8443",
                               "X-Forwarded-Proto": "https"})
        assert r.json()["base_uri"] == "https://proxy.example.com:8443/consumers/g/instances/fwd"
        # The base_uri path works on this server.
        assert rest.get("/consumers/g/instances/fwd/subscription").status_code == 200


def test_instance_resumes_after_sigkill_and_restart():
    b = sluice()
    b.start()
    try:
        create_topic(b, "resume", 2)
        rest = Rest(b)
        _, base = new_instance(rest, "gr", name="survivor",
                               **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"})
        path = path_of(base)
        rest.post(path + "/subscription", {"topics": ["resume"]})
        records = [{"value": b64(f"s{i}"), "partition": i % 2} for i in range(100)]
        rest.post("/topics/resume", {"records": records}, V2_BINARY)
        first = []
        while len(first) < 30:
            first += rest.get(path + "/records?timeout=1000&max_bytes=2000").json()
        b.kill()
        b.start()
        rest = Rest(b)
        # The instance is back, subscribed, and reads on from where its answers ended.
        assert rest.get(path + "/subscription").json() == {"topics": ["resume"]}
        rest_of = poll(rest, path, 100 - len(first), timeout=60)
        seen = [(g["partition"], g["offset"]) for g in first + rest_of]
        assert len(seen) == len(set(seen)) == 100
        assert rest.get(path + "/records?timeout=200").json() == []
    finally:
        b.close()
