// A fake of sluice's /ws endpoint for the sluice.js and example-page tests: a `ws` server that
// records every frame a client sends and sends whatever the test scripts, so a test plays the
// server side of the protocol (issue 10) frame by frame. With `staticDir` it also serves that
// folder at /ui/ on the same port, as sluice does, so a page can be loaded from it.
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const http = require("node:http");
const path = require("node:path");
const { once } = require("node:events");
const WebSocket = require("ws");

const waitMs = 10000; // the bound on every wait; a pass never comes near it

/** Resolves as `promise` does, or rejects naming `what` after `ms` (default waitMs). */
function within(promise, what, ms) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("timed out waiting for " + what)),
                           ms || waitMs);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The outcome of `promise` as a value, {value} or {error}: a handler attached at once, so a
 * rejection the test looks at later is never reported as unhandled.
 */
function settled(promise) {
    return promise.then((value) => ({ value }), (error) => ({ error }));
}

/** The error a settled() promise rejected with; fails the test when it resolved. */
async function failure(promise, what) {
    const out = await within(promise, what);
    assert.ok(out.error, what + " resolved with " + JSON.stringify(out.value));
    return out.error;
}

/** A queue whose next() waits for the next pushed value. */
class Queue {
    constructor() {
        this.items = [];
        this.waiters = [];
    }
    push(v) {
        const w = this.waiters.shift();
        if (w) {
            w(v);
        } else {
            this.items.push(v);
        }
    }
    next(what) {
        if (this.items.length > 0) {
            return Promise.resolve(this.items.shift());
        }
        return within(new Promise((resolve) => this.waiters.push(resolve)), what);
    }
    get size() {
        return this.items.length;
    }
}

/** One client connection as the fake server sees it. */
class FakeConnection {
    constructor(ws) {
        this.ws = ws;
        this.frames = new Queue();
        this.closed = once(ws, "close");
        ws.on("message", (data, isBinary) => {
            this.frames.push(isBinary ? { binary: data } : JSON.parse(String(data)));
        });
    }
    /** The next frame the client sent, parsed. */
    next() {
        return this.frames.next("a frame from the client");
    }
    send(obj) {
        this.ws.send(typeof obj === "string" ? obj : JSON.stringify(obj));
    }
    /** Drops the connection without a close handshake, as a dying server does. */
    drop() {
        this.ws.terminate();
        return this.closed;
    }
}

const contentTypes = { ".html": "text/html; charset=utf-8",
                       ".js": "text/javascript; charset=utf-8",
                       ".mjs": "text/javascript; charset=utf-8",
                       ".css": "text/css; charset=utf-8",
                       ".svg": "image/svg+xml" };

function serveStatic(dir, req, res) {
    const url = new URL(req.url, "http://x");
    const name = url.pathname === "/ui/" ? "index.html" : url.pathname.slice("/ui/".length);
    const files = url.pathname.startsWith("/ui/") ? fs.readdirSync(dir) : [];
    if (!files.includes(name)) {
        res.writeHead(404, { "Content-Type": "application/json" });
        res.end('{"error_code":404,"message":"no such file"}');
        return;
    }
    res.writeHead(200, { "Content-Type": contentTypes[path.extname(name)] ||
                                         "application/octet-stream" });
    res.end(fs.readFileSync(path.join(dir, name)));
}

class FakeServer {
    /**
     * @param {{port?: number, staticDir?: string}} [options]
     */
    static async start(options) {
        const o = typeof options === "number" ? { port: options } : (options || {});
        const s = new FakeServer();
        s.connections = new Queue();
        s.http = http.createServer((req, res) => {
            if (o.staticDir) {
                serveStatic(o.staticDir, req, res);
            } else {
                res.writeHead(404);
                res.end();
            }
        });
        s.wss = new WebSocket.WebSocketServer({ server: s.http, path: "/ws" });
        s.wss.on("connection", (ws) => s.connections.push(new FakeConnection(ws)));
        s.http.listen(o.port || 0, "127.0.0.1");
        await within(once(s.http, "listening"), "the fake server to listen");
        s.port = s.http.address().port;
        s.origin = "http://127.0.0.1:" + s.port;
        s.url = "ws://127.0.0.1:" + s.port + "/ws";
        return s;
    }
    /** The next connection a client opened. */
    accept() {
        return this.connections.next("a client connection");
    }
    async close() {
        for (const ws of this.wss.clients) {
            ws.terminate();
        }
        await new Promise((resolve) => this.wss.close(resolve));
        this.http.closeAllConnections();
        await new Promise((resolve) => this.http.close(resolve));
    }
}

module.exports = { waitMs, within, settled, failure, Queue, FakeConnection, FakeServer };
