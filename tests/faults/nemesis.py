"""The nemesis of a fault run: a thread that, driven by a seeded RNG, hurts one sluice (node.py)
and the connections to it, and writes each fault to the history (worker "nemesis", invoke when
it starts, ok when it is over).

Faults:
  kill   SIGKILL, then a restart on the same data directory and ports (spread so that the run
         makes `kills` of them)
  pause  SIGSTOP for 0.3-2 s, then SIGCONT
  cut    every open connection through one proxy (or all three) closed at once
  delay  a proxy adds 2-30 ms before each chunk it forwards, for 1-4 s
  stall  a proxy holds every byte (connections stay open) for 0.5-3 s
"""
import random
import threading
import time

ACTIONS = [("pause", 2), ("cut", 3), ("delay", 2), ("stall", 2)]


class Nemesis(threading.Thread):
    def __init__(self, node, history, seed, seconds, kills, interval=(0.5, 2.5)):
        super().__init__(name="nemesis", daemon=True)
        self.node = node
        self.history = history
        self.rng = random.Random(seed)
        self.seconds = seconds
        self.interval = interval
        # Kill times, spread over the run and away from its very end.
        span = max(seconds - 3.0, 1.0)
        self.kill_at = sorted(self.rng.uniform(1.0, span) for _ in range(kills))
        self.stop_event = threading.Event()
        self.done = {"kill": 0, "pause": 0, "cut": 0, "delay": 0, "stall": 0}
        self.error = None

    def record(self, op, type_, **fields):
        self.history.record("nemesis", op, type_, **fields)

    def stop(self):
        self.stop_event.set()

    def run(self):
        try:
            self._run()
        except Exception as e:
            self.error = repr(e)
            self.record("error", "info", error=repr(e))

    def _run(self):
        t0 = time.monotonic()
        pending = list(self.kill_at)
        while not self.stop_event.is_set():
            now = time.monotonic() - t0
            if now >= self.seconds:
                break
            if pending and now >= pending[0]:
                pending.pop(0)
                self.kill()
            else:
                self.one(self._pick())
            wait = self.rng.uniform(*self.interval)
            if pending:
                wait = min(wait, max(pending[0] - (time.monotonic() - t0), 0.0))
            self.stop_event.wait(wait)

    def _pick(self):
        total = sum(w for _, w in ACTIONS)
        x = self.rng.uniform(0, total)
        for name, w in ACTIONS:
            x -= w
            if x <= 0:
                return name
        return ACTIONS[-1][0]

    def _proxy(self):
        names = sorted(self.node.proxies)
        which = self.rng.choice(names + ["all"])
        return which, ([self.node.proxies[n] for n in names] if which == "all"
                       else [self.node.proxies[which]])

    def kill(self):
        self.record("kill", "invoke")
        self.node.kill()
        self.stop_event.wait(self.rng.uniform(0.0, 1.0))
        self.node.start()
        self.done["kill"] += 1
        self.record("kill", "ok", starts=self.node.starts)

    def one(self, action):
        if action == "pause":
            d = self.rng.uniform(0.3, 2.0)
            self.record("pause", "invoke", seconds=d)
            self.node.pause()
            self.stop_event.wait(d)
            self.node.resume()
        elif action == "cut":
            which, proxies = self._proxy()
            self.record("cut", "invoke", proxy=which)
            for p in proxies:
                p.cut_all()
        elif action == "delay":
            which, proxies = self._proxy()
            d, per_chunk = self.rng.uniform(1.0, 4.0), self.rng.uniform(0.002, 0.03)
            self.record("delay", "invoke", proxy=which, seconds=d, per_chunk=per_chunk)
            for p in proxies:
                p.delay = per_chunk
            self.stop_event.wait(d)
            for p in proxies:
                p.delay = 0.0
        elif action == "stall":
            which, proxies = self._proxy()
            d = self.rng.uniform(0.5, 3.0)
            self.record("stall", "invoke", proxy=which, seconds=d)
            for p in proxies:
                p.stall()
            self.stop_event.wait(d)
            for p in proxies:
                p.resume()
        self.done[action] += 1
        self.record(action, "ok")
