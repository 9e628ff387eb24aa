"""Helpers for the tests of the HTTP front (REST Proxy v2/v3, WebSocket, SSE): topics made with
the Kafka admin client, JSON requests with python3-requests, and reading a topic back with a
Kafka consumer. Every wait has a bound."""
import base64
import json

import requests
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

V2 = "application/vnd.kafka.v2+json"
V2_JSON = "application/vnd.kafka.json.v2+json"
V2_BINARY = "application/vnd.kafka.binary.v2+json"


def create_topic(broker, name, partitions=1, config=None):
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in a.create_topics([NewTopic(name, partitions, 1, config=config or {})]).values():
        f.result(30)


def b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode()


def unb64(text):
    return None if text is None else base64.b64decode(text)


class Rest:
    """A keep-alive session against one sluice's HTTP port."""

    def __init__(self, broker, timeout=30):
        self.base = broker.http_url
        self.s = requests.Session()
        self.timeout = timeout

    def get(self, path, **kw):
        kw.setdefault("timeout", self.timeout)
        return self.s.get(self.base + path, **kw)

    def delete(self, path, **kw):
        kw.setdefault("timeout", self.timeout)
        return self.s.delete(self.base + path, **kw)

    def post(self, path, body=None, content_type=V2, raw=None, **kw):
        kw.setdefault("timeout", self.timeout)
        headers = dict(kw.pop("headers", {}))
        if content_type is not None:
            headers["Content-Type"] = content_type
        data = raw if raw is not None else (json.dumps(body) if body is not None else b"")
        return self.s.post(self.base + path, data=data, headers=headers, **kw)


def read_partition(broker, topic, partition, start, count, timeout=30):
    """`count` messages of one partition from offset `start`, with a Kafka consumer."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "reader",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, partition, start)])
        out = []
        import time
        deadline = time.monotonic() + timeout
        while len(out) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {len(out)} of {count} from {topic}/{partition}")
            for m in c.consume(count - len(out), 0.5):
                if m.error() is None:
                    out.append(m)
        return out
    finally:
        c.close()
