// sluice.js in Node.js against the real sluice, driven by tests/integration/test_sluice_js.py.
//
//   node sluice_js_receive.js <url> <topic> <count> <format> [encoding]
//
// Subscribes with sluice.js's Client (from the earliest offset, in <format>, with [encoding]
// if given, else the client's default) and collects <count> records from onRecords. Prints
// {"records": [...], "encodings": {<frame encoding>: frames}} and exits 0, or prints
// {"error": ...} and exits 1 on an error event. The test bounds the run with its timeout.
'use strict';
const path = require('node:path');
const WebSocket = require('ws');
const sluice = require(path.join(__dirname, '..', '..', '..', 'gateway', 'http', 'ui',
                                 'sluice.js'));

const [url, topic, countText, format, encoding] = process.argv.slice(2);
const count = Number(countText);
const client = sluice.connect(url, { WebSocket, reconnect: false });
const records = [];
const encodings = {};

client.on('message', (msg) => {
  if (msg.op === 'records') {
    const e = msg.encoding || 'records';
    encodings[e] = (encodings[e] || 0) + 1;
  }
});
client.on('error', (e) => {
  console.log(JSON.stringify({ error: { code: e.code, message: e.message } }));
  process.exit(1);
});
client.on('state', (state) => {
  if (state === 'closed' && records.length < count) {
    console.log(JSON.stringify({ error: 'closed after ' + records.length + ' records' }));
    process.exit(1);
  }
});
const options = {
  topics: [topic],
  from: 'earliest',
  format,
  onRecords: (got) => {
    records.push(...got);
    if (records.length >= count) {
      console.log(JSON.stringify({ records, encodings }));
      process.exit(0);
    }
  },
};
if (encoding) {
  options.encoding = encoding;
}
client.subscribe(options);
