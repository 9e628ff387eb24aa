// Unit tests of sluice.js (gateway/http/ui/sluice.js) against a fake server: a `ws`
// WebSocketServer that plays the server side of the /ws protocol (issue 10) frame by frame, so
// each test states exactly what the client must send and what it must do with each answer.
// Run with `node --test` (tests/integration/test_sluice_js.py). No test sleeps: every wait is
// for a frame, an event or a promise, bounded by `within`.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");
const fs = require("node:fs");
const vm = require("node:vm");
const WebSocket = require("ws");
const { within, settled, failure, FakeServer } = require("./fake_ws_server");

const uiDir = path.join(__dirname, "..", "..", "..", "gateway", "http", "ui");
const sluice = require(path.join(uiDir, "sluice.js"));

/** Resolves with the next `type` event of `client`. */
function nextEvent(client, type) {
    return within(new Promise((resolve) => {
        const off = client.on(type, (v) => {
            off();
            resolve(v);
        });
    }), "a " + type + " event");
}

/** Collects `records` events; `until(n)` waits for n records in all. */
function recorder(client) {
    const got = [];
    const waiters = [];
    client.on("records", (records) => {
        got.push(...records);
        for (const w of waiters.splice(0)) {
            w();
        }
    });
    const until = async (n) => {
        while (got.length < n) {
            await within(new Promise((resolve) => waiters.push(resolve)), n + " records");
        }
        return got;
    };
    return { got, until };
}

function rec(topic, partition, offset, value) {
    return { topic, partition, offset, timestamp: 1700000000000 + offset, key: null,
             value: value === undefined ? "v" + offset : value, headers: {} };
}

const fast = { initialMs: 1, maxMs: 1, factor: 2, jitter: 0 };

/** A server and a client connected to it: the client's first connection, accepted. */
async function connected(options) {
    const server = await FakeServer.start();
    const client = sluice.connect(server.url,
                                  Object.assign({ WebSocket, backoff: fast }, options || {}));
    const conn = await server.accept();
    if (client.state !== "open") {
        await nextEvent(client, "open");
    }
    return { server, client, conn };
}

async function done(server, client) {
    client.close();
    await server.close();
}

test("subscribe sends the protocol's subscribe frame", async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["orders"], from: "earliest" });
    const f = await conn.next();
    assert.equal(typeof f.id, "string");
    assert.deepEqual(f, { op: "subscribe", id: f.id, topics: ["orders"], from: "earliest",
                          format: "string", encoding: "compact" });
    client.unsubscribe();
    assert.deepEqual(await conn.next(), { op: "unsubscribe" });
    client.subscribe({ topics: "a", group: "g1", from: { offset: 7 }, format: "json" });
    const g = await conn.next();
    assert.deepEqual(g, { op: "subscribe", id: g.id, topics: ["a"], group: "g1",
                          from: { offset: 7 }, format: "json", encoding: "compact" });
    assert.notEqual(g.id, f.id);
    client.subscribe({ topics: ["b"], from: { timestamp: 1700000000000 }, format: "base64" });
    assert.deepEqual(await conn.next(), { op: "unsubscribe" }); // replaces the subscription
    const h = await conn.next();
    assert.deepEqual(h, { op: "subscribe", id: h.id, topics: ["b"],
                          from: { timestamp: 1700000000000 }, format: "base64",
                          encoding: "compact" });
    await done(server, client);
});

test("subscribe before the connection opens is sent when it opens", async () => {
    const server = await FakeServer.start();
    const client = sluice.connect(server.url, { WebSocket, backoff: fast });
    client.subscribe({ topics: ["t"] });
    const conn = await server.accept();
    const f = await conn.next();
    assert.deepEqual(f, { op: "subscribe", id: f.id, topics: ["t"], from: "latest",
                          format: "string", encoding: "compact" });
    await done(server, client);
});

test("connect refuses a URL that is not ws: or wss:", () => {
    for (const url of ["http://127.0.0.1/ws", "127.0.0.1:8082/ws", "ws://", "", undefined]) {
        assert.throws(() => new sluice.Client(url, { WebSocket }), TypeError, String(url));
    }
});

