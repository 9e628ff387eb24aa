/*
 * sluice.js: a small, dependency-free client for sluice's browser fronts.
 *
 * - WebSocket at /ws (JSON text frames): subscribe, produce with acks, commit, unsubscribe,
 *   explicit credit, reconnect with exponential backoff, and resume after a reconnect. Records
 *   arrive in compact frames by default (about half the bytes, decoded several times faster);
 *   decodeRecords() turns a records frame of either encoding into record objects.
 * - Server-Sent Events at /topics/{t}/events (or /v3/clusters/{id}/topics/{t}/events): a thin
 *   helper over EventSource, whose own reconnect sends Last-Event-ID.
 *
 * Loading: a plain script (<script src="/ui/sluice.js"> defines `sluice` on the global object),
 * an ES module (import { connect } from "/ui/sluice.mjs"; or import "/ui/sluice.js" for its
 * global), or CommonJS in Node.js (require(".../sluice.js"), passing a WebSocket class such as
 * the `ws` package's in the options). No build step. Served by sluice at /ui/sluice.js.
 *
 * The wire protocol is issue 10's; docs/browser.md describes how this client uses it.
 */
(function () {
    "use strict";

    const version = "0.1.0";

    /** Default reconnect backoff: delays in milliseconds. */
    const defaultBackoff = Object.freeze({ initialMs: 250, maxMs: 10000, factor: 2, jitter: 0.5 });

    /**
     * An error the server answered (`{"op":"error"}`) or one the client raised for a request
     * it could not finish ("disconnected", "closed", "queue_full", "not_connected").
     */
    class SluiceError extends Error {
        /**
         * @param {string|number} code the server's error code, or the client's reason
         * @param {string} message
         * @param {string|number|null} [id] the request id the error answers, if any
         */
        constructor(code, message, id) {
            super(message);
            this.name = "SluiceError";
            /** @type {string|number} */
            this.code = code;
            /** @type {string|number|null} */
            this.id = id === undefined ? null : id;
        }
    }

    /**
     * The delay before reconnect attempt `attempt` (0 for the first retry): `initialMs` times
     * `factor` to the `attempt`, at most `maxMs`, then reduced by up to `jitter` of itself
     * (`random()` in [0, 1) picks how much), so that many clients dropped at once spread out.
     * @param {number} attempt consecutive failed attempts so far
     * @param {{initialMs?: number, maxMs?: number, factor?: number, jitter?: number}} [backoff]
     * @param {() => number} [random] defaults to Math.random
     * @returns {number} milliseconds
     */
    function backoffDelay(attempt, backoff, random) {
        const b = Object.assign({}, defaultBackoff, backoff || {});
        const r = (random || Math.random)();
        const full = Math.min(b.maxMs, b.initialMs * Math.pow(b.factor, attempt));
        return Math.round(full * (1 - b.jitter * r));
    }

    function validateFrom(from) {
        if (from === "earliest" || from === "latest") {
            return from;
        }
        if (from && typeof from === "object") {
            if (Number.isInteger(from.offset) && from.offset >= 0) {
                return { offset: from.offset };
            }
            if (Number.isInteger(from.timestamp)) {
                return { timestamp: from.timestamp };
            }
        }
        throw new TypeError(
            'from must be "earliest", "latest", {offset: n} or {timestamp: ms}, not ' +
                JSON.stringify(from));
    }

    function badFrame(why) {
        return new SluiceError("bad_frame", "the server sent a records frame that cannot be " +
                                            "decoded: " + why);
    }

    function isColumn(v, n) {
        return v === undefined || (Array.isArray(v) && v.length === n);
    }

    /**
     * The records of a compact frame (docs/http.md, "Compact records frames"): each run's
     * columns back into {topic, partition, offset, timestamp, key, value, headers} objects.
     */
    function decodeCompact(runs) {
        if (!Array.isArray(runs)) {
            throw badFrame("runs is not an array");
        }
        const out = [];
        for (const run of runs) {
            if (!run || typeof run !== "object") {
                throw badFrame("a run is not an object");
            }
            const topic = run.topic;
            const partition = run.partition;
            const values = run.values;
            const timestamps = run.timestamps;
            const offsets = run.offsets;
            const keys = run.keys;
            const headers = run.headers;
            if (typeof topic !== "string" || !Number.isInteger(partition) ||
                !Number.isInteger(run.base_offset) || !Number.isInteger(run.base_timestamp)) {
                throw badFrame("a run lacks its topic, partition, base_offset or " +
                               "base_timestamp");
            }
            if (!Array.isArray(values)) {
                throw badFrame("a run's values is not an array");
            }
            const n = values.length;
            if (!Array.isArray(timestamps) || timestamps.length !== n || !isColumn(offsets, n) ||
                !isColumn(keys, n) || !isColumn(headers, n)) {
                throw badFrame("a run's timestamps, offsets, keys or headers do not match its " +
                               n + " values");
            }
            let offset = run.base_offset;
            let timestamp = run.base_timestamp;
            for (let i = 0; i < n; i++) {
                if (offsets !== undefined) {
                    offset += offsets[i];
                } else if (i > 0) {
                    offset += 1;
                }
                timestamp += timestamps[i];
                out.push({
                    topic: topic,
                    partition: partition,
                    offset: offset,
                    timestamp: timestamp,
                    key: keys === undefined ? null : keys[i],
                    value: values[i],
                    headers: headers === undefined ? {} : headers[i],
                });
            }
            if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(timestamp)) {
                throw badFrame("a run's offsets or timestamps are not integers");
            }
        }
        return out;
    }

    /**
     * The records of a records frame ({"op":"records"}), by the frame's own `encoding`: the
     * default frame's records array as it is, or a compact frame's runs decoded into the same
     * record objects {topic, partition, offset, timestamp, key, value, headers}.
     * @param {object} msg the parsed frame
     * @returns {object[]} the records in delivery order
     * @throws {SluiceError} code "bad_frame": an unknown encoding or a malformed frame
     */
    function decodeRecords(msg) {
        if (!msg || typeof msg !== "object") {
            throw badFrame("not an object");
        }
        const encoding = msg.encoding === undefined ? "records" : msg.encoding;
        if (encoding === "compact") {
            return decodeCompact(msg.runs);
        }
        if (encoding === "records") {
            if (!Array.isArray(msg.records)) {
                throw badFrame("records is not an array");
            }
            return msg.records;
        }
        throw badFrame("unknown encoding " + JSON.stringify(encoding));
    }

    function positionKey(topic, partition) {
        return topic + "\u0000" + partition;
    }

    /**
     * One WebSocket connection to sluice, kept open: after a drop it reconnects with backoff
     * and resumes its subscription. At most one subscription at a time (the protocol has one
     * per connection); produce and commit work beside it.
     *
     * Events (see on()): "open" {resumed}, "close" {code, reason}, "reconnecting"
     * {attempt, delayMs}, "records" (the records array), "committed" (the offsets array),
     * "error" (a SluiceError no promise took; code "bad_frame" for a frame that is not JSON
     * or a records frame decodeRecords() refuses, after which the connection goes on),
     * "state" (the new state), "message" (every frame the server sent, parsed).
     */
    class Client {
        /**
         * Creates the client and starts connecting.
         * @param {string} url the WebSocket URL, e.g. "ws://127.0.0.1:8082/ws"
         * @param {object} [options]
         * @param {Function} [options.WebSocket] the WebSocket class (default: the global one)
         * @param {{initialMs?: number, maxMs?: number, factor?: number, jitter?: number}}
         *        [options.backoff] reconnect delays (see backoffDelay)
         * @param {() => number} [options.random] the jitter's source (default Math.random)
         * @param {number} [options.maxQueued] produce requests kept while disconnected
         *        (default 1000); beyond it produce() rejects with "queue_full"
         * @param {boolean} [options.reconnect] reconnect after a drop (default true)
         */
        constructor(url, options) {
            const o = options || {};
            if (!/^wss?:\/\/[^/]/i.test(String(url))) {
                throw new TypeError("the URL must be ws://host/... or wss://host/..., not " +
                                    JSON.stringify(url));
            }
            this.url = url;
            this._WebSocket = o.WebSocket || globalThis.WebSocket;
            if (typeof this._WebSocket !== "function") {
                throw new TypeError("no WebSocket class: pass options.WebSocket");
            }
            this._backoff = Object.assign({}, defaultBackoff, o.backoff || {});
            this._random = o.random || Math.random;
            this._maxQueued = o.maxQueued === undefined ? 1000 : o.maxQueued;
            this._reconnect = o.reconnect !== false;
            this._listeners = new Map();
            this._ws = null;
            this._state = "idle";
            this._timer = null;
            this._attempt = 0;
            this._opened = 0;
            this._nextId = 1;
            this._pending = new Map(); // produce id -> {frame, sent, resolve, reject}
            this._commits = []; // pending commits, answered in order
            this._sub = null; // the subscription, see subscribe()
            this._positions = new Map(); // topic\0partition -> {topic, partition, offset: next}
            this._open();
        }

        /** @returns {"connecting"|"open"|"waiting"|"closed"} the connection's state */
        get state() {
            return this._state;
        }

        /**
         * Adds a listener for `type`.
         * @param {string} type "open", "close", "reconnecting", "records", "committed",
         *        "error", "state" or "message"
         * @param {Function} fn called with the event's value
         * @returns {() => void} removes the listener
         */
        on(type, fn) {
            if (!this._listeners.has(type)) {
                this._listeners.set(type, new Set());
            }
            this._listeners.get(type).add(fn);
            return () => this.off(type, fn);
        }

        /**
         * Removes a listener added with on().
         * @param {string} type
         * @param {Function} fn
         */
        off(type, fn) {
            const set = this._listeners.get(type);
            if (set) {
                set.delete(fn);
            }
        }

        /**
         * Subscribes to topics; records arrive at `onRecords` and as "records" events. Replaces
         * the current subscription (sending unsubscribe first). After a reconnect the client
         * subscribes again by itself: with a group the server resumes at the group's committed
         * offsets; without one the client asks for the offset after the last record it
         * delivered and drops any record it already delivered (docs/browser.md).
         * @param {object} options
         * @param {string|string[]} options.topics
         * @param {string} [options.group] a consumer group: the subscription is a member of it
         * @param {"earliest"|"latest"|{offset: number}|{timestamp: number}} [options.from]
         *        where to start where the group has nothing committed (default "latest")
         * @param {"string"|"base64"|"json"} [options.format] how keys and values are
         *        written (default "string")
         * @param {"compact"|"records"} [options.encoding] how the server writes records
         *        frames (default "compact"); onRecords gets the same record objects either way
         * @param {number} [options.credit] opt in to explicit credit: the server sends at most
         *        this many records until credit() grants more. 0 subscribes at the first grant.
         * @param {(records: object[], client: Client) => void} [options.onRecords]
         */
        subscribe(options) {
            const o = options || {};
            const topics = typeof o.topics === "string" ? [o.topics] : o.topics;
            if (!Array.isArray(topics) || topics.length === 0 ||
                !topics.every((t) => typeof t === "string" && t.length > 0)) {
                throw new TypeError("topics must be a topic name or a non-empty array of them");
            }
            const format = o.format === undefined ? "string" : o.format;
            if (!["string", "base64", "json"].includes(format)) {
                throw new TypeError('format must be "string", "base64" or "json"');
            }
            const encoding = o.encoding === undefined ? "compact" : o.encoding;
            if (!["compact", "records"].includes(encoding)) {
                throw new TypeError('encoding must be "compact" or "records"');
            }
            if (o.group !== undefined && (typeof o.group !== "string" || o.group === "")) {
                throw new TypeError("group must be a non-empty string");
            }
            if (o.credit !== undefined && !(Number.isInteger(o.credit) && o.credit >= 0)) {
                throw new TypeError("credit must be a whole number of records");
            }
            if (this._sub) {
                this.unsubscribe();
            }
            this._sub = {
                id: String(this._nextId++),
                topics: topics.slice(),
                group: o.group,
                from: validateFrom(o.from === undefined ? "latest" : o.from),
                format: format,
                encoding: encoding,
                credit: o.credit === undefined ? null : o.credit, // records left to receive
                onRecords: o.onRecords || null,
                sent: false, // subscribed on the current connection
            };
            this._positions.clear();
            if (this._state === "open") {
                this._sendSubscribe();
            }
        }

        /**
         * Ends the subscription: sends {"op":"unsubscribe"} and does not subscribe again after
         * a reconnect.
         */
        unsubscribe() {
            const sub = this._sub;
            this._sub = null;
            this._positions.clear();
            if (sub && sub.sent && this._state === "open") {
                this._send({ op: "unsubscribe" });
            }
        }

        /**
         * Grants the server `records` more records ({"op":"credit","records":n}). Only for a
         * subscription made with a credit window; credit not used before a drop is granted
         * again after the reconnect.
         * @param {number} records a positive whole number
         */
        credit(records) {
            if (!Number.isInteger(records) || records <= 0) {
                throw new TypeError("credit must be a positive whole number of records");
            }
            const sub = this._sub;
            if (!sub || sub.credit === null) {
                throw new TypeError("credit() needs a subscription made with a credit window");
            }
            sub.credit += records;
            if (this._state !== "open") {
                return; // granted with the re-subscribe
            }
            if (sub.sent) {
                this._send({ op: "credit", records: records });
            } else {
                this._sendSubscribe();
            }
        }

        /**
         * Produces one record. Sent at once when connected, else queued until the connection
         * opens again. Keys, values and headers are sent as given.
         * @param {string} topic
         * @param {*} value
         * @param {{key?: *, headers?: *, partition?: number}} [options]
         * @returns {Promise<{topic: string, partition: number, offset: number}>} the ack;
         *          rejects with a SluiceError: the server's error, "disconnected" when the
         *          connection dropped before the answer (the record may or may not be
         *          stored), "closed", or "queue_full"
         */
        produce(topic, value, options) {
            if (typeof topic !== "string" || topic === "") {
                throw new TypeError("topic must be a non-empty string");
            }
            const o = options || {};
            const id = String(this._nextId++);
            const frame = { op: "produce", id: id, topic: topic,
                            key: o.key === undefined ? null : o.key, value: value };
            if (o.headers !== undefined) {
                frame.headers = o.headers;
            }
            if (o.partition !== undefined) {
                frame.partition = o.partition;
            }
            return new Promise((resolve, reject) => {
                if (this._state === "closed") {
                    reject(new SluiceError("closed", "the client is closed", id));
                    return;
                }
                let queued = 0;
                for (const p of this._pending.values()) {
                    queued += p.sent ? 0 : 1;
                }
                if (this._state !== "open" && queued >= this._maxQueued) {
                    reject(new SluiceError("queue_full", "too many produce requests queued", id));
                    return;
                }
                const entry = { frame: frame, sent: false, resolve: resolve, reject: reject };
                this._pending.set(id, entry);
                if (this._state === "open") {
                    entry.sent = true;
                    this._send(frame);
                }
            });
        }

        /**
         * Commits the group's offsets for everything delivered ({"op":"commit"}).
         * @returns {Promise<Array<{topic: string, partition: number, offset: number}>>} the
         *          offsets of the "committed" answer; rejects with a SluiceError when not
         *          connected, when the connection drops first, or when the server answers an
         *          error without an id while this commit is the oldest one waiting
         */
        commit() {
            return new Promise((resolve, reject) => {
                if (this._state !== "open") {
                    reject(new SluiceError("not_connected", "commit needs an open connection"));
                    return;
                }
                this._commits.push({ resolve: resolve, reject: reject });
                this._send({ op: "commit" });
            });
        }

        /**
         * The next offset per partition: one past the last record delivered.
         * @returns {Array<{topic: string, partition: number, offset: number}>}
         */
        positions() {
            return Array.from(this._positions.values(), (p) => Object.assign({}, p));
        }

        /**
         * Closes the connection for good: no reconnect; what is pending rejects with "closed".
         */
        close() {
            if (this._state === "closed") {
                return;
            }
            clearTimeout(this._timer);
            this._timer = null;
            const ws = this._ws;
            this._ws = null;
            this._setState("closed");
            this._failPending("closed", "the client is closed", true);
            if (ws) {
                try {
                    ws.close(1000);
                } catch (e) {
                    // already closing
                }
            }
            this._emit("close", { code: 1000, reason: "closed by the client" });
        }

        // --- internals ------------------------------------------------------------------------

        _emit(type, value) {
            const set = this._listeners.get(type);
            if (!set) {
                return;
            }
            for (const fn of Array.from(set)) {
                try {
                    fn(value);
                } catch (e) {
                    // A listener's bug must not break the connection.
                    setTimeout(() => {
                        throw e;
                    });
                }
            }
        }

        _setState(state) {
            if (this._state !== state) {
                this._state = state;
                this._emit("state", state);
            }
        }

        _open() {
            this._timer = null;
            this._setState("connecting");
            let ws;
            try {
                ws = new this._WebSocket(this.url);
            } catch (e) {
                this._emit("error", new SluiceError("connect_failed", String(e && e.message)));
                this._scheduleReconnect();
                return;
            }
            this._ws = ws;
            ws.onopen = () => {
                if (ws === this._ws) {
                    this._onOpen();
                }
            };
            ws.onmessage = (ev) => {
                if (ws === this._ws) {
                    this._onMessage(ev.data);
                }
            };
            ws.onclose = (ev) => {
                if (ws === this._ws) {
                    this._onClose(ev);
                }
            };
            ws.onerror = () => {}; // a close event follows
        }

        _onOpen() {
            this._attempt = 0;
            this._opened += 1;
            this._setState("open");
            if (this._sub) {
                this._sub.sent = false;
                this._sendSubscribe();
            }
            for (const entry of this._pending.values()) {
                if (!entry.sent) {
                    entry.sent = true;
                    this._send(entry.frame);
                }
            }
            this._emit("open", { resumed: this._opened > 1 });
        }

        /** Subscribes on the open connection, after granting the credit window if any. */
        _sendSubscribe() {
            const sub = this._sub;
            if (sub.credit !== null) {
                if (sub.credit === 0) {
                    return; // subscribes at the next grant
                }
                this._send({ op: "credit", records: sub.credit });
            }
            const frame = { op: "subscribe", id: sub.id, topics: sub.topics };
            if (sub.group !== undefined) {
                frame.group = sub.group;
            }
            frame.from = this._resumeFrom();
            frame.format = sub.format;
            frame.encoding = sub.encoding;
            sub.sent = true;
            this._send(frame);
        }

        /**
         * Where a (re-)subscription starts. With a group the server decides (committed
         * offsets, `from` elsewhere). Without one: the lowest next offset over the partitions
         * delivered so far, or `from` when nothing was delivered.
         */
        _resumeFrom() {
            const sub = this._sub;
            if (sub.group !== undefined || this._positions.size === 0) {
                return sub.from;
            }
            let lowest = Infinity;
            for (const p of this._positions.values()) {
                lowest = Math.min(lowest, p.offset);
            }
            return { offset: lowest };
        }

        _send(frame) {
            this._ws.send(JSON.stringify(frame));
        }

        _onMessage(data) {
            let msg;
            try {
                msg = JSON.parse(typeof data === "string" ? data : String(data));
            } catch (e) {
                this._emit("error", new SluiceError("bad_frame", "the server sent a frame " +
                                                                 "that is not JSON"));
                return;
            }
            if (!msg || typeof msg !== "object") {
                this._emit("error", new SluiceError("bad_frame", "the server sent a frame " +
                                                                 "that is not a JSON object"));
                return;
            }
            this._emit("message", msg);
            switch (msg.op) {
                case "records": this._onRecordsFrame(msg); break;
                case "ack": this._onAck(msg); break;
                case "error": this._onError(msg); break;
                case "committed": this._onCommitted(msg.offsets); break;
                default: break; // an op this client does not know: ignored
            }
        }

        _onRecordsFrame(msg) {
            if (!this._sub) {
                return; // records still in flight when we unsubscribed
            }
            let records;
            try {
                records = decodeRecords(msg);
            } catch (e) {
                this._emit("error", e instanceof SluiceError ? e
                                                             : badFrame(String(e && e.message)));
                return;
            }
            this._onRecords(records);
        }

        _onRecords(records) {
            const sub = this._sub;
            if (sub.credit !== null) {
                sub.credit = Math.max(0, sub.credit - records.length);
            }
            const fresh = [];
            for (const r of records) {
                const key = positionKey(r.topic, r.partition);
                const known = this._positions.get(key);
                if (sub.group === undefined && known && r.offset < known.offset) {
                    continue; // delivered before the reconnect
                }
                this._positions.set(key, { topic: r.topic, partition: r.partition,
                                           offset: r.offset + 1 });
                fresh.push(r);
            }
            if (fresh.length === 0) {
                return;
            }
            if (sub.onRecords) {
                try {
                    sub.onRecords(fresh, this);
                } catch (e) {
                    setTimeout(() => {
                        throw e;
                    });
                }
            }
            this._emit("records", fresh);
        }

        _onAck(msg) {
            const entry = this._pending.get(String(msg.id));
            if (!entry) {
                return;
            }
            this._pending.delete(String(msg.id));
            entry.resolve({ topic: msg.topic, partition: msg.partition, offset: msg.offset });
        }

        _onError(msg) {
            const hasId = msg.id !== undefined && msg.id !== null;
            const err = new SluiceError(msg.code, String(msg.message), hasId ? msg.id : null);
            const entry = hasId ? this._pending.get(String(msg.id)) : undefined;
            if (entry) {
                this._pending.delete(String(msg.id));
                entry.reject(err);
                return;
            }
            if (!hasId && this._commits.length > 0) {
                this._commits.shift().reject(err);
                return;
            }
            if (hasId && this._sub && String(msg.id) === this._sub.id) {
                err.op = "subscribe";
            }
            this._emit("error", err);
        }

        _onCommitted(offsets) {
            const list = Array.isArray(offsets) ? offsets : [];
            const waiting = this._commits.shift();
            if (waiting) {
                waiting.resolve(list);
            }
            this._emit("committed", list);
        }

        _onClose(ev) {
            this._ws = null;
            this._failPending("disconnected", "the connection closed before the answer", false);
            this._emit("close", { code: ev && ev.code, reason: ev && ev.reason });
            this._scheduleReconnect();
        }

        /** Rejects commits and sent produce requests; with `all`, queued ones too. */
        _failPending(code, message, all) {
            for (const c of this._commits.splice(0)) {
                c.reject(new SluiceError(code, message));
            }
            for (const [id, entry] of Array.from(this._pending)) {
                if (entry.sent || all) {
                    this._pending.delete(id);
                    entry.reject(new SluiceError(code, message, id));
                }
            }
        }

        _scheduleReconnect() {
            if (!this._reconnect) {
                this._setState("closed");
                this._failPending("closed", "the connection closed", true);
                return;
            }
            const delayMs = backoffDelay(this._attempt, this._backoff, this._random);
            this._attempt += 1;
            this._setState("waiting");
            this._emit("reconnecting", { attempt: this._attempt, delayMs: delayMs });
            this._timer = setTimeout(() => this._open(), delayMs);
        }
    }

    /**
     * Connects to sluice's WebSocket endpoint.
     * @param {string} [url] the WebSocket URL; in a page, defaults to /ws on the page's host
     *        (wss: for an https: page)
     * @param {object} [options] see the Client constructor
     * @returns {Client}
     */
    function connect(url, options) {
        return new Client(url || defaultWebSocketUrl(), options);
    }

    /**
     * The /ws URL on the host that served the page (ws: or wss: as the page's scheme).
     * @returns {string}
     */
    function defaultWebSocketUrl() {
        const loc = globalThis.location;
        if (!loc) {
            throw new TypeError("no page location: pass the WebSocket URL");
        }
        return (loc.protocol === "https:" ? "wss://" : "ws://") + loc.host + "/ws";
    }

    /**
     * The URL of a topic's Server-Sent Events stream.
     * @param {string} topic
     * @param {{baseUrl?: string, cluster?: string, from?: string|number, group?: string}}
     *        [options] baseUrl: "" (the page's origin) or "http://host:port"; cluster: use
     *        the v3 path /v3/clusters/{cluster}/topics/{topic}/events; from and group become
     *        query parameters as given
     * @returns {string}
     */
    function eventsUrl(topic, options) {
        const o = options || {};
        const base = (o.baseUrl || "").replace(/\/+$/, "");
        let path = "/topics/" + encodeURIComponent(topic) + "/events";
        if (o.cluster !== undefined) {
            path = "/v3/clusters/" + encodeURIComponent(o.cluster) + path;
        }
        const query = [];
        if (o.from !== undefined) {
            query.push("from=" + encodeURIComponent(String(o.from)));
        }
        if (o.group !== undefined) {
            query.push("group=" + encodeURIComponent(o.group));
        }
        return base + path + (query.length ? "?" + query.join("&") : "");
    }

    /**
     * Splits an event id of the SSE stream, "partition:offset" pairs separated by commas,
     * into its pairs.
     * @param {string} id e.g. "0:41,1:17"
     * @returns {Array<{partition: number, offset: number}>} [] for an empty or malformed id
     */
    function parseEventId(id) {
        if (typeof id !== "string" || id === "") {
            return [];
        }
        const out = [];
        for (const pair of id.split(",")) {
            const m = /^\s*(\d+):(\d+)\s*$/.exec(pair);
            if (!m) {
                return [];
            }
            out.push({ partition: Number(m[1]), offset: Number(m[2]) });
        }
        return out;
    }

    /**
     * Tails a topic through Server-Sent Events. One event per record; the browser's
     * EventSource reconnects by itself and sends the last event id (Last-Event-ID), so the
     * stream resumes right after the last record seen.
     * @param {string} topic
     * @param {object} [options] eventsUrl's options, and:
     * @param {(record: object, lastEventId: string) => void} [options.onRecord] each
     *        record, parsed from the event's JSON data
     * @param {(info: {readyState: number}) => void} [options.onError] the connection failed
     *        or dropped; EventSource retries unless readyState is 2 (CLOSED)
     * @param {() => void} [options.onOpen] the stream (re)opened
     * @param {Function} [options.EventSource] the EventSource class (default: the global one)
     * @returns {{source: EventSource, url: string, lastEventId: () => string,
     *            close: () => void}}
     */
    function events(topic, options) {
        const o = options || {};
        const ES = o.EventSource || globalThis.EventSource;
        if (typeof ES !== "function") {
            throw new TypeError("no EventSource class: pass options.EventSource");
        }
        const url = eventsUrl(topic, o);
        const source = new ES(url);
        let last = "";
        source.onmessage = (ev) => {
            last = ev.lastEventId || last;
            let record;
            try {
                record = JSON.parse(ev.data);
            } catch (e) {
                record = { value: ev.data };
            }
            if (o.onRecord) {
                o.onRecord(record, ev.lastEventId);
            }
        };
        source.onerror = () => {
            if (o.onError) {
                o.onError({ readyState: source.readyState });
            }
        };
        source.onopen = () => {
            if (o.onOpen) {
                o.onOpen();
            }
        };
        return {
            source: source,
            url: url,
            lastEventId: () => last,
            close: () => source.close(),
        };
    }

    const api = Object.freeze({
        version: version,
        Client: Client,
        SluiceError: SluiceError,
        connect: connect,
        backoffDelay: backoffDelay,
        decodeRecords: decodeRecords,
        defaultWebSocketUrl: defaultWebSocketUrl,
        events: events,
        eventsUrl: eventsUrl,
        parseEventId: parseEventId,
    });

    if (typeof module === "object" && module && typeof module.exports === "object") {
        module.exports = api;
    }
    globalThis.sluice = api;
})();
