"""REST Proxy API v3 over real HTTP: clusters, topics and partitions listings with their links,
produce with typed keys and values (BINARY, JSON, STRING), headers, partition and timestamp,
the streamed form (concatenated records in one chunked body, one report each, in order, while
the body is still being sent), and the error answers. Records are checked with a Kafka
consumer."""
import base64
import json
import queue
import socket
import threading

import requests

from harness import connect
from rest_support import Rest, b64, create_topic, read_partition


def cluster_id(rest):
    return rest.get("/v3/clusters").json()["data"][0]["cluster_id"]


def test_clusters_topics_partitions(broker):
    create_topic(broker, "v3t", 3)
    rest = Rest(broker)
    r = rest.get("/v3/clusters")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["kind"] == "KafkaClusterList"
    assert body["metadata"]["self"] == broker.http_url + "/v3/clusters"
    c = body["data"][0]
    cid = c["cluster_id"]
    assert c["kind"] == "KafkaCluster"
    assert c["metadata"]["resource_name"] == f"crn:///kafka={cid}"
    assert c["topics"]["related"] == f"{broker.http_url}/v3/clusters/{cid}/topics"
    assert rest.get(f"/v3/clusters/{cid}").json()["cluster_id"] == cid
    r = rest.get("/v3/clusters/other")
    assert r.status_code == 404 and r.json() == {"error_code": 404,
                                                 "message": "Cluster other cannot be found."}

    topics = rest.get(f"/v3/clusters/{cid}/topics").json()
    assert topics["kind"] == "KafkaTopicList"
    by_name = {t["topic_name"]: t for t in topics["data"]}
    t = by_name["v3t"]
    assert t["partitions_count"] == 3 and t["is_internal"] is False
    assert t["replication_factor"] == 1
    assert t["partitions"]["related"] == f"{broker.http_url}/v3/clusters/{cid}/topics/v3t/partitions"
    assert rest.get(f"/v3/clusters/{cid}/topics/v3t").json()["topic_name"] == "v3t"
    parts = rest.get(f"/v3/clusters/{cid}/topics/v3t/partitions").json()
    assert parts["kind"] == "KafkaPartitionList"
    assert [p["partition_id"] for p in parts["data"]] == [0, 1, 2]
    p = rest.get(f"/v3/clusters/{cid}/topics/v3t/partitions/2").json()
    assert p["kind"] == "KafkaPartition" and p["partition_id"] == 2
    assert p["leader"]["related"].endswith("/topics/v3t/partitions/2/replicas/0")
    for path in [f"/v3/clusters/{cid}/topics/none", f"/v3/clusters/{cid}/topics/none/partitions",
                 f"/v3/clusters/{cid}/topics/v3t/partitions/3"]:
        r = rest.get(path)
        assert r.status_code == 404 and r.json()["error_code"] == 40403, path


def test_produce_typed_records(broker):
    create_topic(broker, "typed", 2)
    rest = Rest(broker)
    cid = cluster_id(rest)
    url = f"/v3/clusters/{cid}/topics/typed/records"
    rec = {"partition_id": 1,
           "headers": [{"name": "Header-1", "value": b64("one")}, {"name": "nil", "value": None}],
           "key": {"type": "BINARY", "data": b64("foobar")},
           "value": {"type": "JSON", "data": {"foo": "bar"}},
           "timestamp": "2021-02-05T19:14:42Z"}
    r = rest.post(url, rec, "application/json")
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["error_code"] == 200
    assert report["cluster_id"] == cid and report["topic_name"] == "typed"
    assert report["partition_id"] == 1 and report["offset"] == 0
    assert report["timestamp"] == "2021-02-05T19:14:42.000Z"
    assert report["key"] == {"type": "BINARY", "size": 6}
    assert report["value"] == {"type": "JSON", "size": len('{"foo":"bar"}')}
    r = rest.post(url, {"value": {"type": "STRING", "data": "My message"}}, "application/json")
    assert r.status_code == 200 and r.json()["key"] is None
    m = read_partition(broker, "typed", 1, 0, 1)[0]
    assert m.key() == b"foobar" and json.loads(m.value()) == {"foo": "bar"}
    assert m.headers() == [("Header-1", b"one"), ("nil", None)]
    assert m.timestamp()[1] == 1612552482000
    p = r.json()["partition_id"]
    offset = r.json()["offset"]
    assert read_partition(broker, "typed", p, offset, 1)[0].value() == b"My message"


