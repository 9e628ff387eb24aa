"""SASL on the Kafka front (SASL_PLAINTEXT listener): users from `sluice users`, PLAIN and
SCRAM-SHA-256/512 with python3-confluent-kafka (librdkafka 2.0.2), kcat and kafkajs; refused
logins, the pre-authentication gate, bad SASL input over raw sockets, and the plaintext listener
serving beside it."""
import os
import re
import stat
import subprocess
import time

import pytest

from harness import connect, read_frame, sluice_binary
from sasl_support import (PASSWORDS, SaslSluice, api_versions_keys, auth_error, client_config,
                          closed_by_peer, consume_all, metadata_v1_all, produce,
                          sasl_authenticate, sasl_handshake, set_user, users)

HERE = os.path.dirname(os.path.abspath(__file__))
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.fixture
def sasl_broker():
    s = SaslSluice().start()
    try:
        yield s
    finally:
        s.close()


# --- the users command -------------------------------------------------------------------------

def test_users_set_list_delete_keep_salted_credentials_only(tmp_path):
    d = str(tmp_path)
    set_user(d, "carol", "pw-carol-xyz")
    r = set_user(d, "dave", "pw-dave-xyz")
    assert "created user dave" in r.stdout
    assert set_user(d, "dave", "pw-dave-2").stdout.startswith("updated user dave")

    assert users("list", "--data-dir", d).stdout.split() == ["carol", "dave"]
    assert users("delete", "dave", "--data-dir", d).returncode == 0
    assert users("list", "--data-dir", d).stdout.split() == ["carol"]

    path = os.path.join(d, "credentials")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = open(path).read()
    assert "pw-carol-xyz" not in text and "pw-dave" not in text
    assert "scram-sha-256=4096:" in text and "scram-sha-512=" in text and "plain=" in text


def test_users_command_refuses_bad_use(tmp_path):
    d = str(tmp_path)
    assert users("delete", "nobody", "--data-dir", d).returncode != 0
    assert users("set", "x", "--data-dir", d, stdin="").returncode != 0
    assert users("set", "with space", "--data-dir", d, stdin="pw\n").returncode != 0
    assert users("set", "erin", stdin="pw\n").returncode != 0  # no --data-dir
    assert users("list", "--data-dir", d).stdout == ""


def test_users_command_refuses_a_running_sluices_data_dir(sasl_broker):
    r = users("set", "frank", "--data-dir", sasl_broker.data_dir, stdin="pw\n")
    assert r.returncode != 0
    assert "in use by a running sluice" in r.stderr


# --- real clients ------------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_produces_and_consumes_with_each_mechanism(sasl_broker, mechanism):
    topic = "sasl-" + mechanism.lower()
    values = [f"{mechanism}-{i}" for i in range(20)]
    cfg = client_config(sasl_broker, mechanism)

    produce(cfg, topic, values)

    assert consume_all(client_config(sasl_broker, mechanism, user="bob"), topic, 20) == values
    assert "authentication failed" not in sasl_broker.server.log_text()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_and_unknown_user_are_refused_alike(sasl_broker, mechanism):
    wrong = auth_error(client_config(sasl_broker, mechanism, password="not-the-password"))
    unknown = auth_error(client_config(sasl_broker, mechanism, user="mallory",
                                       password="not-the-password"))

    assert wrong is not None and unknown is not None
    strip = lambda e: re.sub(r"\(after .*\)", "", e.str())  # noqa: E731
    assert "Authentication failed" in wrong.str()
    assert strip(wrong) == strip(unknown)
    # The log is read by a thread: wait (bounded) for the lines.
    sasl_broker.server.wait_log(f"authentication failed: user 'alice' from 127.0.0.1 with "
                                f"{mechanism}")
    sasl_broker.server.wait_log("authentication failed: user 'mallory'")
    assert "not-the-password" not in sasl_broker.server.log_text()


