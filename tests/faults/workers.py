"""The clients of a fault run, each a thread writing every operation to the history:

- IdempotentProducer: confluent-kafka with enable.idempotence, acks=all
- TransactionalProducer: transactions of 1-5 records, committed or aborted at random
- GroupConsumer: a member of a consumer group (read_committed or read_uncommitted) that commits
  its positions every second
- SqsWorker: boto3 on the SQS listener (Query protocol): send, receive, delete (or leave a
  message to come back after its visibility timeout)
- RestProducer: REST Proxy v2 produce (binary embedded format)
- FifoWorker: boto3 on a FIFO queue, its own message group, sends in order with a
  deduplication id (an unknown outcome is resent with the same id), receives of any group
- KafkajsProducer: kafkajs's idempotent producer in node (kafkajs_worker.js), one send at a
  time
- WsProducer: the WebSocket front's produce op (python3-websockets), acks waited for one by
  one, a new connection after every cut or kill

Values are unique strings "<worker>-<n>". A worker never treats an unknown outcome (a timeout,
a cut connection) as a failure: it records "info", and the checker allows either outcome.
"""
import asyncio
import base64
import json
import os
import subprocess
import threading
import time

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
import websockets
from confluent_kafka import Consumer, KafkaException, Producer


class Worker(threading.Thread):
    def __init__(self, name, node, history, rng, topic="faults"):
        super().__init__(name=name, daemon=True)
        self.worker = name
        self.node = node
        self.history = history
        self.rng = rng
        self.topic = topic
        self.stop_event = threading.Event()
        self.errors = 0
        self.exception = None

    def record(self, op, type_, **fields):
        return self.history.record(self.worker, op, type_, **fields)

    def stop(self):
        self.stop_event.set()

    def run(self):
        try:
            self.body()
        except Exception as e:  # a worker bug: keep it for the run's report
            self.exception = repr(e)
            self.record("crash", "info", error=repr(e))


def _kafka_common(node):
    return {"bootstrap.servers": node.bootstrap, "socket.timeout.ms": 10000,
            "reconnect.backoff.max.ms": 1000, "topic.metadata.refresh.interval.ms": 5000}


class IdempotentProducer(Worker):
    rate = 100  # records per second, at most

    def make(self):
        self.fatal = False
        conf = _kafka_common(self.node)
        conf.update({"enable.idempotence": True, "acks": "all", "linger.ms": 5,
                     "message.timeout.ms": 30000, "error_cb": self.on_error})
        return Producer(conf)

    def on_error(self, err):
        if err.fatal():
            self.fatal = True

    def delivered(self, seq, value):
        def cb(err, msg):
            if err is None:
                self.record("send", "ok", topic=self.topic, partition=msg.partition(),
                            offset=msg.offset(), value=value, seq=seq, idempotent=True)
            else:
                self.errors += 1
                self.record("send", "info", topic=self.topic, value=value, seq=seq,
                            error=str(err))
        return cb

    def body(self):
        p = self.make()
        seq = 0
        while not self.stop_event.is_set():
            if self.fatal:
                # A fatal idempotence error: what is queued fails; start a new producer.
                p.flush(5)
                self.record("restart-producer", "ok")
                p = self.make()
            value = f"{self.worker}-{seq}"
            self.record("send", "invoke", topic=self.topic, value=value, seq=seq)
            try:
                p.produce(self.topic, value=value.encode(), on_delivery=self.delivered(seq, value))
                seq += 1
            except BufferError:
                self.record("send", "fail", topic=self.topic, value=value, seq=seq,
                            error="queue full")
                seq += 1
                p.poll(0.1)
            p.poll(0)
            time.sleep(1.0 / self.rate)
        p.flush(30)


