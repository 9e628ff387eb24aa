// Queues (#/queues): each queue's depth (available), in flight, delayed, oldest message and its
// dead-letter queue; on a dead-letter queue a redrive (after a confirmation, at a chosen rate)
// with its move task's progress; purge (after a confirmation). The queues are the SQS front's
// (native, or over the cluster in upstream mode): without an SQS front the page says so.
import {
    api, confirmAction, errorLine, h, refreshNow, register, row, state, table,
} from "./console.js";

const enc = encodeURIComponent;

function taskText(t) {
    return t.status.toLowerCase() + ": " + t.moved + " of " + t.to_move + " moved" +
        (t.max_per_second ? " (at most " + t.max_per_second + "/s)" : "") +
        (t.failure_reason ? " (" + t.failure_reason + ")" : "");
}

register("queues", {
    title: "Queues",
    async render(view) {
        const info = await api("/v1/console/overview");
        const count = h("span", { id: "queue-count", className: "count" }, "0");
        const holder = h("div", { className: "wide-block" });
        const out = h("output", { id: "queue-action", className: "note", role: "status" });
        view.append(h("section", { className: "panel", id: "queues" },
                      h("h2", {}, "Queues ", count), out, holder));
        if (!info.queues) {
            holder.append(h("p", { className: "note", id: "queues-unavailable" },
                            "Queues are the SQS front's: this server runs without it " +
                            "(--sqs off), so it has none."));
            return {};
        }
        const errors = {};

        async function redrive(queue, sources) {
            const rate = await askRate(queue, sources);
            if (rate === null) {
                return;
            }
            delete errors[queue];
            try {
                const body = rate === "" ? {} : { max_per_second: Number(rate) };
                const answer = await api("/v1/queues/" + enc(queue) + "/redrive",
                                         { method: "POST", json: body });
                state.tasks[queue] = { task_handle: answer.task_handle, status: "RUNNING",
                                       moved: 0, to_move: 0 };
            } catch (e) {
                errors[queue] = "redrive failed: " + e.message +
                    (e.status ? " (" + e.status + ")" : "");
            }
            refreshNow();
        }

        /** The confirmation of a redrive, with its rate: "" for as fast as it goes, null when
         *  cancelled. */
        async function askRate(queue, sources) {
            const rate = document.getElementById("redrive-rate-" + queue);
            const value = rate ? rate.value.trim() : "";
            if (value !== "" && !(Number.isInteger(Number(value)) && Number(value) >= 1 &&
                                  Number(value) <= 500)) {
                errors[queue] = "the rate is a whole number of messages a second, 1 to 500";
                refreshNow();
                return null;
            }
            const ok = await confirmAction("Move every message of " + queue + " back to " +
                                           sources.join(", ") + (value ? " at " + value +
                                           " messages a second" : "") + "?", "Redrive");
            return ok ? value : null;
        }

        async function purge(queue) {
            if (!await confirmAction("Delete every message in queue " + queue +
                                     "? This cannot be undone.", "Purge " + queue)) {
                return;
            }
            delete out.dataset.error;
            try {
                await api("/v1/console/queues/" + enc(queue) + "/purge",
                          { method: "POST", json: {} });
                out.textContent = "purged " + queue;
                out.dataset.purged = queue;
            } catch (e) {
                out.dataset.error = String(e.status || "");
                out.textContent = "not purged: " + e.message +
                    (e.status ? " (" + e.status + ")" : "");
            }
            refreshNow();
        }

        async function refresh() {
            let queues;
            try {
                queues = (await api("/v1/queues")).queues;
            } catch (e) {
                holder.replaceChildren(errorLine(e, "queues"));
                throw e;
            }
            for (const q of queues) {
                if (q.dead_letter_sources.length > 0) {
                    const tasks = await api("/v1/queues/" + enc(q.name) + "/move-tasks");
                    if (tasks.tasks.length > 0) {
                        state.tasks[q.name] = tasks.tasks[0];
                    }
                }
            }
            state.queues = queues;
            const cols = [{ label: "queue" }, { label: "available", num: true },
                          { label: "in flight", num: true }, { label: "delayed", num: true },
                          { label: "oldest", num: true }, { label: "dead-letter queue" },
                          { label: "DLQ depth", num: true }, { label: "redrive" },
                          { label: "actions" }];
            // Keep what is being typed into a rate across the redraw.
            const rates = {};
            for (const input of holder.querySelectorAll("input.rate")) {
                rates[input.dataset.queue] = input.value;
            }
            const focused = document.activeElement && document.activeElement.id;
            holder.replaceChildren(table(cols, queues.map((q) => {
                const isDlq = q.dead_letter_sources.length > 0;
                const task = state.tasks[q.name];
                let action = "–";
                if (isDlq) {
                    const rate = h("input", { id: "redrive-rate-" + q.name, className: "rate",
                                              type: "number", min: "1", max: "500",
                                              placeholder: "max", value: rates[q.name] || "",
                                              dataset: { queue: q.name },
                                              "aria-label": "redrive rate of " + q.name +
                                                  " (messages a second, empty: no limit)" });
                    const button = h("button", {
                        type: "button", className: "redrive small", dataset: { queue: q.name },
                        disabled: Boolean(task && task.status === "RUNNING"),
                        title: "move this dead-letter queue's messages back to " +
                            q.dead_letter_sources.join(", "),
                        onclick: () => redrive(q.name, q.dead_letter_sources) }, "Redrive");
                    const status = h("output", { className: "note redrive-status",
                                                 dataset: { queue: q.name } });
                    if (task) {
                        status.dataset.status = task.status;
                        status.dataset.moved = String(task.moved);
                        status.textContent = " " + taskText(task);
                    }
                    if (errors[q.name]) {
                        status.dataset.error = "true";
                        status.textContent = " " + errors[q.name];
                    }
                    action = h("span", { className: "redrive-cell" }, rate, " /s ", button,
                               status);
                }
                const purgeButton = h("button", { type: "button", className: "danger small purge",
                                                  dataset: { queue: q.name },
                                                  "aria-label": "Purge queue " + q.name,
                                                  onclick: () => purge(q.name) }, "Purge");
                return row(cols, [
                    q.name, String(q.available), String(q.in_flight), String(q.delayed),
                    q.oldest_age_ms > 0 ? (q.oldest_age_ms / 1000).toFixed(0) + " s" : "–",
                    q.dead_letter_queue || "–",
                    q.dead_letter_queue_depth === null ? "–" : String(q.dead_letter_queue_depth),
                    action, purgeButton,
                ], { dataset: { queue: q.name, available: String(q.available),
                                dlq: String(isDlq) } });
            }), { id: "queue-table", bodyId: "queue-rows" }));
            if (focused && document.getElementById(focused)) {
                document.getElementById(focused).focus();
            }
            count.textContent = String(queues.length);
        }
        return { refresh };
    },
});
