// The sluice console (console/index.html, served at / to browsers): polls the HTTP API and
// draws what it answers. Topics from the REST Proxy v2 (/topics, /topics/{t}, the partition
// offsets) with sizes and byte counts from /metrics; consumer groups from /v1/groups; queues
// from /v1/queues. Rates and the lag plot are computed here from successive polls, kept only
// in the page. The live tail and the produce form go through sluice.js over /ws.
//
// With http.authentication on, the page asks GET /v1/console/auth how to sign in and shows
// its own form: a user name and password are exchanged once for a session token (POST
// /v1/console/session), a JWT is used as it is. The token (never the password) is kept in
// sessionStorage for this tab, sent as `Authorization: Bearer` and as /ws's `access_token=`;
// a 401 later (expired, users changed) brings the form back. Requests carry X-Sluice-Console,
// so a 401 never makes the browser show its own password prompt.
//
// ?interval=<ms> sets the poll interval (default 2000). window.sluiceConsole exposes the
// state (samples, the plot, the last answers) for scripts and tests.
(function () {
    "use strict";

    const params = new URLSearchParams(location.search);
    const intervalMs = Math.max(250, Number(params.get("interval")) || 2000);
    const historyMs = 10 * 60 * 1000; // the lag plot's window
    const maxTailRows = 500;
    const $ = (id) => document.getElementById(id);

    const state = {
        polls: 0,
        topics: [],       // [{name, partitions: [{partition, start, end, size, bytesIn}]}]
        groups: [],       // /v1/groups/{g} answers
        queues: [],       // /v1/queues entries
        lagSamples: [],   // [{t: seconds, lags: {group: lag}}]
        plot: null,       // the uPlot instance
        plotGroups: [],   // the groups the plot has series for, in order
        tasks: {},        // queue -> the latest move task seen
        errors: [],
    };
    window.sluiceConsole = state;

    // --- helpers -------------------------------------------------------------------------------

    function cell(text, className) {
        const td = document.createElement("td");
        td.textContent = text;
        if (className) {
            td.className = className;
        }
        return td;
    }

    function bytes(n) {
        if (n === null || n === undefined) {
            return "–";
        }
        const units = ["B", "KiB", "MiB", "GiB", "TiB"];
        let i = 0;
        while (n >= 1024 && i < units.length - 1) {
            n /= 1024;
            i += 1;
        }
        return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
    }

    function rate(n) {
        return n === null || n === undefined ? "–" : (n < 10 ? n.toFixed(2) : n.toFixed(0));
    }

    // --- signing in ---------------------------------------------------------------------------

    const sessionKey = "sluice.console.session";
    const session = { token: null, principal: null, schemes: [] };

    /** The headers of every API request: JSON, the console's mark, the session's token. */
    function apiHeaders(extra, authorization) {
        const headers = Object.assign({ Accept: "application/json", "X-Sluice-Console": "1" },
                                      extra || {});
        const auth = authorization || (session.token ? "Bearer " + session.token : null);
        if (auth) {
            headers.Authorization = auth;
        }
        return headers;
    }

    function basicCredentials(user, password) {
        const bytes = new TextEncoder().encode(user + ":" + password);
        let binary = "";
        for (const b of bytes) {
            binary += String.fromCharCode(b);
        }
        return "Basic " + btoa(binary);
    }

    function showPrincipal() {
        $("principal").textContent = session.principal && session.schemes.length > 0 ?
            "signed in as " + session.principal : "";
        $("sign-out").hidden = !(session.token && session.schemes.length > 0);
        document.body.dataset.principal = session.principal || "";
    }

    function keep(token, principal) {
        session.token = token;
        session.principal = principal;
        if (token) {
            sessionStorage.setItem(sessionKey, JSON.stringify({ token, principal }));
        } else {
            sessionStorage.removeItem(sessionKey);
        }
        showPrincipal();
    }

    /** Resolves once the page may call the API: at once when authentication is off, after a
     *  kept session is confirmed, or after the form succeeds. */
    async function signIn(note) {
        session.schemes = (await getJson("/v1/console/auth", {}, { open: true })).schemes || [];
        if (session.schemes.length === 0) {
            keep(null, "User:ANONYMOUS");
            return;
        }
        const saved = note ? null : JSON.parse(sessionStorage.getItem(sessionKey) || "null");
        if (saved && saved.token) {
            try {
                const me = await getJson("/v1/console/session", {},
                                         { open: true, authorization: "Bearer " + saved.token });
                keep(saved.token, me.principal);
                return;
            } catch (e) {
                keep(null, null);
            }
        }
        keep(null, null);
        const dialog = $("sign-in");
        $("sign-in-password").hidden = !session.schemes.includes("basic");
        $("sign-in-token").hidden = !session.schemes.includes("bearer");
        $("sign-in-note").textContent = note || "";
        $("sign-in-error").textContent = "";
        document.body.dataset.signIn = "open";
        dialog.showModal();
        await new Promise((resolve) => {
            const form = $("sign-in-form");
            const submit = async (ev) => {
                ev.preventDefault();
                $("sign-in-error").textContent = "";
                const user = $("sign-in-user").value;
                const jwt = $("sign-in-jwt").value.trim();
                try {
                    if (user !== "" && session.schemes.includes("basic")) {
                        // JSON, as every state-changing /v1 request must be (never a
                        // request a page on another origin could send without asking).
                        const answer = await getJson("/v1/console/session", {
                            method: "POST", headers: { "Content-Type": "application/json" },
                        }, {
                            open: true,
                            authorization: basicCredentials(user, $("sign-in-secret").value),
                        });
                        keep(answer.token, answer.principal);
                    } else if (jwt !== "" && session.schemes.includes("bearer")) {
                        const me = await getJson("/v1/console/session", {},
                                                 { open: true, authorization: "Bearer " + jwt });
                        keep(jwt, me.principal);
                    } else {
                        $("sign-in-error").textContent = session.schemes.includes("basic") ?
                            "enter a user and password" : "paste a token";
                        return;
                    }
                } catch (e) {
                    $("sign-in-error").textContent = "not signed in: " + e.message;
                    return;
                }
                $("sign-in-secret").value = "";
                form.removeEventListener("submit", submit);
                dialog.close();
                document.body.dataset.signIn = "done";
                resolve();
            };
            form.addEventListener("submit", submit);
        });
    }

    /** A 401 from the API: the session ended (expired, or the users changed). */
    class SignedOut extends Error {}

    async function getJson(path, init, options) {
        const o = options || {};
        const request = Object.assign({}, init || {});
        request.headers = apiHeaders(request.headers, o.authorization);
        const res = await fetch(path, request);
        if (res.status === 401 && !o.open) {
            throw new SignedOut("signed out: " + res.status);
        }
        const text = await res.text();
        let body = null;
        try {
            body = text ? JSON.parse(text) : null;
        } catch (e) {
            body = { message: text };
        }
        if (!res.ok) {
            const err = new Error((body && body.message) || res.status + " " + res.statusText);
            err.status = res.status;
            throw err;
        }
        return body;
    }

    /** Parses `name{labels} value` lines of the Prometheus text format for the given names. */
    function parseMetrics(text, names) {
        const out = [];
        for (const line of text.split("\n")) {
            if (!line || line[0] === "#") {
                continue;
            }
            const brace = line.indexOf("{");
            const name = brace < 0 ? line.split(" ")[0] : line.slice(0, brace);
            if (!names.includes(name)) {
                continue;
            }
            const close = line.lastIndexOf("}");
            const labels = {};
            const re = /(\w+)="((?:[^"\\]|\\.)*)"/g;
            let m;
            while ((m = re.exec(line.slice(brace + 1, close))) !== null) {
                labels[m[1]] = m[2].replace(/\\(.)/g, (s, c) => (c === "n" ? "\n" : c));
            }
            out.push({ name, labels, value: Number(line.slice(close + 1).trim()) });
        }
        return out;
    }

    // --- topics --------------------------------------------------------------------------------

    let previousTopics = null; // {at: ms, key -> {end, bytesIn}}

    async function pollTopics() {
        const names = await getJson("/topics");
        const figures = {}; // "topic\0partition" -> {size, bytesIn}
        try {
            const text = await (await fetch("/metrics", { headers: apiHeaders() })).text();
            for (const m of parseMetrics(text, ["sluice_partition_size_bytes",
                                                "sluice_partition_bytes_in_total"])) {
                const key = m.labels.topic + "\u0000" + m.labels.partition;
                figures[key] = figures[key] || {};
                figures[key][m.name === "sluice_partition_size_bytes" ? "size" : "bytesIn"] =
                    m.value;
            }
        } catch (e) {
            // Sizes are optional: the table shows "–" without them.
        }
        const topics = [];
        for (const name of names.slice().sort()) {
            const t = encodeURIComponent(name);
            const meta = await getJson("/topics/" + t);
            const partitions = [];
            for (const p of meta.partitions || []) {
                const offsets = await getJson("/topics/" + t + "/partitions/" + p.partition +
                                              "/offsets");
                const f = figures[name + "\u0000" + p.partition] || {};
                partitions.push({ partition: p.partition, start: offsets.beginning_offset,
                                  end: offsets.end_offset, size: f.size, bytesIn: f.bytesIn });
            }
            partitions.sort((a, b) => a.partition - b.partition);
            topics.push({ name, partitions });
        }
        const now = Date.now();
        const seen = {};
        for (const t of topics) {
            for (const p of t.partitions) {
                const key = t.name + "\u0000" + p.partition;
                seen[key] = { end: p.end, bytesIn: p.bytesIn };
                const before = previousTopics && previousTopics.figures[key];
                if (before) {
                    const secs = (now - previousTopics.at) / 1000;
                    p.recordsPerSec = Math.max(0, (p.end - before.end) / secs);
                    if (p.bytesIn !== undefined && before.bytesIn !== undefined) {
                        p.bytesInPerSec = Math.max(0, (p.bytesIn - before.bytesIn) / secs);
                    }
                }
            }
        }
        previousTopics = { at: now, figures: seen };
        state.topics = topics;
        renderTopics();
    }

    // The last figures each table was drawn from: a table is redrawn only when they change, so
    // that a row (and its button) stays the same element between polls.
    const drawn = { topics: null, groups: null, queues: null };

    function unchanged(table, figures) {
        const text = JSON.stringify(figures);
        if (drawn[table] === text) {
            return true;
        }
        drawn[table] = text;
        return false;
    }

    function renderTopics() {
        if (unchanged("topics", state.topics)) {
            return;
        }
        const body = $("topic-rows");
        body.replaceChildren();
        for (const t of state.topics) {
            t.partitions.forEach((p, i) => {
                const tr = document.createElement("tr");
                tr.dataset.topic = t.name;
                tr.dataset.partition = String(p.partition);
                if (i === 0) {
                    tr.className = "topic-first";
                }
                tr.append(cell(i === 0 ? t.name : ""), cell(String(p.partition), "num"),
                          cell(String(p.start), "num"), cell(String(p.end), "num"),
                          cell(String(p.end - p.start), "num"), cell(bytes(p.size), "num"),
                          cell(rate(p.recordsPerSec), "num"), cell(rate(p.bytesInPerSec), "num"));
                body.append(tr);
            });
            if (t.partitions.length === 0) {
                const tr = document.createElement("tr");
                tr.dataset.topic = t.name;
                tr.append(cell(t.name), cell("no partitions", "null"));
                body.append(tr);
            }
        }
        $("topic-count").textContent = String(state.topics.length);
    }

    // --- groups and the lag plot ---------------------------------------------------------------

    async function pollGroups() {
        const list = await getJson("/v1/groups");
        const groups = [];
        for (const g of list.groups || []) {
            try {
                groups.push(await getJson("/v1/groups/" + encodeURIComponent(g.group_id)));
            } catch (e) {
                if (e.status !== 404) { // a group deleted between the two calls
                    throw e;
                }
            }
        }
        groups.sort((a, b) => (a.group_id < b.group_id ? -1 : a.group_id > b.group_id ? 1 : 0));
        state.groups = groups;
        const sample = { t: Date.now() / 1000, lags: {} };
        for (const g of groups) {
            sample.lags[g.group_id] = g.lag;
        }
        state.lagSamples.push(sample);
        const oldest = (Date.now() - historyMs) / 1000;
        while (state.lagSamples.length > 0 && state.lagSamples[0].t < oldest) {
            state.lagSamples.shift();
        }
        renderGroups();
        renderPlot();
    }

    function renderGroups() {
        if (unchanged("groups", state.groups)) {
            return;
        }
        const body = $("group-rows");
        body.replaceChildren();
        for (const g of state.groups) {
            const tr = document.createElement("tr");
            tr.dataset.group = g.group_id;
            tr.dataset.lag = String(g.lag);
            const members = document.createElement("td");
            members.className = "members";
            members.textContent = g.members.length === 0 ? "none" :
                g.members.map((m) => m.client_id + " (" + m.client_host + ")").join(", ");
            const assignments = document.createElement("td");
            assignments.className = "members";
            assignments.textContent = g.members.flatMap((m) => m.assignment.map(
                (a) => a.topic + "[" + a.partitions.join(",") + "]")).join(" ") || "–";
            const lag = document.createElement("td");
            lag.className = "num" + (g.lag > 0 ? " warn" : "");
            lag.textContent = String(g.lag);
            lag.title = g.offsets.map((o) => o.topic + "/" + o.partition + ": committed " +
                                      o.committed_offset + ", end " + o.log_end_offset +
                                      ", lag " + o.lag).join("\n");
            tr.append(cell(g.group_id), cell(g.state), members, assignments, lag);
            body.append(tr);
        }
        $("group-count").textContent = String(state.groups.length);
    }

    /** The plot's data: [times, lag of group 0, lag of group 1, ...], null where absent. */
    function plotData(groups) {
        const xs = state.lagSamples.map((s) => s.t);
        const series = groups.map((g) => state.lagSamples.map(
            (s) => (g in s.lags ? s.lags[g] : null)));
        return [xs].concat(series);
    }

    const palette = ["#1f6feb", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989"];

    function renderPlot() {
        const groups = Array.from(new Set(state.lagSamples.flatMap((s) => Object.keys(s.lags))))
            .sort();
        const el = $("lag-plot");
        if (typeof uPlot === "undefined") {
            $("lag-plot-note").textContent = "the plotting library did not load";
            return;
        }
        const same = state.plot && groups.length === state.plotGroups.length &&
            groups.every((g, i) => g === state.plotGroups[i]);
        if (same) {
            state.plot.setData(plotData(groups));
            return;
        }
        if (state.plot) {
            state.plot.destroy();
            state.plot = null;
        }
        state.plotGroups = groups;
        if (groups.length === 0) {
            $("lag-plot-note").textContent = "no consumer groups yet";
            return;
        }
        const opts = {
            width: Math.max(300, el.clientWidth || 800),
            height: 220,
            scales: { x: { time: true } },
            axes: [{}, { label: "lag (records)" }],
            series: [{}].concat(groups.map((g, i) => ({
                label: g, stroke: palette[i % palette.length], width: 2, spanGaps: false,
            }))),
        };
        state.plot = new uPlot(opts, plotData(groups), el);
        $("lag-plot-note").textContent = "lag of each group over the last " +
            historyMs / 60000 + " minutes, sampled every " + intervalMs / 1000 + " s";
    }

    // --- queues and redrive --------------------------------------------------------------------

    async function pollQueues() {
        const answer = await getJson("/v1/queues");
        state.queues = answer.queues || [];
        // The progress of every redrive started from this page, or running on a DLQ shown.
        for (const q of state.queues) {
            if (q.dead_letter_sources.length > 0) {
                const tasks = await getJson("/v1/queues/" + encodeURIComponent(q.name) +
                                            "/move-tasks");
                if (tasks.tasks.length > 0) {
                    state.tasks[q.name] = tasks.tasks[0];
                }
            }
        }
        renderQueues();
    }

    function taskText(t) {
        return t.status.toLowerCase() + ": " + t.moved + " of " + t.to_move + " moved" +
            (t.failure_reason ? " (" + t.failure_reason + ")" : "");
    }

    function renderQueues() {
        if (unchanged("queues", [state.queues, state.tasks, redriveErrors])) {
            return;
        }
        const body = $("queue-rows");
        body.replaceChildren();
        for (const q of state.queues) {
            const tr = document.createElement("tr");
            tr.dataset.queue = q.name;
            tr.dataset.available = String(q.available);
            const isDlq = q.dead_letter_sources.length > 0;
            tr.dataset.dlq = String(isDlq);
            const action = document.createElement("td");
            if (isDlq) {
                const button = document.createElement("button");
                button.type = "button";
                button.className = "redrive";
                button.dataset.queue = q.name;
                button.textContent = "Redrive";
                button.title = "move this dead-letter queue's messages back to " +
                    q.dead_letter_sources.join(", ");
                const task = state.tasks[q.name];
                button.disabled = Boolean(task && task.status === "RUNNING");
                button.addEventListener("click", () => redrive(q.name));
                const out = document.createElement("output");
                out.className = "note redrive-status";
                out.dataset.queue = q.name;
                if (task) {
                    out.dataset.status = task.status;
                    out.dataset.moved = String(task.moved);
                    out.textContent = " " + taskText(task);
                }
                if (redriveErrors[q.name]) {
                    out.dataset.error = "true";
                    out.textContent = " " + redriveErrors[q.name];
                }
                action.append(button, out);
            }
            tr.append(cell(q.name), cell(String(q.available), "num"),
                      cell(String(q.in_flight), "num"), cell(String(q.delayed), "num"),
                      cell(q.oldest_age_ms > 0 ? (q.oldest_age_ms / 1000).toFixed(0) + " s" : "–",
                           "num"),
                      cell(q.dead_letter_queue || "–"),
                      cell(q.dead_letter_queue_depth === null ? "–" :
                           String(q.dead_letter_queue_depth),
                           "num" + (q.dead_letter_queue_depth > 0 ? " bad" : "")),
                      action);
            body.append(tr);
        }
        $("queue-count").textContent = String(state.queues.length);
    }

    const redriveErrors = {};

    async function redrive(queue) {
        delete redriveErrors[queue];
        try {
            const answer = await getJson("/v1/queues/" + encodeURIComponent(queue) + "/redrive",
                                         { method: "POST", body: "{}",
                                           headers: { "Content-Type": "application/json" } });
            state.tasks[queue] = { task_handle: answer.task_handle, status: "RUNNING", moved: 0,
                                   to_move: 0 };
        } catch (e) {
            redriveErrors[queue] = "redrive failed: " + e.message;
        }
        renderQueues();
        schedule(0);
    }

    // --- live tail and produce over /ws ----------------------------------------------------------

    let client = null;
    let tailCount = 0;
    let tailTopic = null;

    function webSocketUrl() {
        const scheme = location.protocol === "https:" ? "wss:" : "ws:";
        const query = session.token ? "?access_token=" + encodeURIComponent(session.token) : "";
        return scheme + "//" + location.host + "/ws" + query;
    }

    /** (Re)opens the WebSocket with the session's token; a tail in progress starts again. */
    function openClient() {
        if (client) {
            client.close();
        }
        client = sluice.connect(webSocketUrl());
        client.on("message", (msg) => {
            if (msg.op === "subscribed" && tailTopic) {
                tailStatus("tailing " + tailTopic + " (new records appear here)", true);
                document.body.dataset.tailing = tailTopic;
            }
        });
        client.on("error", (e) => {
            if (e.op === "subscribe") {
                tailStatus("tail failed: " + e.message, false);
                $("tail-status").dataset.error = String(e.code);
            }
        });
        client.on("reconnecting", () => {
            if (tailTopic) {
                tailStatus("reconnecting…", false);
            }
        });
        if (tailTopic) {
            startTail(tailTopic);
        }
    }

    function tailStatus(text, live) {
        const out = $("tail-status");
        out.textContent = text;
        out.dataset.live = String(Boolean(live));
    }

    function addTailRecords(records) {
        const body = $("tail-rows");
        for (const r of records) {
            const tr = document.createElement("tr");
            tr.dataset.partition = String(r.partition);
            tr.dataset.offset = String(r.offset);
            tr.append(cell(String(r.partition), "num"), cell(String(r.offset), "num"),
                      cell(r.timestamp === undefined ? "" : new Date(r.timestamp).toISOString()),
                      cell(r.key === null || r.key === undefined ? "null" : String(r.key),
                           r.key === null || r.key === undefined ? "null" : "key"),
                      cell(r.value === null || r.value === undefined ? "null" : String(r.value),
                           "value"));
            body.prepend(tr);
        }
        while (body.rows.length > maxTailRows) {
            body.deleteRow(body.rows.length - 1);
        }
        tailCount += records.length;
        $("tail-count").textContent = String(tailCount);
    }

    $("tail").addEventListener("submit", (ev) => {
        ev.preventDefault();
        const topic = $("tail-topic").value.trim();
        if (!topic) {
            return;
        }
        $("tail-rows").replaceChildren();
        tailCount = 0;
        $("tail-count").textContent = "0";
        startTail(topic);
    });

    function startTail(topic) {
        tailTopic = topic;
        delete document.body.dataset.tailing;
        delete $("tail-status").dataset.error;
        // From now on: records appended after the tail started.
        client.subscribe({ topics: [topic], from: { timestamp: Date.now() }, format: "string",
                           onRecords: addTailRecords });
        tailStatus("subscribing to " + topic + "…", false);
        $("tail-stop").disabled = false;
    }

    $("tail-stop").addEventListener("click", () => {
        if (client) {
            client.unsubscribe();
        }
        tailTopic = null;
        delete document.body.dataset.tailing;
        tailStatus("not tailing", false);
        $("tail-stop").disabled = true;
    });

    $("produce").addEventListener("submit", (ev) => {
        ev.preventDefault();
        const out = $("produce-result");
        delete out.dataset.error;
        delete out.dataset.offset;
        const options = {};
        if ($("produce-key").value !== "") {
            options.key = $("produce-key").value;
        }
        out.textContent = "sending…";
        client.produce($("produce-topic").value.trim(), $("produce-value").value, options).then(
            (ack) => {
                out.dataset.offset = String(ack.offset);
                out.textContent = "stored at " + ack.topic + "/" + ack.partition + " offset " +
                    ack.offset;
            },
            (e) => {
                out.dataset.error = String(e.code);
                out.textContent = "not sent: " + e.message;
            });
    });

    // --- polling ---------------------------------------------------------------------------------

    let timer = null;
    let polling = false;

    function schedule(ms) {
        if (timer !== null) {
            clearTimeout(timer);
        }
        timer = setTimeout(poll, ms);
    }

    async function poll() {
        timer = null;
        if (polling) {
            schedule(intervalMs);
            return;
        }
        polling = true;
        const failures = [];
        let signedOut = false;
        for (const [what, fn] of [["topics", pollTopics], ["groups", pollGroups],
                                  ["queues", pollQueues]]) {
            try {
                await fn();
            } catch (e) {
                if (e instanceof SignedOut) {
                    signedOut = true;
                    break;
                }
                failures.push(what + ": " + e.message);
            }
        }
        if (signedOut) {
            await signIn("Your session ended: sign in again.");
            openClient();
            polling = false;
            schedule(0);
            return;
        }
        polling = false;
        state.polls += 1;
        state.errors = failures;
        const status = $("poll-status");
        status.dataset.state = failures.length === 0 ? "open" : "waiting";
        status.textContent = failures.length === 0 ?
            "updated " + new Date().toLocaleTimeString() : failures.join("; ");
        document.body.dataset.polls = String(state.polls);
        schedule(intervalMs);
    }

    $("sign-out").addEventListener("click", async () => {
        keep(null, null);
        if (client) {
            client.close();
            client = null;
        }
        await signIn("Signed out.");
        openClient();
        schedule(0);
    });

    async function start() {
        try {
            await signIn();
        } catch (e) {
            const status = $("poll-status");
            status.dataset.state = "waiting";
            status.textContent = "cannot reach sluice: " + e.message;
            setTimeout(start, intervalMs);
            return;
        }
        openClient();
        schedule(0);
    }

    start();
})();
