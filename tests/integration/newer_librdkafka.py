"""Runs a confluent-kafka snippet on Debian's librdkafka (2.0.2) or on a newer one: the
librdkafka 2.12 that node-rdkafka builds (scripts/install-deps), loaded in place of the system
one through LD_LIBRARY_PATH (librdkafka.so.1 keeps its ABI). Features such as KIP-467's
per-record produce errors (librdkafka 2.4+) and Fetch v12+ are only seen on the newer one."""
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
DEPS = os.path.join(HERE, "js", "node_modules", "node-rdkafka", "build", "deps")


def available():
    return os.path.exists(os.path.join(DEPS, "librdkafka.so.1"))


def run(script, *args, newer=True, timeout=120):
    """Runs `script` (Python source; sys.argv[1:] = args) and returns the JSON object its last
    output line holds. The script reports confluent_kafka.libversion()[0] as "libversion",
    checked here to be the library asked for."""
    env = dict(os.environ, PYTHONPATH=HERE)
    if newer:
        env["LD_LIBRARY_PATH"] = DEPS
    r = subprocess.run(["/usr/bin/python3", "-c", script, *[str(a) for a in args]],
                       capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    version = out.pop("libversion")
    assert version.startswith("2.12") if newer else version.startswith("2.0"), version
    return out
