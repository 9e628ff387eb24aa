"""The process contract: flags, data directory, listeners, health and shutdown."""
import os
import struct
import subprocess
import tempfile
import time
import urllib.request

import pytest

from harness import Sluice, connect, kafka_request, read_frame, sluice_binary, wait_for


def run(args, timeout=20):
    return subprocess.run([sluice_binary()] + args, capture_output=True, text=True,
                          timeout=timeout)


def test_help_documents_every_flag():
    r = run(["--help"])
    assert r.returncode == 0
    for flag in ["--data-dir", "--kafka", "--http", "--sqs", "--advertise-kafka", "--config"]:
        assert flag in r.stdout


def test_unknown_flag_fails_with_one_clear_line():
    r = run(["--no-such-flag"])
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "--no-such-flag" in lines[0]


def test_unknown_or_misspelt_setting_stops_the_start_naming_it():
    with tempfile.TemporaryDirectory() as d:
        r = run(["--data-dir", d, "--kafka", "127.0.0.1:0", "--http", "off", "--sqs", "off",
                 "--set", "log.retention.hourz=1"])
        assert r.returncode != 0
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        assert lines[-1] == ("sluice: log.retention.hourz: unknown setting "
                             "(did you mean log.retention.hours?)")
        # From a config file too, and the listener never opened.
        conf = os.path.join(d, "broker.properties")
        with open(conf, "w") as f:
            f.write("num.partitions=2\nnot.a.setting=true\n")
        r = run(["--data-dir", d, "--kafka", "127.0.0.1:0", "--http", "off", "--sqs", "off",
                 "--config", conf])
        assert r.returncode != 0
        assert f"not.a.setting (from {conf}): unknown setting" in r.stderr
        assert "listening:" not in r.stderr


def test_retention_runs_as_often_as_log_retention_check_interval_ms_says():
    """With the default (5 minutes) no segment would go within this test's deadline."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    s = Sluice(settings={"log.retention.check.interval.ms": "100",
                         "log.cleaner.backoff.ms": "100"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        topic = NewTopic("short-lived", 1, 1,
                         config={"segment.bytes": "1024", "retention.ms": "1"})
        for f in admin.create_topics([topic]).values():
            f.result(timeout=30)
        p = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0})
        for i in range(40):
            p.produce("short-lived", value=b"v" * 200)
            p.flush(10)  # one batch per record: several segments roll
        c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "retention-probe"})
        try:
            tp = TopicPartition("short-lived", 0)
            wait_for(lambda: c.get_watermark_offsets(tp, timeout=5)[0] > 0, 30,
                     "retention to delete the old segments")
            low, high = c.get_watermark_offsets(tp, timeout=5)
            assert 0 < low <= high == 40
        finally:
            c.close()
    finally:
        s.close()

    with tempfile.TemporaryDirectory() as d:
        r = run(["--data-dir", d, "--kafka", "127.0.0.1:0", "--http", "off", "--sqs", "off",
                 "--set", "log.retention.check.interval.ms=-5"])
        assert r.returncode != 0
        assert "log.retention.check.interval.ms" in r.stderr


def test_bad_listener_address_fails():
    r = run(["--kafka", "not-an-endpoint", "--data-dir", tempfile.mkdtemp()])
    assert r.returncode != 0
    assert "--kafka" in r.stderr


def test_a_listener_port_in_use_is_a_clear_error_not_a_crash():
    import socket
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        with tempfile.TemporaryDirectory() as d:
            r = run(["--data-dir", d, "--kafka", f"127.0.0.1:{port}", "--http", "off",
                     "--sqs", "off"])
            assert r.returncode > 0, r.stderr  # an exit code, not a signal
            assert str(port) in r.stderr.strip().splitlines()[-1]
    finally:
        taken.close()


def test_data_dir_that_is_a_file_fails():
    with tempfile.NamedTemporaryFile() as f:
        r = run(["--data-dir", f.name, "--kafka", "127.0.0.1:0", "--http", "off", "--sqs", "off"])
        assert r.returncode != 0
        assert "--data-dir" in r.stderr


def test_second_process_on_same_data_dir_is_refused(broker):
    r = run(["--data-dir", broker.data_dir, "--kafka", "127.0.0.1:0", "--http", "off",
             "--sqs", "off"])
    assert r.returncode != 0
    assert "in use" in r.stderr
    assert broker.alive()


def test_healthz_and_metrics(broker):
    with urllib.request.urlopen(broker.http_url + "/healthz", timeout=10) as r:
        assert r.status == 200
        assert b"ok" in r.read()
    # One Kafka request, then its counter shows on /metrics.
    with connect(broker.kafka_port) as s:
        s.sendall(kafka_request(18, 0, 1))
        read_frame(s)
    with urllib.request.urlopen(broker.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    assert 'sluice_kafka_requests_total{api="ApiVersions"} 1' in text
    assert "sluice_kafka_request_seconds_bucket" in text


def test_the_start_line_names_the_memory_allocator_in_use(broker):
    """Release builds allocate through mimalloc (gateway/CMakeLists.txt); sanitizer builds keep
    the C library's. Whichever the line names is the one mapped into the process."""
    line = next(l for l in broker.log_text().splitlines() if "sluice starting:" in l)
    assert "memory allocator " in line
    with open(f"/proc/{broker.proc.pid}/maps") as f:
        mapped = f.read()
    if "memory allocator mimalloc 2." in line:
        assert "libmimalloc.so" in mapped
    else:
        assert "memory allocator the C library's malloc" in line
        assert "libmimalloc.so" not in mapped