test("subscribe rejects options the protocol cannot carry", async () => {
    const { server, client } = await connected();
    assert.throws(() => client.subscribe({ topics: [] }), TypeError);
    assert.throws(() => client.subscribe({ topics: [""] }), TypeError);
    assert.throws(() => client.subscribe({ topics: ["t"], from: "beginning" }), TypeError);
    assert.throws(() => client.subscribe({ topics: ["t"], from: { offset: -1 } }), TypeError);
    assert.throws(() => client.subscribe({ topics: ["t"], format: "avro" }), TypeError);
    assert.throws(() => client.subscribe({ topics: ["t"], group: "" }), TypeError);
    assert.throws(() => client.subscribe({ topics: ["t"], credit: 1.5 }), TypeError);
    await done(server, client);
});

test("records reach the handler in order and positions track the next offset", async () => {
    const { server, client, conn } = await connected();
    const seen = [];
    client.subscribe({ topics: ["t"], from: "earliest",
                       onRecords: (records, c) => {
                           assert.equal(c, client);
                           seen.push(...records);
                       } });
    const events = recorder(client);
    await conn.next();
    conn.send({ op: "records", records: [rec("t", 0, 0), rec("t", 1, 0), rec("t", 0, 1)] });
    conn.send({ op: "records", records: [rec("t", 0, 2)] });
    await events.until(4);
    assert.deepEqual(seen.map((r) => [r.partition, r.offset]), [[0, 0], [1, 0], [0, 1], [0, 2]]);
    assert.deepEqual(events.got, seen);
    assert.deepEqual(seen[0], rec("t", 0, 0));
    assert.deepEqual(client.positions(), [{ topic: "t", partition: 0, offset: 3 },
                                          { topic: "t", partition: 1, offset: 1 }]);
    await done(server, client);
});

/**
 * The compact frame of `records` (docs/http.md, "Compact records frames"), as the server
 * writes it: one run per stretch of a topic-partition, offsets only when not consecutive,
 * keys and headers only when some record has them.
 */
function compact(records, id) {
    const runs = [];
    let run = null;
    let last = null;
    for (const r of records) {
        if (!run || run.topic !== r.topic || run.partition !== r.partition) {
            run = { topic: r.topic, partition: r.partition, base_offset: r.offset,
                    base_timestamp: r.timestamp, values: [], timestamps: [], offsets: [],
                    keys: [], headers: [] };
            runs.push(run);
            last = r;
        }
        run.values.push(r.value);
        run.timestamps.push(r.timestamp - last.timestamp);
        run.offsets.push(r.offset - last.offset);
        run.keys.push(r.key);
        run.headers.push(r.headers);
        last = r;
    }
    for (const run of runs) {
        if (run.offsets.every((d, i) => d === (i === 0 ? 0 : 1))) {
            delete run.offsets;
        }
        if (run.keys.every((k) => k === null)) {
            delete run.keys;
        }
        if (run.headers.every((h) => Object.keys(h).length === 0)) {
            delete run.headers;
        }
    }
    const frame = { op: "records", encoding: "compact", runs };
    if (id !== undefined) {
        frame.id = id;
    }
    return frame;
}

/** Records of two partitions and two topics: gaps, keys, null values, headers. */
function mixedRecords() {
    const keyed = Object.assign(rec("t", 0, 3, null), { key: "k3",
                                                        headers: { trace: "t-3", n: null } });
    return [rec("t", 0, 0), rec("t", 0, 1), keyed, Object.assign(rec("t", 0, 9), { timestamp: 5 }),
            rec("t", 1, 0, { nested: [1, 2] }), rec("u", 0, 7), rec("t", 0, 10)];
}

test("subscribe asks for compact frames unless told otherwise", async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["t"], encoding: "records" });
    assert.equal((await conn.next()).encoding, "records");
    client.subscribe({ topics: ["t"] });
    assert.deepEqual(await conn.next(), { op: "unsubscribe" });
    assert.equal((await conn.next()).encoding, "compact");
    assert.throws(() => client.subscribe({ topics: ["t"], encoding: "binary" }), TypeError);
    await done(server, client);
});

