// Records (#/messages, #/tail, #/produce), over the WebSocket (sluice.js):
// - the message browser reads up to N records of one partition from an offset, a timestamp or
//   the end (the last N), shows key, value, headers and timestamp (JSON pretty-printed, binary
//   as hex or base64), filters what was fetched, and downloads it as JSON;
// - the live tail shows records as they arrive, from a chosen position, with their headers;
// - the produce form sends a record with a key, headers and a partition.
import { $, api, errorLine, h, newWsClient, register, state, wsClient } from "./console.js";

const enc = encodeURIComponent;
const utf8 = new TextDecoder("utf-8", { fatal: true });

function fromBase64(text) {
    const bin = atob(text);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i += 1) {
        out[i] = bin.charCodeAt(i);
    }
    return out;
}

/** A key, value or header value (base64 on the wire) as shown: {text, kind}. Text that
 *  parses as JSON is pretty-printed; bytes that are not UTF-8 are hex or base64. */
export function decodeBytes(b64, binaryAs) {
    if (b64 === null || b64 === undefined) {
        return { text: "null", kind: "null" };
    }
    const raw = fromBase64(b64);
    let text;
    try {
        text = utf8.decode(raw);
    } catch (e) {
        text = null;
    }
    // Control characters other than whitespace: binary, not text.
    if (text !== null && !/[\u0000-\u0008\u000e-\u001f]/.test(text)) {
        const trimmed = text.trim();
        if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
            try {
                return { text: JSON.stringify(JSON.parse(trimmed), null, 2), kind: "json" };
            } catch (e) {
                // not JSON: text
            }
        }
        return { text, kind: "text" };
    }
    if (binaryAs === "base64") {
        return { text: b64, kind: "base64" };
    }
    return { text: Array.from(raw, (b) => b.toString(16).padStart(2, "0")).join(" "),
             kind: "hex" };
}

function recordRow(r, binaryAs) {
    const key = decodeBytes(r.key, binaryAs);
    const value = decodeBytes(r.value, binaryAs);
    const headers = Object.entries(r.headers || {}).map(([k, v]) => {
        const d = decodeBytes(v, binaryAs);
        return k + ": " + d.text;
    });
    const tr = h("tr", { dataset: { partition: String(r.partition), offset: String(r.offset) } },
                 h("td", { className: "num" }, String(r.partition)),
                 h("td", { className: "num" }, String(r.offset)),
                 h("td", {}, r.timestamp === undefined || r.timestamp < 0 ? "" :
                   new Date(r.timestamp).toISOString()),
                 h("td", { className: "key " + key.kind }, h("pre", {}, key.text)),
                 h("td", { className: "value " + value.kind, dataset: { kind: value.kind } },
                   h("pre", {}, value.text)),
                 h("td", { className: "headers" }, h("pre", {}, headers.join("\n"))));
    tr.dataset.text = (key.text + "\n" + value.text + "\n" + headers.join("\n")).toLowerCase();
    return tr;
}

function recordTable(bodyId) {
    return h("table", { id: bodyId.replace("rows", "table") },
             h("thead", {}, h("tr", {},
                h("th", { scope: "col", className: "num" }, "partition"),
                h("th", { scope: "col", className: "num" }, "offset"),
                h("th", { scope: "col" }, "timestamp"), h("th", { scope: "col" }, "key"),
                h("th", { scope: "col" }, "value"), h("th", { scope: "col" }, "headers"))),
             h("tbody", { id: bodyId }));
}

/** The options of the "from" select and its inputs, shared by the browser and the tail. */
function positionInputs(prefix, choices) {
    const from = h("select", { id: prefix + "-from" }, choices.map(
        ([v, label]) => h("option", { value: v }, label)));
    const offset = h("input", { id: prefix + "-offset", type: "number", min: "0", value: "0" });
    const time = h("input", { id: prefix + "-time", type: "datetime-local", step: "1" });
    const offsetLabel = h("label", {}, "Offset", offset);
    const timeLabel = h("label", {}, "Time (local)", time);
    const sync = () => {
        offsetLabel.hidden = from.value !== "offset";
        timeLabel.hidden = from.value !== "timestamp";
    };
    from.addEventListener("change", sync);
    sync();
    return { from, offset, time, nodes: [h("label", {}, "From", from), offsetLabel, timeLabel] };
}

