// A node `ws` client of sluice's /ws endpoint, driven by tests/integration/test_ws.py.
//
//   node ws_receive.js <url> <topic> <count> [credit] [encoding]
//
// Subscribes to <topic> from the earliest offset and reads <count> records, in records frames
// of [encoding] ("records", the default form, unless given; "compact" frames are decoded with
// sluice.js's decodeRecords). Each record's value must be "v<i>" with i counting up from 0 in
// delivery order, and offsets must increase.
// With a [credit] above 0, the client grants that many records at a time and checks that it
// never holds more than it granted: after each window it sends two produce ops to a scratch
// topic (the topic "<topic>-scratch", which must exist) and waits for both acks before
// granting again, so that a server sending past the window would be caught before the next
// grant.
// Prints {"received": n, "first": offset, "last": offset, "frames": n} and exits 0, or prints
// the problem and exits 1. The test bounds the run with its own timeout.
'use strict';
const path = require('node:path');
const WebSocket = require('ws');
const { decodeRecords } = require(path.join(__dirname, '..', '..', '..', 'gateway', 'http', 'ui',
                                            'sluice.js'));

const [url, topic, countText, creditText, encodingText] = process.argv.slice(2);
const count = Number(countText);
const credit = creditText ? Number(creditText) : 0;
const encoding = encodingText || 'records';
const ws = new WebSocket(url);
let received = 0;
let granted = 0;
let frames = 0;
let first = -1;
let last = -1;
let pendingAcks = 0;
let nextId = 1;

function fail(why) {
  console.log(JSON.stringify({ error: why, received }));
  process.exit(1);
}

function grant() {
  granted += credit;
  ws.send(JSON.stringify({ op: 'credit', records: credit }));
}

ws.on('open', () => {
  if (credit > 0) {
    grant();
  }
  ws.send(JSON.stringify({ op: 'subscribe', id: 'sub', topics: [topic], from: 'earliest',
                           encoding }));
});

ws.on('message', (data, isBinary) => {
  if (isBinary) {
    fail('binary frame from the server');
  }
  const msg = JSON.parse(data.toString());
  if (msg.op === 'error') {
    fail('server error: ' + JSON.stringify(msg));
  }
  if (msg.op === 'ack') {
    pendingAcks -= 1;
    if (pendingAcks === 0 && received < count) {
      grant();
    }
    return;
  }
  if (msg.op !== 'records') {
    return;
  }
  frames += 1;
  if (msg.id !== 'sub') {
    fail('records frame without the subscription id');
  }
  if ((msg.encoding || 'records') !== encoding) {
    fail('a frame in encoding ' + msg.encoding + ', not ' + encoding);
  }
  for (const r of decodeRecords(msg)) {
    if (r.value !== 'v' + received) {
      fail('record ' + received + ' has value ' + r.value + ' at offset ' + r.offset);
    }
    if (r.offset <= last) {
      fail('offset ' + r.offset + ' after ' + last);
    }
    if (first < 0) {
      first = r.offset;
    }
    last = r.offset;
    received += 1;
  }
  if (credit > 0 && received > granted) {
    fail('received ' + received + ' records with ' + granted + ' granted');
  }
  if (received >= count) {
    console.log(JSON.stringify({ received, first, last, frames, granted }));
    ws.close();
    process.exit(0);
  }
  if (credit > 0 && received === granted) {
    // The window is used up: two round trips, then grant again.
    pendingAcks = 2;
    for (let i = 0; i < 2; i++) {
      ws.send(JSON.stringify({ op: 'produce', id: nextId++, topic: topic + '-scratch',
                               value: 'x' }));
    }
  }
});

ws.on('error', (e) => fail('socket error: ' + e.message));
ws.on('close', () => {
  if (received < count) {
    fail('closed early');
  }
});
