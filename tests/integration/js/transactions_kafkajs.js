// kafkajs 2.2.4 transactional producer: one committed transaction with sendOffsetsToTransaction
// (group js-tx-group, js-tx-in partition 0 at offset 42) and one aborted one, on js-tx-out.
// Usage: node transactions_kafkajs.js BOOTSTRAP. Prints "ok" on success.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const bootstrap = process.argv[2];
const kafka = new Kafka({ clientId: 'sluice-tx-js', brokers: [bootstrap], logLevel: logLevel.NOTHING });

async function main() {
  const producer = kafka.producer({ transactionalId: 'js-tx', maxInFlightRequests: 1, idempotent: true });
  await producer.connect();

  const committed = await producer.transaction();
  await committed.send({ topic: 'js-tx-out', messages: Array.from({ length: 10 }, (_, i) => ({ value: 'c' + i })) });
  await committed.sendOffsets({ consumerGroupId: 'js-tx-group',
                                topics: [{ topic: 'js-tx-in', partitions: [{ partition: 0, offset: '42' }] }] });
  await committed.commit();

  const aborted = await producer.transaction();
  await aborted.send({ topic: 'js-tx-out', messages: Array.from({ length: 10 }, (_, i) => ({ value: 'a' + i })) });
  await aborted.abort();

  // A second instance with the same transactional id fences the first.
  // (kafkajs initializes the transactional id at its first transaction.)
  const second = kafka.producer({ transactionalId: 'js-tx', maxInFlightRequests: 1, idempotent: true });
  await second.connect();
  const winner = await second.transaction();
  let fenced = false;
  try {
    const zombie = await producer.transaction();
    await zombie.send({ topic: 'js-tx-out', messages: [{ value: 'zombie' }] });
    await zombie.commit();
  } catch (e) {
    fenced = true;
  }
  if (!fenced) {
    throw new Error('the first producer was not fenced');
  }
  await winner.send({ topic: 'js-tx-out', messages: [{ value: 'winner' }] });
  await winner.commit();
  await second.disconnect();
  await producer.disconnect().catch(() => {});
  console.log('ok');
}

main().catch(e => { console.error(e); process.exit(1); });