test("decodeRecords rebuilds the records of a compact frame", () => {
    const records = mixedRecords();
    const frame = compact(records, "1");
    assert.equal(frame.runs.length, 4);
    assert.deepEqual(frame.runs[0].offsets, [0, 1, 2, 6]); // a gap after offset 1
    assert.deepEqual(frame.runs[0].keys, [null, null, "k3", null]);
    assert.equal(frame.runs[1].offsets, undefined);
    const decoded = sluice.decodeRecords(JSON.parse(JSON.stringify(frame)));
    assert.deepEqual(decoded, records);
    assert.deepEqual(Object.keys(decoded[0]), ["topic", "partition", "offset", "timestamp",
                                               "key", "value", "headers"]);
    // The default frame's records come back as they are.
    assert.deepEqual(sluice.decodeRecords({ op: "records", records }), records);
    assert.deepEqual(sluice.decodeRecords({ op: "records", encoding: "records", records }),
                     records);
    assert.deepEqual(sluice.decodeRecords({ op: "records", encoding: "compact", runs: [] }), []);
});

test("decodeRecords refuses frames it cannot decode with a bad_frame error", () => {
    const good = () => compact([rec("t", 0, 0), rec("t", 0, 1)]);
    const cases = [
        ["an unknown encoding", Object.assign(good(), { encoding: "columnar" }), /unknown enc/],
        ["runs not an array", Object.assign(good(), { runs: {} }), /runs/],
        ["no records array", { op: "records" }, /records is not an array/],
        ["a run without a topic", (() => { const f = good(); delete f.runs[0].topic;
                                           return f; })(), /topic/],
        ["values not an array", (() => { const f = good(); f.runs[0].values = "v";
                                         return f; })(), /values/],
        ["a short column", (() => { const f = good(); f.runs[0].timestamps = [0];
                                    return f; })(), /match its 2 values/],
        ["a short keys column", (() => { const f = good(); f.runs[0].keys = ["k"];
                                         return f; })(), /match its 2 values/],
        ["an offset that is not a number", (() => { const f = good();
                                                    f.runs[0].offsets = [0, "1"];
                                                    return f; })(), /not integers/],
        ["a run that is null", Object.assign(good(), { runs: [null] }), /not an object/],
    ];
    for (const [what, frame, message] of cases) {
        assert.throws(() => sluice.decodeRecords(frame), (e) => {
            assert.ok(e instanceof sluice.SluiceError, what);
            assert.equal(e.code, "bad_frame", what);
            assert.match(e.message, message, what);
            return true;
        }, what);
    }
});

test("compact frames reach the handler as the same records as default frames", async () => {
    const { server, client, conn } = await connected();
    const seen = [];
    client.subscribe({ topics: ["t", "u"], from: "earliest",
                       onRecords: (records) => seen.push(...records) });
    const events = recorder(client);
    const sub = await conn.next();
    const records = mixedRecords();
    conn.send(compact(records.slice(0, 4), sub.id));
    conn.send({ op: "records", id: sub.id, records: records.slice(4, 5) }); // either form
    conn.send(compact(records.slice(5), sub.id));
    await events.until(records.length);
    assert.deepEqual(seen, records);
    assert.deepEqual(events.got, records);
    assert.deepEqual(client.positions(), [{ topic: "t", partition: 0, offset: 11 },
                                          { topic: "t", partition: 1, offset: 1 },
                                          { topic: "u", partition: 0, offset: 8 }]);
    await done(server, client);
});

test("a records frame it cannot decode is an error event and the connection goes on",
     async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["t"], from: "earliest" });
    const events = recorder(client);
    await conn.next();
    const ev = nextEvent(client, "error");
    const bad = compact([rec("t", 0, 0), rec("t", 0, 1)]);
    bad.runs[0].timestamps.pop();
    conn.send(bad);
    const e = await ev;
    assert.equal(e.code, "bad_frame");
    assert.match(e.message, /timestamps/);
    const unknown = nextEvent(client, "error");
    conn.send({ op: "records", encoding: "zstd", data: "..." });
    assert.match((await unknown).message, /unknown encoding "zstd"/);
    conn.send(compact([rec("t", 0, 0)]));
    await events.until(1);
    assert.deepEqual(events.got, [rec("t", 0, 0)]);
    assert.equal(client.state, "open");
    await done(server, client);
});

