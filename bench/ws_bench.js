// WebSocket delivery benchmarks for scripts/run-bench --only http, with node's `ws` (the
// package installed under tests/integration/js; run-bench sets NODE_PATH).
//
//   node ws_bench.js consume <url> <topic> <records> [encoding]
//       subscribes from the earliest offset and reads <records> records; records/s
//   node ws_bench.js latency <url> <topic> <records> [encoding]
//       subscribes from the latest offset, tells run-bench it is ready ("ready" on stdout),
//       and reads <records> records whose values start with their send time (microseconds
//       since the epoch); produce-to-socket latency percentiles
//   node ws_bench.js decode <records> [value bytes]
//       no server: builds frames of both encodings as sluice writes them (100 B values, one
//       partition, frames of 512 KiB) and times JSON.parse plus sluice.js's decodeRecords
//       over all of them, 12 rounds each; how the compact layout was chosen
//
// [encoding] is "records" (the default frame, asked for by leaving "encoding" out of the
// subscribe) or "compact"; every frame is decoded into record objects with sluice.js's
// decodeRecords, as the browser client does. Prints one JSON line. Bounded by the caller's
// timeout.
'use strict';
const path = require('node:path');
const { decodeRecords } = require(path.join(__dirname, '..', 'gateway', 'http', 'ui',
                                            'sluice.js'));

const [mode, ...rest] = process.argv.slice(2);

function nowMicros() {
  return (performance.timeOrigin + performance.now()) * 1000;
}

function deliver(url, topic, count, encoding) {
  const WebSocket = require('ws');
  const ws = new WebSocket(url, { perMessageDeflate: false });
  let received = 0;
  let frames = 0;
  let bytes = 0;
  let started = 0;
  const latencies = [];

  ws.on('open', () => {
    const from = mode === 'consume' ? 'earliest' : 'latest';
    const sub = { op: 'subscribe', id: 1, topics: [topic], from };
    if (encoding !== 'records') {
      sub.encoding = encoding;
    }
    ws.send(JSON.stringify(sub));
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
    frames += 1;
    bytes += data.length;
    const now = nowMicros();
    for (const r of decodeRecords(msg)) {
      if (mode === 'latency') {
        latencies.push((now - Number(r.value.split(' ')[0])) / 1000);
      }
      received += 1;
    }
    if (received >= count) {
      const secs = Number(process.hrtime.bigint() - started) / 1e9;
      const out = { mode, encoding, records: received, seconds: secs,
                    records_per_s: received / secs, frames, bytes_per_record: bytes / received };
      if (mode === 'latency') {
        latencies.sort((a, b) => a - b);
        const pct = (p) => latencies[Math.min(latencies.length - 1,
                                              Math.floor(p * latencies.length))];
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
}

/** Frames of `count` records of `size` B in both encodings, ~512 KiB each, as sluice writes. */
function syntheticFrames(count, size) {
  const value = Array.from({ length: size }, (_, i) => String.fromCharCode(97 + i % 26)).join('');
  const perFrame = Math.max(1, Math.floor((512 * 1024) / (size + 110)));
  const t0 = 1764700000000;
  const ts = (i) => t0 + Math.floor(i / 50); // batches of 50 records share a timestamp
  const defaults = [];
  const compact = [];
  for (let s = 0; s < count; s += perFrame) {
    const n = Math.min(perFrame, count - s);
    const recs = [];
    const run = { topic: 'consume-0-0', partition: 0, base_offset: s, base_timestamp: ts(s),
                  values: [], timestamps: [] };
    for (let i = s; i < s + n; i++) {
      recs.push({ topic: 'consume-0-0', partition: 0, offset: i, timestamp: ts(i), key: null,
                  value, headers: {} });
      run.values.push(value);
      run.timestamps.push(i === s ? 0 : ts(i) - ts(i - 1));
    }
    defaults.push(JSON.stringify({ op: 'records', id: 1, records: recs }));
    compact.push(JSON.stringify({ op: 'records', id: 1, encoding: 'compact', runs: [run] }));
  }
  return { default: defaults, compact };
}

function decodeBench(count, size) {
  const frames = syntheticFrames(count, size);
  const out = { mode: 'decode', records: count, value_bytes: size };
  for (const [name, list] of Object.entries(frames)) {
    const ms = [];
    for (let round = 0; round < 12; round++) {
      const t = process.hrtime.bigint();
      let n = 0;
      for (const f of list) {
        n += decodeRecords(JSON.parse(f)).length;
      }
      ms.push(Number(process.hrtime.bigint() - t) / 1e6);
      if (n !== count) {
        throw new Error(name + ' decoded ' + n + ' records');
      }
    }
    ms.sort((a, b) => a - b);
    out[name] = { bytes_per_record: list.reduce((a, f) => a + f.length, 0) / count,
                  median_ms: ms[6], min_ms: ms[0] };
  }
  console.log(JSON.stringify(out));
}

if (mode === 'decode') {
  decodeBench(Number(rest[0] || 200000), Number(rest[1] || 100));
} else if (mode === 'consume' || mode === 'latency') {
  const [url, topic, countText, encoding] = rest;
  deliver(url, topic, Number(countText), encoding || 'records');
} else {
  console.log(JSON.stringify({ error: 'mode must be consume, latency or decode' }));
  process.exit(2);
}