function timeValue(input) {
    const ms = new Date(input.value).getTime();
    return Number.isNaN(ms) ? null : ms;
}

// --- the message browser -----------------------------------------------------------------------

register("messages", {
    title: "Messages",
    async render(view, arg, query) {
        const topic = h("input", { id: "browse-topic", required: true, autocomplete: "off",
                                   value: query.get("topic") || "" });
        const partition = h("input", { id: "browse-partition", type: "number", min: "0",
                                       value: query.get("partition") || "0" });
        const pos = positionInputs("browse", [["end", "the end (the last records)"],
                                              ["beginning", "the beginning"],
                                              ["offset", "an offset"],
                                              ["timestamp", "a time"]]);
        const limit = h("input", { id: "browse-limit", type: "number", min: "1", max: "1000",
                                   value: "50" });
        const binary = h("select", { id: "browse-binary" },
                         h("option", { value: "hex" }, "hex"),
                         h("option", { value: "base64" }, "base64"));
        const status = h("output", { id: "browse-status", className: "note", role: "status" });
        const filter = h("input", { id: "browse-filter", type: "search", autocomplete: "off",
                                    placeholder: "text in key, value or headers" });
        const download = h("button", { type: "button", id: "browse-download", disabled: true },
                           "Download JSON");
        const form = h("form", { id: "browse", className: "panel", autocomplete: "off" },
                       h("h2", {}, "Message browser"),
                       h("label", {}, "Topic", topic), h("label", {}, "Partition", partition),
                       pos.nodes, h("label", {}, "Records", limit),
                       h("label", {}, "Binary as", binary),
                       h("button", { type: "submit", id: "browse-fetch" }, "Fetch"), status);
        const results = h("section", { className: "panel", id: "browse-results" },
                          h("h2", {}, "Records ", h("span", { id: "browse-count",
                                                              className: "count" }, "0")),
                          h("label", {}, "Search the records fetched", filter), download,
                          recordTable("browse-rows"));
        view.append(form, results);
        let fetched = [];
        let ws = null;

        function applyFilter() {
            const needle = filter.value.trim().toLowerCase();
            let shown = 0;
            for (const tr of $("browse-rows").rows) {
                tr.hidden = needle !== "" && !tr.dataset.text.includes(needle);
                shown += tr.hidden ? 0 : 1;
            }
            $("browse-count").textContent = needle === "" ? String(fetched.length) :
                shown + " of " + fetched.length;
        }
        filter.addEventListener("input", applyFilter);

        function drawRecords() {
            const body = $("browse-rows");
            body.replaceChildren(...fetched.map((r) => recordRow(r, binary.value)));
            applyFilter();
            download.disabled = fetched.length === 0;
        }
        binary.addEventListener("change", drawRecords);

        download.addEventListener("click", () => {
            const blob = new Blob([JSON.stringify(fetched, null, 2)],
                                  { type: "application/json" });
            const a = h("a", { href: URL.createObjectURL(blob),
                               download: topic.value.trim() + "-" + partition.value + ".json" });
            document.body.append(a);
            a.click();
            a.remove();
            state.last.download = fetched.length;
        });

        form.addEventListener("submit", async (ev) => {
            ev.preventDefault();
            if (ws) {
                ws.close();
                ws = null;
            }
            fetched = [];
            drawRecords();
            delete status.dataset.error;
            delete document.body.dataset.browsed;
            const t = topic.value.trim();
            const p = Number(partition.value);
            const n = Math.max(1, Math.min(1000, Number(limit.value) || 50));
            let offsets;
            try {
                offsets = await api("/topics/" + enc(t) + "/partitions/" + p + "/offsets");
            } catch (e) {
                status.dataset.error = String(e.status || "");
                status.textContent = "cannot read " + t + "/" + p + ": " + e.message +
                    (e.status ? " (" + e.status + ")" : "");
                return;
            }
            const begin = offsets.beginning_offset;
            const end = offsets.end_offset;
            let from;
            if (pos.from.value === "end") {
                from = { offset: Math.max(begin, end - n) };
            } else if (pos.from.value === "beginning") {
                from = { offset: begin };
            } else if (pos.from.value === "offset") {
                from = { offset: Math.max(begin, Number(pos.offset.value) || 0) };
            } else {
                const ms = timeValue(pos.time);
                if (ms === null) {
                    status.dataset.error = "input";
                    status.textContent = "enter a time";
                    return;
                }
                from = { timestamp: ms };
            }
            const startOffset = from.offset;
            if (begin === end || (startOffset !== undefined && startOffset >= end)) {
                finish("no records there (the partition holds offsets " + begin + " to " +
                       (end - 1) + ")");
                return;
            }
            status.textContent = "fetching…";
            const client = newWsClient();
            ws = client;
            let idle = null;
            const done = (why) => {
                clearTimeout(idle);
                if (ws === client) {
                    ws = null;
                }
                client.close();
                finish(why);
            };
            // Nothing more within a while: the records up to the end of the partition are in.
            const wait = () => {
                clearTimeout(idle);
                idle = setTimeout(() => done("read to " + (fetched.length ?
                    "offset " + fetched[fetched.length - 1].offset : "the end")), 1500);
            };
            client.on("error", (e) => {
                status.dataset.error = String(e.code);
                done("not read: " + e.message);
            });
            client.on("message", (msg) => {
                if (msg.op === "subscribed") {
                    wait();
                }
            });
            client.subscribe({ topics: [t], from, format: "base64", onRecords: (records) => {
                for (const r of records) {
                    if (r.partition === p && fetched.length < n) {
                        fetched.push({ partition: r.partition, offset: r.offset,
                                       timestamp: r.timestamp, key: r.key, value: r.value,
                                       headers: r.headers || {} });
                    }
                }
                const last = fetched.length ? fetched[fetched.length - 1].offset : -1;
                if (fetched.length >= n || last >= end - 1) {
                    done(fetched.length + " records from offset " +
                         (fetched.length ? fetched[0].offset : "–"));
                } else {
                    wait();
                }
            } });
        });

        function finish(text) {
            status.textContent = text;
            drawRecords();
            state.last.browsed = fetched;
            document.body.dataset.browsed = String(fetched.length);
        }

        if (query.get("topic")) {
            form.requestSubmit();
        }
        return {
            dispose() {
                if (ws) {
                    ws.close();
                }
            },
        };
    },
});

