// Users (#/users): the SASL users of the Kafka front (/v1/console/users) with their mechanisms
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and iterations; creating one (name, password,
// mechanisms, iterations), giving one a new password, deleting one after a confirmation.
// Listing needs DESCRIBE on the cluster and changing ALTER, as Kafka's
// DescribeUserScramCredentials and AlterUserScramCredentials do; a refusal is shown with the
// server's message. A password is read from its field when sent and the field emptied; it is
// never shown nor kept.
import { api, confirmAction, errorLine, h, refreshNow, register, row, state, table } from "./console.js";

const enc = encodeURIComponent;
const mechanisms = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

function failed(out, verb, e) {
    out.dataset.error = String(e.status || "");
    out.textContent = verb + ": " + (e.status === 403 ? "not allowed: " : "") + e.message +
        (e.status ? " (" + e.status + ")" : "");
}

function createForm(out) {
    const name = h("input", { id: "user-create-name", autocomplete: "off", required: true });
    const password = h("input", { id: "user-create-password", type: "password",
                                  autocomplete: "new-password", required: true });
    const boxes = mechanisms.map((m) => h("input", {
        type: "checkbox", id: "user-create-" + m.toLowerCase(), checked: true,
        dataset: { mechanism: m } }));
    const iterations = h("input", { id: "user-create-iterations", type: "number", min: "4096",
                                    max: "16384", value: "4096", required: true });
    return h("form", { id: "user-create", className: "panel", noValidate: true,
                       onsubmit: async (ev) => {
        ev.preventDefault();
        delete out.dataset.error;
        delete out.dataset.created;
        const user = name.value.trim();
        const chosen = boxes.filter((b) => b.checked).map((b) => b.dataset.mechanism);
        const n = Number(iterations.value);
        let bad = null;
        if (user === "" || /[\s\x00-\x1f]/.test(user)) {
            bad = "the name is required, without spaces or control characters";
        } else if (password.value === "") {
            bad = "the password is required";
        } else if (chosen.length === 0) {
            bad = "choose at least one mechanism";
        } else if (!Number.isInteger(n) || n < 4096 || n > 16384) {
            bad = "iterations: a whole number from 4096 to 16384";
        }
        if (bad) {
            out.dataset.error = "invalid";
            out.textContent = "not created: " + bad;
            return;
        }
        const body = { name: user, password: password.value, mechanisms: chosen, iterations: n };
        password.value = "";
        out.textContent = "creating…";
        try {
            await api("/v1/console/users", { method: "POST", json: body });
            out.textContent = "created user " + user + " (" + chosen.join(", ") + ")";
            out.dataset.created = user;
            name.value = "";
            refreshNow();
        } catch (e) {
            failed(out, "not created", e);
        }
    } },
    h("h2", {}, "Create a user"),
    h("label", {}, "Name", name), h("label", {}, "Password", password),
    h("fieldset", { className: "mechanisms" }, h("legend", {}, "Mechanisms"),
      mechanisms.map((m, i) => h("label", { className: "check" }, boxes[i], m))),
    h("label", {}, "Iterations (SCRAM)", iterations),
    h("button", { type: "submit", id: "user-create-submit" }, "Create"));
}

function passwordForm(out) {
    const name = h("select", { id: "user-password-name" });
    const password = h("input", { id: "user-password-new", type: "password",
                                  autocomplete: "new-password", required: true });
    const form = h("form", { id: "user-password", className: "panel", noValidate: true,
                             onsubmit: async (ev) => {
        ev.preventDefault();
        delete out.dataset.error;
        delete out.dataset.changed;
        const user = name.value;
        if (!user) {
            out.dataset.error = "invalid";
            out.textContent = "not changed: choose a user";
            return;
        }
        if (password.value === "") {
            out.dataset.error = "invalid";
            out.textContent = "not changed: the new password is required";
            return;
        }
        const body = { password: password.value };
        password.value = "";
        try {
            await api("/v1/console/users/" + enc(user), { method: "PUT", json: body });
            out.textContent = "changed the password of " + user;
            out.dataset.changed = user;
            refreshNow();
        } catch (e) {
            failed(out, "not changed", e);
        }
    } },
    h("h2", {}, "Change a password"),
    h("label", {}, "User", name), h("label", {}, "New password", password),
    h("button", { type: "submit", id: "user-password-submit" }, "Change"));
    let shown = null;
    form.users = (names) => {
        if (shown === names.join("\n")) {
            return; // unchanged: the list (and a keyboard user's place in it) stays
        }
        shown = names.join("\n");
        const chosen = name.value;
        name.replaceChildren(...names.map((n) => h("option", { value: n }, n)));
        if (names.includes(chosen)) {
            name.value = chosen;
        }
    };
    return form;
}

register("users", {
    title: "Users",
    async render(view) {
        const out = h("output", { id: "user-action", className: "note", role: "status" });
        const count = h("span", { id: "user-count", className: "count" }, "0");
        const holder = h("div", { className: "wide-block" });
        const change = passwordForm(out);
        view.append(h("section", { className: "panel", id: "users" },
                      h("h2", {}, "Users ", count),
                      h("p", { className: "note" }, "The SASL users of the Kafka listeners " +
                        "(and of http.authentication=basic). Passwords are stored salted, " +
                        "never as they are."),
                      out, holder),
                    createForm(out), change);

        async function deleteUser(name) {
            if (!await confirmAction("Delete user " + name + "? Its logins stop working at " +
                                     "once.", "Delete " + name)) {
                return;
            }
            delete out.dataset.error;
            delete out.dataset.deleted;
            try {
                await api("/v1/console/users/" + enc(name), { method: "DELETE", json: {} });
                out.textContent = "deleted user " + name;
                out.dataset.deleted = name;
                refreshNow();
            } catch (e) {
                failed(out, "not deleted", e);
            }
        }

        async function refresh() {
            let users;
            try {
                users = (await api("/v1/console/users")).users;
            } catch (e) {
                holder.replaceChildren(errorLine(e, "users"));
                count.textContent = "–";
                throw e;
            }
            state.last.users = users.map((u) => u.name);
            const cols = [{ label: "user" }, { label: "mechanisms" },
                          { label: "iterations", num: true }, { label: "actions" }];
            holder.replaceChildren(table(cols, users.map((u) => row(cols, [
                u.name, u.mechanisms.map((m) => m.mechanism).join(", "),
                [...new Set(u.mechanisms.map((m) => m.iterations))].join(", "),
                h("button", { type: "button", className: "danger small",
                              dataset: { deleteUser: u.name },
                              "aria-label": "Delete user " + u.name,
                              onclick: () => deleteUser(u.name) }, "Delete"),
            ], { dataset: { user: u.name,
                            mechanisms: u.mechanisms.map((m) => m.mechanism).join(",") } })),
                { id: "user-table", bodyId: "user-rows" }));
            count.textContent = String(users.length);
            change.users(users.map((u) => u.name));
        }
        return { refresh };
    },
});
