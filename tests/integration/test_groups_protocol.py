"""Group APIs at the wire level: FindCoordinator (single and batched forms, bad key types), the
documented Kafka errors for bad JoinGroup/SyncGroup/Heartbeat/DeleteGroups input (unknown
member ids, wrong generations, unknown protocols, huge metadata), that a bad group leaves the
others alone, and the HTTP view of groups."""
import struct

import pytest
import requests

from harness import Sluice, connect, kafka_request, read_frame

UNKNOWN_SERVER_ERROR = -1
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
INVALID_REQUEST = 42
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_SUBSCRIBED_TO_TOPIC = 86


# --- a tiny encoder/decoder for the classic (non-flexible) versions ------------------------------

def s(x):
    return struct.pack(">h", len(x.encode())) + x.encode()


def ns(x):
    return struct.pack(">h", -1) if x is None else s(x)


def b(x):
    return struct.pack(">i", len(x)) + x


def arr(items):
    return struct.pack(">i", len(items)) + b"".join(items)


def uv(n):
    out = b""
    while True:
        c = n & 0x7f
        n >>= 7
        if n:
            out += bytes([c | 0x80])
        else:
            return out + bytes([c])


def cs(x):
    """Compact string (flexible versions)."""
    return uv(len(x.encode()) + 1) + x.encode()