def test_unknown_http_route_is_404(broker):
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(broker.http_url + "/nope", timeout=10)
    assert e.value.code == 404


def test_listener_off_is_not_opened():
    s = Sluice(args=["--http", "off"])
    # The harness passes --http 127.0.0.1:0 first; the later flag wins.
    s.start()
    try:
        assert s.http_port is None
        assert s.kafka_port is not None
    finally:
        s.close()


def test_sigterm_exits_cleanly(broker):
    assert broker.stop() == 0
    assert "sluice stopped" in broker.log_text()


def test_recovery_after_a_crash_logs_its_progress():
    import re
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    with tempfile.TemporaryDirectory() as d:
        s = Sluice(data_dir=d).start()
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        admin.create_topics([NewTopic("many", 40, 1)])["many"].result(timeout=30)
        p = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0})
        for i in range(400):
            p.produce("many", b"x" * 1000, partition=i % 40)
        assert p.flush(30) == 0
        s.kill()
        # Every partition reported (interval 0), then the summary.
        s = Sluice(data_dir=d, settings={"log.recovery.progress.interval.ms": 0}).start()
        try:
            progress = [re.search(r"unclean recovery: (\d+)/(\d+) partitions, ([\d.]+) MiB", l)
                        for l in s.log_lines]
            progress = [(int(m.group(1)), int(m.group(2)), float(m.group(3)))
                        for m in progress if m]
            assert progress, s.log_text()
            total = progress[0][1]
            assert total >= 40
            assert [x[0] for x in progress] == list(range(1, total))  # done < total each time
            assert all(x[1] == total for x in progress)
            assert progress[-1][2] >= 0.35  # 400 KB of records recovered by then
            summary = s.wait_log("log: opened")
            assert re.search(rf"opened {total} partitions \([\d.]+ MiB\) in [\d.]+ s", summary)
        finally:
            s.close()


# --- issue 24: what a start creates, how it fails, how it logs ----------------------------------

