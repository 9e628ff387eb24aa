// ACLs (#/acls): the cluster's ACLs over REST v3 (GET, POST and DELETE
// /v3/clusters/{c}/acls, in upstream mode the cluster's, and then also the ones this gateway
// enforces: GET, POST and DELETE /v1/console/gateway-acls, changed for the whole fleet),
// filtered by resource type, resource name, pattern type, principal, operation and permission;
// creating one (every field, checked here before it is sent; the server's refusal shown as it
// says it); deleting one after a confirmation. Listing needs DESCRIBE on the cluster and
// changing ALTER, as Kafka's DescribeAcls, CreateAcls and DeleteAcls do: a refusal is shown
// with the server's message.
import {
    api, confirmAction, errorLine, h, refreshNow, register, row, state, table, v3,
} from "./console.js";

const resourceTypes = ["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"];
const patternTypes = ["LITERAL", "PREFIXED"];
const operations = ["ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
                    "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"];
const permissions = ["ALLOW", "DENY"];
const clusterName = "kafka-cluster"; // the one name of the CLUSTER resource

function select(id, values, first) {
    return h("select", { id }, (first ? [first] : []).concat(values).map(
        (v) => h("option", { value: v }, v)));
}

/** The query naming `acl` exactly (every field: DELETE removes that ACL only). */
function exactQuery(acl) {
    const q = new URLSearchParams();
    for (const k of ["resource_type", "resource_name", "pattern_type", "principal", "host",
                     "operation", "permission"]) {
        q.set(k, acl[k]);
    }
    return q.toString();
}

/** What is wrong with an ACL about to be created, or null. */
function invalid(acl) {
    if (acl.resource_name === "") {
        return "the resource name is required (" + clusterName + " for the cluster)";
    }
    if (acl.resource_type === "CLUSTER" && acl.resource_name !== clusterName) {
        return "the cluster's resource name is " + clusterName;
    }
    if (!/^[^:\s]+:\S.*$/.test(acl.principal)) {
        return "the principal is TYPE:NAME, as User:alice (User:* for every user)";
    }
    if (acl.host === "") {
        return "the host is required (* for every host)";
    }
    return null;
}

/** The create form: `id` prefixes its elements' ids ("acl-create": the cluster's ACLs,
 *  "gateway-acl-create": this gateway's), `send(acl)` stores one. */
function createForm(out, id, title, send) {
    const type = select(id + "-type", resourceTypes);
    const name = h("input", { id: id + "-name", autocomplete: "off", required: true,
                              placeholder: "orders" });
    const pattern = select(id + "-pattern", patternTypes);
    const principal = h("input", { id: id + "-principal", autocomplete: "off",
                                   required: true, placeholder: "User:alice" });
    const host = h("input", { id: id + "-host", autocomplete: "off", value: "*",
                              required: true });
    const operation = select(id + "-operation", operations);
    const permission = select(id + "-permission", permissions);
    type.addEventListener("change", () => {
        if (type.value === "CLUSTER") {
            name.value = clusterName;
            pattern.value = "LITERAL";
        } else if (name.value === clusterName) {
            name.value = "";
        }
    });
    return h("form", { id, className: "panel", noValidate: true,
                       onsubmit: async (ev) => {
        ev.preventDefault();
        delete out.dataset.error;
        delete out.dataset.created;
        const acl = {
            resource_type: type.value, resource_name: name.value.trim(),
            pattern_type: pattern.value, principal: principal.value.trim(),
            host: host.value.trim(), operation: operation.value, permission: permission.value,
        };
        const bad = invalid(acl);
        if (bad) {
            out.dataset.error = "invalid";
            out.textContent = "not created: " + bad;
            return;
        }
        out.textContent = "creating…";
        try {
            await send(acl);
            out.textContent = "created: " + acl.permission + " " + acl.principal + " " +
                acl.operation + " on " + acl.resource_type + " " + acl.resource_name +
                (acl.pattern_type === "PREFIXED" ? "*" : "");
            out.dataset.created = acl.principal + " " + acl.operation + " " + acl.resource_name;
            refreshNow();
        } catch (e) {
            out.dataset.error = String(e.status || "");
            out.textContent = "not created: " + (e.status === 403 ? "not allowed: " : "") +
                e.message + (e.status ? " (" + e.status + ")" : "");
        }
    } },
    h("h2", {}, title),
    h("label", {}, "Resource type", type), h("label", {}, "Resource name", name),
    h("label", {}, "Pattern type", pattern), h("label", {}, "Principal", principal),
    h("label", {}, "Host", host), h("label", {}, "Operation", operation),
    h("label", {}, "Permission", permission),
    h("button", { type: "submit", id: id + "-submit" }, "Create"));
}