def carr(items):
    return uv(len(items) + 1) + b"".join(items)


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        v = self.d[self.p:self.p + n]
        self.p += n
        return v

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def str(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def bytes(self):
        n = self.i32()
        return None if n < 0 else self.take(n)

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        shift = v = 0
        while True:
            c = self.take(1)[0]
            v |= (c & 0x7f) << shift
            if not c & 0x80:
                return v
            shift += 7

    def cstr(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode()


class Client:
    def __init__(self, port):
        self.sock = connect(port, timeout=30)
        self.cid = 0

    def call(self, key, version, body, flexible=False):
        self.cid += 1
        self.sock.sendall(kafka_request(key, version, self.cid, body, flexible_header=flexible))
        frame = read_frame(self.sock, timeout=30)
        r = Reader(frame)
        assert r.i32() == self.cid
        if flexible and key != 18:
            r.uvarint()  # response header tagged fields
        return r

    def join(self, group, member, metadata=b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff",
             protocol="range", session=10000, instance=None):
        body = (s(group) + struct.pack(">ii", session, 30000) + s(member) + ns(instance) +
                s("consumer") + arr([s(protocol) + b(metadata)]))
        r = self.call(11, 5, body)
        r.i32()
        err, gen = r.i16(), r.i32()
        proto, leader, member_id = r.str(), r.str(), r.str()
        members = [(r.str(), r.str(), r.bytes()) for _ in range(r.i32())]
        return {"error": err, "generation": gen, "protocol": proto, "leader": leader,
                "member_id": member_id, "members": members}

    def join_new(self, group, **kw):
        first = self.join(group, "", **kw)
        assert first["error"] == MEMBER_ID_REQUIRED
        return self.join(group, first["member_id"], **kw)

    def sync(self, group, generation, member, assignments=()):
        body = (s(group) + struct.pack(">i", generation) + s(member) + ns(None) +
                arr([s(m) + b(a) for m, a in assignments]))
        r = self.call(14, 3, body)
        r.i32()
        return r.i16(), r.bytes()

    def heartbeat(self, group, generation, member):
        r = self.call(12, 3, s(group) + struct.pack(">i", generation) + s(member) + ns(None))
        r.i32()
        return r.i16()

    def delete_groups(self, groups):
        r = self.call(42, 1, arr([s(g) for g in groups]))
        r.i32()
        return {r.str(): r.i16() for _ in range(r.i32())}

    def list_groups(self):
        r = self.call(16, 2, b"")
        r.i32()
        err = r.i16()
        return err, {r.str(): r.str() for _ in range(r.i32())}

    def commit_v2(self, group, generation, member, topic, offsets):
        body = (s(group) + struct.pack(">i", generation) + s(member) + struct.pack(">q", -1) +
                arr([s(topic) + arr([struct.pack(">iq", p, o) + ns("m") for p, o in offsets])]))
        r = self.call(8, 2, body)
        out = {}
        for _ in range(r.i32()):
            name = r.str()
            for _ in range(r.i32()):
                p, err = r.i32(), r.i16()
                out[(name, p)] = err
        return out

    def offset_fetch_v8(self, groups):
        """groups: [(group, None | [(topic, [partitions])])] -> {group: (error, {(t, p): off})}"""
        body = b""
        items = []
        for g, topics in groups:
            t = uv(0) if topics is None else carr(
                [cs(name) + carr([struct.pack(">i", p) for p in parts]) + b"\x00"
                 for name, parts in topics])
            items.append(cs(g) + t + b"\x00")
        body = carr(items) + b"\x00" + b"\x00"
        r = self.call(9, 8, body, flexible=True)
        r.i32()
        out = {}
        for _ in range(r.uvarint() - 1):
            g = r.cstr()
            offs = {}
            for _ in range(r.uvarint() - 1):
                name = r.cstr()
                for _ in range(r.uvarint() - 1):
                    p, off, _epoch, _meta, err = r.i32(), r.i64(), r.i32(), r.cstr(), r.i16()
                    r.uvarint()
                    offs[(name, p)] = off
                r.uvarint()
            err = r.i16()
            r.uvarint()
            out[g] = (err, offs)
        return out

    def list_groups_v4(self, states):
        r = self.call(16, 4, carr([cs(x) for x in states]) + b"\x00", flexible=True)
        r.i32()
        err = r.i16()
        out = {}
        for _ in range(r.uvarint() - 1):
            gid, ptype, state = r.cstr(), r.cstr(), r.cstr()
            r.uvarint()
            out[gid] = state
        return err, out

    def offset_delete(self, group, topic, partitions):
        body = s(group) + arr([s(topic) + arr([struct.pack(">i", p) for p in partitions])])
        r = self.call(47, 0, body)
        err = r.i16()
        r.i32()
        out = {}
        for _ in range(r.i32()):
            name = r.str()
            for _ in range(r.i32()):
                p, e = r.i32(), r.i16()
                out[(name, p)] = e
        return err, out

    def find_coordinator_v2(self, key, key_type):
        r = self.call(10, 2, s(key) + struct.pack(">b", key_type))
        r.i32()
        err, msg, node, host, port = r.i16(), r.str(), r.i32(), r.str(), r.i32()
        return err, node, host, port

    def find_coordinator_v4(self, keys, key_type):
        def cs(x):
            return bytes([len(x) + 1]) + x.encode()
        body = struct.pack(">b", key_type) + bytes([len(keys) + 1]) + b"".join(
            cs(k) for k in keys) + b"\x00"
        r = self.call(10, 4, body, flexible=True)
        r.i32()
        out = []
        for _ in range(r.uvarint() - 1):
            key, node, host, port, err, msg = r.cstr(), r.i32(), r.cstr(), r.i32(), r.i16(), r.cstr()
            r.uvarint()
            out.append((key, node, host, port, err))
        return out


@pytest.fixture
def fast_broker():
    s_ = Sluice(settings={"group.initial.rebalance.delay.ms": "100"}).start()
    try:
        yield s_
    finally:
        s_.close()


def test_find_coordinator_single_and_batched(fast_broker):
    c = Client(fast_broker.kafka_port)
    assert c.find_coordinator_v2("g", 0) == (0, 0, "127.0.0.1", fast_broker.kafka_port)
    assert c.find_coordinator_v2("txn", 1) == (0, 0, "127.0.0.1", fast_broker.kafka_port)
    assert c.find_coordinator_v2("x", 5)[0] == INVALID_REQUEST
    assert c.find_coordinator_v4(["a", "b"], 0) == [
        ("a", 0, "127.0.0.1", fast_broker.kafka_port, 0),
        ("b", 0, "127.0.0.1", fast_broker.kafka_port, 0)]
    bad = c.find_coordinator_v4(["a"], 2)
    assert bad[0][4] == INVALID_REQUEST and bad[0][1] == -1


def test_bad_input_gets_kafka_errors_and_leaves_other_groups_alone(fast_broker):
    c = Client(fast_broker.kafka_port)
    # A healthy group alongside.
    ok = c.join_new("healthy")
    assert ok["error"] == 0 and ok["generation"] == 1 and ok["leader"] == ok["member_id"]
    assert c.sync("healthy", 1, ok["member_id"], [(ok["member_id"], b"")])[0] == 0

    assert c.join("bad", "never-issued")["error"] == UNKNOWN_MEMBER_ID
    assert c.join("bad", "", session=1000)["error"] == INVALID_SESSION_TIMEOUT
    assert c.heartbeat("healthy", 7, ok["member_id"]) == ILLEGAL_GENERATION
    assert c.sync("healthy", 7, ok["member_id"])[0] == ILLEGAL_GENERATION
    assert c.heartbeat("healthy", 1, "someone-else") == UNKNOWN_MEMBER_ID
    # A protocol no member of "healthy" speaks.
    assert c.join("healthy", "", protocol="no-such-assignor")["error"] == \
        INCONSISTENT_GROUP_PROTOCOL

    # Huge metadata: the member joins, but the generation cannot be stored (over the
    # offsets topic's max.message.bytes), so the leader's SyncGroup fails as Kafka's does.
    big = c.join_new("huge", metadata=b"\x07" * (2 << 20))
    assert big["error"] == 0
    assert c.sync("huge", big["generation"], big["member_id"])[0] == UNKNOWN_SERVER_ERROR

    assert c.heartbeat("healthy", 1, ok["member_id"]) == 0
    assert c.delete_groups(["healthy", "never"]) == {"healthy": NON_EMPTY_GROUP,
                                                      "never": GROUP_ID_NOT_FOUND}
    err, groups = c.list_groups()
    assert err == 0 and groups.get("healthy") == "consumer"


def test_offsets_at_the_wire(fast_broker):
    c = Client(fast_broker.kafka_port)
    c.call(3, 1, arr([s("ot")]))  # Metadata v1 auto-creates the topic (one partition)
    ok = c.join_new("og")
    assert c.sync("og", 1, ok["member_id"], [(ok["member_id"], b"")])[0] == 0
    assert c.commit_v2("og", 1, ok["member_id"], "ot", [(0, 42)]) == {("ot", 0): 0}
    assert c.commit_v2("og", 0, ok["member_id"], "ot", [(0, 43)]) == {("ot", 0): ILLEGAL_GENERATION}
    assert c.commit_v2("simple", -1, "", "ot", [(0, 7)]) == {("ot", 0): 0}
    # OffsetFetch v8: several groups, one with the all-partitions form (null topics).
    res = c.offset_fetch_v8([("og", None), ("simple", [("ot", [0])]), ("none", [("ot", [0])])])
    assert res["og"] == (0, {("ot", 0): 42})
    assert res["simple"] == (0, {("ot", 0): 7})
    assert res["none"] == (0, {("ot", 0): -1})
    # ListGroups v4 state filter.
    assert c.list_groups_v4(["stable"]) == (0, {"og": "Stable"})
    assert c.list_groups_v4(["Empty"]) == (0, {"simple": "Empty"})
    # OffsetDelete: a topic the group consumes is refused; a simple group's offsets go.
    assert c.offset_delete("og", "t", [0]) == (0, {("t", 0): GROUP_SUBSCRIBED_TO_TOPIC})
    assert c.offset_delete("simple", "ot", [0]) == (0, {("ot", 0): 0})
    assert c.offset_fetch_v8([("simple", [("ot", [0])])])["simple"] == (0, {("ot", 0): -1})
    assert c.offset_delete("nope", "ot", [0])[0] == GROUP_ID_NOT_FOUND


def test_http_view_of_groups(fast_broker):
    c = Client(fast_broker.kafka_port)
    ok = c.join_new("viewed")
    assert c.sync("viewed", 1, ok["member_id"], [(ok["member_id"], b"")])[0] == 0
    groups = requests.get(f"{fast_broker.http_url}/v1/groups", timeout=10).json()["groups"]
    assert [g["group_id"] for g in groups] == ["viewed"]
    assert groups[0]["state"] == "Stable" and groups[0]["members"] == 1
    one = requests.get(f"{fast_broker.http_url}/v1/groups/viewed", timeout=10).json()
    assert one["members"][0]["member_id"] == ok["member_id"]
    assert one["members"][0]["client_id"] == "raw-test"
    missing = requests.get(f"{fast_broker.http_url}/v1/groups/nope", timeout=10)
    assert missing.status_code == 404
