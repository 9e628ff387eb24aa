// Topics (#/topics): search, sort and paging over every topic the caller may describe, with
// create and delete (after a confirmation); and one topic (#/topic/<name>): its partitions
// with offsets and sizes, its configs (edit, reset), and the consumer groups reading it.
import {
    api, apiHeaders, bytes, confirmAction, errorLine, go, h, refreshNow,
    register, row, state, table, v3,
} from "./console.js";

const pageSize = 50;
const enc = encodeURIComponent;

/// The partitions' sizes (GET /v1/console/partition-sizes: each partition's log on its
/// leader, read with DescribeLogDirs in both modes), keyed topic NUL partition, and why some
/// or all are unknown (shown under the tables, never a silent "–").
async function partitionSizes() {
    const sizes = {};
    let why = null;
    try {
        const res = await fetch("/v1/console/partition-sizes", { headers: apiHeaders() });
        if (!res.ok) {
            let message = "";
            try {
                message = (await res.json()).message || "";
            } catch (e) {
                message = "";
            }
            why = res.status === 401 || res.status === 403
                ? "Sizes need DESCRIBE on the cluster (answered " + res.status + ")."
                : "Sizes could not be read (answered " + res.status +
                    (message ? ": " + message : "") + ").";
            return { sizes, why };
        }
        const body = await res.json();
        for (const p of body.partitions) {
            sizes[p.topic + "\u0000" + p.partition] = p.size_bytes;
        }
        if (body.unknown.length > 0) {
            why = "Sizes unknown for partitions led by " +
                body.unknown.map((u) => "broker " + u.node_id + " (" + u.reason + ")")
                    .join("; ") + ".";
        }
    } catch (e) {
        why = "Sizes could not be read (" + e.message + ").";
    }
    return { sizes, why };
}

/// The note saying why sizes show "–", or nothing when they are known (or nothing is shown).
function sizesNote(why, shown) {
    return why && shown > 0 ? [h("p", { id: "sizes-note", className: "note" }, why)] : [];
}

function topicSize(sizes, name, count) {
    let total = 0;
    let known = false;
    for (let p = 0; p < count; p += 1) {
        const s = sizes[name + "\u0000" + p];
        if (s !== undefined) {
            total += s;
            known = true;
        }
    }
    return known ? total : null;
}

async function partitionOffsets(topic, partition) {
    return api("/topics/" + enc(topic) + "/partitions/" + partition + "/offsets");
}

/** The form that creates a topic (POST /v3/clusters/{c}/topics). */
function createForm(out) {
    const name = h("input", { id: "create-topic-name", name: "topic", required: true,
                              autocomplete: "off" });
    const parts = h("input", { id: "create-topic-partitions", type: "number", min: "1",
                               value: "1", required: true });
    const rf = h("input", { id: "create-topic-rf", type: "number", min: "1", value: "1" });
    const configs = h("input", { id: "create-topic-configs", placeholder: "retention.ms=60000",
                                 autocomplete: "off" });
    const form = h("form", { id: "create-topic", className: "panel", onsubmit: async (ev) => {
        ev.preventDefault();
        out.textContent = "creating…";
        delete out.dataset.error;
        const cfg = configs.value.split(/[,\n]/).map((s) => s.trim()).filter((s) => s)
            .map((s) => ({ name: s.split("=")[0].trim(), value: s.slice(s.indexOf("=") + 1) }));
        try {
            await v3("/topics", { method: "POST", json: {
                topic_name: name.value.trim(), partitions_count: Number(parts.value),
                replication_factor: Number(rf.value), configs: cfg } });
            out.textContent = "created " + name.value.trim();
            out.dataset.created = name.value.trim();
            name.value = "";
            refreshNow();
        } catch (e) {
            out.dataset.error = String(e.status || "");
            out.textContent = "not created: " + e.message + (e.status ? " (" + e.status + ")" : "");
        }
    } },
    h("h2", {}, "Create a topic"),
    h("label", {}, "Name", name), h("label", {}, "Partitions", parts),
    h("label", {}, "Replication factor", rf),
    h("label", { className: "wide" }, "Configs (name=value, comma-separated)", configs),
    h("button", { type: "submit", id: "create-topic-submit" }, "Create"));
    return form;
}

