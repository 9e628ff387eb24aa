// The example page (index.html): tails a topic live over sluice.js and posts records to it.
// The subscription lives in the URL (?topic=&group=&from=&format=), so a reload subscribes
// again: with a group it resumes where the group committed.
(function () {
    "use strict";

    const maxRows = 1000; // older rows are dropped from the table, not from the topic
    const $ = (id) => document.getElementById(id);
    const client = sluice.connect();
    let subscribed = null; // {topic, group, from, format}
    let count = 0;

    function showState(state, text) {
        const el = $("status");
        el.dataset.state = state;
        el.textContent = text;
    }

    client.on("state", (state) => {
        if (state === "open") {
            showState("open", "connected");
        } else if (state === "connecting") {
            showState("connecting", "connecting…");
        } else if (state === "closed") {
            showState("closed", "closed");
        }
        $("commit").disabled = !(state === "open" && subscribed && subscribed.group);
    });
    let connections = 0;
    client.on("open", () => {
        connections += 1;
        document.body.dataset.connections = String(connections); // for tests and curious users
    });
    client.on("reconnecting", (r) => {
        showState("waiting", "reconnecting in " + r.delayMs + " ms (attempt " + r.attempt + ")");
    });
    client.on("error", (e) => {
        $("subscription").textContent = "error " + e.code + ": " + e.message;
        $("subscription").dataset.error = String(e.code);
    });

    function cell(text, className) {
        const td = document.createElement("td");
        td.textContent = text;
        if (className) {
            td.className = className;
        }
        return td;
    }

    function shown(v, format) {
        if (v === null || v === undefined) {
            return null;
        }
        return format === "json" ? JSON.stringify(v) : String(v);
    }

    function addRecords(records) {
        const body = $("records");
        const format = subscribed ? subscribed.format : "string";
        for (const r of records) {
            const tr = document.createElement("tr");
            tr.dataset.topic = r.topic;
            tr.dataset.partition = String(r.partition);
            tr.dataset.offset = String(r.offset);
            const key = shown(r.key, format);
            tr.append(cell(r.topic), cell(String(r.partition), "num"),
                      cell(String(r.offset), "num"),
                      cell(r.timestamp === undefined ? "" : new Date(r.timestamp).toISOString()),
                      cell(key === null ? "null" : key, key === null ? "key null" : "key"),
                      cell(shown(r.value, format) ?? "null", "value"));
            body.append(tr);
        }
        while (body.rows.length > maxRows) {
            body.deleteRow(0);
        }
        count += records.length;
        $("count").textContent = String(count);
    }

    function subscribe(s) {
        subscribed = s;
        const options = { topics: [s.topic], from: s.from, format: s.format,
                          onRecords: addRecords };
        if (s.group) {
            options.group = s.group;
        }
        client.subscribe(options);
        $("subscription").textContent = "subscribed to " + s.topic +
            (s.group ? " in group " + s.group : "") + " from " + s.from;
        delete $("subscription").dataset.error;
        $("unsubscribe").disabled = false;
        $("commit").disabled = !(client.state === "open" && s.group);
        document.body.dataset.subscribed = s.topic;
    }

    function fromForm() {
        return { topic: $("topic").value.trim(), group: $("group").value.trim(),
                 from: $("from").value, format: $("format").value };
    }

    function toForm(s) {
        $("topic").value = s.topic;
        $("group").value = s.group;
        $("from").value = s.from;
        $("format").value = s.format;
    }

    $("subscribe-form").addEventListener("submit", (ev) => {
        ev.preventDefault();
        const s = fromForm();
        const q = new URLSearchParams();
        q.set("topic", s.topic);
        if (s.group) {
            q.set("group", s.group);
        }
        q.set("from", s.from);
        q.set("format", s.format);
        history.replaceState(null, "", "?" + q.toString());
        subscribe(s);
    });

    $("unsubscribe").addEventListener("click", () => {
        client.unsubscribe();
        subscribed = null;
        $("subscription").textContent = "not subscribed";
        $("unsubscribe").disabled = true;
        $("commit").disabled = true;
        delete document.body.dataset.subscribed;
    });

    $("produce-form").addEventListener("submit", (ev) => {
        ev.preventDefault();
        const topic = subscribed ? subscribed.topic : $("topic").value.trim();
        const out = $("produce-result");
        if (!topic) {
            out.textContent = "choose a topic first";
            return;
        }
        const options = {};
        if ($("key").value !== "") {
            options.key = $("key").value;
        }
        if ($("partition").value !== "") {
            options.partition = Number($("partition").value);
        }
        out.textContent = "sending…";
        delete out.dataset.offset;
        delete out.dataset.error;
        client.produce(topic, $("value").value, options).then(
            (ack) => {
                out.textContent = "stored in " + ack.topic + " partition " + ack.partition +
                    " at offset " + ack.offset;
                out.dataset.partition = String(ack.partition);
                out.dataset.offset = String(ack.offset);
            },
            (err) => {
                out.textContent = "error " + err.code + ": " + err.message;
                out.dataset.error = String(err.code);
            });
    });

    $("commit").addEventListener("click", () => {
        const out = $("commit-result");
        out.textContent = "committing…";
        delete out.dataset.offsets;
        client.commit().then(
            (offsets) => {
                const text = offsets.map((o) => o.topic + "[" + o.partition + "]@" + o.offset);
                out.textContent = "committed " + (text.join(", ") || "nothing");
                out.dataset.offsets = text.join(",");
            },
            (err) => {
                out.textContent = "error " + err.code + ": " + err.message;
            });
    });

    $("clear").addEventListener("click", () => {
        $("records").replaceChildren();
        count = 0;
        $("count").textContent = "0";
    });

    // A subscription in the URL: subscribe at once (this is what a reload resumes).
    const q = new URLSearchParams(location.search);
    if (q.get("topic")) {
        const s = { topic: q.get("topic"), group: q.get("group") || "",
                    from: q.get("from") === "earliest" ? "earliest" : "latest",
                    format: ["json", "base64"].includes(q.get("format")) ? q.get("format")
                                                                        : "string" };
        toForm(s);
        subscribe(s);
    }
})();