// --- the live tail -------------------------------------------------------------------------------

const maxTailRows = 500;

register("tail", {
    title: "Live tail",
    async render(view, arg, query) {
        const topic = h("input", { id: "tail-topic", required: true, autocomplete: "off",
                                   value: query.get("topic") || "" });
        const pos = positionInputs("tail", [["now", "now (new records)"],
                                            ["latest", "the end of each partition"],
                                            ["earliest", "the beginning"],
                                            ["offset", "an offset"], ["timestamp", "a time"]]);
        const binary = h("select", { id: "tail-binary" },
                         h("option", { value: "hex" }, "hex"),
                         h("option", { value: "base64" }, "base64"));
        const status = h("output", { id: "tail-status", className: "note", role: "status" },
                         "not tailing");
        const stop = h("button", { type: "button", id: "tail-stop", disabled: true,
                                   className: "secondary" }, "Stop");
        const count = h("span", { id: "tail-count", className: "count" }, "0");
        const form = h("form", { id: "tail", className: "panel", autocomplete: "off" },
                       h("h2", {}, "Live tail ", count), h("label", {}, "Topic", topic),
                       pos.nodes, h("label", {}, "Binary as", binary),
                       h("button", { type: "submit", id: "tail-start" }, "Start"), stop, status,
                       recordTable("tail-rows"));
        view.append(form);
        const client = wsClient();
        let tailing = null;
        let n = 0;
        const onMessage = (msg) => {
            if (msg.op === "subscribed" && tailing) {
                status.textContent = "tailing " + tailing + " (new records appear on top)";
                status.dataset.live = "true";
                document.body.dataset.tailing = tailing;
            }
        };
        const onError = (e) => {
            if (e.op === "subscribe") {
                status.textContent = "tail failed: " + e.message;
                status.dataset.error = String(e.code);
            }
        };
        client.on("message", onMessage);
        client.on("error", onError);

        const add = (records) => {
            const body = $("tail-rows");
            if (!body) {
                return;
            }
            for (const r of records) {
                body.prepend(recordRow(r, binary.value));
            }
            while (body.rows.length > maxTailRows) {
                body.deleteRow(body.rows.length - 1);
            }
            n += records.length;
            count.textContent = String(n);
        };

        form.addEventListener("submit", (ev) => {
            ev.preventDefault();
            const t = topic.value.trim();
            if (!t) {
                return;
            }
            let from;
            if (pos.from.value === "now") {
                from = { timestamp: Date.now() };
            } else if (pos.from.value === "offset") {
                from = { offset: Math.max(0, Number(pos.offset.value) || 0) };
            } else if (pos.from.value === "timestamp") {
                const ms = timeValue(pos.time);
                if (ms === null) {
                    status.textContent = "enter a time";
                    return;
                }
                from = { timestamp: ms };
            } else {
                from = pos.from.value;
            }
            $("tail-rows").replaceChildren();
            n = 0;
            count.textContent = "0";
            tailing = t;
            delete document.body.dataset.tailing;
            delete status.dataset.error;
            client.subscribe({ topics: [t], from, format: "base64", onRecords: add });
            status.textContent = "subscribing to " + t + "…";
            stop.disabled = false;
        });

        stop.addEventListener("click", () => {
            client.unsubscribe();
            tailing = null;
            delete document.body.dataset.tailing;
            status.textContent = "not tailing";
            status.dataset.live = "false";
            stop.disabled = true;
        });
        return {
            dispose() {
                if (tailing) {
                    client.unsubscribe();
                }
                delete document.body.dataset.tailing;
                client.off && client.off("message", onMessage);
                client.off && client.off("error", onError);
            },
        };
    },
});

