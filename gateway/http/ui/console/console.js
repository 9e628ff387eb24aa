// The sluice console (console/index.html, served at / to browsers): a page per view, chosen
// by the URL's hash (#/overview, #/topics, #/topic/<name>, #/messages, #/tail, #/produce,
// #/groups, #/group/<id>, #/queues, #/acls, #/users). This module is the frame: signing in, the
// API helper, the confirmation dialog, the router and the refresh timer; each page is its own
// module (overview.js, topics.js, messages.js, groups.js, queues.js, acls.js, users.js) that
// draws into <main id="view">.
//
// With http.authentication on, the page asks GET /v1/console/auth how to sign in and shows
// its own form: a user name and password are exchanged once for a session token (POST
// /v1/console/session), a JWT is used as it is. The token (never the password) is kept in
// sessionStorage for this tab, sent as `Authorization: Bearer` and as /ws's `access_token=`;
// a 401 later (expired, users changed) brings the form back. Signing out ends the session on
// the server too (DELETE /v1/console/session: every session of that user there). Requests carry X-Sluice-Console,
// so a 401 never makes the browser show its own password prompt. A 403 is shown on the page
// with the server's message (which ACL refused what).
//
// ?interval=<ms> sets the refresh interval of the page shown (default 2000).
// window.sluiceConsole exposes the state for scripts and tests; document.body.dataset.page
// names the page shown and dataset.polls counts its refreshes.

export const params = new URLSearchParams(location.search);
export const intervalMs = Math.max(250, Number(params.get("interval")) || 2000);
export const $ = (id) => document.getElementById(id);

export const state = {
    polls: 0,
    page: null,
    cluster: null,     // the v3 cluster id
    lagSamples: [],    // [{t: seconds, lags: {group: lag}}], kept across pages
    plot: null,
    plotGroups: [],
    tasks: {},         // queue -> the latest move task seen
    errors: [],
    last: {},          // the last answers each page drew, by page
};
window.sluiceConsole = state;

// --- building the page ---------------------------------------------------------------------

/** An element: h("td", {className: "num"}, "12"); attributes starting with "on" are
 *  listeners, "dataset" an object, other keys properties or attributes. */
export function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
        if (v === undefined || v === null || v === false) {
            continue;
        }
        if (k.startsWith("on")) {
            el.addEventListener(k.slice(2), v);
        } else if (k === "dataset") {
            Object.assign(el.dataset, v);
        } else if (k in el && typeof v !== "string") {
            el[k] = v;
        } else if (k === "className" || k === "textContent" || k === "value" || k === "htmlFor") {
            el[k] = v;
        } else {
            el.setAttribute(k, v === true ? "" : v);
        }
    }
    for (const c of children.flat()) {
        if (c === null || c === undefined || c === false) {
            continue;
        }
        el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
}

/** A table: columns [{label, num}] (num: right-aligned, heading included), rows of cells
 *  (a Node or text; a number is right-aligned when its column is). */
export function table(columns, rows, opts) {
    const o = opts || {};
    const head = h("tr", {}, columns.map((c) => h("th", {
        scope: "col", className: c.num ? "num" : "",
    }, c.label)));
    const body = h("tbody", { id: o.bodyId });
    for (const r of rows) {
        body.append(r instanceof Node ? r : row(columns, r));
    }
    return h("table", { id: o.id, className: o.className }, o.caption ?
        h("caption", {}, o.caption) : null, h("thead", {}, head), body);
}

export function row(columns, cells, attrs) {
    return h("tr", attrs || {}, cells.map((v, i) => h("td", {
        className: columns[i] && columns[i].num ? "num" : "",
    }, v)));
}