test("credit counts the records of compact frames", async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["t"], from: "earliest", credit: 5 });
    const events = recorder(client);
    assert.deepEqual(await conn.next(), { op: "credit", records: 5 });
    await conn.next();
    conn.send(compact([rec("t", 0, 0), rec("t", 0, 1), rec("t", 1, 0)]));
    await events.until(3);
    await conn.drop();
    const conn2 = await server.accept();
    assert.deepEqual(await conn2.next(), { op: "credit", records: 2 }); // 5 - 3 left
    await done(server, client);
});

test("produce sends the frame and resolves with the ack of its id, in any order", async () => {
    const { server, client, conn } = await connected();
    const first = client.produce("t", "hello", { key: "k1", headers: { h: "1" } });
    const second = client.produce("t", { n: 2 }, { partition: 3 });
    const f1 = await conn.next();
    const f2 = await conn.next();
    assert.deepEqual(f1, { op: "produce", id: f1.id, topic: "t", key: "k1", value: "hello",
                           headers: { h: "1" } });
    assert.deepEqual(f2, { op: "produce", id: f2.id, topic: "t", key: null, value: { n: 2 },
                           partition: 3 });
    assert.notEqual(f1.id, f2.id);
    conn.send({ op: "ack", id: f2.id, topic: "t", partition: 3, offset: 41 });
    conn.send({ op: "ack", id: f1.id, topic: "t", partition: 0, offset: 7 });
    assert.deepEqual(await within(second, "the second ack"), { topic: "t", partition: 3,
                                                               offset: 41 });
    assert.deepEqual(await within(first, "the first ack"), { topic: "t", partition: 0,
                                                             offset: 7 });
    await done(server, client);
});

test("produce rejects with the error of its id", async () => {
    const { server, client, conn } = await connected();
    const ok = client.produce("t", "a");
    const bad = client.produce("missing", "b");
    const fOk = await conn.next();
    const fBad = await conn.next();
    conn.send({ op: "error", id: fBad.id, code: 40401, message: "topic missing not found" });
    conn.send({ op: "ack", id: fOk.id, topic: "t", partition: 0, offset: 0 });
    await assert.rejects(within(bad, "the error"), (e) => {
        assert.ok(e instanceof sluice.SluiceError);
        assert.equal(e.code, 40401);
        assert.equal(e.message, "topic missing not found");
        assert.equal(e.id, fBad.id);
        return true;
    });
    assert.equal((await within(ok, "the ack")).offset, 0);
    await done(server, client);
});

test("an answer whose id is a number still finds its request", async () => {
    const { server, client, conn } = await connected();
    const p = client.produce("t", "a");
    const f = await conn.next();
    conn.send({ op: "ack", id: Number(f.id), topic: "t", partition: 0, offset: 5 });
    assert.equal((await within(p, "the ack")).offset, 5);
    await done(server, client);
});

test("commit resolves with the committed offsets, in order", async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["t"], group: "g", from: "earliest" });
    await conn.next();
    const c1 = client.commit();
    const c2 = client.commit();
    const events = [];
    client.on("committed", (offsets) => events.push(offsets));
    assert.deepEqual(await conn.next(), { op: "commit" });
    assert.deepEqual(await conn.next(), { op: "commit" });
    const o1 = [{ topic: "t", partition: 0, offset: 3 }];
    const o2 = [{ topic: "t", partition: 0, offset: 5 }, { topic: "t", partition: 1, offset: 1 }];
    conn.send({ op: "committed", offsets: o1 });
    conn.send({ op: "committed", offsets: o2 });
    assert.deepEqual(await within(c1, "the first commit"), o1);
    assert.deepEqual(await within(c2, "the second commit"), o2);
    assert.deepEqual(events, [o1, o2]);
    await done(server, client);
});

test("an error without an id rejects the oldest waiting commit", async () => {
    const { server, client, conn } = await connected();
    const c = client.commit();
    assert.deepEqual(await conn.next(), { op: "commit" });
    conn.send({ op: "error", code: 40903, message: "not a group member" });
    await assert.rejects(within(c, "the commit"), (e) => e.code === 40903 && e.id === null);
    // With no commit waiting, the same error is an "error" event.
    const ev = nextEvent(client, "error");
    conn.send({ op: "error", code: 42206, message: "unknown op" });
    const e = await ev;
    assert.equal(e.code, 42206);
    assert.equal(e.message, "unknown op");
    await done(server, client);
});