def test_produce_errors(broker):
    create_topic(broker, "bad", 1)
    rest = Rest(broker)
    cid = cluster_id(rest)
    url = f"/v3/clusters/{cid}/topics/bad/records"
    cases = [
        ({"value": {"type": "BINARY", "data": 1}}, 400),
        ({"value": {"type": "BINARY", "data": "not base64!"}}, 400),
        ({"value": {"type": "STRING", "data": 5}}, 400),
        ({"value": {"data": "no type"}}, 400),
        ({"value": {"type": "AVRO", "data": "x"}}, 400),
        ({"partition_id": -1, "value": {"type": "STRING", "data": "x"}}, 400),
        ({"headers": [{"name": "h", "value": "%%%"}], "value": {"type": "STRING", "data": "x"}},
         400),
        ({"timestamp": "not a time", "value": {"type": "STRING", "data": "x"}}, 400),
    ]
    for body, status in cases:
        r = rest.post(url, body, "application/json")
        assert r.status_code == status, (body, r.text)
        assert r.json()["error_code"] == status and r.json()["message"]
    r = rest.post(url, {"partition_id": 5, "value": {"type": "STRING", "data": "x"}},
                  "application/json")
    assert r.status_code == 404 and r.json()["error_code"] == 40403
    # A missing topic is created (auto.create.topics.enable): test_http_autocreate.py.
    r = rest.post(f"/v3/clusters/nope/topics/bad/records",
                  {"value": {"type": "STRING", "data": "x"}}, "application/json")
    assert r.status_code == 404 and r.json()["error_code"] == 404
    r = rest.post(url, {"value": {"type": "STRING", "data": "x"}}, "text/plain")
    assert r.status_code == 415 and r.json()["error_code"] == 415
    r = rest.post(url, None, "application/json", raw=b"")
    assert r.status_code == 422 and r.json()["error_code"] == 422
    r = rest.post(url, None, "application/json", raw=b'{"value": ')
    assert r.status_code == 400 and r.json()["error_code"] == 400
    # Keep-alive survives the error answers.
    r = rest.post(url, {"value": {"type": "STRING", "data": "ok"}}, "application/json")
    assert r.status_code == 200 and r.json()["offset"] == 0


def test_concatenated_records_in_one_body_get_one_report_each(broker):
    create_topic(broker, "cat", 1)
    rest = Rest(broker)
    cid = cluster_id(rest)
    body = "".join(json.dumps({"value": {"type": "STRING", "data": f"c{i}"}}) +
                   ("\n" if i % 2 else "") for i in range(5))
    body += json.dumps({"value": {"type": "BINARY", "data": 7}})
    r = rest.post(f"/v3/clusters/{cid}/topics/cat/records", None, "application/json",
                  raw=body.encode())
    assert r.status_code == 200
    reports = [json.loads(x) for x in r.text.replace("}{", "}\n{").splitlines()]
    assert [rep["error_code"] for rep in reports] == [200] * 5 + [400]
    assert [rep["offset"] for rep in reports[:5]] == list(range(5))


