// A fault-run worker in node: a kafkajs 2.2.4 idempotent producer (one request in flight,
// acks=-1) sending "<worker>-<n>" values one at a time until its stdin closes, for
// workers.py's KafkajsProducer.
//
// Two things a kafkajs user must do for idempotence to hold, as against any Kafka broker:
// name the partition (kafkajs's retries of a send otherwise partition it again, so one record
// can land on two partitions), and start a new producer after a send that failed (kafkajs does
// not move the partition's sequence past a batch whose outcome it does not know, so the next
// record reuses that sequence and the broker, rightly, answers it as a duplicate of the first).
//
// One JSON line per event on stdout:
//   {"invoke": value}   {"ok": value, "partition": p, "offset": o}   {"info": value, "error": e}
// Usage: node kafkajs_worker.js BOOTSTRAP TOPIC WORKER PARTITIONS
'use strict';
const path = require('path');
const { Kafka, logLevel } = require(path.join(__dirname, '..', 'integration', 'js', 'node_modules',
                                              'kafkajs'));

const [bootstrap, topic, worker, partitionsText] = process.argv.slice(2);
const partitions = parseInt(partitionsText || '3', 10);
let stopping = false;
process.stdin.on('end', () => { stopping = true; });
process.stdin.on('data', () => {});
process.stdin.resume();

const kafka = new Kafka({ clientId: worker, brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          connectionTimeout: 5000, requestTimeout: 10000,
                          retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 } });

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  let producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  let connected = false;
  let seq = 0;
  while (!stopping) {
    if (!connected) {
      try {
        await producer.connect();
        connected = true;
      } catch (e) {
        await sleep(300);  // sluice may be down: do not spin
        continue;
      }
    }
    const value = `${worker}-${seq}`;
    seq += 1;
    emit({ invoke: value });
    try {
      const [meta] = await producer.send({ topic, acks: -1,
                                           messages: [{ value, partition: seq % partitions }] });
      emit({ ok: value, partition: meta.partition, offset: Number(meta.baseOffset) });
    } catch (e) {
      emit({ info: value, error: String(e && e.message).slice(0, 200) });
      // A new producer id: the next record must not reuse this one's sequence.
      await producer.disconnect().catch(() => {});
      producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      connected = false;
      await sleep(200);
    }
    await sleep(10);
  }
  await producer.disconnect().catch(() => {});
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