test("commit while disconnected rejects at once", async () => {
    const { server, client, conn } = await connected({ backoff: { initialMs: 60000,
                                                                  jitter: 0 } });
    const closed = nextEvent(client, "reconnecting");
    await conn.drop();
    await closed;
    await assert.rejects(client.commit(), (e) => e.code === "not_connected");
    await done(server, client);
});

test("an error for the subscription is an error event naming the subscribe", async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["missing"], from: "earliest" });
    const f = await conn.next();
    const ev = nextEvent(client, "error");
    conn.send({ op: "error", id: f.id, code: 40401, message: "topic missing not found" });
    const e = await ev;
    assert.equal(e.code, 40401);
    assert.equal(e.op, "subscribe");
    assert.equal(e.id, f.id);
    await done(server, client);
});

test("a frame that is not JSON is reported and the connection goes on", async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["t"], from: "earliest" });
    const events = recorder(client);
    await conn.next();
    const ev = nextEvent(client, "error");
    conn.send("{not json");
    assert.equal((await ev).code, "bad_frame");
    conn.send({ op: "whatever-comes-later", x: 1 }); // an unknown op is ignored
    conn.send({ op: "records", records: [rec("t", 0, 0)] });
    await events.until(1);
    assert.equal(client.state, "open");
    await done(server, client);
});

test("credit: the window goes before the subscribe, grants add up, and a reconnect " +
     "grants again what is left", async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["t"], from: "earliest", credit: 3 });
    const events = recorder(client);
    assert.deepEqual(await conn.next(), { op: "credit", records: 3 });
    const sub = await conn.next();
    assert.equal(sub.op, "subscribe");
    conn.send({ op: "records", records: [rec("t", 0, 0), rec("t", 0, 1)] });
    await events.until(2);
    client.credit(5);
    assert.deepEqual(await conn.next(), { op: "credit", records: 5 });
    conn.send({ op: "records", records: [rec("t", 0, 2), rec("t", 0, 3)] });
    await events.until(4);
    // 3 + 5 granted, 4 received: 4 left, granted again on the new connection.
    await conn.drop();
    const conn2 = await server.accept();
    assert.deepEqual(await conn2.next(), { op: "credit", records: 4 });
    const again = await conn2.next();
    assert.deepEqual(again, { op: "subscribe", id: sub.id, topics: ["t"], from: { offset: 4 },
                              format: "string", encoding: "compact" });
    assert.throws(() => client.credit(0), TypeError);
    await done(server, client);
});

test("credit: with nothing left the subscribe waits for the next grant", async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["t"], from: "earliest", credit: 0 });
    settled(client.produce("t", "marker")); // a frame: shows nothing was sent before it
    assert.equal((await conn.next()).op, "produce");
    client.credit(2);
    assert.deepEqual(await conn.next(), { op: "credit", records: 2 });
    const sub = await conn.next();
    assert.equal(sub.op, "subscribe");
    assert.equal(sub.from, "earliest");
    const events = recorder(client);
    conn.send({ op: "records", records: [rec("t", 0, 0), rec("t", 0, 1)] });
    await events.until(2);
    await conn.drop();
    const conn2 = await server.accept();
    settled(client.produce("t", "marker"));
    assert.equal((await conn2.next()).op, "produce"); // no credit left: no subscribe yet
    client.credit(1);
    assert.deepEqual(await conn2.next(), { op: "credit", records: 1 });
    assert.deepEqual((await conn2.next()).from, { offset: 2 });
    await done(server, client);
});

test("credit without a credit subscription is refused", async () => {
    const { server, client } = await connected();
    assert.throws(() => client.credit(1), TypeError);
    client.subscribe({ topics: ["t"] });
    assert.throws(() => client.credit(1), TypeError);
    await done(server, client);
});