def start_error_line(r):
    """The one line a failed start ends with: "sluice: ..." and nothing else of that kind."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    ours = [l for l in r.stderr.splitlines() if l.startswith("sluice: ")]
    assert len(ours) == 1 and r.stderr.strip().splitlines()[-1] == ours[0], r.stderr
    return ours[0]


@pytest.mark.parametrize("flag", ["--kafka", "--http", "--sqs"])
def test_a_port_in_use_exits_2_before_creating_the_data_dir(flag):
    import socket
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    listeners = {"--kafka": "127.0.0.1:0", "--http": "127.0.0.1:0", "--sqs": "127.0.0.1:0"}
    listeners[flag] = f"127.0.0.1:{port}"
    try:
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "new", "data")
            args = ["--data-dir", data]
            for f, v in listeners.items():
                args += [f, v]
            line = start_error_line(run(args))
            assert line == (f"sluice: {flag}: cannot listen on 127.0.0.1:{port}: "
                            "Address already in use")
            assert os.listdir(d) == []  # neither the data dir nor its parent, nor an audit log
    finally:
        taken.close()


def test_every_kind_of_failed_start_exits_2_with_one_line():
    with tempfile.TemporaryDirectory() as d:
        base = ["--kafka", "127.0.0.1:0", "--http", "off", "--sqs", "off"]
        # A bad setting.
        assert "num.partitions" in start_error_line(
            run(["--data-dir", os.path.join(d, "a")] + base + ["--set", "num.partitions=0"]))
        # A data dir that is a file.
        path = os.path.join(d, "file")
        open(path, "w").close()
        assert "--data-dir" in start_error_line(run(["--data-dir", path] + base))
        # A data dir the log cannot open (a damaged topic file).
        data = os.path.join(d, "damaged")
        s = Sluice(data_dir=data).start()
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=30)
        assert s.stop() == 0
        with open(os.path.join(data, "topics", "t.topic"), "r+") as f:
            f.seek(12)
            f.write("Z")
        assert "cannot open the log" in start_error_line(run(["--data-dir", data] + base))
        assert sorted(os.listdir(d)) == ["damaged", "file"]


def test_a_failed_start_removes_the_data_dir_and_audit_log_it_created():
    with tempfile.TemporaryDirectory() as d:
        # The audit log cannot be opened: the start fails after the data dir was made.
        data = os.path.join(d, "fresh", "data")
        line = start_error_line(run(["--data-dir", data, "--kafka", "127.0.0.1:0", "--http",
                                     "off", "--sqs", "off",
                                     "--set", "audit.log=/proc/no-such-dir/audit.log"]))
        assert "audit.log" in line
        assert os.listdir(d) == []
        # A data dir that exists, with an audit log elsewhere: the log fails to open (a
        # damaged topic file) after the audit log was created; the audit log goes, the data
        # dir stays.
        data = os.path.join(d, "kept")
        s = Sluice(data_dir=data).start()
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=30)
        assert s.stop() == 0
        with open(os.path.join(data, "topics", "t.topic"), "r+") as f:
            f.seek(12)
            f.write("Z")
        audit = os.path.join(d, "audit.log")
        start_error_line(run(["--data-dir", data, "--kafka", "127.0.0.1:0", "--http", "off",
                              "--sqs", "off", "--set", f"audit.log={audit}"]))
        assert not os.path.exists(audit)
        assert os.path.exists(os.path.join(data, "topics", "t.topic"))


def test_a_new_data_dir_is_logged_as_new_a_restart_as_clean_and_a_crash_as_unclean():
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "data")
        s = Sluice(data_dir=data).start()
        opened = s.wait_log("log: opened ")
        assert "(new data dir," in opened, opened
        assert "unclean" not in s.log_text()
        s.restart()
        assert "0 topics, clean shutdown" in s.wait_log("log: opened ")
        s.kill()
        s.start()
        try:
            assert "unclean shutdown" in s.wait_log("log: opened ")
        finally:
            s.close()


def modes_under(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = (os.lstat(path).st_mode & 0o7777,
                                                os.path.isdir(path))
    return out


def test_the_data_dir_is_0700_and_every_file_in_it_0600_whatever_the_umask():
    """Under umask 022, the usual one, files would be readable by every local user."""
    import boto3
    import requests
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    old = os.umask(0o022)
    try:
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "data")
            # `sluice users` creates the data dir and the credentials file.
            users = subprocess.run([sluice_binary(), "users", "set", "alice", "--data-dir", data],
                                   input="secret-password\n", capture_output=True, text=True,
                                   timeout=30)
            assert users.returncode == 0, users.stderr
            s = Sluice(data_dir=data, sqs=True).start()
            try:
                admin = AdminClient({"bootstrap.servers": s.bootstrap})
                for f in admin.create_topics([NewTopic("plain", 2, 1), NewTopic(
                        "compacted", 1, 1, config={"cleanup.policy": "compact",
                                                   "segment.bytes": "1024"})]).values():
                    f.result(timeout=30)
                p = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 0,
                              "enable.idempotence": True})
                for i in range(30):
                    p.produce("plain", value=b"v" * 100, key=str(i).encode())
                    p.produce("compacted", value=b"c" * 100, key=str(i % 3).encode())
                assert p.flush(30) == 0
                c = Consumer({"bootstrap.servers": s.bootstrap, "group.id": "modes",
                              "auto.offset.reset": "earliest"})
                c.subscribe(["plain"])
                got = 0
                end = time.monotonic() + 30
                while got < 30 and time.monotonic() < end:
                    m = c.poll(1)
                    if m is not None and not m.error():
                        got += 1
                c.commit(asynchronous=False)
                c.close()
                assert got == 30
                sqs = boto3.client("sqs", endpoint_url=s.sqs_url, region_name="us-east-1",
                                   aws_access_key_id="x", aws_secret_access_key="y")
                q = sqs.create_queue(QueueName="modes")["QueueUrl"]
                sqs.send_message(QueueUrl=q, MessageBody="hello")
                r = requests.post(f"{s.http_url}/consumers/g-modes",
                                  json={"name": "i", "format": "binary"},
                                  headers={"Content-Type": "application/vnd.kafka.v2+json"},
                                  timeout=10)
                assert r.status_code == 200, r.text
            finally:
                assert s.stop() == 0
            modes = modes_under(data)
            assert os.stat(data).st_mode & 0o7777 == 0o700
            for name in ("audit.log", "meta.properties", "credentials", ".lock",
                         ".clean_shutdown", "topics/plain.topic", "plain-0/partition.metadata",
                         "plain-0/00000000000000000000.log",
                         "plain-0/00000000000000000000.index"):
                assert name in modes, sorted(modes)
            assert any(n.startswith("__consumer_offsets-") for n in modes)
            assert any(n.startswith("__queue_state-") for n in modes)
            wrong = {n: oct(m) for n, (m, is_dir) in modes.items()
                     if m != (0o700 if is_dir else 0o600)}
            assert wrong == {}, wrong
    finally:
        os.umask(old)


def test_an_existing_data_dir_open_to_others_gets_one_warning_and_keeps_its_mode():
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        s = Sluice(data_dir=d).start()
        try:
            warnings = [l for l in s.log_lines if "open to other users" in l]
            assert len(warnings) == 1, s.log_text()
            assert " warning [server] " in warnings[0] and "mode 0755" in warnings[0]
            assert d in warnings[0]
        finally:
            s.stop()
        assert os.stat(d).st_mode & 0o7777 == 0o755
        # A private one gets none.
        os.chmod(d, 0o700)
        s.start()
        try:
            assert not [l for l in s.log_lines if "open to other users" in l]
        finally:
            s.stop()
