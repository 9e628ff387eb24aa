// A headless Chromium page driven line by line from stdin, for the Python browser tests
// (tests/integration/test_browser.py): each line is one JSON command, answered by one JSON
// line on stdout, {"ok": true, "value": ...} or {"ok": false, "error": "..."}. Every wait has
// the timeout the command gives. Stdin's end closes the browser and removes its profile.
//
// Commands: {"cmd": "goto", "url"} | {"cmd": "reload"} | {"cmd": "wait", "expr", "timeout"}
// (until the page expression is truthy; answers its value) | {"cmd": "eval", "expr"} |
// {"cmd": "fill", "selector", "value"} | {"cmd": "click", "selector"} |
// {"cmd": "screenshot", "path"} | {"cmd": "errors"} (console errors and page errors so far) |
// {"cmd": "select", "selector", "value"} | {"cmd": "press", "key"} (on the focused element) |
// {"cmd": "axe", "tags"?} (runs axe-core on the page: its violations, each with the impact,
// the rule, its help and the first nodes' selectors) | {"cmd": "tab_walk", "max"} (presses Tab
// up to max times from the top of the page: what took the focus, in order, as
// {id, tag, text, label} objects).
"use strict";

const readline = require("node:readline");
const { launch } = require("./chromium");

const defaultTimeoutMs = 30000;

async function run(browser, c) {
    const page = browser.page;
    const timeout = c.timeout || defaultTimeoutMs;
    switch (c.cmd) {
        case "goto":
            await page.goto(c.url, { timeout, waitUntil: "load" });
            return page.url();
        case "reload":
            await page.reload({ timeout, waitUntil: "load" });
            return page.url();
        case "wait": {
            const handle = await page.waitForFunction(c.expr, null, { timeout, polling: 50 });
            return await handle.jsonValue();
        }
        case "eval":
            return await page.evaluate(c.expr);
        case "fill":
            await page.fill(c.selector, c.value, { timeout });
            return null;
        case "click":
            await page.click(c.selector, { timeout });
            return null;
        case "screenshot":
            await page.screenshot({ path: c.path, fullPage: true, timeout });
            return c.path;
        case "errors":
            return browser.errors.slice();
        case "select":
            await page.selectOption(c.selector, c.value, { timeout });
            return null;
        case "press":
            await page.keyboard.press(c.key);
            return null;
        case "axe":
            return await runAxe(page, c.tags);
        case "tab_walk":
            return await tabWalk(page, c.max || 200);
        default:
            throw new Error("unknown command " + JSON.stringify(c.cmd));
    }
}

/** axe-core's file: the npm package here (tests/integration/js's dependencies), or the path in
 *  SLUICE_AXE_CORE. */
function axePath() {
    if (process.env.SLUICE_AXE_CORE) {
        return process.env.SLUICE_AXE_CORE;
    }
    try {
        return require.resolve("axe-core/axe.min.js");
    } catch (e) {
        throw new Error("axe-core is not installed in tests/integration/js (scripts/install-deps " +
                        "installs it; or set SLUICE_AXE_CORE to its axe.min.js)");
    }
}

async function runAxe(page, tags) {
    if (!(await page.evaluate("typeof window.axe !== 'undefined'"))) {
        await page.addScriptTag({ path: axePath() });
    }
    const only = tags || ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"];
    return await page.evaluate(async (t) => {
        const result = await window.axe.run(document, { runOnly: { type: "tag", values: t } });
        return result.violations.map((v) => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
        }));
    }, only);
}

async function tabWalk(page, max) {
    await page.evaluate(() => {
        if (document.activeElement) {
            document.activeElement.blur();
        }
        window.scrollTo(0, 0);
    });
    // Tab goes on from where the focus last was: past the page's last element it leaves the
    // page once (nothing focused), then starts again at the top.
    const seen = [];
    let outside = 0;
    for (let i = 0; i < max; i += 1) {
        await page.keyboard.press("Tab");
        const f = await page.evaluate(() => {
            const el = document.activeElement;
            if (!el || el === document.body) {
                return null;
            }
            return { id: el.id || "", tag: el.tagName.toLowerCase(),
                     text: (el.textContent || "").trim().slice(0, 60),
                     label: el.getAttribute("aria-label") || "",
                     data: Object.assign({}, el.dataset) };
        });
        if (f === null) {
            outside += 1;
            if (outside > 1) {
                break;
            }
            continue;
        }
        if (seen.length > 0 && JSON.stringify(seen[0]) === JSON.stringify(f)) {
            break; // around the page once
        }
        seen.push(f);
    }
    return seen;
}

async function main() {
    const browser = await launch();
    process.stdout.write(JSON.stringify({ ok: true, value: "ready" }) + "\n");
    const lines = readline.createInterface({ input: process.stdin });
    for await (const line of lines) {
        if (!line.trim()) {
            continue;
        }
        let answer;
        try {
            const value = await run(browser, JSON.parse(line));
            answer = { ok: true, value: value === undefined ? null : value };
        } catch (e) {
            answer = { ok: false, error: String(e && e.stack || e) };
        }
        process.stdout.write(JSON.stringify(answer) + "\n");
    }
    await browser.close();
}

main().catch((e) => {
    process.stderr.write(String(e && e.stack || e) + "\n");
    process.exit(1);
});
