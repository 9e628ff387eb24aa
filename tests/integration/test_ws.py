"""The WebSocket endpoint /ws with real clients: node `ws` receiving 100,000 records in order, a
credit window of 10 getting exactly 10 until it grants more, produce acks that kcat-style
readers find at the given offsets, subscriptions with a group that resume at the group's
commits, a client that reads nothing while 200 MB are produced (sluice's resident set stays
bounded and the client is dropped after the write timeout), and the bad-input cases (malformed
and oversized frames, binary frames, unknown ops, a missing topic, garbage), after each of which
the server still serves. Compact records frames ("encoding":"compact") carry every field kcat
sees, offsets with gaps (transaction markers) included, in each format, and credit stays exact
with them."""
import json
import os
import socket
import struct
import subprocess
import time

import pytest
from confluent_kafka import Producer

from harness import ROOT, Sluice, connect, wait_for
from rest_support import Rest, create_topic, read_partition
from sqs_support import metric
from ws_support import (OP_BINARY, OP_CLOSE, OP_PING, OP_PONG, OP_TEXT, Closed, WsClient,
                        decode_records)

JS = os.path.join(ROOT, "tests", "integration", "js")


def produce_values(broker, topic, n, size=None):
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20,
                  "queue.buffering.max.messages": 200000})
    for i in range(n):
        value = f"v{i}".encode() if size is None else (b"%08d" % i) * (size // 8)
        while True:
            try:
                p.produce(topic, value=value)
                break
            except BufferError:
                p.poll(0.1)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def node(*args, timeout=300):
    out = subprocess.run(["node", os.path.join(JS, "ws_receive.js")] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=timeout, cwd=JS)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def healthy(broker):
    with WsClient(broker.http_port) as c:
        c.send({"op": "unknown-op-probe"})
        return c.recv()["op"] == "error"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_node_client_receives_100000_records_in_order(broker):
    create_topic(broker, "many", 1)
    produce_values(broker, "many", 100000)
    got = node(f"ws://127.0.0.1:{broker.http_port}/ws", "many", 100000)
    assert got["received"] == 100000 and got["first"] == 0 and got["last"] == 99999


def test_node_client_receives_100000_records_in_order_in_compact_frames(broker):
    create_topic(broker, "many-c", 1)
    produce_values(broker, "many-c", 100000)
    got = node(f"ws://127.0.0.1:{broker.http_port}/ws", "many-c", 100000, 0, "compact")
    assert got["received"] == 100000 and got["first"] == 0 and got["last"] == 99999


def test_credit_window_of_10_gets_exactly_10_until_it_grants_more(broker):
    create_topic(broker, "cred", 1)
    create_topic(broker, "cred-scratch", 1)
    produce_values(broker, "cred", 100)
    got = node(f"ws://127.0.0.1:{broker.http_port}/ws", "cred", 100, 10)
    assert got["received"] == 100 and got["granted"] == 100
    # The same with the Python client, looking at frames: nothing past the window.
    with WsClient(broker.http_port) as c:
        c.send({"op": "credit", "records": 10})
        c.send({"op": "subscribe", "id": 7, "topics": ["cred"], "from": "earliest"})
        assert c.recv() == {"op": "subscribed", "id": 7, "topics": ["cred"]}
        records = []
        while len(records) < 10:
            m, _ = c.recv_op("records")
            assert m["id"] == 7
            records += m["records"]
        assert len(records) == 10
        for i in range(3):  # round trips: a records frame sent past the window would come first
            c.send({"op": "produce", "id": f"p{i}", "topic": "cred-scratch", "value": "x"})
            m = c.recv()
            assert m["op"] == "ack" and m["id"] == f"p{i}", m
        c.send({"op": "credit", "records": 5})
        more = []
        while len(more) < 5:
            m, _ = c.recv_op("records")
            more += m["records"]
        assert [r["offset"] for r in records + more] == list(range(15))
        c.send({"op": "produce", "id": "last", "topic": "cred-scratch", "value": "x"})
        assert c.recv()["op"] == "ack"


def test_produce_ack_and_formats(broker):
    create_topic(broker, "wsp", 2)
    with WsClient(broker.http_port) as c:
        c.send({"op": "subscribe", "topics": ["wsp"], "from": "latest", "format": "json"})
        assert c.recv()["op"] == "subscribed"
        c.send({"op": "produce", "id": "a", "topic": "wsp", "key": "k1", "value": {"x": 1},
                "headers": {"trace": "t-1"}, "partition": 1})
        # A record may reach the subscription before its ack: keep what recv_op skips.
        ack, skipped = c.recv_op("ack")
        assert ack == {"op": "ack", "id": "a", "topic": "wsp", "partition": 1, "offset": 0}
        c.send({"op": "produce", "id": 2, "topic": "wsp", "value": "plain", "partition": 0})
        ack, more = c.recv_op("ack")
        assert ack["offset"] == 0
        got = [r for m in skipped + more for r in m["records"]]
        while len(got) < 2:
            m, _ = c.recv_op("records")
            assert "id" not in m
            got += m["records"]
        by_p = {r["partition"]: r for r in got}
        assert by_p[1]["value"] == {"x": 1} and by_p[1]["key"] == "k1"
        assert by_p[1]["headers"] == {"trace": "t-1"}
        assert isinstance(by_p[1]["timestamp"], int)
        assert by_p[0]["value"] == "plain"
    m = read_partition(broker, "wsp", 1, 0, 1)[0]
    assert m.key() == b"k1" and json.loads(m.value()) == {"x": 1}
    assert m.headers() == [("trace", b"t-1")]
    with WsClient(broker.http_port) as c:
        c.send({"op": "subscribe", "topics": ["wsp"], "from": {"offset": 0}, "format": "base64"})
        c.recv_op("subscribed")
        got = []
        while len(got) < 2:
            got += c.recv_op("records")[0]["records"]
        assert sorted(r["value"] for r in got) == sorted(["eyJ4IjoxfQ==", "cGxhaW4="])


KCAT = "/usr/bin/kcat"


def kcat_produce(broker, topic, partition, lines, keyed=False, headers=()):
    cmd = [KCAT, "-b", broker.bootstrap, "-t", topic, "-P", "-p", str(partition)]
    if keyed:
        cmd += ["-K", ":"]
    for h in headers:
        cmd += ["-H", h]
    r = subprocess.run(cmd, input="".join(l + "\n" for l in lines), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def kcat_read(broker, topic, partition, count):
    """`count` records of one partition as kcat's JSON envelopes, headers as a dict."""
    r = subprocess.run([KCAT, "-b", broker.bootstrap, "-t", topic, "-C", "-p", str(partition),
                        "-o", "beginning", "-c", str(count), "-e", "-J"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    assert len(out) == count, r.stdout
    for m in out:
        h = m.get("headers") or {}
        m["headers"] = dict(zip(h[::2], h[1::2])) if isinstance(h, list) else h
    return out


def subscribed_records(broker, topic, count, fmt="string", encoding="compact", credit=None):
    """The records frames of a subscription from the earliest offset until `count` records,
    and those records decoded."""
    with WsClient(broker.http_port) as c:
        sub = {"op": "subscribe", "id": "s", "topics": [topic], "from": "earliest",
               "format": fmt}
        if encoding is not None:
            sub["encoding"] = encoding
        c.send(sub)
        assert c.recv() == {"op": "subscribed", "id": "s", "topics": [topic]}
        frames, records = [], []
        while len(records) < count:
            m, _ = c.recv_op("records")
            assert m["id"] == "s"
            frames.append(m)
            records += decode_records(m)
        assert len(records) == count
        return frames, records


def by_position(records):
    return sorted(records, key=lambda r: (r["partition"], r["offset"]))


def test_compact_frames_carry_every_field_kcat_sees(broker):
    create_topic(broker, "cmp", 2)
    kcat_produce(broker, "cmp", 0, ["k0:v0", 'k1:{"x":1}'], keyed=True,
                 headers=["trace=abc", "app=ws"])
    kcat_produce(broker, "cmp", 0, ["plain-2", "[1,2]"])
    kcat_produce(broker, "cmp", 1, ["only:p1-0", "other:p1-1"], keyed=True)
    frames, records = subscribed_records(broker, "cmp", 6)
    assert all(f["encoding"] == "compact" and "records" not in f for f in frames)
    runs = [run for f in frames for run in f["runs"]]
    p0 = [run for run in runs if run["partition"] == 0]
    assert any(run.get("keys", [])[:2] == ["k0", "k1"] for run in p0), p0
    assert any(run.get("headers", [])[:1] == [{"trace": "abc", "app": "ws"}] for run in p0), p0
    assert not any("offsets" in run for run in runs)  # consecutive offsets need none
    seen = {(r["partition"], r["offset"]): r for r in records}
    assert len(seen) == 6
    for p in (0, 1):
        for k in kcat_read(broker, "cmp", p, 4 if p == 0 else 2):
            r = seen[(p, k["offset"])]
            assert r["topic"] == k["topic"] == "cmp"
            assert r["timestamp"] == k["ts"]
            assert r["key"] == k["key"], (r, k)
            assert r["value"] == k["payload"], (r, k)
            assert r["headers"] == k["headers"], (r, k)
    # Every format: the compact frames decode to exactly the default frames' records.
    for fmt in ("string", "base64", "json"):
        default_frames, default = subscribed_records(broker, "cmp", 6, fmt, encoding=None)
        assert all("encoding" not in f for f in default_frames)
        _, compact = subscribed_records(broker, "cmp", 6, fmt)
        assert by_position(compact) == by_position(default), fmt
        _, named = subscribed_records(broker, "cmp", 6, fmt, encoding="records")
        assert by_position(named) == by_position(default), fmt
    _, as_json = subscribed_records(broker, "cmp", 6, "json")
    assert seen[(0, 1)]["value"] == '{"x":1}'
    assert {(r["partition"], r["offset"]): r for r in as_json}[(0, 1)]["value"] == {"x": 1}


def test_compact_frames_keep_the_gaps_of_transaction_markers(broker):
    from confluent_kafka import Producer as TxnProducer
    create_topic(broker, "cgap", 1)
    p = TxnProducer({"bootstrap.servers": broker.bootstrap, "transactional.id": "cgap-tx",
                     "linger.ms": 1})
    p.init_transactions(30)
    for n in (3, 2):  # each commit leaves a marker at the next offset
        p.begin_transaction()
        for i in range(n):
            p.produce("cgap", value=f"t{n}-{i}".encode(), partition=0)
        p.commit_transaction(30)
    produce_values(broker, "cgap", 1)
    expected = kcat_read(broker, "cgap", 0, 6)
    assert [k["offset"] for k in expected] == [0, 1, 2, 4, 5, 7]
    frames, records = subscribed_records(broker, "cgap", 6)
    assert [r["offset"] for r in records] == [0, 1, 2, 4, 5, 7]
    assert [r["value"] for r in records] == [k["payload"] for k in expected]
    assert [r["timestamp"] for r in records] == [k["ts"] for k in expected]
    runs = [run for f in frames for run in f["runs"]]
    assert any("offsets" in run for run in runs), runs
    _, default = subscribed_records(broker, "cgap", 6, encoding=None)
    assert records == default


def test_credit_is_exact_with_compact_frames(broker):
    create_topic(broker, "ccred", 2)
    create_topic(broker, "ccred-scratch", 1)
    produce_values(broker, "ccred", 100)
    with WsClient(broker.http_port) as c:
        c.send({"op": "credit", "records": 10})
        c.send({"op": "subscribe", "id": 3, "topics": ["ccred"], "from": "earliest",
                "encoding": "compact"})
        assert c.recv() == {"op": "subscribed", "id": 3, "topics": ["ccred"]}
        records = []
        while len(records) < 10:
            m, _ = c.recv_op("records")
            assert m["id"] == 3 and m["encoding"] == "compact"
            records += decode_records(m)
        assert len(records) == 10
        for i in range(3):  # round trips: a records frame sent past the window would come first
            c.send({"op": "produce", "id": f"p{i}", "topic": "ccred-scratch", "value": "x"})
            m = c.recv()
            assert m["op"] == "ack" and m["id"] == f"p{i}", m
        c.send({"op": "credit", "records": 7})
        while len(records) < 17:
            records += decode_records(c.recv_op("records")[0])
        assert len(records) == 17
        c.send({"op": "produce", "id": "last", "topic": "ccred-scratch", "value": "x"})
        assert c.recv()["op"] == "ack"
        assert len({(r["partition"], r["offset"]) for r in records}) == 17


def test_group_subscription_resumes_at_its_commit():
    with Sluice(settings={"group.initial.rebalance.delay.ms": 0}) as b:
        create_topic(b, "grp", 2)
        produce_values(b, "grp", 40)
        with WsClient(b.http_port) as c:
            c.send({"op": "subscribe", "id": "s", "topics": ["grp"], "group": "browsers",
                    "from": "earliest"})
            c.recv_op("subscribed")
            got = []
            while len(got) < 40:
                got += c.recv_op("records")[0]["records"]
            c.send({"op": "commit", "id": "c1"})
            committed = c.recv_op("committed")[0]
            assert committed["id"] == "c1"
            assert sorted((o["partition"], o["offset"]) for o in committed["offsets"]) == \
                sorted((p, sum(1 for r in got if r["partition"] == p)) for p in (0, 1))
        produce_values(b, "grp", 10)
        # A new connection in the same group continues after the commit.
        with WsClient(b.http_port) as c:
            c.send({"op": "subscribe", "topics": ["grp"], "group": "browsers", "from": "earliest"})
            c.recv_op("subscribed")
            more = []
            while len(more) < 10:
                more += c.recv_op("records")[0]["records"]
            assert sorted(r["value"] for r in more) == sorted(f"v{i}" for i in range(10))
            seen = {(r["partition"], r["offset"]) for r in got}
            assert not any((r["partition"], r["offset"]) in seen for r in more)
        with WsClient(b.http_port) as c:
            c.send({"op": "commit"})
            err = c.recv()
            assert err["op"] == "error" and err["code"] == 40903


def test_slow_reader_keeps_rss_bounded_and_is_dropped():
    settings = {"websocket.write.timeout.ms": 3000, "websocket.queue.max.bytes": 1048576}
    with Sluice(settings=settings) as b:
        create_topic(b, "flood", 1)
        produce_values(b, "flood", 1000, size=1024)
        c = WsClient(b.http_port)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.send({"op": "subscribe", "topics": ["flood"], "from": "earliest"})
        before = rss_kib(b.proc.pid)
        peak = before
        # 200 MB while the client reads nothing.
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 20})
        chunk = b"x" * 1024
        for i in range(200 * 1024):
            while True:
                try:
                    p.produce("flood", value=chunk)
                    break
                except BufferError:
                    p.poll(0.05)
            if i % 5000 == 0:
                p.poll(0)
                peak = max(peak, rss_kib(b.proc.pid))
        assert p.flush(120) == 0
        peak = max(peak, rss_kib(b.proc.pid))
        assert peak - before < 128 * 1024, (before, peak)
        # The client that reads nothing is dropped once a frame has waited for it longer than
        # the write timeout (counted on /metrics), long before its idle timeout (60 s): what
        # the kernel still holds for it is finite, and then the stream ends.
        wait_for(lambda: metric(b, "sluice_websocket_dropped_total", reason="write_timeout") == 1,
                 30, "the slow reader to be dropped for its write timeout")
        c.sock.settimeout(30)
        while c.sock.recv(1 << 20):
            pass
        c.close()
        assert metric(b, "sluice_websocket_dropped_total", reason="idle_timeout") == 0
        assert healthy(b)


def test_a_silent_client_is_pinged_then_dropped_and_one_that_answers_stays():
    with Sluice(settings={"websocket.idle.timeout.ms": 1000}) as b:
        create_topic(b, "idle", 1)
        silent = WsClient(b.http_port, timeout=20)
        talker = WsClient(b.http_port, timeout=20)
        # The talker answers four pings (one each half idle timeout): two idle timeouts pass.
        pings = 0
        while pings < 4:
            opcode, payload = talker.read_frame()
            assert opcode == OP_PING
            talker.send_raw(talker.frame(OP_PONG, payload))
            pings += 1
        # The silent client was pinged, never answered, and was dropped.
        frames = []
        try:
            while True:
                opcode, _ = silent.read_frame()
                frames.append(opcode)
                if opcode == OP_CLOSE:
                    break
        except Closed:
            pass  # the connection ended
        assert frames[:1] == [OP_PING], frames
        wait_for(lambda: metric(b, "sluice_websocket_dropped_total", reason="idle_timeout") == 1,
                 10, "the silent client to be counted")
        # The talker is still served.
        talker.send({"op": "produce", "id": "p", "topic": "idle", "value": "still here"})
        ack, _ = talker.recv_op("ack")
        assert ack["offset"] == 0
        talker.close()
        silent.close()
        assert metric(b, "sluice_websocket_dropped_total", reason="idle_timeout") == 1
        assert metric(b, "sluice_websocket_dropped_total", reason="write_timeout") == 0


def test_bad_input_and_the_server_still_serves():
    with Sluice(settings={"websocket.max.message.bytes": 4096}) as b:
        create_topic(b, "ok", 1)
        with WsClient(b.http_port) as c:
            c.send("{not json")
            e = c.recv()
            assert e["op"] == "error" and e["code"] == 400 and "Malformed JSON" in e["message"]
            c.send([1, 2])
            assert c.recv()["code"] == 400
            c.send({"op": "fly"})
            assert c.recv() == {"op": "error", "code": 400, "message": "unknown op 'fly'"}
            c.send({"id": 5})
            assert c.recv()["id"] == 5
            c.send_binary(b"\x00\x01")
            e = c.recv()
            assert e["op"] == "error" and "binary" in e["message"]
            c.send({"op": "subscribe", "id": "m", "topics": ["missing"]})
            assert c.recv() == {"op": "error", "id": "m", "code": 40401,
                                "message": "Topic not found. (missing)"}
            c.send({"op": "subscribe", "topics": []})
            assert c.recv()["code"] == 400
            c.send({"op": "subscribe", "topics": ["ok"], "from": "yesterday"})
            assert c.recv()["code"] == 400
            c.send({"op": "subscribe", "topics": ["ok"], "format": "xml"})
            assert c.recv()["code"] == 400
            c.send({"op": "subscribe", "id": "e", "topics": ["ok"], "encoding": "binary"})
            assert c.recv() == {"op": "error", "id": "e", "code": 400, "message":
                                'encoding must be "records" (the default) or "compact"'}
            c.send({"op": "subscribe", "id": "e", "topics": ["ok"], "encoding": 1})
            assert c.recv()["code"] == 400
            # A missing topic is created (auto.create.topics.enable): test_http_autocreate.py.
            c.send({"op": "produce", "id": 2, "topic": "ok", "value": "v", "partition": 3})
            assert c.recv()["code"] == 40402
            c.send({"op": "produce", "id": 3, "topic": "ok", "value": "%%", "format": "base64"})
            assert c.recv()["code"] == 42207
            c.send({"op": "credit", "records": 0})
            assert c.recv()["code"] == 400
            c.send({"op": "unsubscribe", "id": "none"})
            assert c.recv()["code"] == 400
            c.send({"op": "subscribe", "id": "s", "topics": ["ok"]})
            assert c.recv()["op"] == "subscribed"
            c.send({"op": "subscribe", "id": "s", "topics": ["ok"]})
            assert c.recv()["code"] == 40901
            c.send({"op": "unsubscribe", "id": "s"})
            assert c.recv() == {"op": "unsubscribed", "id": "s"}
            # The connection still works.
            c.send({"op": "produce", "id": 4, "topic": "ok", "value": "v"})
            assert c.recv()["op"] == "ack"
        # An oversized message closes with 1009 (message too big).
        with WsClient(b.http_port) as c:
            c.send({"op": "produce", "topic": "ok", "value": "x" * 5000})
            with pytest.raises(Closed) as closed:
                c.recv()
            assert closed.value.code == 1009
        # An unmasked client frame is a protocol error: closed with 1002.
        with WsClient(b.http_port) as c:
            c.send_raw(c.frame(OP_TEXT, b'{"op":"credit","records":1}', mask=False))
            with pytest.raises(Closed) as closed:
                c.recv()
            assert closed.value.code in (1002, None)
        # A frame with a reserved opcode, then garbage after the upgrade.
        with WsClient(b.http_port) as c:
            c.send_raw(bytes([0x83, 0x80]) + b"\x00\x00\x00\x00")
            with pytest.raises(Closed):
                c.recv()
        with WsClient(b.http_port) as c:
            c.send_raw(os.urandom(3000))
            with pytest.raises((Closed, ConnectionError, socket.timeout, OSError)):
                while True:
                    c.recv()
        # A fragmented message is reassembled.
        with WsClient(b.http_port) as c:
            msg = json.dumps({"op": "produce", "id": "frag", "topic": "ok", "value": "f"}).encode()
            c.send_raw(c.frame(OP_TEXT, msg[:10], fin=False) + c.frame(0, msg[10:]))
            assert c.recv()["id"] == "frag"
        # A text message split inside a character whose last frame is empty is not UTF-8:
        # closed with 1007 (invalid payload data).
        with WsClient(b.http_port) as c:
            c.send_raw(c.frame(OP_TEXT, b'{"op":"credit","records":1,"x":"\xcc', fin=False)
                       + c.frame(0, b""))
            with pytest.raises(Closed) as closed:
                c.recv()
            assert closed.value.code == 1007
        # Plain HTTP on /ws is refused.
        r = Rest(b).get("/ws")
        assert r.status_code == 426
        assert healthy(b)
        assert Rest(b).get("/healthz").status_code == 200
