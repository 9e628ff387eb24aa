"""The nemesis of a fault run: a thread that, driven by a seeded RNG, hurts one sluice (node.py)
and the connections to it, and writes each fault to the history (worker "nemesis", invoke when
it starts, ok when it is over). In the upstream mode it hurts several: the gateways (their kills
spread over the run as below, each on a gateway picked at random) and the native sluice playing
the cluster (`cluster_kills` of its own; its pauses, cuts, delays and stalls hit every gateway's
link to the cluster at once, since they all reach it through its proxy); each entry names the
node it hit.

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
    def __init__(self, node, history, seed, seconds, kills, interval=(0.5, 2.5), cluster=None,
                 cluster_kills=0):
        """`node`: the sluice, or a list of gateways whose kills are shared out at random;
        `cluster`: the sluice they forward to (upstream mode), killed `cluster_kills` times."""
        super().__init__(name="nemesis", daemon=True)
        self.nodes = list(node) if isinstance(node, (list, tuple)) else [node]
        self.node = self.nodes[0]
        self.cluster = cluster
        self.history = history
        self.rng = random.Random(seed)
        self.seconds = seconds
        self.interval = interval
        # Kill times, spread over the run and away from its very end: (time, node).
        span = max(seconds - 3.0, 1.0)
        self.kill_at = sorted(
            # (One node: no draw for the pick, so that a seed gives the schedule it always gave.)
            [(self.rng.uniform(1.0, span),
              self.rng.randrange(len(self.nodes)) if len(self.nodes) > 1 else 0)
             for _ in range(kills)] +
            [(self.rng.uniform(1.0, span), -1) for _ in range(cluster_kills if cluster else 0)])
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
            if pending and now >= pending[0][0]:
                _, which = pending.pop(0)
                self.kill(self.cluster if which < 0 else self.nodes[which])
            else:
                self.one(self._pick())
            wait = self.rng.uniform(*self.interval)
            if pending:
                wait = min(wait, max(pending[0][0] - (time.monotonic() - t0), 0.0))
            self.stop_event.wait(wait)

    def _pick(self):
        total = sum(w for _, w in ACTIONS)
        x = self.rng.uniform(0, total)
        for name, w in ACTIONS:
            x -= w
            if x <= 0:
                return name
        return ACTIONS[-1][0]

    def _victim(self):
        """The node a pause, cut, delay or stall hits: any gateway or the cluster."""
        every = self.nodes + ([self.cluster] if self.cluster else [])
        return every[self.rng.randrange(len(every))] if len(every) > 1 else every[0]

    def _proxy(self, node):
        names = sorted(node.proxies)
        which = self.rng.choice(names + ["all"])
        return which, ([node.proxies[n] for n in names] if which == "all"
                       else [node.proxies[which]])

    def kill(self, node):
        self.record("kill", "invoke", node=node.name)
        node.kill()
        self.stop_event.wait(self.rng.uniform(0.0, 1.0))
        node.start()
        self.done["kill"] += 1
        self.record("kill", "ok", node=node.name, starts=node.starts)

    def one(self, action):
        node = self._victim()
        if action == "pause":
            d = self.rng.uniform(0.3, 2.0)
            self.record("pause", "invoke", node=node.name, seconds=d)
            node.pause()
            self.stop_event.wait(d)
            node.resume()
        elif action == "cut":
            which, proxies = self._proxy(node)
            self.record("cut", "invoke", node=node.name, proxy=which)
            for p in proxies:
                p.cut_all()
        elif action == "delay":
            which, proxies = self._proxy(node)
            d, per_chunk = self.rng.uniform(1.0, 4.0), self.rng.uniform(0.002, 0.03)
            self.record("delay", "invoke", node=node.name, proxy=which, seconds=d,
                        per_chunk=per_chunk)
            for p in proxies:
                p.delay = per_chunk
            self.stop_event.wait(d)
            for p in proxies:
                p.delay = 0.0
        elif action == "stall":
            which, proxies = self._proxy(node)
            d = self.rng.uniform(0.5, 3.0)
            self.record("stall", "invoke", node=node.name, proxy=which, seconds=d)
            for p in proxies:
                p.stall()
            self.stop_event.wait(d)
            for p in proxies:
                p.resume()
        self.done[action] += 1
        self.record(action, "ok", node=node.name)
