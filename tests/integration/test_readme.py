"""README.md's "Using it" section (with its "Security" part) runs as written.

Every ```sh block of that section is taken from README.md, each command is run with bash in a
scratch directory against a started sluice, and each must succeed: a README that drifts from
the product fails here. The README's well-known ports (9092, 8082, 9324, 9093) are mapped to
free ones, `build/release/sluice` to the binary under test and `./data` stays relative to the
scratch directory. A command that starts the server (`build/release/sluice --data-dir ...`
without a subcommand) runs in the background until the section ends.
"""
import os
import re
import shlex
import socket
import subprocess
import tempfile

import pytest

from harness import ROOT, Sluice, sluice_binary, wait_for

README = os.path.join(ROOT, "README.md")
SUBCOMMANDS = ("users", "acls", "quotas")


def section(text, heading):
    """The text from the `## heading` line to the next level-2 heading."""
    m = re.search(r"^## " + re.escape(heading) + r"\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"README.md has no '## {heading}' section"
    return m.group(1)


def subsection(text, heading):
    m = re.search(r"^### " + re.escape(heading) + r"\s*$(.*?)(?=^##|\Z)", text, re.M | re.S)
    assert m, f"README.md has no '### {heading}' subsection"
    return m.group(1)


def sh_blocks(text):
    return re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)


def commands(block):
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    out = []
    pending = ""
    for line in block.splitlines():
        if pending:
            line = pending + " " + line.strip()
            pending = ""
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1].rstrip()
            continue
        # A trailing comment is the README's explanation, not part of the command.
        stripped = strip_comment(line).strip()
        if stripped:
            out.append(stripped)
    assert not pending, "a README command ends with a continuation backslash"
    return out


def strip_comment(line):
    """The line up to an unquoted ' #'."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Runner:
    """Runs README commands in one scratch directory with one environment."""

    def __init__(self, cwd, ports):
        self.cwd = cwd
        self.ports = ports  # README port -> port under test
        self.env = dict(os.environ)
        self.servers = []

    def rewrite(self, cmd):
        for readme_port, port in self.ports.items():
            cmd = re.sub(r"(?<=:)%d\b" % readme_port, str(port), cmd)
        return cmd.replace("build/release/sluice", shlex.quote(sluice_binary()))

    def run(self, cmd):
        original = cmd
        cmd = self.rewrite(cmd)
        words = shlex.split(original)
        if words and words[0] == "export":
            for assignment in words[1:]:
                name, _, value = assignment.partition("=")
                self.env[name] = value
            return ""
        if words and words[0].endswith("sluice") and words[1:2] != [] and \
                words[1] not in SUBCOMMANDS and "--data-dir" in words:
            return self.start_server(cmd)
        streaming = "curl" in words and "-sN" in words
        if words and words[0] == "curl":
            # Fail on an HTTP error status too, showing the body.
            cmd = cmd.replace("curl ", "curl --fail-with-body -S ", 1)
            if streaming:
                cmd = cmd.replace("curl ", "curl --max-time 3 ", 1)
        r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=self.cwd, env=self.env,
                           capture_output=True, text=True, timeout=60)
        if streaming:
            # A stream ends only at the time bound (curl's exit 28); it must have delivered.
            assert r.returncode in (0, 28), f"{original}\n{r.stdout}\n{r.stderr}"
            assert "data:" in r.stdout, f"{original} delivered no event:\n{r.stdout}"
        else:
            assert r.returncode == 0, f"README command failed: {original}\n{r.stdout}\n{r.stderr}"
        return r.stdout

    def start_server(self, cmd):
        # Listeners the README leaves at their defaults go to free ports, not 8082 and 9324.
        for flag, readme_port in (("--http", 8082), ("--sqs", 9324)):
            if flag not in shlex.split(cmd) and readme_port in self.ports:
                cmd += " %s 127.0.0.1:%d" % (flag, self.ports[readme_port])
        log = open(os.path.join(self.cwd, "server-%d.log" % len(self.servers)), "w+")
        proc = subprocess.Popen(["bash", "-c", "exec " + cmd], cwd=self.cwd, env=self.env,
                                stdout=subprocess.DEVNULL, stderr=log)
        self.servers.append((proc, log))

        def listening():
            if proc.poll() is not None:
                raise AssertionError(f"README server command exited: {cmd}\n" + read(log))
            return "listening:" in read(log)
        wait_for(listening, 30, "the README's sluice to listen")
        return ""

    def close(self):
        for proc, log in self.servers:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
            log.close()


def read(f):
    f.flush()
    f.seek(0)
    return f.read()


@pytest.fixture
def readme():
    with open(README) as f:
        return f.read()


def test_using_it_runs_as_written(readme):
    using = section(readme, "Using it")
    security_at = using.find("### Security")
    blocks = sh_blocks(using[:security_at] if security_at >= 0 else using)
    assert len(blocks) >= 3, "README's 'Using it' lost its command blocks"
    with Sluice(sqs=True) as s, tempfile.TemporaryDirectory() as cwd:
        runner = Runner(cwd, {9092: s.kafka_port, 8082: s.http_port, 9324: s.sqs_port})
        outputs = []
        try:
            for block in blocks:
                for cmd in commands(block):
                    outputs.append((cmd, runner.run(cmd)))
        finally:
            runner.close()
        # What the README promises the reader sees: the record read back by kcat and by the
        # REST consumer.
        kcat_reads = [out for cmd, out in outputs if cmd.startswith("kcat") and " -C" in cmd]
        assert kcat_reads and kcat_reads[0].strip(), "kcat read nothing back"
        rest_reads = [out for cmd, out in outputs if "/records" in cmd and "curl" in cmd]
        assert rest_reads and '"clicks":3' in rest_reads[-1].replace(" ", ""), rest_reads


def test_security_runs_as_written(readme):
    security = subsection(section(readme, "Using it"), "Security")
    blocks = sh_blocks(security)
    assert blocks, "README's 'Security' lost its command blocks"
    with tempfile.TemporaryDirectory() as cwd:
        runner = Runner(cwd, {9092: free_port(), 9093: free_port(), 8082: free_port(),
                              9324: free_port()})
        try:
            outputs = []
            for block in blocks:
                for cmd in commands(block):
                    outputs.append((cmd, runner.run(cmd)))
        finally:
            runner.close()
        listed = [out for cmd, out in outputs if " users list" in cmd]
        assert listed and "alice" in listed[0]


def test_help_synopsis_matches_the_binary(readme):
    """The usage lines the README quotes are what `sluice --help` prints."""
    using = section(readme, "Using it")
    m = re.search(r"`build/release/sluice --help` documents the flags[^`]*?:\s*```\n(.*?)```", using,
                  re.S)
    assert m, "README no longer quotes the --help synopsis"
    out = subprocess.run([sluice_binary(), "--help"], capture_output=True, text=True,
                         timeout=20).stdout
    squash = lambda s: " ".join(s.split())  # noqa: E731
    assert squash(m.group(1)) in squash(out)
