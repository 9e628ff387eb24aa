"""Upstream mode in tests: a stand-in Kafka cluster and a sluice gateway in front of it.

Two stand-ins (../shared/TOOLCHAIN.md): librdkafka's mock cluster, run as the process
sluice_mock_cluster (tests/tools/mock_cluster.c; 3 brokers; topics named at start, since the
2.0.2 mock has no CreateTopics), and a second sluice in native mode (full admin API). A gateway
is `sluice --upstream BOOTSTRAP --http 127.0.0.1:0` on a data dir of its own, started and
stopped by harness.Sluice's machinery. Every wait has a bound.
"""
import os
import re
import select
import signal
import subprocess
import time

from harness import ROOT, Sluice, sluice_binary, wait_for

NEWER_LIBRDKAFKA = os.path.join(ROOT, "tests", "integration", "js", "node_modules", "node-rdkafka",
                                "build", "deps")


def mock_cluster_binary():
    """SLUICE_MOCK_CLUSTER, else sluice_mock_cluster beside the sluice binary (the build dir)."""
    path = os.environ.get("SLUICE_MOCK_CLUSTER") or os.path.join(
        os.path.dirname(sluice_binary()), "sluice_mock_cluster")
    if not os.path.exists(path):
        raise RuntimeError(f"sluice_mock_cluster not found at {path}; build the "
                           "sluice_mock_cluster target or set SLUICE_MOCK_CLUSTER")
    return path


def newer_mock_available():
    """Whether node-rdkafka's librdkafka 2.12 is built (then MockCluster(newer=True) runs)."""
    return os.path.exists(os.path.join(NEWER_LIBRDKAFKA, "librdkafka.so.1"))


class MockCluster:
    """librdkafka's mock cluster in a process of its own. `topics`: {name: partitions}.
    newer=True runs the same binary on librdkafka 2.12 (LD_LIBRARY_PATH; same ABI)."""

    def __init__(self, topics=None, brokers=3, newer=False):
        self.topics = dict(topics or {})
        self.brokers = brokers
        self.newer = newer
        self.proc = None
        self.bootstrap = None
        self.stderr_lines = []

    def start(self, timeout=30):
        cmd = [mock_cluster_binary(), "--brokers", str(self.brokers)]
        for name, partitions in self.topics.items():
            cmd += ["--topic", f"{name}:{partitions}"]
        env = dict(os.environ)
        if self.newer:
            env["LD_LIBRARY_PATH"] = NEWER_LIBRDKAFKA
        # stdin stays a pipe: the cluster stops when it closes (also when this test dies).
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        line = self._read_line(self.proc.stdout, timeout)
        if not line.startswith("bootstrap="):
            self.stop()
            raise RuntimeError(f"sluice_mock_cluster did not start: {line!r}\n" +
                               self.proc.stderr.read())
        self.bootstrap = line.strip()[len("bootstrap="):]
        return self

    @staticmethod
    def _read_line(stream, timeout):
        deadline = time.monotonic() + timeout
        ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError(f"sluice_mock_cluster printed nothing within {timeout}s")
        return stream.readline()

    def stop(self, timeout=15):
        """Closes stdin (the cluster's stop signal) and waits; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise RuntimeError(f"sluice_mock_cluster did not stop within {timeout}s")
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()
        return self.proc.returncode

    def delete_topic(self, name, timeout=10):
        """Makes a topic given at start look deleted (the mock has no DeleteTopics; see
        tests/tools/mock_cluster.c): Metadata answers UNKNOWN_TOPIC_OR_PART for it and its
        partitions have no leader. Waits for the tool's answer."""
        self.proc.stdin.write(f"delete-topic {name}\n")
        self.proc.stdin.flush()
        line = self._read_line(self.proc.stdout, timeout).strip()
        if line != f"deleted {name}":
            raise RuntimeError(f"sluice_mock_cluster: delete-topic {name}: {line!r}")

    def terminate(self, timeout=15):
        """SIGTERM; returns the exit code."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout)
        return self.stop()

    def __enter__(self):
        return self if self.proc is not None else self.start()

    def __exit__(self, *exc):
        self.stop()


class NativeUpstream(Sluice):
    """A second sluice in native mode playing the cluster (full admin API); `bootstrap` is
    its Kafka port. Never itself put behind a gateway (harness rerun mode)."""

    def __init__(self, settings=None, **kw):
        s = {"group.initial.rebalance.delay.ms": 0}
        s.update(settings or {})
        super().__init__(settings=s, rerun=False, **kw)


class Gateway(Sluice):
    """`sluice --upstream BOOTSTRAP --http 127.0.0.1:0` on a data dir of its own; settings as
    --set (upstream.PROPERTY for librdkafka). Its `bootstrap` is meaningless: read and write
    the upstream directly with the cluster's own bootstrap."""

    def __init__(self, upstream_bootstrap, settings=None, args=(), env=None):
        super().__init__(settings=settings, args=args, env=env, rerun=False)
        self.upstream_bootstrap = upstream_bootstrap

    def command(self):
        cmd = [sluice_binary(), "--data-dir", self.data_dir, "--upstream",
               self.upstream_bootstrap, "--http", "127.0.0.1:0"] + self.args
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        return cmd

    def start(self, timeout=30):
        return self._launch(self.command(), timeout)

    def run_to_exit(self, timeout=30):
        """Runs the gateway's command expecting it NOT to start: (exit code, stderr)."""
        r = subprocess.run(self.command(), capture_output=True, text=True, timeout=timeout,
                           env=self.env)
        return r.returncode, r.stderr

    def close(self):
        if self.proc is None:  # never started (run_to_exit): only the data dir to remove
            if self._tmp:
                self._tmp.cleanup()
            return
        super().close()

    @property
    def bootstrap(self):
        return self.upstream_bootstrap


