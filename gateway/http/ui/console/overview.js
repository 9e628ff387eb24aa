// The cluster overview (#/overview): version and mode, the brokers (the Kafka listeners), this
// HTTP listener, and totals (topics, partitions, records, consumer groups, queues).
import { api, h, register, row, state, table, v3 } from "./console.js";

register("overview", {
    title: "Overview",
    async render(view) {
        const box = h("section", { className: "panel", id: "overview" },
                      h("h2", {}, "Cluster overview"));
        view.append(box);
        const figures = h("dl", { id: "overview-figures", className: "figures" });
        const brokers = h("div", { id: "overview-brokers", className: "wide-block" });
        box.append(figures, brokers);

        async function refresh() {
            const info = await api("/v1/console/overview");
            let topics = [];
            let topicsError = null;
            try {
                topics = (await v3("/topics")).data;
            } catch (e) {
                topicsError = e;
            }
            let groups = null;
            try {
                groups = (await api("/v1/groups")).groups.length;
            } catch (e) {
                groups = null;
            }
            let queues = null;
            if (info.queues) {
                try {
                    queues = (await api("/v1/queues")).queues.length;
                } catch (e) {
                    queues = null;
                }
            }
            state.last.overview = { info, topics: topics.length, groups, queues };
            const partitions = topics.reduce((n, t) => n + t.partitions_count, 0);
            const item = (k, v, id) => [h("dt", {}, k), h("dd", { id }, v)];
            figures.replaceChildren(
                ...item("version", "sluice " + info.version, "ov-version"),
                ...item("mode", info.mode === "upstream" ?
                    "upstream (a gateway in front of a Kafka cluster)" :
                    "native (sluice stores the data)", "ov-mode"),
                ...item("cluster id", info.cluster_id, "ov-cluster"),
                ...item("HTTP listener", location.host, "ov-http"),
                ...item("topics", topicsError ? "– (" + topicsError.message + ")" :
                    String(topics.length), "ov-topics"),
                ...item("partitions", topicsError ? "–" : String(partitions), "ov-partitions"),
                ...item("consumer groups", groups === null ? "–" : String(groups), "ov-groups"),
                ...item("queues", info.queues ? (queues === null ? "–" : String(queues)) :
                    "no SQS front", "ov-queues"));
            const cols = [{ label: "node id", num: true }, { label: "Kafka listener" },
                          { label: "rack" }, { label: "role" }];
            brokers.replaceChildren(h("h3", {}, "Brokers"), table(cols, info.brokers.map(
                (b) => row(cols, [String(b.node_id), b.host + ":" + b.port, b.rack || "–",
                                  b.node_id === info.controller_id ? "controller" : ""],
                           { dataset: { broker: String(b.node_id) } })), { id: "broker-table" }),
                ...(info.brokers_error ? [h("p", { className: "error" }, info.brokers_error)] :
                    []));
        }
        await refresh();
        return { refresh };
    },
});
