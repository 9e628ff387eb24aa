"""The Dockerfile and .dockerignore, parsed and checked without a Docker engine (none on the
build machines): a multi-stage build on a pinned Debian bookworm, a non-root final user, the
/data volume, the three ports, a HEALTHCHECK that works against a running sluice, runtime
packages that cover every shared library the built binary links, and no secrets in the build
context or the layers."""
import json
import os
import re
import subprocess

import pytest

from harness import Sluice, sluice_binary

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SECRET_WORDS = re.compile(r"(PASSWORD|SECRET|TOKEN|PRIVATE|ACCESS_KEY|CREDENTIAL)", re.I)


def instructions(path):
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out = []
    current = ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not current and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.lstrip().startswith("#"):
                continue  # a comment inside a continued instruction
            if line.endswith("\\"):
                current += line[:-1] + " "
                continue
            current += line
            word, _, rest = current.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            current = ""
    assert not current, "the Dockerfile ends inside a continued line"
    return out


@pytest.fixture(scope="module")
def dockerfile():
    return instructions(os.path.join(ROOT, "Dockerfile"))


def stages(ins):
    """The instructions of each stage, split at FROM."""
    out = []
    for word, rest in ins:
        if word == "FROM":
            out.append([])
        if out:
            out[-1].append((word, rest))
    return out


def args_defaults(ins):
    out = {}
    for word, rest in ins:
        if word == "ARG" and "=" in rest:
            k, v = rest.split("=", 1)
            out[k] = v
    return out


def apt_packages(stage):
    pkgs = []
    for word, rest in stage:
        if word == "RUN" and "apt-get install" in rest:
            part = rest.split("apt-get install", 1)[1].split("&&", 1)[0]
            pkgs += [t for t in part.split() if not t.startswith("-")]
    return pkgs


def test_multi_stage_build_on_a_pinned_bookworm(dockerfile):
    known = args_defaults(dockerfile)
    froms = [rest for word, rest in dockerfile if word == "FROM"]
    assert len(froms) >= 2
    for f in froms:
        image = f.split()[0]
        image = re.sub(r"\$\{(\w+)\}", lambda m: known[m.group(1)], image)
        name, _, tag = image.partition(":")
        assert name == "debian"
        assert "@sha256:" in image or re.fullmatch(r"bookworm-\d{8}(-slim)?", tag), image
    build, final = stages(dockerfile)[0], stages(dockerfile)[-1]
    assert any(w == "RUN" and "--target sluice" in r for w, r in build)
    copies = [r for w, r in final if w == "COPY"]
    assert copies == ["--from=build /build/sluice /usr/local/bin/sluice"]
    # The final stage has no compiler.
    assert not {"build-essential", "cmake", "g++"} & set(apt_packages(final))


def test_final_stage_runs_unprivileged_with_data_volume_and_ports(dockerfile):
    final = stages(dockerfile)[-1]
    users = [r for w, r in final if w == "USER"]
    assert users, "no USER: the container would run as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0  # numeric: runAsNonRoot can verify it
    assert [json.loads(r) for w, r in final if w == "VOLUME"] == [["/data"]]
    ports = " ".join(r for w, r in final if w == "EXPOSE").split()
    assert sorted(ports) == ["8082", "9092", "9324"]
    entry = [json.loads(r) for w, r in final if w == "ENTRYPOINT"]
    assert entry == [["/usr/local/bin/sluice"]]
    assert [json.loads(r) for w, r in final if w == "CMD"] == [["--data-dir=/data"]]
    # The listeners bind every interface of the container explicitly (sluice's own defaults,
    # or `make run`'s loopback, would not matter): each exposed port has one.
    env = dict(kv.split("=", 1) for w, r in final if w == "ENV" for kv in r.split())
    assert {env.get("SLUICE_LISTENERS"), env.get("SLUICE_HTTP_LISTENER"),
            env.get("SLUICE_SQS_LISTENER")} == {f"0.0.0.0:{p}" for p in ports}


def test_no_secrets_in_the_layers_or_the_build_context(dockerfile):
    for word, rest in dockerfile:
        if word in ("ENV", "ARG", "LABEL"):
            assert not SECRET_WORDS.search(rest), f"{word} {rest}"
    with open(os.path.join(ROOT, ".dockerignore")) as f:
        ignored = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    assert {".git", "build*/", "data/", "**/node_modules", "*.pem", "*.key"} <= ignored
    # Nothing in the tree that the context would carry looks like a key.
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    keys = [p for p in tracked if p.endswith((".pem", ".key", ".p12")) and
            not p.startswith("tests/")]
    assert keys == []


def test_runtime_packages_cover_every_library_sluice_links(dockerfile):
    final = set(apt_packages(stages(dockerfile)[-1]))
    ldd = subprocess.run(["ldd", sluice_binary()], capture_output=True, text=True, check=True)
    needed = set()
    for line in ldd.stdout.splitlines():
        m = re.search(r"=> (/\S+)", line)
        if not m:
            continue
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(m.group(1))], capture_output=True,
                               text=True)
        if owner.returncode == 0:
            needed.add(owner.stdout.split(":")[0])
    # Present in every Debian image: the C and C++ runtimes.
    needed -= {"libc6", "libstdc++6", "libgcc-s1"}
    assert needed, ldd.stdout
    assert needed <= final, f"missing from the runtime stage: {sorted(needed - final)}"


def test_healthcheck_command_succeeds_against_sluice_and_fails_without_it(dockerfile):
    checks = [r for w, r in stages(dockerfile)[-1] if w == "HEALTHCHECK"]
    assert len(checks) == 1
    cmd = json.loads(checks[0][checks[0].index("CMD") + 3:].strip())
    assert "/healthz" in cmd[-1]
    with Sluice() as s:
        ok = [a.replace("/8082", f"/{s.http_port}") for a in cmd]
        r = subprocess.run(ok, capture_output=True, text=True, timeout=20)
        assert r.returncode == 0, r.stderr
        port = s.http_port
    r = subprocess.run([a.replace("/8082", f"/{port}") for a in cmd], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode != 0