test("unsubscribe: no subscribe again after a reconnect, and late records are dropped",
     async () => {
    const { server, client, conn } = await connected();
    const events = recorder(client);
    client.subscribe({ topics: ["t"], from: "earliest" });
    await conn.next();
    client.unsubscribe();
    assert.deepEqual(await conn.next(), { op: "unsubscribe" });
    conn.send({ op: "records", records: [rec("t", 0, 0)] }); // in flight before it arrived
    const marker = client.produce("t", "m");
    const pf = await conn.next();
    conn.send({ op: "ack", id: pf.id, topic: "t", partition: 0, offset: 1 });
    await within(marker, "the ack");
    assert.equal(events.got.length, 0);
    await conn.drop();
    const conn2 = await server.accept();
    settled(client.produce("t", "after"));
    assert.equal((await conn2.next()).op, "produce");
    await done(server, client);
});

test("reconnect without a group subscribes after the last delivered offset and drops " +
     "what it already delivered", async () => {
    const { server, client, conn } = await connected();
    const events = recorder(client);
    client.subscribe({ topics: ["t"], from: "earliest" });
    const sub = await conn.next();
    conn.send({ op: "records", records: [rec("t", 0, 0), rec("t", 0, 1), rec("t", 0, 2),
                                         rec("t", 1, 0), rec("t", 1, 1)] });
    await events.until(5);
    const reopened = nextEvent(client, "open");
    await conn.drop();
    const conn2 = await server.accept();
    assert.deepEqual(await reopened, { resumed: true });
    // The lowest next offset over the partitions delivered: partition 1's 2.
    assert.deepEqual(await conn2.next(), { op: "subscribe", id: sub.id, topics: ["t"],
                                           from: { offset: 2 }, format: "string",
                                           encoding: "compact" });
    conn2.send({ op: "records", records: [rec("t", 0, 2), rec("t", 1, 2), rec("t", 0, 3)] });
    await events.until(7);
    assert.deepEqual(events.got.map((r) => [r.partition, r.offset]),
                     [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [0, 3]]);
    assert.deepEqual(client.positions(), [{ topic: "t", partition: 0, offset: 4 },
                                          { topic: "t", partition: 1, offset: 3 }]);
    await done(server, client);
});

test("reconnect without a group before any record subscribes from the original from",
     async () => {
    const { server, client, conn } = await connected();
    client.subscribe({ topics: ["t"], from: "latest" });
    const sub = await conn.next();
    await conn.drop();
    const conn2 = await server.accept();
    assert.deepEqual(await conn2.next(), sub);
    await done(server, client);
});

test("reconnect with a group subscribes as before and passes redelivered records through",
     async () => {
    const { server, client, conn } = await connected();
    const events = recorder(client);
    client.subscribe({ topics: ["t"], group: "g", from: "earliest" });
    const sub = await conn.next();
    conn.send({ op: "records", records: [rec("t", 0, 0), rec("t", 0, 1), rec("t", 0, 2)] });
    await events.until(3);
    await conn.drop();
    const conn2 = await server.accept();
    // The group resumes where it committed: the server decides, the client asks as before.
    assert.deepEqual(await conn2.next(), sub);
    conn2.send({ op: "records", records: [rec("t", 0, 1), rec("t", 0, 2), rec("t", 0, 3)] });
    await events.until(6);
    assert.deepEqual(events.got.map((r) => r.offset), [0, 1, 2, 1, 2, 3]);
    await done(server, client);
});

test("produce while disconnected is sent after the reconnect; one sent before the drop " +
     "rejects as disconnected", async () => {
    const { server, client, conn } = await connected({ backoff: { initialMs: 5, maxMs: 5,
                                                                  jitter: 0 } });
    client.subscribe({ topics: ["t"], group: "g", from: "earliest" });
    const sub = await conn.next();
    const lost = settled(client.produce("t", "in flight"));
    await conn.next();
    const commit = settled(client.commit());
    await conn.next();
    const waiting = nextEvent(client, "reconnecting");
    await conn.drop();
    await waiting;
    assert.equal((await failure(lost, "the lost produce")).code, "disconnected");
    assert.equal((await failure(commit, "the lost commit")).code, "disconnected");
    assert.equal(client.state, "waiting");
    const queued = client.produce("t", "queued", { key: "k" });
    const conn2 = await server.accept();
    assert.deepEqual(await conn2.next(), sub); // the subscription first, then the queue
    const f = await conn2.next();
    assert.deepEqual(f, { op: "produce", id: f.id, topic: "t", key: "k", value: "queued" });
    conn2.send({ op: "ack", id: f.id, topic: "t", partition: 0, offset: 9 });
    assert.equal((await within(queued, "the ack")).offset, 9);
    await done(server, client);
});

