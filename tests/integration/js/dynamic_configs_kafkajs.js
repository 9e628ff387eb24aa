// kafkajs 2.2.4 against sluice: dynamic broker configs through admin.alterConfigs (AlterConfigs)
// and admin.describeConfigs, and Kafka's refusal of a static one. Usage:
// node dynamic_configs_kafkajs.js BOOTSTRAP. Exits non-zero (with the reason) on any mismatch.
'use strict';
const { Kafka, logLevel, ConfigResourceTypes, ConfigSource } = require('kafkajs');

const bootstrap = process.argv[2];
const kafka = new Kafka({ clientId: 'sluice-js-dyn', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          retry: { retries: 2 } });

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'kjs-dyn', numPartitions: 1 }] });
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.BROKER, name: '0',
                  configEntries: [{ name: 'log.retention.bytes', value: '123456789' }] }],
  });
  const described = await admin.describeConfigs({
    resources: [{ type: ConfigResourceTypes.BROKER, name: '0', configNames: ['log.retention.bytes'] },
                { type: ConfigResourceTypes.TOPIC, name: 'kjs-dyn', configNames: ['retention.bytes'] }],
    includeSynonyms: true,
  });
  const broker = described.resources.find(r => r.resourceType === ConfigResourceTypes.BROKER);
  check(broker.configEntries.length === 1, 'one broker entry');
  const b = broker.configEntries[0];
  check(b.configValue === '123456789', 'broker value ' + b.configValue);
  check(b.configSource === ConfigSource.DYNAMIC_BROKER_CONFIG, 'broker source ' + b.configSource);
  check(b.readOnly === false, 'dynamic, not read-only');
  const topic = described.resources.find(r => r.resourceType === ConfigResourceTypes.TOPIC);
  check(topic.configEntries[0].configValue === '123456789', 'topic follows the broker');

  let refused = null;
  try {
    await admin.alterConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: '0',
                    configEntries: [{ name: 'auto.create.topics.enable', value: 'false' }] }],
    });
  } catch (e) {
    refused = e;
  }
  check(refused !== null, 'static config refused');
  check(refused.type === 'INVALID_REQUEST', 'refused with ' + (refused && refused.type));
  // The refused request left the earlier value alone (AlterConfigs replaces the whole set only
  // when it is taken).
  const again = await admin.describeConfigs({
    resources: [{ type: ConfigResourceTypes.BROKER, name: '0', configNames: ['log.retention.bytes'] }],
    includeSynonyms: false,
  });
  check(again.resources[0].configEntries[0].configValue === '123456789', 'value kept');
  await admin.disconnect();
  console.log('ok');
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