register("acls", {
    title: "ACLs",
    async render(view) {
        const out = h("output", { id: "acl-action", className: "note", role: "status" });
        const count = h("span", { id: "acl-count", className: "count" }, "…");
        const holder = h("div", { className: "wide-block" });
        const f = {
            resource_type: select("acl-filter-type", resourceTypes, "ANY"),
            resource_name: h("input", { id: "acl-filter-name", type: "search",
                                        autocomplete: "off", placeholder: "any" }),
            pattern_type: select("acl-filter-pattern", ["MATCH"].concat(patternTypes), "ANY"),
            principal: h("input", { id: "acl-filter-principal", type: "search",
                                    autocomplete: "off", placeholder: "any (User:alice)" }),
            operation: select("acl-filter-operation", operations, "ANY"),
            permission: select("acl-filter-permission", permissions, "ANY"),
        };
        const filterForm = h("form", { id: "acl-filter", className: "filters",
                                       onsubmit: (ev) => { ev.preventDefault(); refreshNow(); } },
            h("label", {}, "Resource type", f.resource_type),
            h("label", {}, "Resource name", f.resource_name),
            h("label", {}, "Pattern type", f.pattern_type),
            h("label", {}, "Principal", f.principal),
            h("label", {}, "Operation", f.operation),
            h("label", {}, "Permission", f.permission),
            h("button", { type: "submit", id: "acl-filter-submit" }, "Filter"));
        // Which ACLs these are: in upstream mode the cluster's (REST v3's contract), not the
        // ones this gateway enforces on its own clients; the page says so and where those are.
        const scope = h("p", { id: "acl-scope", className: "note" },
                        "The cluster's ACLs (REST v3 …/acls).");
        // Upstream mode: the ACLs this gateway enforces, listed (with the same filter) under
        // the cluster's; created and deleted here for every gateway of the fleet (through
        // _sluice_security, as `sluice acls --upstream` does).
        const gatewayCount = h("span", { id: "gateway-acl-count", className: "count" }, "…");
        const gatewayHolder = h("div", { className: "wide-block" });
        const gatewayOut = h("output", { id: "gateway-acl-action", className: "note",
                                         role: "status" });
        const gatewayForm = createForm(gatewayOut, "gateway-acl-create",
                                       "Create an ACL of this gateway",
                                       (acl) => api("/v1/console/gateway-acls",
                                                    { method: "POST", json: acl }));
        const gatewayPanel = h("section", { className: "panel", id: "gateway-acls", hidden: true },
            h("h2", {}, "This gateway's ACLs ", gatewayCount),
            h("p", { className: "note" }, "What this gateway enforces on its own clients " +
              "(REST, WebSocket, SSE, SQS, the Kafka proxy): the fleet's, in _sluice_security, " +
              "over this gateway's data dir. A change made here is stored in _sluice_security " +
              "and applies to every gateway of the fleet (as " +
              "`sluice acls add|remove ... --upstream BOOTSTRAP` does)."),
            gatewayOut, gatewayHolder, gatewayForm);
        view.append(h("section", { className: "panel", id: "acls" },
                      h("h2", {}, "ACLs ", count), scope, filterForm, out, holder),
                    createForm(out, "acl-create", "Create an ACL",
                               (acl) => v3("/acls", { method: "POST", json: acl })),
                    gatewayPanel);
        let upstream = false;
        api("/v1/console/overview").then((info) => {
            scope.dataset.mode = info.mode;
            if (info.mode === "upstream") {
                upstream = true;
                gatewayPanel.hidden = false;
                scope.textContent = "These are the Kafka cluster's ACLs (REST v3 …/acls, as " +
                    "the Confluent REST Proxy manages them): what clients of the cluster and " +
                    "this gateway's own principal there are subject to. The ACLs this gateway " +
                    "enforces on its clients are listed below, where they can be changed too " +
                    "(the fleet's, in _sluice_security, as `sluice acls --upstream` changes " +
                    "them).";
                refreshNow();
            }
        }).catch(() => {});

        const gatewayCols = [{ label: "resource type" }, { label: "resource name" },
                             { label: "pattern" }, { label: "principal" }, { label: "host" },
                             { label: "operation" }, { label: "permission" },
                             { label: "actions" }];
        async function refreshGateway(query) {
            let acls;
            try {
                acls = (await api("/v1/console/gateway-acls" + (query ? "?" + query : ""))).data;
            } catch (e) {
                gatewayHolder.replaceChildren(errorLine(e, "this gateway's ACLs"));
                gatewayCount.textContent = "–";
                return;
            }
            state.last.gatewayAcls = acls;
            gatewayHolder.replaceChildren(table(gatewayCols, acls.map((a) => row(gatewayCols, [
                a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host,
                a.operation, a.permission, deleteButton(a, true),
            ], { dataset: { principal: a.principal, operation: a.operation,
                            resource: a.resource_name, permission: a.permission } })),
                { id: "gateway-acl-table", bodyId: "gateway-acl-rows" }));
            gatewayCount.textContent = String(acls.length);
        }

        async function deleteAcl(acl, gateway) {
            const where = gateway ? gatewayOut : out;
            const what = acl.permission + " " + acl.principal + " " + acl.operation + " on " +
                acl.resource_type + " " + acl.resource_name + " (" + acl.pattern_type +
                ", host " + acl.host + ")";
            const whose = gateway ? "this gateway's ACL (for every gateway of the fleet) "
                                  : "the ACL ";
            if (!await confirmAction("Delete " + whose + what + "?", "Delete ACL")) {
                return;
            }
            delete where.dataset.error;
            delete where.dataset.deleted;
            try {
                const answer = gateway
                    ? await api("/v1/console/gateway-acls?" + exactQuery(acl),
                                { method: "DELETE", json: {} })
                    : await v3("/acls?" + exactQuery(acl), { method: "DELETE" });
                where.textContent = "deleted " + answer.data.length + " ACL: " + what;
                where.dataset.deleted = acl.principal + " " + acl.operation + " " +
                    acl.resource_name;
                refreshNow();
            } catch (e) {
                where.dataset.error = String(e.status || "");
                where.textContent = "not deleted: " + (e.status === 403 ? "not allowed: " : "") +
                    e.message + (e.status ? " (" + e.status + ")" : "");
            }
        }

        function deleteButton(a, gateway) {
            return h("button", { type: "button", className: "danger small",
                                 dataset: { deleteAcl: a.principal + " " + a.operation + " " +
                                     a.resource_name },
                                 "aria-label": "Delete the ACL " + a.permission + " " +
                                     a.principal + " " + a.operation + " on " +
                                     a.resource_type + " " + a.resource_name,
                                 onclick: () => deleteAcl(a, gateway) }, "Delete");
        }

        async function refresh() {
            const q = new URLSearchParams();
            for (const [k, input] of Object.entries(f)) {
                const v = input.value.trim();
                if (v !== "" && v !== "ANY") {
                    q.set(k, v);
                }
            }
            let acls;
            const query = q.toString();
            if (upstream) {
                await refreshGateway(query);
            }
            try {
                acls = (await v3("/acls" + (query ? "?" + query : ""))).data;
            } catch (e) {
                holder.replaceChildren(errorLine(e, "ACLs"));
                count.textContent = "–";
                throw e;
            }
            state.last.acls = acls;
            const cols = [{ label: "resource type" }, { label: "resource name" },
                          { label: "pattern" }, { label: "principal" }, { label: "host" },
                          { label: "operation" }, { label: "permission" }, { label: "actions" }];
            holder.replaceChildren(table(cols, acls.map((a) => row(cols, [
                a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host,
                a.operation, a.permission, deleteButton(a, false),
            ], { dataset: { principal: a.principal, operation: a.operation,
                            resource: a.resource_name, permission: a.permission } })),
                { id: "acl-table", bodyId: "acl-rows" }));
            count.textContent = String(acls.length);
        }
        return { refresh };
    },
});
