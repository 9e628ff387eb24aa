// @aws-sdk/client-sqs (AWS JSON 1.0 protocol) against sluice's SQS listener.
// Usage: node sqs_json.js ENDPOINT SCENARIO; prints "ok" last, or exits non-zero with the reason.
// The SDK checks MD5OfMessageBody itself (send, batch and receive); attribute digests are
// checked here as the SQS Developer Guide defines them (digest() below), and for ASCII values
// also with aws-md5-of-message-attributes (local-aws-sqs's library, which counts a string's
// length in UTF-16 units instead of UTF-8 bytes, so it disagrees with the guide beyond ASCII).
'use strict';
const crypto = require('crypto');
const sqs = require('@aws-sdk/client-sqs');
const { md5OfMessageAttributes } = require('aws-md5-of-message-attributes');

/// MD5OfMessageAttributes by the developer guide: names sorted; name and data type as 4-byte
/// big-endian lengths and UTF-8 bytes; transport 1 (String, Number) or 2 (Binary); the value
/// as a 4-byte length and its bytes.
function digest(attributes) {
  const parts = [];
  const lp = (buf) => {
    const n = Buffer.alloc(4);
    n.writeUInt32BE(buf.length);
    parts.push(n, buf);
  };
  for (const name of Object.keys(attributes).sort()) {
    const a = attributes[name];
    lp(Buffer.from(name, 'utf8'));
    lp(Buffer.from(a.DataType, 'utf8'));
    const binary = a.DataType.split('.')[0] === 'Binary';
    parts.push(Buffer.from([binary ? 2 : 1]));
    lp(binary ? Buffer.from(a.BinaryValue) : Buffer.from(a.StringValue, 'utf8'));
  }
  return crypto.createHash('md5').update(Buffer.concat(parts)).digest('hex');
}

const endpoint = process.argv[2];
const scenario = process.argv[3];
const client = new sqs.SQSClient({
  endpoint, region: 'us-east-1', maxAttempts: 1,
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
});
const arn = (name) => `arn:aws:sqs:us-east-1:000000000000:${name}`;

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
}

async function send(cmd) {
  return client.send(cmd);
}

async function expectError(cmd, name, code) {
  try {
    await client.send(cmd);
  } catch (e) {
    check(e.name === name, `error ${e.name} is ${name} (${e.message})`);
    if (code) {
      check(e.Code === code, `query code ${e.Code} is ${code}`);
    }
    return e;
  }
  throw new Error(`expected ${name}`);
}

async function receiveAll(url, n, extra = {}) {
  const got = [];
  const deadline = Date.now() + 20000;
  while (got.length < n && Date.now() < deadline) {
    const r = await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, ...extra }));
    got.push(...(r.Messages || []));
  }
  return got;
}

/// For the digest library: BinaryValue as base64, as it expects.
function forDigest(attributes) {
  const out = {};
  for (const [k, v] of Object.entries(attributes)) {
    out[k] = v.BinaryValue !== undefined
      ? { DataType: v.DataType, BinaryValue: Buffer.from(v.BinaryValue).toString('base64') }
      : { DataType: v.DataType, StringValue: v.StringValue };
  }
  return out;
}

