// node-rdkafka 3.6.1 (librdkafka 2.12) consumer groups against sluice.
//   node groups_rdkafka.js BOOTSTRAP consumer  : group.protocol=consumer (KIP-848): two members
//       share a 6-partition topic with server-side assignment; one leaves, the other takes
//       over its partitions; every record is consumed and committed.
//   node groups_rdkafka.js BOOTSTRAP classic   : the classic protocol with cooperative-sticky.
// Prints "ok" or exits non-zero with the reason.
'use strict';
const Kafka = require('node-rdkafka');

const [bootstrap, mode] = process.argv.slice(2);
const topic = 'rdk-' + mode;
const group = 'rdk-' + mode + '-g';
const total = 6000;

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
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
    await new Promise(r => setTimeout(r, 100));
  }
}

function call(fn) {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

async function produce(from, count) {
  const p = new Kafka.Producer({ 'metadata.broker.list': bootstrap, 'dr_cb': true });
  await call(cb => p.connect({}, cb));
  let delivered = 0;
  p.on('delivery-report', () => { delivered++; });
  p.setPollInterval(20);
  for (let i = from; i < from + count; i++) {
    p.produce(topic, null, Buffer.from(String(i)), String(i));
  }
  await waitFor(() => delivered === count, 60000, 'deliveries');
  await call(cb => p.disconnect(cb));
}

function startConsumer(name, seen, owned) {
  const conf = { 'metadata.broker.list': bootstrap, 'group.id': group, 'client.id': name,
                 'enable.auto.commit': true, 'auto.commit.interval.ms': 200,
                 'rebalance_cb': true };
  if (mode === 'consumer') {
    conf['group.protocol'] = 'consumer';
  } else {
    conf['partition.assignment.strategy'] = 'cooperative-sticky';
    conf['session.timeout.ms'] = 6000;
    conf['heartbeat.interval.ms'] = 500;
  }
  const c = new Kafka.KafkaConsumer(conf, { 'auto.offset.reset': 'earliest' });
  c.on('rebalance', (err, assignment) => {
    for (const tp of assignment) {
      if (err.code === Kafka.CODES.ERRORS.ERR__ASSIGN_PARTITIONS) {
        owned.add(tp.partition);
      } else {
        owned.delete(tp.partition);
      }
    }
  });
  c.on('data', m => {
    const v = m.value.toString();
    seen.set(v, (seen.get(v) || 0) + 1);
  });
  c.on('event.error', () => {});
  c.connect();
  c.on('ready', () => {
    c.subscribe([topic]);
    c.consume();
  });
  return c;
}

async function main() {
  const admin = Kafka.AdminClient.create({ 'metadata.broker.list': bootstrap });
  await call(cb => admin.createTopic({ topic, num_partitions: 6, replication_factor: 1 }, cb));
  admin.disconnect();
  await produce(0, total);

  const seen = new Map();
  const ownedA = new Set();
  const ownedB = new Set();
  const a = startConsumer('a', seen, ownedA);
  await waitFor(() => ownedA.size === 6, 60000, 'a owns every partition');
  const b = startConsumer('b', seen, ownedB);
  await waitFor(() => ownedB.size === 3 && ownedA.size === 3, 60000,
                'partitions split 3/3 (a: ' + [...ownedA] + ', b: ' + [...ownedB] + ')');
  for (const p of ownedB) {
    check(!ownedA.has(p), 'a partition owned twice');
  }
  await produce(total, total);
  await waitFor(() => seen.size === 2 * total, 60000, 'every record consumed');

  await call(cb => b.disconnect(cb));
  await waitFor(() => ownedA.size === 6, 60000, 'a takes b\'s partitions back');
  await produce(2 * total, 1000);
  await waitFor(() => seen.size === 2 * total + 1000, 60000, 'records after the leave');

  // The commits are in: a fresh reader of the group gets nothing old.
  const committed = await call(cb => a.committed(null, 5000, cb));
  const sum = committed.reduce((s, tp) => s + Math.max(0, tp.offset), 0);
  check(sum > 0, 'offsets committed: ' + JSON.stringify(committed));
  await call(cb => a.disconnect(cb));
  let dups = 0;
  for (const n of seen.values()) {
    dups += n - 1;
  }
  check(dups < 3000, 'few duplicates: ' + dups);
  console.log('ok');
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
