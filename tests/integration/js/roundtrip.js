// kafkajs 2.2.4 against sluice: admin calls, a produce/consume round trip by partition, and
// errors. Usage: node roundtrip.js BOOTSTRAP. Exits non-zero (with the reason) on any mismatch.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const bootstrap = process.argv[2];
const kafka = new Kafka({ clientId: 'sluice-js-test', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          retry: { retries: 3 } });

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  check(await admin.createTopics({ topics: [{ topic: 'js-topic', numPartitions: 3 }] }), 'created');
  const topics = await admin.listTopics();
  check(topics.includes('js-topic'), 'listed');
  const meta = await admin.fetchTopicMetadata({ topics: ['js-topic'] });
  check(meta.topics[0].partitions.length === 3, 'three partitions');
  const cluster = await admin.describeCluster();
  check(cluster.brokers.length === 1 && cluster.controller === 0, 'one broker, controller 0');
  const configs = await admin.describeConfigs({ resources: [{ type: 2, name: 'js-topic' }],
                                                includeSynonyms: false });
  const entries = configs.resources[0].configEntries;
  check(entries.some(e => e.configName === 'retention.ms'), 'retention.ms described');

  const producer = kafka.producer();
  await producer.connect();
  const sent = [];
  for (let batch = 0; batch < 20; batch++) {
    const messages = [];
    for (let i = 0; i < 50; i++) {
      const n = batch * 50 + i;
      messages.push({ key: 'k' + n, value: 'v' + n, partition: n % 3,
                      headers: { seq: String(n) } });
      sent.push(n);
    }
    await producer.send({ topic: 'js-topic', acks: -1, messages });
  }
  await producer.disconnect();

  const offsets = await admin.fetchTopicOffsets('js-topic');
  const total = offsets.reduce((s, p) => s + Number(p.high) - Number(p.low), 0);
  check(total === 1000, 'high watermarks sum to 1000, got ' + total);

  // Read everything back with a group-less consumer per partition is not available in kafkajs;
  // use a consumer group reading from the beginning.
  const consumer = kafka.consumer({ groupId: 'js-reader-' + Date.now() });
  await consumer.connect();
  await consumer.subscribe({ topic: 'js-topic', fromBeginning: true });
  const seen = new Map();
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out reading, got ' + seen.size)), 60000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        const n = Number(message.headers.seq.toString());
        check(message.key.toString() === 'k' + n, 'key of ' + n);
        check(message.value.toString() === 'v' + n, 'value of ' + n);
        check(partition === n % 3, 'partition of ' + n);
        seen.set(n, (seen.get(n) || 0) + 1);
        if (seen.size === 1000) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  check([...seen.values()].every(c => c === 1), 'each record once');

  await admin.deleteTopics({ topics: ['js-topic'] });
  check(!(await admin.listTopics()).includes('js-topic'), 'deleted');
  await admin.disconnect();
  console.log('ok');
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
