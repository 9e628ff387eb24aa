// Launches Debian's Chromium (/usr/bin/chromium) through playwright-core, the way this machine
// runs it headless: the flags below, a fresh --user-data-dir (removed by close()), and nothing
// downloaded. Console errors and uncaught page errors are collected for the tests to show.
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { chromium } = require("playwright-core");

const executablePath = "/usr/bin/chromium";
// Without the background-networking flags Chromium keeps trying hosts this closed network
// refuses.
const flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/**
 * Starts Chromium with one page.
 * @returns {Promise<{context, page, errors: string[], close: () => Promise<void>}>}
 */
async function launch() {
    const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-chromium-"));
    const context = await chromium.launchPersistentContext(userDataDir, {
        executablePath, headless: true, args: flags, viewport: { width: 1100, height: 700 },
        timeout: 60000,
    });
    const page = context.pages()[0] || await context.newPage();
    const errors = [];
    page.on("console", (m) => {
        if (m.type() === "error") {
            const where = m.location() && m.location().url;
            errors.push("console: " + m.text() + (where ? " (" + where + ")" : ""));
        }
    });
    page.on("pageerror", (e) => errors.push("page error: " + e.message));
    const close = async () => {
        try {
            await context.close();
        } finally {
            fs.rmSync(userDataDir, { recursive: true, force: true });
        }
    };
    return { context, page, errors, close };
}

module.exports = { launch, executablePath, flags };
