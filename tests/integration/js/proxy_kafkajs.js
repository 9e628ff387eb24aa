// kafkajs 2.2.4 through sluice's Kafka proxy (upstream mode): admin (describeCluster, topic
// metadata), a producer and a consumer group reading its records back with commits. Usage:
// node proxy_kafkajs.js BOOTSTRAP TOPIC PARTITIONS. Prints the brokers the admin saw as JSON,
// then "ok"; exits non-zero with the reason on any mismatch.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, partitionsArg] = process.argv.slice(2);
const partitions = Number(partitionsArg);
const kafka = new Kafka({ clientId: 'proxy-js-test', brokers: [bootstrap],
                          logLevel: logLevel.NOTHING, retry: { retries: 5 } });

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  const cluster = await admin.describeCluster();
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  check(meta.topics[0].partitions.length === partitions, 'partitions of ' + topic);

  const producer = kafka.producer();
  await producer.connect();
  const count = 60;
  const messages = [];
  for (let n = 0; n < count; n++) {
    messages.push({ key: 'js' + n, value: 'js-value-' + n, partition: n % partitions });
  }
  await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();

  const groupId = 'proxy-js-' + Date.now();
  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Set();
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out reading, got ' + seen.size)), 60000);
    consumer.run({
      eachMessage: async ({ message }) => {
        const v = message.value.toString();
        if (v.startsWith('js-value-')) {
          seen.add(v);
        }
        if (seen.size === count) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
  const sum = committed[0].partitions.reduce((s, p) => s + Math.max(Number(p.offset), 0), 0);
  check(sum >= count, 'committed offsets cover the records, got ' + sum);
  await admin.disconnect();
  console.log(JSON.stringify({ brokers: cluster.brokers.map(b => ({ id: b.nodeId, host: b.host, port: b.port })) }));
  console.log('ok');
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