export function bytes(n) {
    if (n === null || n === undefined || Number.isNaN(n)) {
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

/** A page's error line: the server's message, with its status (403: which ACL refused). */
export function errorLine(e, what) {
    const status = e && e.status ? " (" + e.status + ")" : "";
    const why = e && e.status === 403 ? "not allowed: " : e && e.status === 401 ?
        "not signed in: " : "";
    return h("p", { className: "error", role: "alert", dataset: { status: String(e.status || "") } },
             (what ? what + ": " : "") + why + e.message + status);
}

/** Asks before a destructive action; resolves true when confirmed. */
export function confirmAction(text, okLabel) {
    const dialog = $("confirm");
    $("confirm-text").textContent = text;
    $("confirm-ok").textContent = okLabel || "Confirm";
    dialog.returnValue = "";
    document.body.dataset.confirm = "open";
    dialog.showModal();
    return new Promise((resolve) => {
        dialog.addEventListener("close", () => {
            delete document.body.dataset.confirm;
            resolve(dialog.returnValue === "ok");
        }, { once: true });
    });
}

// --- signing in -----------------------------------------------------------------------------

const sessionKey = "sluice.console.session";
const session = { token: null, principal: null, schemes: [] };

/** The headers of every API request: JSON, the console's mark, the session's token. */
export function apiHeaders(extra, authorization) {
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
 *  kept session is confirmed, or after the form succeeds. One sign-in at a time: a caller
 *  that comes while the form is open (a refresh meeting a 401) waits for that one. */
let signingIn = null;
function signIn(note) {
    if (!signingIn) {
        signingIn = askSignIn(note).finally(() => {
            signingIn = null;
        });
    }
    return signingIn;
}

async function askSignIn(note) {
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

// The sign-in form stays until someone signs in: Escape would close it over an empty page.
$("sign-in").addEventListener("cancel", (ev) => ev.preventDefault());

/** A 401 from the API: the session ended (expired, or the users changed). */
export class SignedOut extends Error {}

export async function getJson(path, init, options) {
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


/** The API as JSON (throws Error with .status and the server's message). */
export function api(path, init) {
    const r = Object.assign({}, init || {});
    if (r.json !== undefined) {
        r.body = JSON.stringify(r.json);
        r.headers = Object.assign({ "Content-Type": "application/json" }, r.headers || {});
        delete r.json;
    }
    return getJson(path, r);
}

/** The v3 cluster id (asked once). */
export async function clusterId() {
    if (!state.cluster) {
        const answer = await api("/v3/clusters");
        state.cluster = answer.data[0].cluster_id;
    }
    return state.cluster;
}

export async function v3(path, init) {
    return api("/v3/clusters/" + encodeURIComponent(await clusterId()) + path, init);
}

/** The WebSocket client of sluice.js, opened with the session's token. */
let client = null;
export function wsClient() {
    if (!client) {
        const scheme = location.protocol === "https:" ? "wss:" : "ws:";
        const query = session.token ? "?access_token=" + encodeURIComponent(session.token) : "";
        client = sluice.connect(scheme + "//" + location.host + "/ws" + query);
    }
    return client;
}

/** A separate WebSocket client (the message browser's), closed by the caller. */
export function newWsClient() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = session.token ? "?access_token=" + encodeURIComponent(session.token) : "";
    return sluice.connect(scheme + "//" + location.host + "/ws" + query);
}

function dropClient() {
    if (client) {
        client.close();
        client = null;
    }
}

// --- pages and the router -------------------------------------------------------------------

const pages = {};

/** Registers a page: render(view, arg) draws it and may return {refresh, dispose}. */
export function register(name, page) {
    pages[name] = page;
}

let current = null; // {name, refresh, dispose}
let timer = null;
let refreshing = false;

function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const q = raw.indexOf("?");
    const path = q < 0 ? raw : raw.slice(0, q);
    const query = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
    const slash = path.indexOf("/");
    const name = slash < 0 ? path : path.slice(0, slash);
    const arg = slash < 0 ? null : decodeURIComponent(path.slice(slash + 1));
    return { name: name || "overview", arg, query };
}

export function go(hash) {
    if (location.hash === hash) {
        show();
    } else {
        location.hash = hash;
    }
}

async function show() {
    const { name, arg, query } = parseHash();
    const page = pages[name] || pages.overview;
    if (!page) {
        return; // the pages' modules are not loaded yet: start() shows the page once they are
    }
    if (current && current.dispose) {
        current.dispose();
    }
    current = null;
    clearTimeout(timer);
    const view = $("view");
    focusKey = null;
    view.replaceChildren();
    state.page = name;
    document.body.dataset.page = name;
    delete document.body.dataset.ready;
    for (const a of document.querySelectorAll("nav a")) {
        const here = a.dataset.page === name ||
            (a.dataset.page === "topics" && name === "topic") ||
            (a.dataset.page === "groups" && name === "group");
        if (here) {
            a.setAttribute("aria-current", "page");
        } else {
            a.removeAttribute("aria-current");
        }
    }
    const me = {};
    current = me;
    let handle = {};
    try {
        handle = (await page.render(view, arg, query)) || {};
    } catch (e) {
        if (e instanceof SignedOut) {
            await signedOut();
            return;
        }
        view.append(errorLine(e, "cannot show this page"));
    }
    if (current !== me) {
        if (handle.dispose) {
            handle.dispose();
        }
        return;
    }
    Object.assign(me, handle);
    document.body.dataset.ready = name;
    document.title = (page.title || name) + " – sluice console";
    schedule(me.refresh ? 0 : null);
}

function schedule(ms) {
    clearTimeout(timer);
    if (ms !== null && current && current.refresh) {
        timer = setTimeout(refresh, ms);
    }
}

async function refresh() {
    const me = current;
    if (!me || !me.refresh || refreshing) {
        schedule(intervalMs);
        return;
    }
    refreshing = true;
    const status = $("poll-status");
    try {
        await me.refresh();
        state.errors = [];
        status.dataset.state = "open";
        status.textContent = "updated " + new Date().toLocaleTimeString();
    } catch (e) {
        refreshing = false;
        if (e instanceof SignedOut) {
            await signedOut();
            return;
        }
        state.errors = [e.message];
        status.dataset.state = "waiting";
        status.textContent = e.message;
    }
    refreshing = false;
    if (current === me) {
        state.polls += 1;
        document.body.dataset.polls = String(state.polls);
        schedule(intervalMs);
    }
}

/** Refreshes the page shown now (after an action). */
export function refreshNow() {
    schedule(0);
}

/** Ends what was shown for the principal signed in: the page (its refreshes, its
 *  subscriptions), the WebSocket, and every answer kept from them; the next principal's
 *  pages start from nothing of the last one's. */
function leavePage() {
    clearTimeout(timer);
    if (current && current.dispose) {
        current.dispose();
    }
    current = null;
    focusKey = null;
    $("view").replaceChildren();
    delete document.body.dataset.ready;
    dropClient();
    state.polls = 0;
    delete document.body.dataset.polls;
    state.lagSamples = [];
    state.tasks = {};
    state.errors = [];
    state.last = {};
    $("poll-status").textContent = "";
}

/** A 401 met by a page: the session ended. While a sign-in is already under way (a request
 *  sent before signing out, answered after), the one who started it shows the next page. */
async function signedOut() {
    if (signingIn) {
        await signingIn;
        return;
    }
    keep(null, null);
    leavePage();
    await signIn("Your session ended: sign in again.");
    show();
}

$("sign-out").addEventListener("click", async () => {
    // The server ends this user's sessions (a copy of the token is refused from now on);
    // signed out here whatever it answers.
    let note = "Signed out.";
    try {
        await api("/v1/console/session", { method: "DELETE", json: {} });
    } catch (e) {
        note = "Signed out here; the server did not end the session: " + e.message;
    }
    keep(null, null);
    leavePage();
    $("sign-in-user").value = "";
    $("sign-in-jwt").value = "";
    await signIn(note);
    show();
});

// --- keeping the focus across redraws --------------------------------------------------------
// Pages redraw their tables at every refresh: a keyboard user's focus on a button in a row
// would fall back to the top of the page every few seconds. The focused control is remembered
// by its id, else by its tag, data attributes and link, and focused again once its redrawn
// twin is in the page. A deliberate blur (the control still in the page) forgets it.

let focusKey = null;

function twins(key) {
    return Array.from($("view").querySelectorAll(key.tag)).filter(
        (el) => JSON.stringify(el.dataset) === key.data && el.getAttribute("href") === key.href);
}

function keyOf(el) {
    if (el.id) {
        return { id: el.id };
    }
    const key = { tag: el.tagName, data: JSON.stringify(el.dataset),
                  href: el.getAttribute("href") };
    key.nth = twins(key).indexOf(el); // the same link in two rows: which one
    return key;
}

function findByKey(key) {
    if (key.id) {
        return document.getElementById(key.id);
    }
    return twins(key)[key.nth] || null;
}

$("view").addEventListener("focusin", (ev) => {
    focusKey = keyOf(ev.target);
});
$("view").addEventListener("focusout", (ev) => {
    const left = ev.target;
    setTimeout(() => {
        if (left.isConnected && document.activeElement !== left &&
            !$("view").contains(document.activeElement)) {
            focusKey = null; // moved out of the page's view, or blurred on purpose
        }
    }, 0);
});
new MutationObserver(() => {
    const active = document.activeElement;
    if (!focusKey || (active && active !== document.body)) {
        return;
    }
    const el = findByKey(focusKey);
    if (el && el.isConnected && !el.disabled) {
        el.focus({ preventScroll: true });
    }
}).observe($("view"), { childList: true, subtree: true });

window.addEventListener("hashchange", show);
state.show = go; // for scripts and tests: show a page by its hash, again if it is shown

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
    await Promise.all(["overview", "topics", "messages", "groups", "queues", "acls",
                       "users"].map(
        (m) => import("./" + m + ".js")));
    show();
}

start();