def test_kcat_with_scram(sasl_broker):
    base = ["/usr/bin/kcat", "-b", sasl_broker.sasl_bootstrap, "-X",
            "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-512", "-X",
            "sasl.username=alice", "-X", "sasl.password=" + PASSWORDS["alice"]]
    lines = [f"kcat-{i}" for i in range(50)]
    r = subprocess.run(base + ["-t", "kcat-sasl", "-P", "-p", "0"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(base + ["-t", "kcat-sasl", "-C", "-e", "-o", "beginning", "-p", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == lines

    bad = [a.replace(PASSWORDS["alice"], "wrong") for a in base]
    r = subprocess.run(bad + ["-L", "-m", "5"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "Authentication failed" in r.stderr


def test_kafkajs_with_scram(sasl_broker):
    r = subprocess.run(["node", os.path.join(HERE, "js", "sasl_kafkajs.js"),
                        sasl_broker.sasl_bootstrap, "alice", PASSWORDS["alice"]],
                       capture_output=True, text=True, timeout=180, cwd=os.path.join(HERE, "js"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("ok")


def test_plaintext_listener_serves_without_login_beside_the_sasl_one(sasl_broker):
    values = [f"plain-{i}" for i in range(5)]
    produce({"bootstrap.servers": sasl_broker.plain_bootstrap}, "mixed", values)

    # The same records through the SASL listener, after a login.
    assert consume_all(client_config(sasl_broker, "SCRAM-SHA-256"), "mixed", 5) == values
    # And the SASL listener still refuses a client that does not log in.
    with connect(sasl_broker.sasl_port) as s:
        s.sendall(metadata_v1_all())
        assert closed_by_peer(s)


# --- the gate before authentication ------------------------------------------------------------

def test_api_versions_is_answered_before_login_and_lists_the_sasl_apis(sasl_broker):
    with connect(sasl_broker.sasl_port) as s:
        keys = api_versions_keys(s)
        assert {17, 36} <= keys
        # Still unauthenticated: a Metadata request closes the connection.
        s.sendall(metadata_v1_all())
        assert closed_by_peer(s)


def test_non_sasl_request_before_login_closes_the_connection(sasl_broker):
    with connect(sasl_broker.sasl_port) as s:
        s.sendall(metadata_v1_all())
        assert closed_by_peer(s)
    sasl_broker.server.wait_log("Metadata before SASL authentication; closing")


def test_request_after_handshake_but_before_login_closes_the_connection(sasl_broker):
    with connect(sasl_broker.sasl_port) as s:
        assert sasl_handshake(s, "PLAIN")[0] == 0
        s.sendall(metadata_v1_all())
        assert closed_by_peer(s)


def test_plain_login_over_raw_frames_then_requests_are_served(sasl_broker):
    with connect(sasl_broker.sasl_port) as s:
        error, names = sasl_handshake(s, "PLAIN")
        assert (error, names) == (0, MECHANISMS)
        error, message, _ = sasl_authenticate(s, b"\0alice\0" + PASSWORDS["alice"].encode())
        assert (error, message) == (0, None)
        s.sendall(metadata_v1_all(correlation_id=9))
        assert read_frame(s)[:4] == (9).to_bytes(4, "big")


def test_sasl_handshake_v0_takes_bare_tokens(sasl_broker):
    with connect(sasl_broker.sasl_port) as s:
        assert sasl_handshake(s, "PLAIN", version=0)[0] == 0
        token = b"\0bob\0" + PASSWORDS["bob"].encode()
        s.sendall(len(token).to_bytes(4, "big") + token)
        assert read_frame(s) == b""  # PLAIN's empty server token, as a bare frame
        s.sendall(metadata_v1_all(correlation_id=7))
        assert read_frame(s)[:4] == (7).to_bytes(4, "big")
    with connect(sasl_broker.sasl_port) as s:
        assert sasl_handshake(s, "PLAIN", version=0)[0] == 0
        token = b"\0bob\0wrong"
        s.sendall(len(token).to_bytes(4, "big") + token)
        assert closed_by_peer(s)


# --- bad SASL input ----------------------------------------------------------------------------

def test_unsupported_mechanism_is_refused_with_the_enabled_list(sasl_broker):
    with connect(sasl_broker.sasl_port) as s:
        error, names = sasl_handshake(s, "GSSAPI")
        assert error == 33  # UNSUPPORTED_SASL_MECHANISM
        assert names == MECHANISMS
        assert closed_by_peer(s)


def test_authenticate_without_handshake_is_an_illegal_state(sasl_broker):
    with connect(sasl_broker.sasl_port) as s:
        error, _, _ = sasl_authenticate(s, b"n,,n=alice,r=abc")
        assert error == 34  # ILLEGAL_SASL_STATE
        assert closed_by_peer(s)


def test_sasl_apis_on_the_plaintext_listener_are_an_illegal_state(sasl_broker):
    with connect(sasl_broker.server.kafka_port) as s:
        assert sasl_handshake(s, "PLAIN")[0] == 34
        s.sendall(metadata_v1_all(correlation_id=5))
        assert read_frame(s)[:4] == (5).to_bytes(4, "big")


@pytest.mark.parametrize("token", [
    b"", b"n", b"n,,", b"n,,n=alice", b"n,,n=alice,r=", b"p=tls-unique,,n=alice,r=abc",
    b"\xff\x00\xfe garbage \x00", b"n,,n=al=ice,r=abc", b"n,,m=x,n=alice,r=abc",
])
def test_garbage_scram_client_first_gets_an_error_and_others_are_served(sasl_broker, token):
    with connect(sasl_broker.sasl_port) as s:
        assert sasl_handshake(s, "SCRAM-SHA-256")[0] == 0
        error, message, _ = sasl_authenticate(s, token)
        assert error == 58  # SASL_AUTHENTICATION_FAILED
        assert message and message.startswith("Authentication failed")
        assert closed_by_peer(s)
    # The server keeps serving others.
    produce(client_config(sasl_broker, "SCRAM-SHA-256"), "after-garbage", ["still-here"])


@pytest.mark.parametrize("final", [b"", b"c=biws", b"c=biws,r=", b"c=biws,r=abc,p=",
                                   b"c=biws,r=abc,p=!!!", b"garbage\x00\xff"])
def test_truncated_or_wrong_scram_client_final_gets_an_error(sasl_broker, final):
    with connect(sasl_broker.sasl_port) as s:
        assert sasl_handshake(s, "SCRAM-SHA-512")[0] == 0
        error, _, server_first = sasl_authenticate(s, b"n,,n=alice,r=clientnonce")
        assert error == 0 and server_first.startswith(b"r=clientnonce")
        error, message, _ = sasl_authenticate(s, final, correlation_id=3)
        assert error == 58
        assert message
        assert closed_by_peer(s)
    assert sasl_broker.server.alive()


def test_repeated_failures_from_one_address_are_slowed_down(sasl_broker):
    def failed_login():
        with connect(sasl_broker.sasl_port) as s:
            assert sasl_handshake(s, "PLAIN")[0] == 0
            start = time.monotonic()
            error, _, _ = sasl_authenticate(s, b"\0alice\0wrong")
            assert error == 58
            return time.monotonic() - start

    first = [failed_login() for _ in range(3)]
    slowed = [failed_login() for _ in range(2)]
    assert max(first) < 0.15, first
    assert slowed[0] >= 0.18 and slowed[1] >= 0.38, slowed  # 200 ms more per failure
    # A right password from the same address still logs in (and clears the count).
    with connect(sasl_broker.sasl_port) as s:
        assert sasl_handshake(s, "PLAIN")[0] == 0
        assert sasl_authenticate(s, b"\0alice\0" + PASSWORDS["alice"].encode())[0] == 0


# --- settings ----------------------------------------------------------------------------------

def test_enabled_mechanisms_setting_limits_the_handshake():
    s = SaslSluice(settings={"sasl.enabled.mechanisms": "SCRAM-SHA-512"}).start()
    try:
        with connect(s.sasl_port) as sock:
            error, names = sasl_handshake(sock, "PLAIN")
            assert (error, names) == (33, ["SCRAM-SHA-512"])
        produce(client_config(s, "SCRAM-SHA-512"), "only-512", ["x"])
    finally:
        s.close()


@pytest.mark.parametrize("listener", ["SSL://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"])
def test_tls_listeners_without_a_certificate_are_refused_at_start(tmp_path, listener):
    r = subprocess.run([sluice_binary(), "--data-dir", str(tmp_path), "--kafka", listener,
                        "--http", "off", "--sqs", "off"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert listener in r.stderr and "ssl.certificate.location" in r.stderr


def test_unknown_mechanism_setting_is_refused(tmp_path):
    r = subprocess.run([sluice_binary(), "--data-dir", str(tmp_path), "--kafka", "127.0.0.1:0",
                        "--http", "off", "--sqs", "off", "--set",
                        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "SCRAM-SHA-1" in r.stderr


def test_listeners_setting_opens_a_sasl_listener(tmp_path):
    d = str(tmp_path)
    set_user(d, "alice", PASSWORDS["alice"])
    proc = subprocess.Popen([sluice_binary(), "--data-dir", d, "--http", "off", "--sqs", "off",
                             "--set", "listeners=SASL_PLAINTEXT://127.0.0.1:0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        deadline = time.monotonic() + 30
        while "listening:" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line, "sluice exited"
        m = re.search(r"kafka_sasl_plaintext=[^ ]*:(\d+)", line)
        assert m and "kafka=" not in line, line
        port = int(m.group(1))
        with connect(port) as s:
            assert sasl_handshake(s, "SCRAM-SHA-256")[0] == 0
    finally:
        proc.terminate()
        proc.wait(30)
