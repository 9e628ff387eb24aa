"""Server-Sent Events at GET /topics/{t}/events and /v3/clusters/{id}/topics/{t}/events with a
Python client (python3-requests, streaming): events carry "partition:offset" ids, a client
that reconnects with Last-Event-ID resumes exactly after the last event it saw (also when the
server ends the stream, as limit= makes it), from= and format=, a group stream resuming at its
commits, and the error answers."""
import json

from harness import Sluice
from rest_support import Rest, b64, create_topic

import requests


def events(broker, path, n, headers=None, timeout=60):
    """The first n events (each {"id", "data"}) of the stream at `path`, and the retry value."""
    out = []
    retry = None
    with requests.get(broker.http_url + path, stream=True, timeout=timeout,
                      headers=headers or {}) as r:
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "text/event-stream"
        event = {}
        for raw in r.iter_lines(decode_unicode=True):
            if raw is None:
                continue
            line = raw
            if line == "":
                if "data" in event:
                    out.append(event)
                    if len(out) >= n:
                        return out, retry
                event = {}
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(": ")
            if field == "retry":
                retry = int(value)
            elif field == "data":
                event["data"] = json.loads(value)
            elif field in ("id", "event"):
                event[field] = value
    return out, retry


def produce(broker, topic, values, partition=None):
    recs = [{"value": b64(v)} if partition is None else {"value": b64(v), "partition": partition}
            for v in values]
    r = Rest(broker).post(f"/topics/{topic}", {"records": recs},
                          "application/vnd.kafka.binary.v2+json")
    assert r.status_code == 200, r.text


def test_events_carry_resume_ids_and_last_event_id_resumes_exactly(broker):
    create_topic(broker, "ev", 2)
    produce(broker, "ev", [f"a{i}" for i in range(10)], partition=0)
    produce(broker, "ev", [f"b{i}" for i in range(10)], partition=1)
    got, retry = events(broker, "/topics/ev/events?from=earliest", 7)
    assert retry == 1000
    assert all(e["data"]["topic"] == "ev" for e in got)
    last = got[-1]
    # The id lists, for every partition, where the stream goes on.
    ids = dict(pair.split(":") for pair in last["id"].split(","))
    seen = {(e["data"]["partition"], e["data"]["offset"]) for e in got}
    for p, nxt in ids.items():
        offsets = [o for (pp, o) in seen if pp == int(p)]
        assert int(nxt) == (max(offsets) + 1 if offsets else 0)
    # Reconnecting with Last-Event-ID gives exactly the rest.
    rest, _ = events(broker, "/topics/ev/events?from=earliest", 20 - len(got),
                     headers={"Last-Event-ID": last["id"]})
    seen2 = [(e["data"]["partition"], e["data"]["offset"]) for e in rest]
    assert len(seen2) == len(set(seen2))
    assert seen | set(seen2) == {(p, o) for p in (0, 1) for o in range(10)}
    assert not seen & set(seen2)


def test_server_ends_the_stream_and_the_client_resumes(broker):
    create_topic(broker, "drop", 1)
    produce(broker, "drop", [f"d{i}" for i in range(25)])
    seen = []
    last_id = None
    for _ in range(5):
        headers = {"Last-Event-ID": last_id} if last_id else {}
        got, _ = events(broker, "/topics/drop/events?from=earliest&limit=5", 5, headers=headers)
        assert len(got) == 5
        seen += [e["data"]["value"] for e in got]
        last_id = got[-1]["id"]
    assert seen == [f"d{i}" for i in range(25)]
    # The stream really ends after `limit` events (the server drops it).
    with requests.get(broker.http_url + "/topics/drop/events?from=earliest&limit=2",
                      stream=True, timeout=30) as r:
        body = r.raw.read()
    assert body.count(b"data: ") == 2


def test_v3_path_formats_and_from(broker):
    create_topic(broker, "v3ev", 1)
    produce(broker, "v3ev", ['{"n":1}', "text", '{"n":3}'])
    cid = Rest(broker).get("/v3/clusters").json()["data"][0]["cluster_id"]
    got, _ = events(broker, f"/v3/clusters/{cid}/topics/v3ev/events?from=1&format=json", 2)
    assert [e["data"]["value"] for e in got] == ["text", {"n": 3}]
    assert got[0]["data"]["offset"] == 1
    got, _ = events(broker, "/topics/v3ev/events?from=earliest&format=base64", 1)
    assert got[0]["data"]["value"] == b64('{"n":1}')


def test_latest_streams_new_records(broker):
    create_topic(broker, "live", 1)
    produce(broker, "live", ["old"])
    with requests.get(broker.http_url + "/topics/live/events", stream=True, timeout=30) as r:
        lines = r.iter_lines(decode_unicode=True)
        assert next(lines).startswith("retry:")  # the stream is open: positions are set
        produce(broker, "live", ["new"])
        data = next(l for l in lines if l and l.startswith("data: "))
        assert json.loads(data[6:])["value"] == "new"


def test_group_stream_resumes_at_its_commits():
    with Sluice(settings={"group.initial.rebalance.delay.ms": 0}) as b:
        create_topic(b, "gs", 1)
        produce(b, "gs", [f"g{i}" for i in range(6)])
        got, _ = events(b, "/topics/gs/events?group=viewers&from=earliest&limit=4", 4)
        assert [e["data"]["value"] for e in got] == ["g0", "g1", "g2", "g3"]
        got, _ = events(b, "/topics/gs/events?group=viewers&from=earliest&limit=2", 2)
        assert [e["data"]["value"] for e in got] == ["g4", "g5"]


def test_errors(broker):
    create_topic(broker, "e", 1)
    rest = Rest(broker)
    r = rest.get("/topics/missing/events")
    assert r.status_code == 404 and r.json()["error_code"] == 40401
    for q in ["from=yesterday", "format=xml", "limit=0"]:
        r = rest.get("/topics/e/events?" + q)
        assert r.status_code == 400 and r.json()["error_code"] == 400, q
    r = rest.get("/topics/e/events", headers={"Last-Event-ID": "zero:one"})
    assert r.status_code == 400
    r = rest.get("/v3/clusters/nope/topics/e/events")
    assert r.status_code == 404 and r.json()["error_code"] == 404
    assert rest.get("/healthz").status_code == 200