def test_streamed_produce_reports_while_the_body_is_still_sent(broker):
    create_topic(broker, "stream", 3)
    rest = Rest(broker)
    cid = cluster_id(rest)
    s = connect(broker.http_port, timeout=30)
    s.sendall((f"POST /v3/clusters/{cid}/topics/stream/records HTTP/1.1\r\nHost: x\r\n"
               "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode())
    reader = s.makefile("rb")

    def send_chunk(data):
        s.sendall(b"%x\r\n" % len(data) + data + b"\r\n")

    status = None
    reports = []
    # Record by record: each report comes back before the next record is sent.
    for i in range(20):
        rec = json.dumps({"partition_id": i % 3, "key": {"type": "STRING", "data": f"k{i}"},
                          "value": {"type": "STRING", "data": f"s{i}"}}).encode()
        if i == 7:
            send_chunk(rec[:10])  # a record split over chunks
            send_chunk(rec[10:])
        else:
            send_chunk(rec)
        if status is None:
            status = reader.readline()
            assert status.startswith(b"HTTP/1.1 200"), status
            while reader.readline() not in (b"\r\n", b""):
                pass
        size = int(reader.readline().strip(), 16)
        chunk = reader.read(size)
        reader.readline()
        reports.append(json.loads(chunk))
    send_chunk(b'{"value": {"type": "JSON", "data": [1, 2]}}   {"value": {"type": "JSON", "data": 3}}')
    got = b""
    while got.count(b'"error_code"') < 2:
        size = int(reader.readline().strip(), 16)
        got += reader.read(size)
        reader.readline()
    s.sendall(b"0\r\n\r\n")
    assert reader.readline().strip() == b"0"
    s.close()
    assert [r["error_code"] for r in reports] == [200] * 20
    assert [r["partition_id"] for r in reports] == [i % 3 for i in range(20)]
    per_partition = {}
    for r in reports:
        per_partition.setdefault(r["partition_id"], []).append(r["offset"])
    assert all(v == list(range(len(v))) for v in per_partition.values())
    # The records are where the reports say.
    for i, r in enumerate(reports):
        if i % 5 == 0:
            m = read_partition(broker, "stream", r["partition_id"], r["offset"], 1)[0]
            assert m.value() == f"s{i}".encode()


def test_streamed_produce_with_requests_generator(broker):
    create_topic(broker, "gen", 1)
    rest = Rest(broker)
    cid = cluster_id(rest)

    def records():
        for i in range(300):
            yield json.dumps({"value": {"type": "STRING", "data": f"g{i}"}}).encode()

    r = requests.post(f"{broker.http_url}/v3/clusters/{cid}/topics/gen/records",
                      data=records(), headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 200
    reports = [json.loads(x) for x in r.text.replace("}{", "}\n{").splitlines() if x.strip()]
    assert [rep["offset"] for rep in reports] == list(range(300))
    assert read_partition(broker, "gen", 0, 299, 1)[0].value() == b"g299"


def test_streamed_produce_ends_on_garbage_and_the_server_still_serves(broker):
    create_topic(broker, "garb", 1)
    rest = Rest(broker)
    cid = cluster_id(rest)
    s = start_stream(broker, cid, "garb")
    # The whole body in one write: the server stops reading at the garbage and closes, and a
    # terminating chunk sent after that would meet a reset (what made a sender of separate
    # writes fail now and then with a broken pipe before it could read the answer).
    chunks = [b'{"value": {"type": "STRING", "data": "fine"}}', b"]]] not json"]
    s.sendall(b"".join(b"%x\r\n" % len(c) + c + b"\r\n" for c in chunks) + b"0\r\n\r\n")
    reader = s.makefile("rb")
    assert reader.readline().startswith(b"HTTP/1.1 200")
    while reader.readline() not in (b"\r\n", b""):
        pass
    body = b""
    while True:
        size = int(reader.readline().strip() or b"0", 16)
        if size == 0:
            break
        body += reader.read(size)
        reader.readline()
    s.close()
    reports = [json.loads(x) for x in body.replace(b"}{", b"}\n{").splitlines() if x.strip()]
    assert [rep["error_code"] for rep in reports] == [200, 400]
    assert Rest(broker).get("/v3/clusters").status_code == 200


def start_stream(broker, cid, topic):
    s = connect(broker.http_port, timeout=60)
    s.sendall((f"POST /v3/clusters/{cid}/topics/{topic}/records HTTP/1.1\r\nHost: x\r\n"
               "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode())
    return s


def test_streamed_produce_sent_faster_than_it_is_produced_keeps_every_report_in_order(broker):
    # The sender never waits for a report: the server reads and parses ahead while appends
    # wait to be durable, and produces what it read meanwhile together.
    create_topic(broker, "ahead", 1)
    cid = cluster_id(Rest(broker))
    s = start_stream(broker, cid, "ahead")
    n = 5000
    errors = []

    def send():
        try:
            for start in range(0, n, 50):
                body = b"".join(json.dumps({"value": {"type": "STRING", "data": f"a{i}"}})
                                .encode() for i in range(start, start + 50))
                s.sendall(b"%x\r\n" % len(body) + body + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except OSError as e:
            errors.append(e)

    sender = threading.Thread(target=send)
    sender.start()
    reader = s.makefile("rb")
    assert reader.readline().startswith(b"HTTP/1.1 200")
    while reader.readline() not in (b"\r\n", b""):
        pass
    body = b""
    chunks = 0
    while True:
        size = int(reader.readline().strip(), 16)
        if size == 0:
            break
        body += reader.read(size)
        reader.readline()
        chunks += 1
    sender.join(60)
    s.close()
    assert not errors, errors
    reports = [json.loads(x) for x in body.replace(b"}{", b"}\n{").splitlines() if x.strip()]
    assert [r["error_code"] for r in reports] == [200] * n
    assert [r["offset"] for r in reports] == list(range(n))
    assert chunks < n  # records read together went out in one produce call and one chunk
    assert read_partition(broker, "ahead", 0, n - 1, 1)[0].value() == f"a{n - 1}".encode()


def test_streamed_produce_whose_client_vanishes_mid_stream_leaves_the_server_serving(broker):
    create_topic(broker, "vanish", 1)
    cid = cluster_id(Rest(broker))
    for _ in range(3):
        s = start_stream(broker, cid, "vanish")
        body = b"".join(json.dumps({"value": {"type": "STRING", "data": "v" * 200}}).encode()
                        for _ in range(2000))
        s.sendall(b"%x\r\n" % len(body) + body + b"\r\n")
        # Gone without reading a report or ending the body: RST instead of FIN.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    rest = Rest(broker)
    assert rest.get("/v3/clusters").status_code == 200
    # The topic still takes records, at the offset after everything produced before.
    r = requests.post(f"{broker.http_url}/v3/clusters/{cid}/topics/vanish/records",
                      json={"value": {"type": "STRING", "data": "after"}}, timeout=30)
    assert r.status_code == 200, r.text
    last = r.json()["offset"]
    assert read_partition(broker, "vanish", 0, last, 1)[0].value() == b"after"
    assert broker.alive()
