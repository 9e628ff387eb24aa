// kafkajs 2.2.4 idempotent producer: sends COUNT numbered records to TOPIC in batches (one
// request at a time, as kafkajs requires for idempotence), through whatever address BOOTSTRAP
// is (the tests put a connection-cutting proxy there). Retries every failed send: the broker's
// sequence checks must turn retries of written batches into duplicates that are not stored
// twice. Usage: node idempotent_kafkajs.js BOOTSTRAP TOPIC COUNT
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, countText] = process.argv.slice(2);
const count = parseInt(countText, 10);
const kafka = new Kafka({ clientId: 'sluice-idem-js', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          retry: { retries: 30, initialRetryTime: 50, maxRetryTime: 500 } });

async function main() {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const batch = 250;
  for (let start = 0; start < count; start += batch) {
    const messages = [];
    for (let i = start; i < Math.min(count, start + batch); ++i) {
      messages.push({ value: String(i).padStart(8, '0') + '-' + 'x'.repeat(200) });
    }
    for (let attempt = 0; ; ++attempt) {
      try {
        await producer.send({ topic, acks: -1, messages });
        break;
      } catch (e) {
        if (attempt > 50) {
          throw e;
        }
      }
    }
  }
  await producer.disconnect();
  console.log('ok');
}

main().catch(e => { console.error(e); process.exit(1); });