class TransactionalProducer(Worker):
    def make(self):
        conf = _kafka_common(self.node)
        conf.update({"transactional.id": self.worker, "acks": "all", "linger.ms": 5,
                     "message.timeout.ms": 9000, "transaction.timeout.ms": 10000})
        p = Producer(conf)
        while True:
            try:
                p.init_transactions(30)
                return p
            except KafkaException as e:
                self.record("init-transactions", "info", error=str(e.args[0]))
                if self.stop_event.wait(0.5):
                    return None

    def body(self):
        p = self.make()
        seq = 0
        while p is not None and not self.stop_event.is_set():
            n = self.rng.randint(1, 5)
            values = [f"{self.worker}-{seq + i}" for i in range(n)]
            seq += n
            commit = self.rng.random() < 0.6
            offsets = {}

            def cb(err, msg, offsets=offsets):
                if err is None:
                    offsets[msg.value().decode()] = [msg.partition(), msg.offset()]

            self.record("txn", "invoke", topic=self.topic, values=values,
                        intent="commit" if commit else "abort")
            stage = "produce"
            try:
                p.begin_transaction()
                for v in values:
                    p.produce(self.topic, value=v.encode(), on_delivery=cb)
                if p.flush(20) != 0:
                    raise KafkaException("flush timed out")
                stage = "end"
                if commit:
                    p.commit_transaction(20)
                else:
                    p.abort_transaction(20)
                self.record("txn", "ok", topic=self.topic, values=values,
                            outcome="commit" if commit else "abort",
                            offsets=[offsets.get(v) or [None, None] for v in values])
            except (KafkaException, BufferError) as e:
                self.errors += 1
                err = e.args[0] if e.args else e
                fatal = hasattr(err, "fatal") and err.fatal()
                aborted = False
                if not fatal and (stage == "produce" or not commit):
                    try:
                        p.abort_transaction(20)
                        aborted = True
                    except KafkaException:
                        pass
                if aborted:
                    self.record("txn", "ok", topic=self.topic, values=values, outcome="abort",
                                offsets=[offsets.get(v) or [None, None] for v in values],
                                error=str(err))
                else:
                    # A commit that failed may have happened; a fenced producer's open
                    # transaction is aborted by the next init, or times out.
                    self.record("txn", "info", topic=self.topic, values=values, error=str(err))
                    p = self.make()


class GroupConsumer(Worker):
    def __init__(self, name, node, history, rng, group, isolation, topic="faults"):
        super().__init__(name, node, history, rng, topic)
        self.group = group
        self.isolation = isolation

    def on_assign(self, consumer, partitions):
        self.record("assign", "ok", partitions=[tp.partition for tp in partitions])

    def on_revoke(self, consumer, partitions):
        self.record("assign", "ok", partitions=[], revoked=[tp.partition for tp in partitions])

    def body(self):
        conf = _kafka_common(self.node)
        conf.update({"group.id": self.group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                     "heartbeat.interval.ms": 1000,
                     "isolation.level": "read_" + self.isolation})
        c = Consumer(conf)
        c.subscribe([self.topic], on_assign=self.on_assign, on_revoke=self.on_revoke)
        last_commit = time.monotonic()
        read_since_commit = False
        while not self.stop_event.is_set():
            for m in c.consume(200, 0.5):
                if m.error() is not None:
                    continue
                read_since_commit = True
                self.record("read", "ok", group=self.group, isolation=self.isolation,
                            topic=m.topic(), partition=m.partition(), offset=m.offset(),
                            value=m.value().decode())
            if read_since_commit and time.monotonic() - last_commit > 1.0:
                last_commit = time.monotonic()
                read_since_commit = False
                self.record("commit", "invoke", group=self.group)
                try:
                    done = c.commit(asynchronous=False)
                except KafkaException as e:
                    self.errors += 1
                    self.record("commit", "info", group=self.group, error=str(e.args[0]))
                    continue
                for tp in done or []:
                    if tp.error is None and tp.offset >= 0:
                        self.record("commit", "ok", group=self.group, topic=tp.topic,
                                    partition=tp.partition, offset=tp.offset)
        c.close()


def sqs_client(url, read_timeout=10):
    return boto3.client(
        "sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 1}, read_timeout=read_timeout,
                      connect_timeout=5))


def delete_most(worker, c, url, msgs, op):
    """Deletes each of `msgs` but about one in five, left to come back after its visibility
    timeout; records each delete as `op`."""
    for m in msgs:
        if worker.rng.random() < 0.2:
            continue
        ids = {"message_id": m["MessageId"]}
        worker.record(op, "invoke", value=m["Body"], **ids)
        try:
            c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            worker.record(op, "ok", value=m["Body"], **ids)
        except ClientError as e:
            worker.errors += 1
            worker.record(op, "fail", value=m["Body"], error=str(e), **ids)
        except BotoCoreError as e:
            worker.errors += 1
            worker.record(op, "info", value=m["Body"], error=str(e), **ids)