test("produce beyond maxQueued while disconnected rejects as queue_full", async () => {
    const { server, client, conn } = await connected({ maxQueued: 2,
                                                       backoff: { initialMs: 60000,
                                                                  jitter: 0 } });
    const waiting = nextEvent(client, "reconnecting");
    await conn.drop();
    await waiting;
    const a = settled(client.produce("t", "1"));
    const b = settled(client.produce("t", "2"));
    assert.equal((await failure(settled(client.produce("t", "3")), "the third")).code,
                 "queue_full");
    client.close();
    assert.equal((await failure(a, "the first")).code, "closed");
    assert.equal((await failure(b, "the second")).code, "closed");
    await server.close();
});

test("backoff grows by the factor up to the maximum and starts over once connected",
     async () => {
    // A port nothing listens on: take one, then free it.
    const probe = await FakeServer.start();
    const port = probe.port;
    await probe.close();
    const client = sluice.connect("ws://127.0.0.1:" + port + "/ws",
                                  { WebSocket, backoff: { initialMs: 2, maxMs: 16, factor: 2,
                                                          jitter: 0 } });
    const delays = [];
    const six = new Promise((resolve) => {
        const off = client.on("reconnecting", (r) => {
            delays.push([r.attempt, r.delayMs]);
            if (delays.length === 6) {
                off();
                resolve();
            }
        });
    });
    await within(six, "six refused attempts");
    assert.deepEqual(delays, [[1, 2], [2, 4], [3, 8], [4, 16], [5, 16], [6, 16]]);
    const server = await FakeServer.start(port);
    const conn = await server.accept();
    if (client.state !== "open") {
        await nextEvent(client, "open");
    }
    const next = nextEvent(client, "reconnecting");
    await conn.drop();
    assert.deepEqual(await next, { attempt: 1, delayMs: 2 });
    await server.accept();
    await done(server, client);
});

test("backoffDelay: the jitter takes off at most its share", () => {
    const b = { initialMs: 100, maxMs: 1000, factor: 3, jitter: 0.5 };
    assert.equal(sluice.backoffDelay(0, b, () => 0), 100);
    assert.equal(sluice.backoffDelay(1, b, () => 0), 300);
    assert.equal(sluice.backoffDelay(2, b, () => 0), 900);
    assert.equal(sluice.backoffDelay(3, b, () => 0), 1000);
    assert.equal(sluice.backoffDelay(3, b, () => 0.5), 750);
    assert.equal(sluice.backoffDelay(1, b, () => 0.999999), 150);
    assert.equal(sluice.backoffDelay(0, undefined, () => 0), 250); // the defaults
});

test("close stops reconnecting and rejects what is pending", async () => {
    const { server, client, conn } = await connected();
    const p = settled(client.produce("t", "x"));
    await conn.next();
    const states = [];
    client.on("state", (s) => states.push(s));
    const closeEvent = nextEvent(client, "close");
    client.close();
    assert.deepEqual(await closeEvent, { code: 1000, reason: "closed by the client" });
    assert.equal((await failure(p, "the pending produce")).code, "closed");
    await within(conn.closed, "the close to reach the server");
    assert.equal(client.state, "closed");
    assert.deepEqual(states, ["closed"]);
    await assert.rejects(client.produce("t", "y"), (e) => e.code === "closed");
    // Nothing reconnects: a produce from another client is the next connection seen.
    const other = sluice.connect(server.url, { WebSocket });
    const conn2 = await server.accept();
    const unanswered = settled(other.produce("t", "other"));
    assert.equal((await conn2.next()).value, "other");
    other.close();
    assert.equal((await failure(unanswered, "the unanswered produce")).code, "closed");
    await server.close();
});

