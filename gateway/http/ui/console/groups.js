// Consumer groups (#/groups): every group the caller may describe with its state, members and
// lag, and a plot of each group's lag over the last minutes (sampled at every refresh, kept
// while the page is open); one group (#/group/<id>): members and their assignment, the lag of
// each partition (a partition with nothing committed says so, it is not a lag of 0), resetting
// an empty group's offsets (earliest, latest, a time, an offset) and deleting it.
import {
    $, api, confirmAction, errorLine, go, h, intervalMs, refreshNow, register, row, state, table,
} from "./console.js";

const enc = encodeURIComponent;
const historyMs = 10 * 60 * 1000; // the lag plot's window
const palette = ["#1f6feb", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989"];

/** Seconds as the plot's axis reads them: "-1:05" is one minute five seconds ago. */
export function minutesSeconds(s) {
    const sign = s < 0 ? "-" : "";
    const a = Math.round(Math.abs(s));
    return sign + Math.floor(a / 60) + ":" + String(a % 60).padStart(2, "0");
}

function sample(groups) {
    const lags = {};
    for (const g of groups) {
        lags[g.group_id] = g.lag;
    }
    state.lagSamples.push({ t: Date.now() / 1000, lags });
    const oldest = (Date.now() - historyMs) / 1000;
    while (state.lagSamples.length > 0 && state.lagSamples[0].t < oldest) {
        state.lagSamples.shift();
    }
}

/** [seconds before now, lag of group 0, lag of group 1, ...], null where absent. */
function plotData(groups) {
    const now = Date.now() / 1000;
    const xs = state.lagSamples.map((s) => s.t - now);
    return [xs].concat(groups.map((g) => state.lagSamples.map(
        (s) => (g in s.lags ? s.lags[g] : null))));
}

function drawPlot(el, note) {
    const groups = Array.from(new Set(state.lagSamples.flatMap((s) => Object.keys(s.lags))))
        .sort();
    if (typeof uPlot === "undefined") {
        note.textContent = "the plotting library did not load";
        return;
    }
    const same = state.plot && state.plot.root.isConnected &&
        groups.length === state.plotGroups.length &&
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
        note.textContent = "no consumer groups yet";
        return;
    }
    const opts = {
        width: Math.max(300, el.clientWidth || 800),
        height: 220,
        scales: { x: { time: false } },
        axes: [
            { label: "time before now (minutes:seconds)",
              // Ticks on whole seconds and minutes, so that no two read the same.
              incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600],
              values: (u, splits) => (state.plotTicks = splits.map(minutesSeconds)) },
            { label: "lag (records)" },
        ],
        series: [{ label: "before now", value: (u, v) => (v === null ? "–" :
            minutesSeconds(v)) }].concat(groups.map((g, i) => ({
            label: g, stroke: palette[i % palette.length], width: 2, spanGaps: false,
        }))),
    };
    state.plot = new uPlot(opts, plotData(groups), el);
    note.textContent = "lag of each group over the last " + historyMs / 60000 +
        " minutes, sampled every " + intervalMs / 1000 + " s while this page is open";
}

register("groups", {
    title: "Consumer groups",
    async render(view) {
        const count = h("span", { id: "group-count", className: "count" }, "0");
        const plot = h("div", { id: "lag-plot", className: "plot", role: "img",
                                "aria-label": "lag of each consumer group over time" });
        const note = h("p", { id: "lag-plot-note", className: "note" });
        const holder = h("div", { className: "wide-block" });
        view.append(h("section", { className: "panel", id: "groups" },
                      h("h2", {}, "Consumer groups ", count), plot, note, holder));
        if (state.plot) {
            state.plot.destroy();
            state.plot = null;
        }
        async function refresh() {
            let groups;
            try {
                groups = (await api("/v1/groups")).groups;
            } catch (e) {
                holder.replaceChildren(errorLine(e, "consumer groups"));
                throw e;
            }
            groups.sort((a, b) => (a.group_id < b.group_id ? -1 : a.group_id > b.group_id ? 1 : 0));
            state.groups = groups;
            sample(groups);
            const cols = [{ label: "group" }, { label: "state" }, { label: "type" },
                          { label: "members", num: true }, { label: "lag", num: true }];
            holder.replaceChildren(table(cols, groups.map((g) => row(cols, [
                h("a", { href: "#/group/" + enc(g.group_id) }, g.group_id), g.state, g.type,
                String(g.members), String(g.lag)], { dataset: { group: g.group_id,
                                                                lag: String(g.lag) } })),
                                         { id: "group-table", bodyId: "group-rows" }));
            count.textContent = String(groups.length);
            drawPlot(plot, note);
        }
        return { refresh };
    },
});

