// A headless Chromium page driven line by line from stdin, for the Python browser tests
// (tests/integration/test_browser.py): each line is one JSON command, answered by one JSON
// line on stdout, {"ok": true, "value": ...} or {"ok": false, "error": "..."}. Every wait has
// the timeout the command gives. Stdin's end closes the browser and removes its profile.
//
// Commands: {"cmd": "goto", "url"} | {"cmd": "reload"} | {"cmd": "wait", "expr", "timeout"}
// (until the page expression is truthy; answers its value) | {"cmd": "eval", "expr"} |
// {"cmd": "fill", "selector", "value"} | {"cmd": "click", "selector"} |
// {"cmd": "screenshot", "path"} | {"cmd": "errors"} (console errors and page errors so far).
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
        default:
            throw new Error("unknown command " + JSON.stringify(c.cmd));
    }
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
            answer = { ok: true, value: await run(browser, JSON.parse(line)) };
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
