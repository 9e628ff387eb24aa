"""The operation history of a fault run: one JSON object per line, written by every worker and
the nemesis, read back by the checker.

Each line: {"worker": "p0", "op": "send", "type": "invoke"|"ok"|"fail"|"info", "time": seconds
(monotonic clock of the run), plus op fields: topic, partition, offset, value, ...}.
"invoke" opens an operation; "ok" means the system acknowledged it, "fail" that it certainly did
not happen, "info" that the outcome is unknown (a timeout, a cut connection, a crash).
"""
import json
import threading
import time


class History:
    """Thread-safe append-only writer of a history file (line-buffered, so a crashed run keeps
    what it wrote)."""

    def __init__(self, path):
        self.path = path
        self._f = open(path, "w", buffering=1)
        self._lock = threading.Lock()
        self.count = 0

    def record(self, worker, op, type_, **fields):
        entry = {"worker": worker, "op": op, "type": type_, "time": time.monotonic()}
        entry.update(fields)
        line = json.dumps(entry, separators=(",", ":"))
        with self._lock:
            self._f.write(line + "\n")
            self.count += 1
        return entry

    def close(self):
        with self._lock:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load(path):
    """Every entry of a history file, in file order; a torn last line (a killed run) is
    skipped."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out