register("group", {
    title: "Consumer group",
    async render(view, id) {
        const g = enc(id);
        const summary = h("p", { id: "group-summary" });
        const members = h("div", { className: "wide-block", id: "group-members" });
        const lags = h("div", { className: "wide-block", id: "group-lags" });
        const out = h("output", { id: "group-action", className: "note", role: "status" });
        const topic = h("input", { id: "reset-topic", required: true, autocomplete: "off",
                                   list: "reset-topics" });
        const topics = h("datalist", { id: "reset-topics" });
        const to = h("select", { id: "reset-to" },
                     h("option", { value: "earliest" }, "earliest"),
                     h("option", { value: "latest" }, "latest"),
                     h("option", { value: "timestamp" }, "a time"),
                     h("option", { value: "offset" }, "an offset"));
        const time = h("input", { id: "reset-time", type: "datetime-local", step: "1" });
        const offset = h("input", { id: "reset-offset", type: "number", min: "0", value: "0" });
        const timeLabel = h("label", { hidden: true }, "Time (local)", time);
        const offsetLabel = h("label", { hidden: true }, "Offset", offset);
        to.addEventListener("change", () => {
            timeLabel.hidden = to.value !== "timestamp";
            offsetLabel.hidden = to.value !== "offset";
        });
        const resetButton = h("button", { type: "submit", id: "reset-submit" }, "Reset offsets");
        const deleteButton = h("button", { type: "button", id: "group-delete",
                                           className: "danger" }, "Delete group");
        const resetNote = h("p", { id: "reset-note", className: "note" });
        const resetForm = h("form", { id: "reset", className: "panel", autocomplete: "off" },
                            h("h2", {}, "Reset offsets"), resetNote,
                            h("label", {}, "Topic", topic), topics, h("label", {}, "To", to),
                            timeLabel, offsetLabel, resetButton, deleteButton, out);
        view.append(h("section", { className: "panel", id: "group-page" },
                      h("h2", {}, "Consumer group ", h("span", { id: "group-name" }, id)),
                      summary, members),
                    h("section", { className: "panel" }, h("h2", {}, "Lag by partition"), lags),
                    resetForm);
        let detail = null;

        async function draw() {
            try {
                detail = await api("/v1/groups/" + g);
            } catch (e) {
                summary.replaceChildren(errorLine(e, "group " + id));
                resetForm.hidden = e.status === 404;
                throw e;
            }
            state.last.group = detail;
            summary.textContent = "state " + detail.state + ", " + detail.members.length +
                " member(s), protocol " + (detail.protocol || "–") + ", total lag " + detail.lag;
            const mcols = [{ label: "member" }, { label: "client id" }, { label: "host" },
                           { label: "assignment" }];
            members.replaceChildren(detail.members.length === 0 ?
                h("p", { className: "note" }, "no members: the group is empty") :
                table(mcols, detail.members.map((m) => row(mcols, [
                    m.member_id, m.client_id, m.client_host,
                    m.assignment.map((a) => a.topic + "[" + a.partitions.join(",") + "]")
                        .join(" ") || "–"], { dataset: { member: m.member_id } })),
                      { id: "member-table" }));
            // Every committed partition, and every assigned one with nothing committed.
            const parts = detail.offsets.map((o) => Object.assign({}, o));
            for (const m of detail.members) {
                for (const a of m.assignment) {
                    for (const p of a.partitions) {
                        if (!parts.some((o) => o.topic === a.topic && o.partition === p)) {
                            parts.push({ topic: a.topic, partition: p, committed_offset: -1,
                                         log_end_offset: null, lag: -1, member: m.client_id });
                        }
                    }
                }
            }
            // Where nothing is committed the group view has no end offset: the partition's own.
            for (const o of parts) {
                if (o.log_end_offset === null) {
                    try {
                        o.log_end_offset = (await api("/topics/" + enc(o.topic) + "/partitions/" +
                                                      o.partition + "/offsets")).end_offset;
                    } catch (e) {
                        // not allowed, or gone: "–"
                    }
                }
            }
            parts.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 :
                a.partition - b.partition));
            const lcols = [{ label: "topic" }, { label: "partition", num: true },
                           { label: "committed offset", num: true },
                           { label: "end offset", num: true }, { label: "lag", num: true }];
            lags.replaceChildren(parts.length === 0 ?
                h("p", { className: "note" }, "nothing committed and nothing assigned") :
                table(lcols, parts.map((o) => {
                    const none = o.committed_offset < 0;
                    const tr = row(lcols, [
                        h("a", { href: "#/topic/" + enc(o.topic) }, o.topic), String(o.partition),
                        none ? "nothing committed" : String(o.committed_offset),
                        o.log_end_offset === null || o.log_end_offset < 0 ? "–" :
                            String(o.log_end_offset),
                        none ? "no commit" : o.lag < 0 ? "unknown" : String(o.lag)],
                                     { dataset: { topic: o.topic, partition: String(o.partition),
                                                  lag: none ? "none" : String(o.lag) } });
                    if (none) {
                        tr.classList.add("uncommitted");
                    }
                    return tr;
                }), { id: "lag-table", bodyId: "lag-rows" }));
            const names = Array.from(new Set(parts.map((o) => o.topic)));
            topics.replaceChildren(...names.map((n) => h("option", { value: n })));
            if (!topic.value && names.length > 0) {
                topic.value = names[0];
            }
            const empty = detail.members.length === 0;
            resetButton.disabled = !empty;
            deleteButton.disabled = !empty;
            resetNote.textContent = empty ? "The group is empty: its offsets may be reset." :
                "Offsets can be reset, and the group deleted, only when it has no members: " +
                "stop its consumers first.";
        }

        resetForm.addEventListener("submit", async (ev) => {
            ev.preventDefault();
            delete out.dataset.error;
            const body = { topic: topic.value.trim(), to: to.value };
            if (to.value === "timestamp") {
                const ms = new Date(time.value).getTime();
                if (Number.isNaN(ms)) {
                    out.dataset.error = "input";
                    out.textContent = "enter a time";
                    return;
                }
                body.timestamp = ms;
            }
            if (to.value === "offset") {
                body.offset = Number(offset.value);
            }
            const what = to.value === "timestamp" ? "the time " + time.value :
                to.value === "offset" ? "offset " + offset.value : to.value;
            if (!await confirmAction("Reset the offsets of group " + id + " on " + body.topic +
                                     " to " + what + "?", "Reset offsets")) {
                return;
            }
            try {
                const answer = await api("/v1/console/groups/" + g + "/reset-offsets",
                                         { method: "POST", json: body });
                out.dataset.reset = answer.offsets.map((o) => o.partition + ":" + o.offset)
                    .join(",");
                out.textContent = "offsets set: " + answer.offsets.map(
                    (o) => o.topic + "/" + o.partition + " → " + o.offset).join(", ");
                refreshNow();
            } catch (e) {
                out.dataset.error = String(e.status || "");
                out.textContent = "not reset: " + e.message + (e.status ? " (" + e.status + ")" : "");
            }
        });

        deleteButton.addEventListener("click", async () => {
            if (!await confirmAction("Delete consumer group " + id + " and its committed " +
                                     "offsets?", "Delete " + id)) {
                return;
            }
            delete out.dataset.error;
            try {
                await api("/v1/console/groups/" + g, { method: "DELETE", json: {} });
                out.dataset.deleted = id;
                go("#/groups");
            } catch (e) {
                out.dataset.error = String(e.status || "");
                out.textContent = "not deleted: " + e.message +
                    (e.status ? " (" + e.status + ")" : "");
            }
        });

        try {
            await draw();
        } catch (e) {
            return {};
        }
        return { refresh: draw };
    },
});
