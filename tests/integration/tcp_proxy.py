"""A loopback TCP proxy for tests: forwards every connection to a target port and cuts each
connection (both directions) after a configurable number of bytes have passed through it, so
that clients must reconnect and retry in the middle of their work. cut_all() cuts every open
connection at once (a server dropping its clients); with record_requests the bytes each client
sent are kept (the first 64 KiB of each connection), to check what a client sent on reconnect.
For fault runs: `delay` (seconds added before each forwarded chunk) slows every connection, and
stall()/resume() hold every chunk in both directions until resumed (the connections stay open)."""
import socket
import threading
import time


class CuttingProxy:
    def __init__(self, cut_every_bytes=300_000, record_requests=False, idle_timeout=5):
        self.cut_every_bytes = cut_every_bytes
        self.idle_timeout = idle_timeout  # seconds the target may stay silent; None: no limit
        self.record_requests = record_requests
        self.requests = []  # with record_requests: one bytearray per client connection
        self.target_port = None
        self.cuts = 0
        self.cutting = True
        self.delay = 0.0
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = self._server.getsockname()[1]
        self._closed = False
        self._conns = []
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)

    def start(self, target_port):
        self.target_port = target_port
        self._thread.start()
        return self

    def _accept_loop(self):
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                upstream.settimeout(self.idle_timeout)
            except OSError:
                client.close()
                continue
            state = {"bytes": 0, "dead": False, "sent": bytearray()}
            with self._lock:
                self._conns.append((client, upstream))
                if self.record_requests:
                    self.requests.append(state["sent"])
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b, client, upstream, state),
                                 daemon=True).start()

    def _pump(self, src, dst, client, upstream, state):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self.delay:
                    time.sleep(self.delay)
                while not self._flowing.wait(0.1):
                    if state["dead"] or self._closed:
                        break
                dst.sendall(data)
                with self._lock:
                    state["bytes"] += len(data)
                    if src is client and len(state["sent"]) < 65536:
                        state["sent"] += data[:65536 - len(state["sent"])]
                    cut = self.cutting and state["bytes"] >= self.cut_every_bytes and not state["dead"]
                    if cut:
                        state["dead"] = True
                        self.cuts += 1
                if cut:
                    break
        except OSError:
            pass
        for s in (client, upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def cut_all(self):
        """Cuts every connection open now, both directions; the proxy goes on accepting."""
        with self._lock:
            conns, self._conns = self._conns, []
            self.cuts += len(conns)
        for c, u in conns:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                try:
                    s.close()
                except OSError:
                    pass

    def stall(self):
        """Holds every byte in flight (both directions, every connection) until resume()."""
        self._flowing.clear()

    def resume(self):
        self._flowing.set()

    def requests_text(self):
        """What each client connection sent so far, decoded as Latin-1 (headers are ASCII)."""
        with self._lock:
            return [bytes(r).decode("latin-1") for r in self.requests]

    def close(self):
        self._closed = True
        self._flowing.set()
        try:
            self._server.close()
        except OSError:
            pass
        with self._lock:
            conns = list(self._conns)
        for c, u in conns:
            for s in (c, u):
                try:
                    s.close()
                except OSError:
                    pass