class SqsWorker(Worker):
    def __init__(self, name, node, history, rng, queue_url_path):
        super().__init__(name, node, history, rng)
        self.queue_path = queue_url_path  # "/<account>/<queue>", joined to the proxy's URL

    def body(self):
        c = sqs_client(self.node.sqs_url)
        url = self.node.sqs_url + self.queue_path
        seq = 0
        while not self.stop_event.is_set():
            if self.rng.random() < 0.5:
                value = f"{self.worker}-{seq}"
                seq += 1
                self.record("sqs-send", "invoke", value=value)
                try:
                    c.send_message(QueueUrl=url, MessageBody=value)
                    self.record("sqs-send", "ok", value=value)
                except ClientError as e:
                    self.errors += 1
                    self.record("sqs-send", "fail", value=value, error=str(e))
                except BotoCoreError as e:
                    self.errors += 1
                    self.record("sqs-send", "info", value=value, error=str(e))
                    self.stop_event.wait(0.2)
                continue
            vt = self.rng.randint(2, 5)
            start = time.monotonic()
            self.record("sqs-receive", "invoke", vt=vt)
            try:
                got = c.receive_message(QueueUrl=url, MaxNumberOfMessages=5, WaitTimeSeconds=1,
                                        VisibilityTimeout=vt)
            except (BotoCoreError, ClientError) as e:
                self.errors += 1
                self.record("sqs-receive", "info", error=str(e))
                self.stop_event.wait(0.2)
                continue
            msgs = got.get("Messages", [])
            for m in msgs:
                self.record("sqs-receive", "ok", value=m["Body"], start=start, vt=vt,
                            message_id=m["MessageId"])
            delete_most(self, c, url, msgs, "sqs-delete")


def fifo_place(value):
    """(group, seq) of a FIFO worker's value "<group>-<seq>"."""
    group, _, seq = value.rpartition("-")
    return group, int(seq)


class FifoWorker(Worker):
    def __init__(self, name, node, history, rng, queue_url_path):
        super().__init__(name, node, history, rng)
        self.queue_path = queue_url_path
        self.calls = 0

    def send(self, c, url, value):
        group, seq = fifo_place(value)
        self.record("fifo-send", "invoke", value=value, group=group, seq=seq)
        for _ in range(5):
            try:
                c.send_message(QueueUrl=url, MessageBody=value, MessageGroupId=group,
                               MessageDeduplicationId=value)
                self.record("fifo-send", "ok", value=value, group=group, seq=seq)
                return
            except ClientError as e:
                self.errors += 1
                self.record("fifo-send", "fail", value=value, group=group, seq=seq,
                            error=str(e))
                return
            except BotoCoreError:
                self.errors += 1
                self.stop_event.wait(0.3)  # the same deduplication id again
        self.record("fifo-send", "info", value=value, group=group, seq=seq)

    def body(self):
        c = sqs_client(self.node.sqs_url)
        url = self.node.sqs_url + self.queue_path
        seq = 0
        while not self.stop_event.is_set():
            if self.rng.random() < 0.5:
                self.send(c, url, f"{self.worker}-{seq}")
                seq += 1
                continue
            vt = self.rng.randint(2, 5)
            start = time.monotonic()
            self.calls += 1
            self.record("fifo-receive", "invoke", vt=vt, call=self.calls)
            try:
                got = c.receive_message(QueueUrl=url, MaxNumberOfMessages=5, WaitTimeSeconds=1,
                                        VisibilityTimeout=vt)
            except (BotoCoreError, ClientError) as e:
                self.errors += 1
                self.record("fifo-receive", "info", error=str(e), call=self.calls)
                self.stop_event.wait(0.2)
                continue
            msgs = got.get("Messages", [])
            for i, m in enumerate(msgs):
                group, mseq = fifo_place(m["Body"])
                self.record("fifo-receive", "ok", value=m["Body"], start=start, vt=vt,
                            group=group, seq=mseq, message_id=m["MessageId"], call=self.calls,
                            index=i)
            delete_most(self, c, url, msgs, "fifo-delete")


