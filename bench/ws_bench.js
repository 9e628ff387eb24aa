// WebSocket delivery benchmarks for scripts/run-bench --only http, with node's `ws` (the
// package installed under tests/integration/js; run-bench sets NODE_PATH).
//
//   node ws_bench.js consume <url> <topic> <records>
//       subscribes from the earliest offset and reads <records> records; records/s
//   node ws_bench.js latency <url> <topic> <records>
//       subscribes from the latest offset, tells run-bench it is ready ("ready" on stdout),
//       and reads <records> records whose values start with their send time (microseconds
//       since the epoch); produce-to-socket latency percentiles
//
// Prints one JSON line. Bounded by the caller's timeout.
'use strict';
const WebSocket = require('ws');

const [mode, url, topic, countText] = process.argv.slice(2);
const count = Number(countText);
const ws = new WebSocket(url, { perMessageDeflate: false });
let received = 0;
let started = 0;
const latencies = [];

function nowMicros() {
  return (performance.timeOrigin + performance.now()) * 1000;
}

ws.on('open', () => {
  const from = mode === 'consume' ? 'earliest' : 'latest';
  ws.send(JSON.stringify({ op: 'subscribe', id: 1, topics: [topic], from }));
});

ws.on('message', (data) => {
  const msg = JSON.parse(data.toString());
  if (msg.op === 'subscribed') {
    if (mode === 'latency') {
      console.log('ready');
    }
    return;
  }
  if (msg.op === 'error') {
    console.log(JSON.stringify({ error: msg }));
    process.exit(1);
  }
  if (msg.op !== 'records') {
    return;
  }
  if (started === 0) {
    started = process.hrtime.bigint();
  }
  const now = nowMicros();
  for (const r of msg.records) {
    if (mode === 'latency') {
      latencies.push((now - Number(r.value.split(' ')[0])) / 1000);
    }
    received += 1;
  }
  if (received >= count) {
    const secs = Number(process.hrtime.bigint() - started) / 1e9;
    const out = { mode, records: received, seconds: secs, records_per_s: received / secs };
    if (mode === 'latency') {
      latencies.sort((a, b) => a - b);
      const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
      out.p50_ms = pct(0.5);
      out.p99_ms = pct(0.99);
      out.p999_ms = pct(0.999);
      out.max_ms = latencies[latencies.length - 1];
    }
    console.log(JSON.stringify(out));
    process.exit(0);
  }
});

ws.on('error', (e) => {
  console.log(JSON.stringify({ error: e.message }));
  process.exit(1);
});
