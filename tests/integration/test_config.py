"""Configuration from flags, SLUICE_* variables and the config file: each setting reaches the
running broker from every source, the documented precedence holds, and each kind of bad
configuration stops the start with one line naming the setting and its source, exit code 2,
before the data directory is touched."""
import os
import subprocess
import tempfile

from confluent_kafka.admin import AdminClient

from harness import Sluice, sluice_binary


def run(args, env=None, timeout=20):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    full_env.update(env or {})
    return subprocess.run([sluice_binary()] + args, capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def error_line(r):
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, r.stderr
    return lines[0]


def partitions_of_new_topic(s, topic):
    admin = AdminClient({"bootstrap.servers": s.bootstrap})
    md = admin.list_topics(topic, timeout=10)  # auto-creates with num.partitions
    return len(md.topics[topic].partitions)


def test_a_setting_reaches_the_broker_from_the_environment_and_the_file():
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "sluice.properties")
        with open(conf, "w") as f:
            f.write("num.partitions=2\n")
        with Sluice(args=["--config", conf]) as s:
            assert partitions_of_new_topic(s, "from-file") == 2
        # The variable wins over the file; a --set flag wins over the variable.
        with Sluice(args=["--config", conf], env={"SLUICE_NUM_PARTITIONS": "3"}) as s:
            assert partitions_of_new_topic(s, "from-env") == 3
        with Sluice(args=["--config", conf], settings={"num.partitions": "4"},
                    env={"SLUICE_NUM_PARTITIONS": "3"}) as s:
            assert partitions_of_new_topic(s, "from-flag") == 4
        # SLUICE_CONFIG names the file when --config does not.
        with Sluice(env={"SLUICE_CONFIG": conf}) as s:
            assert partitions_of_new_topic(s, "from-env-file") == 2


def test_flags_are_settings_too():
    """data.dir from a variable: the harness's --data-dir flag wins, so run without it."""
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "data-from-env")
        conf = os.path.join(d, "sluice.properties")
        with open(conf, "w") as f:
            f.write("http.listener=off\nsqs.listener=off\nlisteners=PLAINTEXT://127.0.0.1:0\n")
        proc = subprocess.Popen([sluice_binary(), "--config", conf], stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "SLUICE_DATA_DIR": data,
                                                "SLUICE_LOG_FORMAT": "json"})
        try:
            line = proc.stderr.readline()
            while line and "listening:" not in line:
                line = proc.stderr.readline()
            assert "listening:" in line and "kafka=127.0.0.1:" in line
            assert line.startswith("{") and '"level":"info"' in line  # log.format from env
            assert "http=" not in line and "sqs=" not in line
            assert os.path.exists(os.path.join(data, "meta.properties"))
        finally:
            proc.terminate()
            proc.wait(30)


def test_bad_configuration_is_one_line_naming_the_source_and_exit_2():
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "never-created")
        base = ["--data-dir", data, "--kafka", "127.0.0.1:0", "--http", "off", "--sqs", "off"]

        r = run(base + ["--set", "log.retention.hourz=1"])
        assert r.returncode == 2
        assert error_line(r) == ("sluice: log.retention.hourz: unknown setting (did you mean "
                                 "log.retention.hours?)")

        r = run(base, {"SLUICE_NUM_PARTITIONS": "three"})
        assert r.returncode == 2
        assert error_line(r) == ("sluice: num.partitions (from SLUICE_NUM_PARTITIONS): expected "
                                 "an integer, got 'three'")

        conf = os.path.join(d, "bad.properties")
        with open(conf, "w") as f:
            f.write("num.partitions=0\n")
        r = run(base + ["--config", conf])
        assert r.returncode == 2
        assert error_line(r) == f"sluice: num.partitions (from {conf}): must be at least 1"

        r = run(base + ["--config", os.path.join(d, "missing.properties")])
        assert r.returncode == 2
        assert "no such file" in error_line(r) and "missing.properties" in error_line(r)

        r = run(base, {"SLUICE_IO_THREADS": "lots"})
        assert r.returncode == 2
        assert "io.threads (from SLUICE_IO_THREADS)" in error_line(r)

        # (without the --http flag, which would win over the variable)
        r = run(["--data-dir", data, "--kafka", "127.0.0.1:0", "--sqs", "off"],
                {"SLUICE_HTTP_LISTENER": "nowhere"})
        assert r.returncode == 2
        assert "SLUICE_HTTP_LISTENER" in error_line(r)

        r = run(base + ["--set", "num.partitions=x"])
        assert r.returncode == 2
        assert error_line(r) == "sluice: num.partitions: expected an integer, got 'x'"

        # None of these touched the data directory.
        assert not os.path.exists(data)


def test_script_variables_are_not_settings():
    with Sluice(env={"SLUICE_TEST_SEED": "7", "SLUICE_BENCH_DIR": "/tmp"}) as s:
        assert s.alive()


def test_a_variable_that_names_no_setting_is_one_warning_and_sluice_serves():
    """The environment holds SLUICE_* variables sluice never meant to read: Kubernetes puts
    SLUICE_PORT=tcp://... and friends into every pod of a namespace with a Service named sluice.
    They are listed once at start, a near miss with the setting it resembles; a variable that
    names a setting is still read, and still refused when its value is bad."""
    env = {"SLUICE_PORT": "tcp://10.96.0.12:9092", "SLUICE_SERVICE_HOST": "10.96.0.12",
           "SLUICE_PORT_9092_TCP_ADDR": "10.96.0.12", "SLUICE_LOG_RETENTION_HOURZ": "1",
           "SLUICE_NUM_PARTITIONS": "3"}
    with Sluice(env=env) as s:
        assert partitions_of_new_topic(s, "from-env") == 3
        warnings = [l for l in s.log_lines if "name no setting" in l]
        assert len(warnings) == 1, s.log_text()
        line = warnings[0]
        assert " warning [server] " in line
        assert ("SLUICE_LOG_RETENTION_HOURZ (did you mean SLUICE_LOG_RETENTION_HOURS?)" in line)
        for name in ("SLUICE_PORT,", "SLUICE_SERVICE_HOST", "SLUICE_PORT_9092_TCP_ADDR"):
            assert name in line
        assert line.count("did you mean") == 1
        assert "SLUICE_NUM_PARTITIONS" not in line
    # Without such variables there is no warning.
    with Sluice(env={"SLUICE_NUM_PARTITIONS": "2"}) as s:
        assert not [l for l in s.log_lines if "name no setting" in l]