class RestProducer(Worker):
    def body(self):
        s = requests.Session()
        seq = 0
        while not self.stop_event.is_set():
            n = self.rng.randint(1, 3)
            values = [f"{self.worker}-{seq + i}" for i in range(n)]
            seq += n
            for v in values:
                self.record("send", "invoke", topic=self.topic, value=v)
            body = {"records": [{"value": base64.b64encode(v.encode()).decode()}
                                for v in values]}
            try:
                r = s.post(f"{self.node.http_url}/topics/{self.topic}", json=body, timeout=10,
                           headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
            except requests.RequestException as e:
                self.errors += 1
                s = requests.Session()
                for v in values:
                    self.record("send", "info", topic=self.topic, value=v, error=repr(e)[:200])
                self.stop_event.wait(0.2)  # sluice may be down: do not spin
                continue
            try:
                offsets = r.json().get("offsets", []) if r.status_code == 200 else []
            except ValueError:
                offsets = []
            for i, v in enumerate(values):
                o = offsets[i] if i < len(offsets) else None
                if o is not None and o.get("error_code") is None and o.get("offset", -1) >= 0:
                    self.record("send", "ok", topic=self.topic, partition=o["partition"],
                                offset=o["offset"], value=v, idempotent=False)
                else:
                    self.errors += 1
                    self.record("send", "info", topic=self.topic, value=v,
                                status=r.status_code, error=(o or {}).get("error"))
            time.sleep(0.05)


class KafkajsProducer(Worker):
    """Runs kafkajs_worker.js and records what it reports; closing its stdin stops it."""

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kafkajs_worker.js")
    partitions = 3  # run.PARTITIONS

    def body(self):
        proc = subprocess.Popen(["node", self.script, self.node.bootstrap, self.topic,
                                 self.worker, str(self.partitions)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        stopper = threading.Thread(target=self._stop_when_asked, args=(proc,), daemon=True)
        stopper.start()
        try:
            for line in proc.stdout:
                event = json.loads(line)
                if "invoke" in event:
                    self.record("send", "invoke", topic=self.topic, value=event["invoke"])
                elif "ok" in event:
                    self.record("send", "ok", topic=self.topic, partition=event["partition"],
                                offset=event["offset"], value=event["ok"], idempotent=True)
                else:
                    self.errors += 1
                    self.record("send", "info", topic=self.topic, value=event["info"],
                                error=event.get("error"))
        finally:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def _stop_when_asked(self, proc):
        self.stop_event.wait()
        try:
            proc.stdin.close()
        except OSError:
            pass


class WsProducer(Worker):
    """Produces one value at a time over /ws and waits for its ack (10 s at most). An ack is a
    send that must survive; a closed connection or no answer is an unknown outcome; an error
    answer is one too (a storage failure may come after the append)."""

    def body(self):
        asyncio.run(self.produce_loop())

    async def produce_loop(self):
        url = self.node.http_url.replace("http://", "ws://", 1) + "/ws"
        seq = 0
        pending = None  # the value sent whose answer has not come
        while not self.stop_event.is_set():
            try:
                ws = await asyncio.wait_for(websockets.connect(url, max_size=1 << 20), 10)
            except (OSError, asyncio.TimeoutError, websockets.WebSocketException):
                await asyncio.sleep(0.2)  # sluice may be down: do not spin
                continue
            try:
                while not self.stop_event.is_set():
                    value = f"{self.worker}-{seq}"
                    seq += 1
                    self.record("send", "invoke", topic=self.topic, value=value)
                    pending = value
                    await ws.send(json.dumps({"op": "produce", "id": value, "topic": self.topic,
                                              "value": value}))
                    answer = await self.answer_to(ws, value)
                    pending = None
                    if answer is None:
                        self.errors += 1
                        self.record("send", "info", topic=self.topic, value=value,
                                    error="no answer")
                        break
                    if answer.get("op") == "ack":
                        self.record("send", "ok", topic=self.topic,
                                    partition=answer["partition"], offset=answer["offset"],
                                    value=value, idempotent=False)
                    else:
                        self.errors += 1
                        self.record("send", "info", topic=self.topic, value=value,
                                    error=str(answer.get("message"))[:200])
                    await asyncio.sleep(0.02)
            except (OSError, asyncio.TimeoutError, websockets.WebSocketException) as e:
                if pending is not None:
                    self.errors += 1
                    self.record("send", "info", topic=self.topic, value=pending,
                                error=repr(e)[:200])
                    pending = None
            finally:
                try:
                    await asyncio.wait_for(ws.close(), 2)
                except Exception:
                    pass

    async def answer_to(self, ws, request_id):
        """The ack or error for `request_id`, or None when none comes within 10 s."""
        deadline = time.monotonic() + 10
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                raw = await asyncio.wait_for(ws.recv(), left)
            except asyncio.TimeoutError:
                return None
            msg = json.loads(raw)
            if msg.get("id") == request_id and msg.get("op") in ("ack", "error"):
                return msg