register("topics", {
    title: "Topics",
    async render(view) {
        const ui = { filter: "", sort: "name", desc: false, page: 0 };
        const out = h("output", { id: "topic-action", className: "note", role: "status" });
        const search = h("input", { id: "topic-search", type: "search", autocomplete: "off",
                                    placeholder: "part of a name" });
        const count = h("span", { id: "topic-count", className: "count" }, "0");
        const holder = h("div", { className: "wide-block" });
        const pager = h("div", { className: "pager" });
        const errors = h("div", { className: "wide-block" });
        view.append(h("section", { className: "panel", id: "topics" },
                      h("h2", {}, "Topics ", count),
                      h("label", {}, "Search", search), out, errors, holder, pager),
                    createForm(out));
        let topics = [];
        let sizes = {};
        let sizesWhy = null;
        const records = {}; // topic -> records, for the rows shown

        search.addEventListener("input", () => {
            ui.filter = search.value.trim().toLowerCase();
            ui.page = 0;
            draw();
        });

        function sorted() {
            const list = topics.filter((t) => t.topic_name.toLowerCase().includes(ui.filter));
            const key = {
                name: (t) => t.topic_name,
                partitions: (t) => t.partitions_count,
                size: (t) => topicSize(sizes, t.topic_name, t.partitions_count) ?? -1,
            }[ui.sort];
            list.sort((a, b) => {
                const x = key(a);
                const y = key(b);
                const c = x < y ? -1 : x > y ? 1 : 0;
                return ui.desc ? -c : c;
            });
            return list;
        }

        function heading(label, key, num) {
            const mark = ui.sort === key ? (ui.desc ? " ▼" : " ▲") : "";
            return {
                label: h("button", { type: "button", className: "sort", dataset: { sort: key },
                                     onclick: () => {
                                         ui.desc = ui.sort === key ? !ui.desc : false;
                                         ui.sort = key;
                                         draw();
                                     } }, label + mark),
                num,
            };
        }

        function draw() {
            const list = sorted();
            const pages = Math.max(1, Math.ceil(list.length / pageSize));
            ui.page = Math.min(ui.page, pages - 1);
            const shown = list.slice(ui.page * pageSize, (ui.page + 1) * pageSize);
            const cols = [heading("topic", "name"), heading("partitions", "partitions", true),
                          { label: "replication", num: true }, { label: "records", num: true },
                          heading("size", "size", true), { label: "actions" }];
            const rows = shown.map((t) => {
                const name = t.topic_name;
                const del = h("button", { type: "button", className: "danger small",
                                          dataset: { deleteTopic: name },
                                          "aria-label": "Delete topic " + name,
                                          onclick: () => deleteTopic(name) }, "Delete");
                return row(cols, [
                    h("a", { href: "#/topic/" + enc(name) }, name),
                    String(t.partitions_count), String(t.replication_factor),
                    records[name] === undefined ? "…" : String(records[name]),
                    bytes(topicSize(sizes, name, t.partitions_count)),
                    t.is_internal ? "internal" : del,
                ], { dataset: { topic: name } });
            });
            holder.replaceChildren(table(cols, rows, { id: "topic-table", bodyId: "topic-rows" }),
                                   ...sizesNote(sizesWhy, rows.length));
            count.textContent = String(list.length);
            pager.replaceChildren(
                h("button", { type: "button", id: "topic-prev", disabled: ui.page === 0,
                              onclick: () => { ui.page -= 1; draw(); } }, "Previous"),
                h("span", { id: "topic-page", className: "note" },
                  "page " + (ui.page + 1) + " of " + pages + " (" + pageSize + " a page)"),
                h("button", { type: "button", id: "topic-next", disabled: ui.page >= pages - 1,
                              onclick: () => { ui.page += 1; draw(); } }, "Next"));
            return shown;
        }

        async function deleteTopic(name) {
            if (!await confirmAction("Delete topic " + name + " and every record in it? " +
                                     "This cannot be undone.", "Delete " + name)) {
                return;
            }
            delete out.dataset.error;
            try {
                await v3("/topics/" + enc(name), { method: "DELETE" });
                out.textContent = "deleted " + name;
                out.dataset.deleted = name;
                refreshNow();
            } catch (e) {
                out.dataset.error = String(e.status || "");
                out.textContent = "not deleted: " + e.message +
                    (e.status ? " (" + e.status + ")" : "");
            }
        }

        async function refresh() {
            try {
                topics = (await v3("/topics")).data;
                errors.replaceChildren();
            } catch (e) {
                errors.replaceChildren(errorLine(e, "topics"));
                throw e;
            }
            ({ sizes, why: sizesWhy } = await partitionSizes());
            state.last.topics = topics.map((t) => t.topic_name);
            const shown = draw();
            // Record counts for the rows shown only (thousands of topics stay cheap), the
            // topics side by side, each topic's partitions one after the other.
            await Promise.all(shown.map(async (t) => {
                let n = 0;
                try {
                    for (let p = 0; p < t.partitions_count; p += 1) {
                        const o = await partitionOffsets(t.topic_name, p);
                        n += o.end_offset - o.beginning_offset;
                    }
                    records[t.topic_name] = n;
                } catch (e) {
                    records[t.topic_name] = "–";
                }
            }));
            draw();
            document.body.dataset.topicsDrawn = String(Date.now());
        }
        return { refresh };
    },
});