// --- produce -------------------------------------------------------------------------------------

register("produce", {
    title: "Produce",
    async render(view, arg, query) {
        const topic = h("input", { id: "produce-topic", required: true, autocomplete: "off",
                                   value: query.get("topic") || "" });
        const partition = h("input", { id: "produce-partition", type: "number", min: "0",
                                       placeholder: "any" });
        const key = h("input", { id: "produce-key", placeholder: "none", autocomplete: "off" });
        const value = h("textarea", { id: "produce-value", rows: "4", required: true });
        const headers = h("textarea", { id: "produce-headers", rows: "3",
                                        placeholder: "name: value (one a line)" });
        const out = h("output", { id: "produce-result", className: "note", role: "status" });
        const form = h("form", { id: "produce", className: "panel", autocomplete: "off" },
                       h("h2", {}, "Produce a record"), h("label", {}, "Topic", topic),
                       h("label", {}, "Partition", partition), h("label", {}, "Key", key),
                       h("label", { className: "wide" }, "Value", value),
                       h("label", { className: "wide" }, "Headers", headers),
                       h("button", { type: "submit", id: "produce-send" }, "Send"), out);
        view.append(form);
        form.addEventListener("submit", (ev) => {
            ev.preventDefault();
            delete out.dataset.error;
            delete out.dataset.offset;
            const options = {};
            if (key.value !== "") {
                options.key = key.value;
            }
            if (partition.value !== "") {
                options.partition = Number(partition.value);
            }
            const hs = {};
            for (const line of headers.value.split("\n")) {
                const colon = line.indexOf(":");
                if (line.trim() === "") {
                    continue;
                }
                if (colon <= 0) {
                    out.dataset.error = "input";
                    out.textContent = "a header line is name: value, not " + line;
                    return;
                }
                hs[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
            }
            if (Object.keys(hs).length > 0) {
                options.headers = hs;
            }
            out.textContent = "sending…";
            wsClient().produce(topic.value.trim(), value.value, options).then(
                (ack) => {
                    out.dataset.offset = String(ack.offset);
                    out.dataset.partition = String(ack.partition);
                    out.textContent = "stored at " + ack.topic + "/" + ack.partition +
                        " offset " + ack.offset;
                },
                (e) => {
                    out.dataset.error = String(e.code);
                    out.textContent = "not sent: " + e.message;
                });
        });
        return {};
    },
});

export { errorLine };
