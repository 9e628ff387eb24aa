// node-rdkafka (librdkafka 2.12) as a KIP-848 member (group.protocol=consumer) for
// test_consumer_offsets_layout.py:
//   node offsets_layout_rdkafka.js BOOTSTRAP TOPIC GROUP COUNT
// Joins GROUP, reads COUNT records of TOPIC, commits the positions synchronously, prints
// "committed <JSON [{partition, offset}]>" and "ready", stays in the group until its stdin
// closes, then leaves (disconnect) and prints "ok". Exits non-zero with the reason otherwise.
'use strict';
const Kafka = require('node-rdkafka');

const [bootstrap, topic, group, countArg] = process.argv.slice(2);
const count = Number(countArg);

function call(fn) {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

async function waitFor(pred, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await pred()) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error('timed out waiting for ' + what);
    }
    await new Promise(r => setTimeout(r, 50));
  }
}

async function main() {
  const c = new Kafka.KafkaConsumer({
    'metadata.broker.list': bootstrap, 'group.id': group, 'client.id': 'kip848-client',
    'group.protocol': 'consumer', 'enable.auto.commit': false,
  }, { 'auto.offset.reset': 'earliest' });
  const next = new Map();  // partition -> next offset
  let read = 0;
  c.on('data', m => {
    read++;
    next.set(m.partition, m.offset + 1);
  });
  c.on('event.error', () => {});
  await call(cb => c.connect({}, cb));
  c.subscribe([topic]);
  c.consume();
  await waitFor(() => read >= count, 60000, count + ' records (read ' + read + ')');
  const offsets = [...next].map(([partition, offset]) => ({ topic, partition, offset }));
  c.commitSync(offsets);
  console.log('committed ' + JSON.stringify(offsets.map(o => ({ partition: o.partition,
                                                                offset: o.offset }))));
  console.log('ready');
  await new Promise(resolve => {
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
    process.stdin.resume();
  });
  await call(cb => c.disconnect(cb));
  console.log('ok');
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
