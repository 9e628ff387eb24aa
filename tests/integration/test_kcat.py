"""kcat (librdkafka 2.0.2): metadata, keyed records with headers, consumed back exactly."""
import json
import subprocess

KCAT = "/usr/bin/kcat"


def kcat(args, stdin=None, timeout=60):
    r = subprocess.run([KCAT] + args, input=stdin, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"kcat {' '.join(args)} failed: {r.stderr}"
    return r.stdout


def test_metadata_lists_the_broker_and_auto_created_topic(broker):
    # Producing one record auto-creates the topic (on by default).
    kcat(["-b", broker.bootstrap, "-t", "meta-topic", "-P"], stdin="x\n")
    meta = json.loads(kcat(["-b", broker.bootstrap, "-L", "-J"]))
    assert [b["id"] for b in meta["brokers"]] == [0]
    assert meta["brokers"][0]["name"] == broker.bootstrap
    topics = {t["topic"]: t for t in meta["topics"]}
    assert "meta-topic" in topics
    assert len(topics["meta-topic"]["partitions"]) == 1
    assert topics["meta-topic"]["partitions"][0]["leader"] == 0


def test_keyed_records_with_headers_round_trip_exactly(broker):
    lines = [f"key-{i}:value-{i}" for i in range(200)]
    kcat(["-b", broker.bootstrap, "-t", "kv", "-P", "-K:", "-H", "trace=abc", "-H", "n=1",
          "-p", "0"], stdin="\n".join(lines) + "\n")
    out = kcat(["-b", broker.bootstrap, "-t", "kv", "-C", "-e", "-o", "beginning", "-J"])
    msgs = [json.loads(l) for l in out.splitlines() if l.strip()]
    assert len(msgs) == 200
    for i, m in enumerate(msgs):
        assert m["partition"] == 0
        assert m["offset"] == i
        assert m["key"] == f"key-{i}"
        assert m["payload"] == f"value-{i}"
        assert m["headers"] == ["trace", "abc", "n", "1"]


def test_consume_from_offset_and_end_of_partition(broker):
    kcat(["-b", broker.bootstrap, "-t", "seek", "-P", "-p", "0"],
         stdin="".join(f"m{i}\n" for i in range(10)))
    out = kcat(["-b", broker.bootstrap, "-t", "seek", "-C", "-e", "-o", "7", "-f", "%o:%s\n"])
    assert out.splitlines() == ["7:m7", "8:m8", "9:m9"]


def test_unknown_topic_without_auto_create_is_an_error():
    from harness import Sluice
    s = Sluice(settings={"auto.create.topics.enable": "false"}).start()
    try:
        r = subprocess.run([KCAT, "-b", s.bootstrap, "-t", "nope", "-C", "-e", "-m", "5"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0
        assert "Unknown topic" in r.stderr or "UNKNOWN_TOPIC" in r.stderr
    finally:
        s.close()