register("topic", {
    title: "Topic",
    async render(view, name) {
        const t = enc(name);
        const head = h("h2", {}, "Topic ", h("span", { id: "topic-name" }, name));
        const links = h("p", {}, h("a", { href: "#/messages?topic=" + t }, "Browse messages"),
                        " · ", h("a", { href: "#/tail?topic=" + t }, "Live tail"), " · ",
                        h("a", { href: "#/produce?topic=" + t }, "Produce"));
        const parts = h("div", { className: "wide-block" });
        const configs = h("div", { className: "wide-block", id: "topic-configs" });
        const groups = h("div", { className: "wide-block", id: "topic-groups" });
        const out = h("output", { id: "config-result", className: "note", role: "status" });
        view.append(h("section", { className: "panel", id: "topic-page" }, head, links, parts),
                    h("section", { className: "panel" }, h("h2", {}, "Configs"), out, configs),
                    h("section", { className: "panel" },
                      h("h2", {}, "Consumer groups reading it"), groups));

        async function drawPartitions() {
            const meta = await api("/topics/" + t);
            const { sizes, why } = await partitionSizes();
            const cols = [{ label: "partition", num: true }, { label: "leader", num: true },
                          { label: "start offset", num: true }, { label: "end offset", num: true },
                          { label: "records", num: true }, { label: "size", num: true }];
            const rows = [];
            for (const p of meta.partitions) {
                const o = await partitionOffsets(name, p.partition);
                rows.push(row(cols, [String(p.partition), String(p.leader),
                                     String(o.beginning_offset), String(o.end_offset),
                                     String(o.end_offset - o.beginning_offset),
                                     bytes(sizes[name + "\u0000" + p.partition])],
                              { dataset: { partition: String(p.partition) } }));
            }
            parts.replaceChildren(table(cols, rows, { id: "partition-table",
                                                      bodyId: "partition-rows" }),
                                  ...sizesNote(why, rows.length));
        }

        async function saveConfig(cfg, input) {
            delete out.dataset.error;
            try {
                await v3("/topics/" + t + "/configs/" + enc(cfg), {
                    method: "PUT", json: { value: input.value } });
                out.textContent = cfg + " set to " + input.value;
                // Marked once the table shows the new value (what a reader of the mark sees).
                await drawConfigs();
                out.dataset.saved = cfg;
            } catch (e) {
                out.dataset.error = String(e.status || "");
                out.textContent = cfg + " not set: " + e.message +
                    (e.status ? " (" + e.status + ")" : "");
            }
        }

        async function resetConfig(cfg) {
            delete out.dataset.error;
            try {
                await v3("/topics/" + t + "/configs/" + enc(cfg), { method: "DELETE" });
                out.textContent = cfg + " reset to its default";
                // Marked once the table shows the new value (what a reader of the mark sees).
                await drawConfigs();
                out.dataset.saved = cfg;
            } catch (e) {
                out.dataset.error = String(e.status || "");
                out.textContent = cfg + " not reset: " + e.message +
                    (e.status ? " (" + e.status + ")" : "");
            }
        }

        async function drawConfigs() {
            let list;
            try {
                list = (await v3("/topics/" + t + "/configs")).data;
            } catch (e) {
                configs.replaceChildren(errorLine(e, "configs"));
                return;
            }
            const cols = [{ label: "config" }, { label: "value" }, { label: "source" },
                          { label: "actions" }];
            const rows = list.map((c) => {
                const input = h("input", { value: c.value === null ? "" : c.value,
                                           "aria-label": "value of " + c.name,
                                           dataset: { config: c.name },
                                           readOnly: Boolean(c.is_read_only) });
                const actions = c.is_read_only ? "read-only" : h("span", {},
                    h("button", { type: "button", className: "small", dataset: { save: c.name },
                                  "aria-label": "Save " + c.name,
                                  onclick: () => saveConfig(c.name, input) }, "Save"), " ",
                    c.is_default ? null : h("button", {
                        type: "button", className: "small secondary", dataset: { reset: c.name },
                        "aria-label": "Reset " + c.name + " to its default",
                        onclick: () => resetConfig(c.name) }, "Reset"));
                return row(cols, [c.name, input, c.is_default ? "default" : c.source, actions],
                           { dataset: { config: c.name } });
            });
            configs.replaceChildren(table(cols, rows, { id: "config-table" }));
        }

        async function drawGroups() {
            let list;
            try {
                list = (await api("/v1/groups")).groups;
            } catch (e) {
                groups.replaceChildren(errorLine(e, "groups"));
                return;
            }
            const reading = [];
            for (const g of list) {
                try {
                    const d = await api("/v1/groups/" + enc(g.group_id));
                    const offs = d.offsets.filter((o) => o.topic === name);
                    const assigned = d.members.some((m) => m.assignment.some(
                        (a) => a.topic === name));
                    if (offs.length > 0 || assigned) {
                        const lag = offs.filter((o) => o.lag >= 0).reduce((n, o) => n + o.lag, 0);
                        reading.push({ id: d.group_id, state: d.state,
                                       members: d.members.length, lag,
                                       committed: offs.filter((o) => o.committed_offset >= 0)
                                           .length });
                    }
                } catch (e) {
                    // gone since the listing, or not allowed
                }
            }
            const cols = [{ label: "group" }, { label: "state" }, { label: "members", num: true },
                          { label: "partitions committed", num: true },
                          { label: "lag", num: true }];
            groups.replaceChildren(reading.length === 0 ? h("p", { className: "note" },
                "no consumer group has committed offsets on this topic") :
                table(cols, reading.map((g) => row(cols, [
                    h("a", { href: "#/group/" + enc(g.id) }, g.id), g.state, String(g.members),
                    String(g.committed), String(g.lag)], { dataset: { group: g.id } })),
                      { id: "topic-group-table" }));
        }

        try {
            await drawPartitions();
        } catch (e) {
            parts.replaceChildren(errorLine(e, "topic " + name));
            return {};
        }
        await drawConfigs();
        await drawGroups();
        return {
            async refresh() {
                await drawPartitions();
                await drawGroups();
            },
        };
    },
});

export { go };
