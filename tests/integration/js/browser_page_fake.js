// The example page (gateway/http/ui/index.html with sluice.js) in headless Chromium against
// the fake /ws server: what the page sends for each thing a user does, and what it shows for
// each answer. Needs no sluice; the same page against the real binary is test_browser.py's.
//
// usage: node browser_page_fake.js ARTIFACTS_DIR    (prints "ok" at the end)
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { launch } = require("./chromium");
const { within, FakeServer } = require("./fake_ws_server");

const uiDir = path.join(__dirname, "..", "..", "..", "gateway", "http", "ui");
const artifacts = process.argv[2] || path.join(__dirname, "artifacts");
const timeout = 20000; // every page wait

function rec(offset, key, value) {
    return { topic: "t", partition: 0, offset, timestamp: 1700000000000 + offset, key, value,
             headers: {} };
}

/** The table rows as [partition, offset, key, value]. */
function rows(page) {
    return page.$$eval("#records tr", (trs) => trs.map((tr) => [
        Number(tr.dataset.partition), Number(tr.dataset.offset),
        tr.querySelector(".key").textContent, tr.querySelector(".value").textContent]));
}

async function main() {
    fs.mkdirSync(artifacts, { recursive: true });
    const server = await FakeServer.start({ staticDir: uiDir });
    const browser = await launch();
    const page = browser.page;
    try {
        // A subscription in the URL subscribes at once, with its group.
        await page.goto(server.origin + "/ui/?topic=t&group=g&from=earliest", { timeout });
        const conn = await server.accept();
        const sub = await conn.next();
        assert.deepEqual(sub, { op: "subscribe", id: sub.id, topics: ["t"], group: "g",
                                from: "earliest", format: "string", encoding: "compact" });
        await page.waitForSelector('#status[data-state="open"]', { timeout });

        // Records become rows, in order, keys and values as text (never as HTML). sluice.js
        // asked for compact frames: these are those records in one.
        conn.send({ op: "records", id: sub.id, encoding: "compact",
                    runs: [{ topic: "t", partition: 0, base_offset: 0,
                             base_timestamp: rec(0).timestamp, values: ["first", "<b>not bold</b>"],
                             timestamps: [0, 1], keys: [null, "k1"] }] });
        await page.waitForFunction(() => document.querySelectorAll("#records tr").length === 2,
                                   null, { timeout });
        assert.deepEqual(await rows(page), [[0, 0, "null", "first"],
                                            [0, 1, "k1", "<b>not bold</b>"]]);
        assert.equal(await page.$$eval("#records b", (b) => b.length), 0);
        assert.equal(await page.textContent("#count"), "2");

        // A records frame sluice.js cannot decode is shown as an error; the page goes on.
        conn.send({ op: "records", id: sub.id, encoding: "compact", runs: [{ topic: "t" }] });
        await page.waitForSelector('#subscription[data-error="bad_frame"]', { timeout });
        assert.match(await page.textContent("#subscription"), /error bad_frame: .*decoded/);
        assert.equal(await page.textContent("#count"), "2");

        // Posting a record: the produce frame, then the ack's offset on the page.
        await page.fill("#key", "pk");
        await page.fill("#value", "from the page");
        await page.click("#send");
        const produce = await conn.next();
        assert.deepEqual(produce, { op: "produce", id: produce.id, topic: "t", key: "pk",
                                    value: "from the page" });
        conn.send({ op: "ack", id: produce.id, topic: "t", partition: 0, offset: 2 });
        await page.waitForSelector('#produce-result[data-offset="2"]', { timeout });

        // An error answer is shown with its code.
        await page.fill("#key", "");
        await page.fill("#partition", "9");
        await page.click("#send");
        const bad = await conn.next();
        assert.deepEqual(bad, { op: "produce", id: bad.id, topic: "t", key: null,
                                value: "from the page", partition: 9 });
        conn.send({ op: "error", id: bad.id, code: 40402, message: "partition 9 not found" });
        await page.waitForSelector('#produce-result[data-error="40402"]', { timeout });
        assert.equal(await page.textContent("#produce-result"),
                     "error 40402: partition 9 not found");

        // Commit: the frame, then the committed offsets.
        await page.click("#commit");
        assert.deepEqual(await conn.next(), { op: "commit" });
        conn.send({ op: "committed", offsets: [{ topic: "t", partition: 0, offset: 2 }] });
        await page.waitForSelector('#commit-result[data-offsets="t[0]@2"]', { timeout });
        await page.screenshot({ path: path.join(artifacts, "fake-page.png"), fullPage: true });

        // A drop: the page says it is reconnecting, then subscribes again with its group.
        await conn.drop();
        const conn2 = await server.accept();
        assert.deepEqual(await conn2.next(), sub);
        await page.waitForSelector('#status[data-state="open"]', { timeout });

        // A reload subscribes again from the URL.
        await page.reload({ timeout });
        const conn3 = await server.accept();
        const again = await conn3.next();
        assert.deepEqual(again, { op: "subscribe", id: again.id, topics: ["t"], group: "g",
                                  from: "earliest", format: "string", encoding: "compact" });
        await within(conn2.closed, "the old page's connection to close");

        // The form subscribes too, and writes the subscription into the URL.
        await page.fill("#topic", "other");
        await page.fill("#group", "");
        await page.selectOption("#from", "latest");
        await page.selectOption("#format", "json");
        await page.click("#subscribe");
        assert.deepEqual(await conn3.next(), { op: "unsubscribe" });
        const other = await conn3.next();
        assert.deepEqual(other, { op: "subscribe", id: other.id, topics: ["other"],
                                  from: "latest", format: "json", encoding: "compact" });
        assert.equal(new URL(page.url()).search, "?topic=other&from=latest&format=json");
        // A frame in the default form is decoded too.
        conn3.send({ op: "records", records: [{ topic: "other", partition: 0, offset: 0,
                                                timestamp: 1700000000000, key: null,
                                                value: { n: 1 }, headers: {} }] });
        await page.waitForSelector('#records tr[data-topic="other"]', { timeout });
        assert.equal(await page.textContent('#records tr[data-topic="other"] .value'),
                     '{"n":1}');
        assert.deepEqual(browser.errors, []);
    } finally {
        await browser.close();
        await server.close();
    }
    console.log("ok");
}

main().catch((e) => {
    console.error(e && e.stack || e);
    process.exit(1);
});
