// sluice.mjs: sluice.js as an ES module, for `import { connect } from "/ui/sluice.mjs"`.
// sluice.js is a plain script (no export statements, so <script src> loads it too); importing it
// runs it once and it defines the global `sluice`, which this module re-exports.
import "./sluice.js";

const api = globalThis.sluice;
export const {
    version,
    Client,
    SluiceError,
    connect,
    backoffDelay,
    decodeRecords,
    defaultWebSocketUrl,
    events,
    eventsUrl,
    parseEventId,
} = api;
export default api;
