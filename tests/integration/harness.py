"""Starts and stops the real sluice binary for integration tests.

A test gets a running broker on free ports (listeners bound to port 0 on 127.0.0.1, the real
ports read from the "listening:" log line), a temporary data directory, and helpers to stop it
(SIGTERM), kill it (SIGKILL) and restart it on the same data. Every wait has a bound.

Upstream rerun mode: with SLUICE_TEST_UPSTREAM=native in the environment, every Sluice a test
starts is two processes: a sluice in native mode (the "upstream": the test's data dir, args and
settings, its Kafka port as `bootstrap`) and in front of it a gateway `sluice --upstream
<the upstream's Kafka port> --http ...` (its own data dir, the same settings), whose HTTP port
the test gets. The HTTP suites run unchanged against upstream mode that way; a test that reads
or produces with a Kafka client talks to the upstream directly.
"""
import os
import re
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sluice_binary():
    path = os.environ.get("SLUICE_BIN", os.path.join(ROOT, "build", "release", "sluice"))
    if not os.path.exists(path):
        raise RuntimeError(f"sluice binary not found at {path}; build first or set SLUICE_BIN")
    return path


def wait_for(predicate, timeout, what, interval=0.02):
    """Polls predicate until it returns a truthy value or the timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def upstream_rerun_mode():
    """What SLUICE_TEST_UPSTREAM asks for: None (plain native mode) or "native"."""
    mode = os.environ.get("SLUICE_TEST_UPSTREAM", "")
    if mode in ("", "0", "off"):
        return None
    if mode != "native":
        raise RuntimeError(f"SLUICE_TEST_UPSTREAM={mode}: only 'native' is known")
    return mode


def kernel_view(pid):
    """What the kernel says of a process and each of its threads (state, where it waits, the
    kernel stack where readable): gdb cannot attach to a process that is already exiting."""
    out = []

    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError as e:
            return f"({e.strerror})"
    status = read(f"/proc/{pid}/status")
    out += [l for l in status.splitlines() if l.startswith(("State", "Threads", "SigPnd",
                                                            "ShdPnd"))] or [status]
    try:
        tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
    except OSError as e:
        return "\n".join(out + [f"(no tasks: {e.strerror})"])
    for tid in tids[:64]:
        stat = read(f"/proc/{pid}/task/{tid}/stat")
        state = stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else stat
        out.append(f"task {tid} {read(f'/proc/{pid}/task/{tid}/comm')} state {state} "
                   f"wchan {read(f'/proc/{pid}/task/{tid}/wchan')}")
        stack = read(f"/proc/{pid}/task/{tid}/stack")
        out += ["    " + l for l in stack.splitlines()[:12]]
    return "\n".join(out)


def thread_stacks(pid):
    """Every thread's stack of a process that hangs (gdb, bounded), for the failure message,
    after what the kernel says of it."""
    view = kernel_view(pid)
    try:
        r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                           capture_output=True, text=True, timeout=60)
        stacks = "\n".join(l for l in r.stdout.splitlines() if l.startswith(("#", "Thread")))
        if not stacks:
            stacks = "(gdb: " + " | ".join(r.stderr.strip().splitlines()[-3:]) + ")"
        return view + "\n" + stacks
    except (OSError, subprocess.TimeoutExpired) as e:
        return view + f"\n(no stacks: {e})"


class Sluice:
    def __init__(self, data_dir=None, args=(), settings=None, sqs=False, env=None,
                 rerun=True):
        # Upstream rerun mode (module doc): this object is the gateway, self.upstream the
        # native sluice behind it. rerun=False: a plain sluice whatever the environment.
        self.upstream = None
        self._rerun = rerun and upstream_rerun_mode() is not None
        self._env_given = env
        self._gateway_tmp = None
        self._tmp = None
        self.env = None if env is None else {**os.environ, **env}
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="sluice-test-")
            data_dir = self._tmp.name
        self.data_dir = data_dir
        self.args = list(args)
        self.settings = dict(settings or {})
        self.sqs = sqs
        self.http = True  # False: --http off (the native upstream of rerun mode)
        self.proc = None
        self.kafka_port = None
        self.http_port = None
        self.sqs_port = None
        self.log_lines = []
        self._log_lock = threading.Lock()
        self._reader = None  # the log reader of the running process

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout=30):
        if self._rerun:
            return self._start_behind_gateway(timeout)
        cmd = [sluice_binary(), "--data-dir", self.data_dir, "--kafka", "127.0.0.1:0",
               "--http", "127.0.0.1:0" if self.http else "off",
               "--sqs", "127.0.0.1:0" if self.sqs else "off"] + self.args
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        return self._launch(cmd, timeout)

    def _start_behind_gateway(self, timeout):
        """Upstream rerun mode: the native upstream on this object's data dir, then the
        gateway in front of it on a data dir of its own."""
        if self.upstream is None:
            # SQS is the gateway's (queues over the upstream's topics), not the upstream's.
            self.upstream = Sluice(self.data_dir, self.args, self.settings, False,
                                   self._env_given, rerun=False)
            # It plays a Kafka cluster, which serves no HTTP: with an HTTP front it would also
            # restore the REST consumer instances the gateway keeps in its topics and join
            # their groups as the same static members, fencing the gateway's.
            self.upstream.http = False
        self.upstream.start(timeout)
        if self._gateway_tmp is None:
            self._gateway_tmp = tempfile.TemporaryDirectory(prefix="sluice-gateway-")
        cmd = [sluice_binary(), "--data-dir", self._gateway_tmp.name,
               "--upstream", self.upstream.bootstrap, "--http", "127.0.0.1:0"]
        if self.sqs:
            cmd += ["--sqs", "127.0.0.1:0"]
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        try:
            self._launch(cmd, timeout)
        except BaseException:
            self.upstream.stop()
            raise
        self.kafka_port = self.upstream.kafka_port
        return self

    def _launch(self, cmd, timeout):
        with self._log_lock:
            self.log_lines = []  # a restart must not find the previous run's "listening:" line
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, errors="replace", env=self.env)
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        line = wait_for(lambda: self._find_line("listening:") or self._exited(), timeout,
                        "sluice to start listening")
        if line is True:
            # The process is gone, but its last lines may still be on their way through the
            # reader thread: let it reach the end of the pipe first.
            self._reader.join(10)
            raise RuntimeError("sluice exited during start:\n" + self.log_text())
        m = re.search(r"kafka=[^ ]*:(\d+)", line)
        self.kafka_port = int(m.group(1)) if m else None
        m = re.search(r"http=[^ ]*:(\d+)", line)
        self.http_port = int(m.group(1)) if m else None
        m = re.search(r"sqs=[^ ]*:(\d+)", line)
        self.sqs_port = int(m.group(1)) if m else None
        return self

    def _exited(self):
        return self.proc.poll() is not None

    def _read_log(self):
        for line in self.proc.stderr:
            with self._log_lock:
                self.log_lines.append(line.rstrip("\n"))

    def _find_line(self, needle):
        with self._log_lock:
            for line in self.log_lines:
                if needle in line:
                    return line
        return None

    def log_text(self):
        with self._log_lock:
            text = "\n".join(self.log_lines)
        if self.upstream is not None:
            text += "\n--- upstream ---\n" + self.upstream.log_text()
        return text

    def wait_log(self, needle, timeout=10):
        def find():
            return self._find_line(needle) or (self.upstream and self.upstream._find_line(needle))
        return wait_for(find, timeout, f"log line '{needle}'")

    def stop(self, timeout=30):
        """SIGTERM and wait; returns the exit code."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                stacks = thread_stacks(self.proc.pid)
                self.proc.kill()
                self.proc.wait(10)
                if self.upstream is not None:  # not left running by the failure
                    self.upstream.kill()
                if self._reader is not None:
                    self._reader.join(5)
                with self._log_lock:
                    tail = "\n".join(self.log_lines[-40:])
                    whole = "\n".join(self.log_lines) + "\n"
                fd, saved = tempfile.mkstemp(prefix="sluice-hang-", suffix=".log")
                with os.fdopen(fd, "w") as f:
                    f.write(whole)
                raise RuntimeError("sluice did not stop within %ss of SIGTERM; its whole log is "
                                   "in %s; its last log lines:\n%s\nits threads:\n%s"
                                   % (timeout, saved, tail, stacks))
        if self._reader is not None:  # None when it never started (its upstream refused)
            self._reader.join(5)
        if self.upstream is not None:
            self.upstream.stop(timeout)
        return self.proc.returncode if self.proc else None

    def kill(self):
        """SIGKILL: the crash case."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self._reader is not None:
            self._reader.join(5)
        if self.upstream is not None:
            self.upstream.kill()

    def restart(self):
        self.stop()
        return self.start()

    def __enter__(self):
        return self if self.proc is not None else self.start()

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.stop()
        finally:
            if self._tmp:
                self._tmp.cleanup()
            if self._gateway_tmp:
                self._gateway_tmp.cleanup()

    # --- addresses ---------------------------------------------------------------------------
    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def http_url(self):
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def sqs_url(self):
        return f"http://127.0.0.1:{self.sqs_port}"

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


# --- raw Kafka protocol helpers for tests that need exact bytes ------------------------------

def kafka_request(api_key, version, correlation_id, body=b"", client_id="raw-test",
                  flexible_header=False):
    cid = client_id.encode()
    header = struct.pack(">hhih", api_key, version, correlation_id, len(cid)) + cid
    if flexible_header:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def read_frame(sock, timeout=10):
    sock.settimeout(timeout)
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return recv_exact(sock, size)


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed after %d of %d bytes" % (len(data), n))
        data += chunk
    return data


def connect(port, timeout=10):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


# --- reading a topic to a known end ----------------------------------------------------------

def consume_to_end(consumer, topic, partitions, timeout):
    """The values of partitions 0..partitions-1 of `topic`, from offset 0 up to the end each
    has when the call starts: the high watermark, or the last stable offset for a
    read_committed consumer (ListOffsets, asked before reading). Raises TimeoutError when the
    consumer has not reached every end within `timeout` seconds."""
    from confluent_kafka import TopicPartition  # here: the rest of the harness needs no client
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    ends = [consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in tps]
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values = []

    def reached():
        # The position passes aborted records and transaction markers too; before the first
        # fetch it is negative (no position yet).
        positions = [max(tp.offset, 0) for tp in consumer.position(tps)]
        return all(pos >= end for pos, end in zip(positions, ends))

    deadline = time.monotonic() + timeout
    while not reached():
        if time.monotonic() > deadline:
            positions = [tp.offset for tp in consumer.position(tps)]
            raise TimeoutError(f"timed out after {timeout}s reading {topic} to {ends} "
                               f"(at {positions})")
        for m in consumer.consume(500, 0.2):
            if m.error() is None:
                values.append(m.value())
    return values
