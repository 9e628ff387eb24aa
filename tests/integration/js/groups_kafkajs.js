// kafkajs 2.2.4 consumer group against sluice: three consumers share a 6-partition topic while
// 20000 records are produced, one leaves mid-way; every record is consumed, the committed
// offsets reach the log end; then the admin group calls (describe, fetch offsets, reset,
// delete). Usage: node groups_kafkajs.js BOOTSTRAP. Prints "ok" or exits non-zero.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const bootstrap = process.argv[2];
const kafka = new Kafka({ clientId: 'kjs-groups', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          retry: { retries: 8 } });
const topic = 'kjs-groups';
const groupId = 'kjs-g';
const total = 20000;

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

async function committedSum(admin) {
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
  return offsets[0].partitions.reduce((s, p) => s + Math.max(0, Number(p.offset)), 0);
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] });
  const producer = kafka.producer();
  await producer.connect();

  const seen = new Map();
  const consumers = [];
  for (let i = 0; i < 3; i++) {
    const c = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500,
                               rebalanceTimeout: 10000 });
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({
      eachMessage: async ({ message }) => {
        const v = message.value.toString();
        seen.set(v, (seen.get(v) || 0) + 1);
      },
    });
    consumers.push(c);
  }
  await waitFor(async () => {
    const d = await admin.describeGroups([groupId]);
    return d.groups[0].state === 'Stable' && d.groups[0].members.length === 3;
  }, 60000, 'three members, Stable');

  for (let b = 0; b < total / 1000; b++) {
    const messages = [];
    for (let k = 0; k < 1000; k++) {
      const v = String(b * 1000 + k);
      messages.push({ key: v, value: v });
    }
    await producer.send({ topic, messages });
    if (b === 8) {
      await consumers[0].disconnect();  // LeaveGroup v3 (batched form)
    }
  }
  await waitFor(() => seen.size === total, 90000, 'every record consumed');
  await waitFor(async () => (await committedSum(admin)) === total, 60000, 'commits reach the end');
  let dups = 0;
  for (const n of seen.values()) {
    dups += n - 1;
  }
  check(dups < 6000, 'few duplicates: ' + dups);

  const d = await admin.describeGroups([groupId]);
  check(d.groups[0].state === 'Stable', 'group stable: ' + d.groups[0].state);
  check(d.groups[0].members.length === 2, 'two members left');
  check(d.groups[0].protocol === 'RoundRobinAssigner', 'kafkajs assigner: ' + d.groups[0].protocol);
  const listed = await admin.listGroups();
  check(listed.groups.some(g => g.groupId === groupId && g.protocolType === 'consumer'), 'listed');

  // A group with members cannot be deleted; once empty it can, and reset works.
  let refused = false;
  try {
    await admin.deleteGroups([groupId]);
  } catch (e) {
    refused = e.groups && e.groups[0].error && e.groups[0].error.type === 'NON_EMPTY_GROUP';
  }
  check(refused, 'delete of a live group refused with NON_EMPTY_GROUP');
  for (const c of consumers.slice(1)) {
    await c.disconnect();
  }
  await admin.resetOffsets({ groupId, topic, earliest: true });
  check((await committedSum(admin)) === 0, 'reset to earliest');
  await admin.deleteGroups([groupId]);
  const after = await admin.listGroups();
  check(!after.groups.some(g => g.groupId === groupId), 'deleted');

  await producer.disconnect();
  await admin.disconnect();
  console.log('ok');
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