async function waitFor(pred, what, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) {
      return v;
    }
    if (Date.now() > deadline) {
      throw new Error('timed out waiting for ' + what);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

const scenarios = {
  async lifecycle() {
    const { QueueUrl: url } = await send(new sqs.CreateQueueCommand({
      QueueName: 'js-life', Attributes: { VisibilityTimeout: '20' }, tags: { owner: 'js' } }));
    check(url.endsWith('/000000000000/js-life'), 'queue url');
    check((await send(new sqs.GetQueueUrlCommand({ QueueName: 'js-life' }))).QueueUrl === url, 'get url');
    const listed = await send(new sqs.ListQueuesCommand({ QueueNamePrefix: 'js-', MaxResults: 1 }));
    check(listed.QueueUrls.length === 1, 'one listed');
    const attrs = (await send(new sqs.GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }))).Attributes;
    check(attrs.VisibilityTimeout === '20' && attrs.QueueArn === arn('js-life'), 'attributes');
    await send(new sqs.SetQueueAttributesCommand({ QueueUrl: url, Attributes: { MaximumMessageSize: '2048' } }));
    check((await send(new sqs.ListQueueTagsCommand({ QueueUrl: url }))).Tags.owner === 'js', 'tags');
    await send(new sqs.TagQueueCommand({ QueueUrl: url, Tags: { a: 'b' } }));
    await send(new sqs.UntagQueueCommand({ QueueUrl: url, TagKeys: ['owner'] }));
    check(JSON.stringify((await send(new sqs.ListQueueTagsCommand({ QueueUrl: url }))).Tags) === '{"a":"b"}', 'retagged');
    await send(new sqs.AddPermissionCommand({ QueueUrl: url, Label: 'p1', AWSAccountIds: ['123456789012'], Actions: ['SendMessage'] }));
    await send(new sqs.RemovePermissionCommand({ QueueUrl: url, Label: 'p1' }));

    const sent = await send(new sqs.SendMessageCommand({ QueueUrl: url, MessageBody: 'héllo wörld' }));
    const batch = await send(new sqs.SendMessageBatchCommand({ QueueUrl: url, Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `e${i}`, MessageBody: `b${i}` })) }));
    check(batch.Successful.length === 10 && (batch.Failed || []).length === 0, 'batch of 10');
    const got = await receiveAll(url, 11, { MessageSystemAttributeNames: ['All'] });
    check(got.length === 11, `received 11, got ${got.length}`);
    check(got.some((m) => m.MessageId === sent.MessageId && m.Body === 'héllo wörld'), 'first message');
    check(got.every((m) => m.Attributes.ApproximateReceiveCount === '1'), 'receive counts');
    const del = await send(new sqs.DeleteMessageBatchCommand({ QueueUrl: url, Entries: got.slice(0, 10).map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) }));
    check(del.Successful.length === 10, 'deleted 10');
    await send(new sqs.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: got[10].ReceiptHandle }));
    const after = await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 0 }));
    check(!after.Messages || after.Messages.length === 0, 'empty after deletes');
    await send(new sqs.PurgeQueueCommand({ QueueUrl: url }));
    await send(new sqs.DeleteQueueCommand({ QueueUrl: url }));
    await expectError(new sqs.GetQueueUrlCommand({ QueueName: 'js-life' }), 'QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue');
    await expectError(new sqs.CreateQueueCommand({ QueueName: 'js-life' }), 'QueueDeletedRecently');
  },

  async visibility() {
    const { QueueUrl: url } = await send(new sqs.CreateQueueCommand({ QueueName: 'js-vis' }));
    await send(new sqs.SendMessageCommand({ QueueUrl: url, MessageBody: 'v' }));
    const [m] = (await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 5, VisibilityTimeout: 1 }))).Messages;
    const none = await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 0 }));
    check(!none.Messages, 'invisible while in flight');
    const again = (await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 10, MessageSystemAttributeNames: ['ApproximateReceiveCount'] }))).Messages;
    check(again[0].Attributes.ApproximateReceiveCount === '2', 'received twice');
    await expectError(new sqs.ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 10 }), 'MessageNotInflight');
    const v = await send(new sqs.ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: [{ Id: 'a', ReceiptHandle: again[0].ReceiptHandle, VisibilityTimeout: 0 }] }));
    check(v.Successful.length === 1, 'visibility batch');
    const third = await receiveAll(url, 1);
    check(third.length === 1, 'visible again at once');
  },

  async md5() {
    const { QueueUrl: url } = await send(new sqs.CreateQueueCommand({ QueueName: 'js-md5' }));
    const attributes = {
      s: { DataType: 'String', StringValue: 'snow ☃' },
      n: { DataType: 'Number', StringValue: '42' },
      f: { DataType: 'Number.float', StringValue: '3.14159' },
      j: { DataType: 'String.json', StringValue: '{"k":"v"}' },
      b: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 1, 2, 254, 255]) },
      g: { DataType: 'Binary.gzip', BinaryValue: new Uint8Array([0x1f, 0x8b, 8, 0]) },
    };
    const sent = await send(new sqs.SendMessageCommand({
      QueueUrl: url, MessageBody: 'digest me', MessageAttributes: attributes,
      MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-5759e988-bd862e3fe1be46a994272793' } } }));
    check(sent.MD5OfMessageAttributes === digest(attributes), 'sent attribute digest');
    check(sent.MD5OfMessageSystemAttributes === digest({ AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-5759e988-bd862e3fe1be46a994272793' } }), 'system attribute digest');
    const ascii = { ...attributes };
    delete ascii.s;
    const second = await send(new sqs.SendMessageCommand({ QueueUrl: url, MessageBody: 'ascii only', MessageAttributes: ascii }));
    check(second.MD5OfMessageAttributes === md5OfMessageAttributes(forDigest(ascii)), 'digest as the emulator library computes it');
    const [m] = (await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 5, MessageAttributeNames: ['All'], MessageSystemAttributeNames: ['AWSTraceHeader'] }))).Messages;
    check(m.MD5OfMessageAttributes === digest(m.MessageAttributes), 'received attribute digest');
    check(m.MD5OfMessageAttributes === sent.MD5OfMessageAttributes, 'same digest both ways');
    check(Buffer.from(m.MessageAttributes.b.BinaryValue).equals(Buffer.from([0, 1, 2, 254, 255])), 'binary value');
    check(m.Attributes.AWSTraceHeader.startsWith('Root='), 'trace header');
    const batch = await send(new sqs.SendMessageBatchCommand({ QueueUrl: url, Entries: [
      { Id: 'x', MessageBody: 'one', MessageAttributes: { n: attributes.n } },
      { Id: 'y', MessageBody: 'two', MessageAttributes: { g: attributes.g } }] }));
    check(batch.Successful.find((e) => e.Id === 'x').MD5OfMessageAttributes === digest({ n: attributes.n }), 'batch digest');
    check(batch.Successful.find((e) => e.Id === 'y').MD5OfMessageAttributes === digest({ g: attributes.g }), 'batch digest (binary)');
  },

  async movetask() {
    const { QueueUrl: dlq } = await send(new sqs.CreateQueueCommand({ QueueName: 'js-dlq' }));
    const { QueueUrl: src } = await send(new sqs.CreateQueueCommand({ QueueName: 'js-src', Attributes: {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn('js-dlq'), maxReceiveCount: 1 }) } }));
    for (const body of ['a', 'b', 'c']) {
      await send(new sqs.SendMessageCommand({ QueueUrl: src, MessageBody: body }));
    }
    check((await receiveAll(src, 3, { VisibilityTimeout: 0 })).length >= 3, 'received once each');
    // Receives past maxReceiveCount move the messages to the dead-letter queue.
    await waitFor(async () => {
      await send(new sqs.ReceiveMessageCommand({ QueueUrl: src, WaitTimeSeconds: 1, VisibilityTimeout: 0, MaxNumberOfMessages: 10 }));
      const a = (await send(new sqs.GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['ApproximateNumberOfMessages'] }))).Attributes;
      return a.ApproximateNumberOfMessages === '3';
    }, 'three dead letters');
    const sources = await send(new sqs.ListDeadLetterSourceQueuesCommand({ QueueUrl: dlq }));
    check(sources.queueUrls.length === 1 && sources.queueUrls[0] === src, 'dead-letter sources');

    await expectError(new sqs.StartMessageMoveTaskCommand({ SourceArn: arn('js-src') }), 'InvalidParameterValue');
    await expectError(new sqs.StartMessageMoveTaskCommand({ SourceArn: arn('js-none') }), 'ResourceNotFoundException');
    const { TaskHandle } = await send(new sqs.StartMessageMoveTaskCommand({ SourceArn: arn('js-dlq') }));
    check(TaskHandle, 'task handle');
    const done = await waitFor(async () => {
      const r = await send(new sqs.ListMessageMoveTasksCommand({ SourceArn: arn('js-dlq'), MaxResults: 10 }));
      return r.Results[0].Status === 'COMPLETED' ? r.Results[0] : null;
    }, 'the move task to complete');
    check(done.ApproximateNumberOfMessagesMoved === 3 && done.ApproximateNumberOfMessagesToMove === 3, 'moved 3');
    check(done.SourceArn === arn('js-dlq') && done.TaskHandle === TaskHandle, 'task fields');
    const back = await receiveAll(src, 3, { MessageSystemAttributeNames: ['All'] });
    check(back.map((m) => m.Body).sort().join() === 'a,b,c', 'redriven back to the source');

    // A slow task can be cancelled; only one runs per source.
    for (let i = 0; i < 20; i++) {
      await send(new sqs.SendMessageCommand({ QueueUrl: dlq, MessageBody: `m${i}` }));
    }
    await waitFor(async () => (await send(new sqs.GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['ApproximateNumberOfMessages'] }))).Attributes.ApproximateNumberOfMessages === '20', 'twenty in the DLQ');
    const slow = await send(new sqs.StartMessageMoveTaskCommand({ SourceArn: arn('js-dlq'), DestinationArn: arn('js-src'), MaxNumberOfMessagesPerSecond: 1 }));
    await expectError(new sqs.StartMessageMoveTaskCommand({ SourceArn: arn('js-dlq') }), 'UnsupportedOperation');
    const cancelled = await send(new sqs.CancelMessageMoveTaskCommand({ TaskHandle: slow.TaskHandle }));
    check(cancelled.ApproximateNumberOfMessagesMoved < 20, 'cancelled early');
    const final = await waitFor(async () => {
      const r = await send(new sqs.ListMessageMoveTasksCommand({ SourceArn: arn('js-dlq'), MaxResults: 10 }));
      return r.Results[0].Status === 'CANCELLED' ? r : null;
    }, 'cancelled');
    check(final.Results.length === 2, 'both tasks listed, newest first');
    await expectError(new sqs.CancelMessageMoveTaskCommand({ TaskHandle: slow.TaskHandle }), 'ResourceNotFoundException');
  },

  async fifo() {
    const { QueueUrl: url } = await send(new sqs.CreateQueueCommand({ QueueName: 'js.fifo', Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' } }));
    const a = await send(new sqs.SendMessageCommand({ QueueUrl: url, MessageBody: 'first', MessageGroupId: 'g' }));
    const b = await send(new sqs.SendMessageCommand({ QueueUrl: url, MessageBody: 'first', MessageGroupId: 'g' }));
    check(a.MessageId === b.MessageId && a.SequenceNumber, 'content-based dedup');
    await send(new sqs.SendMessageCommand({ QueueUrl: url, MessageBody: 'second', MessageGroupId: 'g', MessageDeduplicationId: 'explicit' }));
    const r1 = await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1, WaitTimeSeconds: 5, ReceiveRequestAttemptId: 'try-1' }));
    const r2 = await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1, WaitTimeSeconds: 0, ReceiveRequestAttemptId: 'try-1' }));
    check(r1.Messages[0].Body === 'first' && r2.Messages[0].ReceiptHandle === r1.Messages[0].ReceiptHandle, 'attempt id retry');
    const blocked = await send(new sqs.ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 0 }));
    check(!blocked.Messages, 'the group waits for its first message');
    await send(new sqs.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: r1.Messages[0].ReceiptHandle }));
    const next = await receiveAll(url, 1);
    check(next[0].Body === 'second', 'then the second');
    await expectError(new sqs.SendMessageCommand({ QueueUrl: url, MessageBody: 'x' }), 'MissingParameter');
  },
};

scenarios[scenario]().then(() => console.log('ok')).catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