test("without reconnect a drop closes the client", async () => {
    const { server, client, conn } = await connected({ reconnect: false });
    const p = settled(client.produce("t", "x"));
    await conn.next();
    const closed = nextEvent(client, "state");
    await conn.drop();
    assert.equal(await closed, "closed");
    assert.equal((await failure(p, "the pending produce")).code, "disconnected");
    await server.close();
});

test("eventsUrl builds the v2 and v3 SSE paths with from and group", () => {
    assert.equal(sluice.eventsUrl("orders"), "/topics/orders/events");
    assert.equal(sluice.eventsUrl("a b/c", { from: "earliest", group: "g 1" }),
                 "/topics/a%20b%2Fc/events?from=earliest&group=g%201");
    assert.equal(sluice.eventsUrl("t", { baseUrl: "http://h:8082/", cluster: "sluice",
                                         from: 5 }),
                 "http://h:8082/v3/clusters/sluice/topics/t/events?from=5");
});

test("parseEventId splits partition:offset pairs", () => {
    assert.deepEqual(sluice.parseEventId("0:41"), [{ partition: 0, offset: 41 }]);
    assert.deepEqual(sluice.parseEventId("0:41,1:17"), [{ partition: 0, offset: 41 },
                                                        { partition: 1, offset: 17 }]);
    assert.deepEqual(sluice.parseEventId(""), []);
    assert.deepEqual(sluice.parseEventId("0:x"), []);
    assert.deepEqual(sluice.parseEventId(undefined), []);
});

test("events() opens an EventSource and hands each record with its event id", () => {
    const made = [];
    class FakeEventSource {
        constructor(url) {
            this.url = url;
            this.readyState = 0;
            made.push(this);
        }
        close() {
            this.readyState = 2;
        }
    }
    const got = [];
    const errors = [];
    let opened = 0;
    const s = sluice.events("t", { from: "earliest", EventSource: FakeEventSource,
                                   onRecord: (r, id) => got.push([r, id]),
                                   onError: (info) => errors.push(info),
                                   onOpen: () => opened++ });
    assert.equal(made.length, 1);
    assert.equal(s.url, "/topics/t/events?from=earliest");
    assert.equal(made[0].url, s.url);
    const es = made[0];
    es.readyState = 1;
    es.onopen();
    es.onmessage({ data: JSON.stringify(rec("t", 0, 4)), lastEventId: "0:4" });
    es.onmessage({ data: "plain text", lastEventId: "0:5" });
    es.readyState = 0;
    es.onerror({});
    assert.equal(opened, 1);
    assert.deepEqual(got, [[rec("t", 0, 4), "0:4"], [{ value: "plain text" }, "0:5"]]);
    assert.deepEqual(errors, [{ readyState: 0 }]);
    assert.equal(s.lastEventId(), "0:5");
    s.close();
    assert.equal(es.readyState, 2);
});

test("sluice.js runs as a plain script and defines the global sluice", () => {
    const source = fs.readFileSync(path.join(uiDir, "sluice.js"), "utf8");
    const context = vm.createContext({});
    vm.runInContext(source, context, { filename: "sluice.js" });
    const g = vm.runInContext("globalThis.sluice", context);
    assert.equal(typeof g.connect, "function");
    assert.equal(g.version, sluice.version);
    assert.throws(() => vm.runInContext("sluice.connect()", context),
                  /no page location|no WebSocket/);
});

test("sluice.mjs is the same API as an ES module", async () => {
    const mod = await import(path.join(uiDir, "sluice.mjs"));
    for (const name of Object.keys(sluice)) {
        assert.equal(mod[name], sluice[name], name);
    }
    assert.equal(mod.default, sluice);
});

test("defaultWebSocketUrl follows the page's scheme and host", () => {
    const saved = globalThis.location;
    try {
        globalThis.location = { protocol: "https:", host: "example.test:8443" };
        assert.equal(sluice.defaultWebSocketUrl(), "wss://example.test:8443/ws");
        globalThis.location = { protocol: "http:", host: "127.0.0.1:8082" };
        assert.equal(sluice.defaultWebSocketUrl(), "ws://127.0.0.1:8082/ws");
    } finally {
        globalThis.location = saved;
    }
});
