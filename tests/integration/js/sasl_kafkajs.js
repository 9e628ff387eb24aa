// kafkajs 2.2.4 with SASL SCRAM-SHA-256 against sluice's SASL_PLAINTEXT listener: produce,
// read back through a consumer group, and a wrong password refused.
// Usage: node sasl_kafkajs.js BOOTSTRAP USER PASSWORD. Exits non-zero with the reason on failure.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, username, password] = process.argv.slice(2);

function client(pw) {
  return new Kafka({ clientId: 'sluice-js-sasl', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                     retry: { retries: 2 }, connectionTimeout: 5000, authenticationTimeout: 5000,
                     sasl: { mechanism: 'scram-sha-256', username, password: pw } });
}

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out: ' + what)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
  const kafka = client(password);
  const producer = kafka.producer();
  await producer.connect();
  const values = [];
  for (let i = 0; i < 30; i++) {
    values.push('js-sasl-' + i);
  }
  await producer.send({ topic: 'js-sasl', acks: -1,
                        messages: values.map(v => ({ value: v, partition: 0 })) });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: 'js-sasl-group' });
  await consumer.connect();
  await consumer.subscribe({ topic: 'js-sasl', fromBeginning: true });
  const got = [];
  let done;
  const all = new Promise(resolve => { done = resolve; });
  await consumer.run({ eachMessage: async ({ message }) => {
    got.push(message.value.toString());
    if (got.length === values.length) {
      done();
    }
  } });
  await withTimeout(all, 60000, 'consuming 30 records');
  await consumer.disconnect();
  check(JSON.stringify(got) === JSON.stringify(values), 'records read back in order');

  const bad = client(password + '-wrong').admin();
  let refused = null;
  try {
    await withTimeout(bad.connect(), 30000, 'refused login');
  } catch (e) {
    refused = e;
  }
  check(refused && refused.name === 'KafkaJSSASLAuthenticationError',
        'wrong password refused with an authentication error, got ' + (refused && refused.name));
  console.log('ok');
}

main().then(() => process.exit(0), e => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
