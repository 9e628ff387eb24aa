"""`sluice quotas set|delete|list` (issue 12): client quotas written into a stopped sluice's data
dir are what the started sluice serves (DescribeClientQuotas) and enforces (a producer held to
producer_byte_rate, throttle_time_ms reaching librdkafka); the command refuses a data dir a
running sluice holds, audits its changes, and bad input (flags, entities, keys, numbers) gets
a message on stderr, exit 2 and an untouched quota file. The wire helpers and the measuring
are test_quotas.py's."""
import json
import os
import subprocess
import tempfile

from harness import Sluice, sluice_binary
from test_quotas import (RATE, RUN_SECONDS, assert_within_10_percent, create_topic, describe,
                         produce_flat_out)


def quotas_cli(data_dir, *args):
    return subprocess.run([sluice_binary(), "quotas", *args, "--data-dir", data_dir],
                          capture_output=True, text=True, timeout=30)


def ok(data_dir, *args):
    r = quotas_cli(data_dir, *args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def test_set_quotas_are_served_and_enforced():
    with tempfile.TemporaryDirectory() as d:
        ok(d, "set", "--user", "alice", "--add",
           "producer_byte_rate=1048576,consumer_byte_rate=2097152,request_percentage=50")
        ok(d, "set", "--client-default", "--add", f"producer_byte_rate={RATE}")
        ok(d, "set", "--user", "bob", "--client-id", "c1", "--add", "consumer_byte_rate=4096")
        ok(d, "delete", "--user", "bob", "--client-id", "c1", "--delete-config",
           "consumer_byte_rate")
        listed = ok(d, "list").splitlines()
        assert listed == [
            f"Quota configs for the default client-id are producer_byte_rate={RATE}.0",
            "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0, "
            "consumer_byte_rate=2097152.0, request_percentage=50.0"]
        assert ok(d, "list", "--user", "alice").splitlines() == listed[1:]
        with Sluice(data_dir=d) as server:
            code, message, entries = describe(server.kafka_port)
            assert (code, message) == (0, None)
            assert entries == {
                (("user", "alice"),): {"producer_byte_rate": 1048576.0,
                                       "consumer_byte_rate": 2097152.0,
                                       "request_percentage": 50.0},
                (("client-id", None),): {"producer_byte_rate": float(RATE)}}
            create_topic(server.bootstrap, "cli-q")
            produced, elapsed, throttles = produce_flat_out(
                server, {"bootstrap.servers": server.bootstrap}, "cli-q", RUN_SECONDS)
            assert_within_10_percent(produced / elapsed, RATE)
            assert throttles and max(throttles) > 0, "the producer never saw throttle_time_ms"
            # A running sluice holds the data dir: the command refuses and changes nothing.
            r = quotas_cli(d, "set", "--user", "alice", "--add", "producer_byte_rate=1")
            assert r.returncode == 2, (r.stdout, r.stderr)
            assert "running sluice" in r.stderr and "AlterClientQuotas" in r.stderr
            r = quotas_cli(d, "list")
            assert r.returncode == 2 and "running sluice" in r.stderr
        assert ok(d, "list").splitlines() == listed


def test_changes_are_audited():
    with tempfile.TemporaryDirectory() as d:
        ok(d, "set", "--user-default", "--add", "request_percentage=25")
        ok(d, "delete", "--user-default", "--delete-config", "request_percentage")
        with open(os.path.join(d, "audit.log")) as f:
            events = [json.loads(line) for line in f]
        assert [(e["event"], e["front"], e["resource"]) for e in events] == [
            ("config_changed", "cli", "client-quota:user=<default>")] * 2
        assert events[0]["changes"][0]["key"] == "request_percentage"
        assert events[0]["changes"][0]["op"] == "set"
        assert events[1]["changes"] == [{"key": "request_percentage", "op": "delete"}]
        assert ok(d, "list") == ""


def test_bad_input_exits_2_and_changes_nothing():
    with tempfile.TemporaryDirectory() as d:
        ok(d, "set", "--user", "alice", "--add", "producer_byte_rate=1000")
        quota_file = os.path.join(d, "quotas")
        with open(quota_file) as f:
            before = f.read()
        add = ["set", "--user", "alice", "--add"]
        cases = [
            (["frob"], "unknown action 'frob'"),
            (["set", "--add", "producer_byte_rate=5"], "name an entity"),
            (["set", "--user", "alice"], "give --add"),
            (["delete", "--user", "alice"], "give --delete-config"),
            (["list", "--bogus"], "unknown option '--bogus'"),
            (["set", "--user", "alice", "--user-default", "--add", "producer_byte_rate=5"],
             "already given"),
            (["set", "--user", "", "--add", "producer_byte_rate=5"], "empty value"),
            (["set", "--user-default=x", "--add", "producer_byte_rate=5"], "takes no value"),
            (add + ["frob=1"], "Invalid configuration key frob"),
            (add + ["producer_byte_rate=5,frob=1"], "Invalid configuration key frob"),
            (add + ["producer_byte_rate=1.5"], "must be a Long value"),
            (add + ["producer_byte_rate=0"], "must be a positive number"),
            (add + ["request_percentage=-1"], "must be a positive number"),
            (add + ["producer_byte_rate=abc"], "is not a number"),
            (add + ["producer_byte_rate=0x10"], "is not a number"),
            (add + ["producer_byte_rate="], "is not a number"),
            (add + ["producer_byte_rate"], "expected KEY=VALUE"),
            (add + ["producer_byte_rate=5,producer_byte_rate=6"], "duplicate quota key"),
            (["delete", "--user", "alice", "--delete-config", "frob"],
             "Invalid configuration key frob"),
        ]
        for args, message in cases:
            r = quotas_cli(d, *args)
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert message in r.stderr and "quotas" in r.stderr, (args, r.stderr)
            with open(quota_file) as f:
                assert f.read() == before, args
        r = subprocess.run([sluice_binary(), "quotas", "list"], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 2 and "--data-dir DIR is required" in r.stderr


def test_corrupt_quota_file_is_named():
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "quotas"), "w") as f:
            f.write("sluice-quotas 1\nquota =alice - frob 5\n")
        r = quotas_cli(d, "list")
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "quotas:2" in r.stderr and "unknown quota key 'frob'" in r.stderr
