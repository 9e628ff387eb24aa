"""SASL test support: users made with `sluice users set`, a sluice with a SASL_PLAINTEXT
listener beside the harness's plaintext one, and raw SaslHandshake/SaslAuthenticate frames."""
import re
import struct
import subprocess
import tempfile
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from harness import Sluice, kafka_request, read_frame, sluice_binary

PASSWORDS = {"alice": "alice-Secret-1", "bob": "bob-Secret-2"}


def users(*args, stdin=None, timeout=30):
    """Runs `sluice users ARGS...`; returns the CompletedProcess."""
    return subprocess.run([sluice_binary(), "users"] + list(args), input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def set_user(data_dir, name, password):
    r = users("set", name, "--data-dir", data_dir, stdin=password + "\n")
    assert r.returncode == 0, r.stderr
    return r


class SaslSluice:
    """A sluice with users alice and bob, a plaintext listener (port) and a SASL_PLAINTEXT one
    (sasl_port)."""

    def __init__(self, settings=None, extra_args=()):
        self._tmp = tempfile.TemporaryDirectory(prefix="sluice-sasl-test-")
        for name, password in PASSWORDS.items():
            set_user(self._tmp.name, name, password)
        self.server = Sluice(data_dir=self._tmp.name, settings=settings,
                             args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"] + list(extra_args))
        self.sasl_port = None

    def start(self):
        self.server.start()
        line = self.server._find_line("listening:")
        m = re.search(r"kafka_sasl_plaintext=[^ ]*:(\d+)", line)
        assert m, line
        self.sasl_port = int(m.group(1))
        return self

    def close(self):
        try:
            self.server.stop()
        finally:
            self._tmp.cleanup()

    @property
    def sasl_bootstrap(self):
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def plain_bootstrap(self):
        return self.server.bootstrap

    @property
    def data_dir(self):
        return self._tmp.name


def client_config(broker, mechanism, user="alice", password=None, **extra):
    cfg = {"bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
           "sasl.mechanism": mechanism, "sasl.username": user,
           "sasl.password": PASSWORDS.get(user, "x") if password is None else password}
    cfg.update(extra)
    return cfg


# --- confluent-kafka helpers -------------------------------------------------------------------

def produce(cfg, topic, values, timeout=30):
    errors = []
    p = Producer(dict(cfg, **{"acks": "all"}))
    for v in values:
        p.produce(topic, v.encode(), partition=0,
                  on_delivery=lambda err, msg: errors.append(err) if err else None)
    left = p.flush(timeout)
    assert left == 0, f"{left} records not delivered within {timeout}s"
    assert not errors, errors


def consume_all(cfg, topic, count, timeout=30):
    c = Consumer(dict(cfg, **{"group.id": "sasl-test", "enable.auto.commit": False}))
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m.value().decode())
    finally:
        c.close()
    return got


def auth_error(cfg, timeout=20):
    """The error a client gets when its login is refused (the first _AUTHENTICATION error
    reported through error_cb), or None if none came within `timeout` seconds."""
    errors = []
    p = Producer(dict(cfg, **{"error_cb": errors.append}))
    p.produce("never", b"x")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p.poll(0.2)
        for e in errors:
            if e.code() == KafkaError._AUTHENTICATION:
                p.purge()
                return e
    p.purge()
    return None


# --- raw frames --------------------------------------------------------------------------------

def kstring(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def kbytes(b):
    return struct.pack(">i", len(b)) + b


def sasl_handshake(sock, mechanism, version=1, correlation_id=1):
    """Sends SaslHandshake; returns (error_code, [mechanisms])."""
    sock.sendall(kafka_request(17, version, correlation_id, kstring(mechanism)))
    body = read_frame(sock)
    assert struct.unpack(">i", body[:4])[0] == correlation_id
    error, count = struct.unpack(">hi", body[4:10])
    pos, names = 10, []
    for _ in range(count):
        n = struct.unpack(">h", body[pos:pos + 2])[0]
        names.append(body[pos + 2:pos + 2 + n].decode())
        pos += 2 + n
    return error, names


def sasl_authenticate(sock, token, version=1, correlation_id=2):
    """Sends SaslAuthenticate v0/v1; returns (error_code, error_message, auth_bytes)."""
    sock.sendall(kafka_request(36, version, correlation_id, kbytes(token)))
    body = read_frame(sock)
    assert struct.unpack(">i", body[:4])[0] == correlation_id
    error, mlen = struct.unpack(">hh", body[4:8])
    pos = 8
    message = None
    if mlen >= 0:
        message = body[pos:pos + mlen].decode()
        pos += mlen
    blen = struct.unpack(">i", body[pos:pos + 4])[0]
    auth = body[pos + 4:pos + 4 + blen]
    return error, message, auth


def api_versions_keys(sock, correlation_id=3):
    """ApiVersions v0: the advertised API keys."""
    sock.sendall(kafka_request(18, 0, correlation_id))
    body = read_frame(sock)
    error, count = struct.unpack(">hi", body[4:10])
    assert error == 0
    return {struct.unpack(">h", body[10 + 6 * i:12 + 6 * i])[0] for i in range(count)}


def metadata_v1_all(correlation_id=4):
    return kafka_request(3, 1, correlation_id, struct.pack(">i", -1))


def closed_by_peer(sock, timeout=10):
    """True when the server closes the connection (no bytes, EOF) within `timeout` seconds."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
