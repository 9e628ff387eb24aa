"""A small synchronous WebSocket client (RFC 6455) over a plain socket, for the tests of sluice's
/ws endpoint: it can send what a library would refuse to (unmasked, oversized or binary frames)
and read frame by frame. Every read has a timeout. decode_records() turns a records frame of
either encoding (the default or "compact", docs/http.md) into the default frame's records."""
import base64
import json
import os
import socket
import struct

from harness import connect

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0, 1, 2, 8, 9, 10


def decode_records(msg):
    """The records of a records frame as the default frame's record objects: the records list
    as it is, or a compact frame's runs rebuilt (offsets and timestamps from their deltas, keys
    null and headers {} where the run has no such column). Asserts the columns' lengths."""
    assert msg["op"] == "records", msg
    if msg.get("encoding", "records") == "records":
        return msg["records"]
    assert msg["encoding"] == "compact", msg
    assert "records" not in msg
    out = []
    for run in msg["runs"]:
        n = len(run["values"])
        for column in ("timestamps", "offsets", "keys", "headers"):
            assert column not in run or len(run[column]) == n, (column, run)
        offset, ts = run["base_offset"], run["base_timestamp"]
        for i in range(n):
            offset = offset + run["offsets"][i] if "offsets" in run else run["base_offset"] + i
            ts += run["timestamps"][i]
            out.append({"topic": run["topic"], "partition": run["partition"], "offset": offset,
                        "timestamp": ts, "key": run["keys"][i] if "keys" in run else None,
                        "value": run["values"][i],
                        "headers": run["headers"][i] if "headers" in run else {}})
    return out


class Closed(Exception):
    def __init__(self, code, reason=""):
        super().__init__(f"closed {code} {reason}")
        self.code = code


class WsClient:
    def __init__(self, port, path="/ws", timeout=30, headers=()):
        self.sock = connect(port, timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", "Upgrade: websocket",
                 "Connection: Upgrade", f"Sec-WebSocket-Key: {key}",
                 "Sec-WebSocket-Version: 13"] + list(headers)
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.f = self.sock.makefile("rb")
        status = self.f.readline()
        if b" 101 " not in status:
            raise ConnectionError(f"no upgrade: {status!r}")
        while self.f.readline() not in (b"\r\n", b""):
            pass

    # --- sending ------------------------------------------------------------------------------
    def frame(self, opcode, payload, fin=True, mask=True):
        head = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        m = 0x80 if mask else 0
        if n < 126:
            head += bytes([m | n])
        elif n < 65536:
            head += bytes([m | 126]) + struct.pack(">H", n)
        else:
            head += bytes([m | 127]) + struct.pack(">Q", n)
        if mask:
            key = os.urandom(4)
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
            head += key
        return head + payload

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, obj):
        text = obj if isinstance(obj, str) else json.dumps(obj)
        self.send_raw(self.frame(OP_TEXT, text.encode()))

    def send_binary(self, data):
        self.send_raw(self.frame(OP_BINARY, data))

    # --- receiving ----------------------------------------------------------------------------
    def _exact(self, n):
        data = self.f.read(n)
        if len(data) != n:
            raise Closed(None, "connection ended")
        return data

    def read_frame(self):
        """(opcode, payload) of the next message: a fragmented one is reassembled."""
        fin, opcode, payload = self._frame()
        while not fin and opcode not in (OP_PING, OP_PONG, OP_CLOSE):
            fin, _, more = self._frame()
            payload += more
        return opcode, payload

    def _frame(self):
        b0, b1 = self._exact(2)
        fin = bool(b0 & 0x80)
        opcode = b0 & 0x0F
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._exact(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._exact(8))[0]
        payload = self._exact(n)
        return fin, opcode, payload

    def recv(self):
        """The next text message as parsed JSON; answers pings; raises Closed on close."""
        while True:
            opcode, payload = self.read_frame()
            if opcode == OP_PING:
                self.send_raw(self.frame(OP_PONG, payload))
                continue
            if opcode == OP_CLOSE:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                raise Closed(code, payload[2:].decode(errors="replace"))
            if opcode == OP_TEXT:
                return json.loads(payload)

    def recv_op(self, op):
        """Messages until one with this op; returns it and those skipped."""
        skipped = []
        while True:
            m = self.recv()
            if m.get("op") == op:
                return m, skipped
            skipped.append(m)

    def close(self):
        """Closes the connection (the reader made by makefile holds the socket open too)."""
        for c in (self.f, self.sock):
            try:
                c.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