def proxy_kafka_args(*protocols, span=4):
    """--kafka arguments for a gateway's proxy listeners on ports below the kernel's ephemeral
    range (32768 and up): a listener bound to port 0 serves upstream node N on its port + 1 +
    N, a port some other connection of a busy machine may hold for minutes, so that node is
    then never served. Listener i is at base + i * span (its nodes 0 .. span - 2 after it)."""
    base = free_port_block(span * len(protocols))
    args = []
    for i, protocol in enumerate(protocols):
        args += ["--kafka", f"{protocol}://127.0.0.1:{base + i * span}"]
    return args


def free_port_block(count):
    """The first of `count` consecutive ports on 127.0.0.1, free when looked at, below the
    kernel's ephemeral range (see proxy_kafka_args)."""
    import random
    import socket
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 30000 - count)
        socks = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
        return base
    raise RuntimeError("no free block of ports below the ephemeral range")


def resolve_shim_path():
    """The LD_PRELOAD getaddrinfo shim (tests/tools/resolve_shim.c: names under .kafka.test
    are 127.0.0.1): SLUICE_RESOLVE_SHIM, else libsluice_resolve_shim.so beside sluice."""
    path = os.environ.get("SLUICE_RESOLVE_SHIM") or os.path.join(
        os.path.dirname(sluice_binary()), "libsluice_resolve_shim.so")
    if not os.path.exists(path):
        raise RuntimeError(f"resolver shim not found at {path}: build the sluice_resolve_shim "
                           "target or set SLUICE_RESOLVE_SHIM")
    return path


def unreachable_bootstrap():
    """127.0.0.1:PORT with nothing listening (a port bound, then closed)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"127.0.0.1:{port}"


def kcat_read(bootstrap, topic, count, timeout=60, partition=None, fmt="%p %o %k %s\\n"):
    """`count` records of `topic` read with kcat from the beginning (-e: stop at the end is
    not used: kcat waits for `count` with -c)."""
    cmd = ["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-c", str(count),
           "-f", fmt]
    if partition is not None:
        cmd += ["-p", str(partition)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return [line for line in r.stdout.split("\n") if line]


def kcat_produce(bootstrap, topic, lines, partition=None, keyed=False, timeout=60):
    """Produces `lines` (key:value when keyed) with kcat."""
    cmd = ["kcat", "-b", bootstrap, "-P", "-t", topic]
    if partition is not None:
        cmd += ["-p", str(partition)]
    if keyed:
        cmd += ["-K", ":"]
    r = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stderr


def wait_ready(gateway, timeout=30):
    """Waits until the gateway's /readyz answers 200 (the cluster reached)."""
    import requests

    def ready():
        try:
            return requests.get(gateway.http_url + "/readyz", timeout=5).status_code == 200
        except requests.RequestException:
            return False
    wait_for(ready, timeout, "the gateway's /readyz to answer 200", interval=0.1)


def add_acl(data_dir, user, flags):
    """`sluice acls add` in a stopped gateway's data dir: ALLOW User:`user` with `flags`."""
    r = subprocess.run([sluice_binary(), "acls", "add", "--data-dir", data_dir,
                        "--allow-principal", f"User:{user}"] + flags,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (flags, r.stderr)


def listener_port(server, name):
    """The port of listener `name` ("kafka", "kafka_sasl_ssl", ...) from the listening line."""
    m = re.search(name + r"=[^ ]*:(\d+)", server.wait_log("listening:"))
    assert m, name
    return int(m.group(1))


def read_until(cfg, topic, wanted, timeout=30, group_prefix="read-until-"):
    """Reads `topic` partition 0 from the beginning with confluent-kafka config `cfg` (as a
    group named `group_prefix` + random, for the ACLs) until every value in `wanted` was seen;
    the values seen. Fails after `timeout` seconds."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer(dict(cfg, **{"group.id": group_prefix + os.urandom(3).hex(),
                              "enable.auto.commit": False}))
    c.assign([TopicPartition(topic, 0, 0)])
    seen = set()
    deadline = time.monotonic() + timeout
    try:
        while not set(wanted) <= seen:
            assert time.monotonic() < deadline, f"not read within {timeout}s: {set(wanted) - seen}"
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                seen.add(m.value().decode())
    finally:
        c.close()
    return seen
