"""One sluice for a fault run: fixed ports (so that a restart after SIGKILL comes back where the
clients and proxies expect it), one data directory kept across restarts, a loopback proxy in
front of each listener (Kafka, HTTP, SQS) that the nemesis can cut, delay or stall, and the
Kafka listener advertising its proxy so that clients never bypass it.

The same class runs a gateway of the upstream mode (`args=["--upstream", BOOTSTRAP]`): its Kafka
listener is then the proxy, whose node ports (proxy.node.port.base + node id, fixed here so that
a restart serves them again) clients reach directly; `sqs=False` turns its SQS listener off."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
from harness import sluice_binary, wait_for  # noqa: E402
from tcp_proxy import CuttingProxy  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, data_dir, settings=None, env=None, log_path=None, proxies=True, args=(),
                 sqs=True, name="sluice"):
        self.data_dir = data_dir
        self.settings = dict(settings or {})
        self.env = dict(env or {})
        self.log_path = log_path
        self.args = list(args)
        self.name = name
        self.ports = {"kafka": free_port(), "http": free_port()}
        if sqs:
            self.ports["sqs"] = free_port()
        self.proxies = {}
        if proxies:
            for name, port in self.ports.items():
                # The proxies never cut by byte count here; the nemesis cuts them.
                p = CuttingProxy(cut_every_bytes=1 << 62, idle_timeout=60)
                p.cutting = False
                self.proxies[name] = p.start(port)
        self.proc = None
        self.starts = 0
        self.stopped = False  # SIGSTOPped
        self._lines = []
        self._lock = threading.Lock()
        self._log = open(log_path, "a", buffering=1) if log_path else None

    # Addresses clients use: through the proxy when there is one.
    def _client_port(self, name):
        return self.proxies[name].port if name in self.proxies else self.ports[name]

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self._client_port('kafka')}"

    @property
    def http_url(self):
        return f"http://127.0.0.1:{self._client_port('http')}"

    @property
    def sqs_url(self):
        return f"http://127.0.0.1:{self._client_port('sqs')}"

    @property
    def direct_bootstrap(self):
        return f"127.0.0.1:{self.ports['kafka']}"

    def start(self, timeout=60):
        try:
            return self._start(timeout)
        except RuntimeError as e:
            # free_port() can race with another process taking the port before sluice binds
            # it (sluice then exits during start; today it even dies of SIGSEGV when a port
            # is taken): on the first start only, when no client knows the ports yet, try
            # once more on new ones.
            if self.starts != 1:
                raise
            self.ports = {name: free_port() for name in self.ports}
            for name, p in self.proxies.items():
                p.target_port = self.ports[name]
            self.starts = 0
            return self._start(timeout)

    def _start(self, timeout):
        cmd = [sluice_binary(), "--data-dir", self.data_dir,
               "--kafka", f"127.0.0.1:{self.ports['kafka']}",
               "--http", f"127.0.0.1:{self.ports['http']}",
               "--sqs", f"127.0.0.1:{self.ports['sqs']}" if "sqs" in self.ports else "off"]
        cmd += self.args
        if self.proxies:
            cmd += ["--advertise-kafka", self.bootstrap]
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        env = dict(os.environ)
        env.update(self.env)
        with self._lock:
            self._lines = []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, errors="replace", env=env)
        self.stopped = False
        self.starts += 1
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()
        got = wait_for(lambda: self.find("listening:") or self.proc.poll() is not None, timeout,
                       "sluice to listen")
        if got is True:
            self._reader.join(10)
            raise RuntimeError("sluice exited during start:\n" + self.log_text())
        return self

    def _read(self, proc):
        for line in proc.stderr:
            line = line.rstrip("\n")
            with self._lock:
                self._lines.append(line)
            if self._log:
                self._log.write(f"{self.name}: {line}\n" if self.name != "sluice" else line + "\n")

    def find(self, needle):
        with self._lock:
            return next((l for l in self._lines if needle in l), None)

    def count(self, needle):
        with self._lock:
            return sum(1 for l in self._lines if needle in l)

    def log_text(self):
        with self._lock:
            return "\n".join(self._lines)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)
        self.stopped = False
        self._reader.join(10)

    def pause(self):
        if self.alive():
            self.proc.send_signal(signal.SIGSTOP)
            self.stopped = True

    def resume(self):
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def stop(self, timeout=60):
        if self.alive():
            if self.stopped:
                self.resume()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc is not None:
            self._reader.join(10)
            return self.proc.returncode
        return None

    def heal(self):
        """Every proxy forwarding again at full speed."""
        for p in self.proxies.values():
            p.delay = 0.0
            p.resume()

    def close(self):
        try:
            self.stop()
        finally:
            for p in self.proxies.values():
                p.close()
            if self._log:
                self._log.close()
