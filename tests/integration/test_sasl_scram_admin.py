"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554) on a running sluice:
changes take effect at once for new logins and survive a restart. Raw frames (no client library
on this machine has these APIs)."""
import hashlib
import os
import struct

import pytest
from confluent_kafka import KafkaError

from harness import connect, kafka_request, read_frame
from kafka_wire import NO_TAGS, FlexReader, compact_array, compact_bytes, compact_string
from sasl_support import (PASSWORDS, SaslSluice, auth_error, client_config, produce,
                          sasl_authenticate, sasl_handshake, users)

SHA256, SHA512 = 1, 2


@pytest.fixture
def sasl_broker():
    s = SaslSluice().start()
    try:
        yield s
    finally:
        s.close()


def logged_in(broker, user="alice"):
    s = connect(broker.sasl_port)
    assert sasl_handshake(s, "PLAIN")[0] == 0
    assert sasl_authenticate(s, f"\0{user}\0{PASSWORDS[user]}".encode())[0] == 0
    return s


def describe(sock, names=None, correlation_id=20):
    users_field = (b"\x00" if names is None else
                   compact_array([compact_string(n) + NO_TAGS for n in names]))
    sock.sendall(kafka_request(50, 0, correlation_id, users_field + NO_TAGS,
                               flexible_header=True))
    r = FlexReader(read_frame(sock))
    assert r.int32() == correlation_id
    r.tags()
    r.int32()  # throttle_time_ms
    assert r.int16() == 0
    r.compact_string()

    def result(r):
        user, code, _ = r.compact_string(), r.int16(), r.compact_string()

        def info(r):
            mech, iterations = r.int8(), r.int32()
            r.tags()
            return (mech, iterations)
        infos = r.compact_array(info)
        r.tags()
        return user, code, infos
    return {user: (code, infos) for user, code, infos in r.compact_array(result)}


def upsertion(name, mechanism, password, iterations=4096, salt=None):
    salt = salt or os.urandom(16)
    algo = "sha256" if mechanism == SHA256 else "sha512"
    salted = hashlib.pbkdf2_hmac(algo, password.encode(), salt, iterations)
    return (compact_string(name) + struct.pack(">bi", mechanism, iterations) +
            compact_bytes(salt) + compact_bytes(salted) + NO_TAGS)


def deletion(name, mechanism):
    return compact_string(name) + struct.pack(">b", mechanism) + NO_TAGS


def alter(sock, deletions=(), upsertions=(), correlation_id=30):
    body = compact_array(list(deletions)) + compact_array(list(upsertions)) + NO_TAGS
    sock.sendall(kafka_request(51, 0, correlation_id, body, flexible_header=True))
    r = FlexReader(read_frame(sock))
    assert r.int32() == correlation_id
    r.tags()
    r.int32()

    def result(r):
        user, code, message = r.compact_string(), r.int16(), r.compact_string()
        r.tags()
        return user, (code, message)
    return dict(r.compact_array(result))


def test_describe_lists_every_user_with_mechanisms_and_iterations(sasl_broker):
    with logged_in(sasl_broker) as s:
        everyone = describe(s)
        assert everyone == {"alice": (0, [(SHA256, 4096), (SHA512, 4096)]),
                            "bob": (0, [(SHA256, 4096), (SHA512, 4096)])}
        some = describe(s, ["bob", "nobody"])
        assert some["bob"][0] == 0
        assert some["nobody"][0] == 91  # RESOURCE_NOT_FOUND
        assert describe(s, ["bob", "bob"])["bob"][0] == 92  # DUPLICATE_RESOURCE


def test_alter_takes_effect_at_once_and_survives_a_restart(sasl_broker):
    with logged_in(sasl_broker) as s:
        results = alter(s, deletions=[deletion("alice", SHA256)],
                        upsertions=[upsertion("carol", SHA256, "carol-pw-1"),
                                    upsertion("bob", SHA512, "bob-new-pw")])
        assert results == {"alice": (0, None), "carol": (0, None), "bob": (0, None)}
        assert describe(s, ["carol"])["carol"] == (0, [(SHA256, 4096)])

    # New logins see the change at once.
    produce(client_config(sasl_broker, "SCRAM-SHA-256", user="carol", password="carol-pw-1"),
            "altered", ["by-carol"])
    produce(client_config(sasl_broker, "SCRAM-SHA-512", user="bob", password="bob-new-pw"),
            "altered", ["by-bob"])
    # bob's PLAIN login now checks the new SCRAM credential; the old password is gone.
    produce(client_config(sasl_broker, "PLAIN", user="bob", password="bob-new-pw"),
            "altered", ["by-bob-plain"])
    for mechanism in ("SCRAM-SHA-512", "PLAIN"):
        err = auth_error(client_config(sasl_broker, mechanism, user="bob"))
        assert err is not None and err.code() == KafkaError._AUTHENTICATION
    # alice lost SCRAM-SHA-256 but keeps SCRAM-SHA-512.
    assert auth_error(client_config(sasl_broker, "SCRAM-SHA-256", user="alice")) is not None
    produce(client_config(sasl_broker, "SCRAM-SHA-512", user="alice"), "altered", ["by-alice"])
    sasl_broker.server.wait_log("SCRAM credentials of user 'carol'")

    sasl_broker.server.stop()
    assert users("list", "--data-dir", sasl_broker.data_dir).stdout.split() == [
        "alice", "bob", "carol"]
    sasl_broker.start()
    produce(client_config(sasl_broker, "SCRAM-SHA-256", user="carol", password="carol-pw-1"),
            "altered", ["after-restart"])


def test_alter_refuses_bad_entries_as_kafka_does(sasl_broker):
    with logged_in(sasl_broker) as s:
        results = alter(s, deletions=[deletion("nobody", SHA256), deletion("dup", SHA256)],
                        upsertions=[upsertion("few", SHA256, "pw", iterations=1000),
                                    upsertion("many", SHA512, "pw", iterations=20000),
                                    upsertion("mech", 3, "pw"),
                                    upsertion("dup", SHA512, "pw")])
        assert results["nobody"][0] == 91  # RESOURCE_NOT_FOUND
        assert results["few"][0] == 93  # UNACCEPTABLE_CREDENTIAL
        assert results["many"][0] == 93
        assert results["mech"][0] == 33  # UNSUPPORTED_SASL_MECHANISM
        assert results["dup"][0] == 92  # DUPLICATE_RESOURCE
        assert all(message for _, message in results.values())
        assert set(describe(s)) == {"alice", "bob"}


def test_scram_admin_apis_need_a_login_on_a_sasl_listener(sasl_broker):
    with connect(sasl_broker.sasl_port) as s:
        s.sendall(kafka_request(51, 0, 1, compact_array([]) + compact_array([]) + NO_TAGS,
                                flexible_header=True))
        s.settimeout(10)
        assert s.recv(1) == b""


def test_http_basic_sees_a_changed_password_at_once():
    """HTTP Basic keeps checked passwords (no PBKDF2 per request); a change of the user through
    AlterUserScramCredentials must end the old password there too, at once."""
    import base64
    import requests

    def status(user, password):
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return requests.get(broker.server.http_url + "/topics", timeout=30,
                            headers={"Authorization": "Basic " + token}).status_code

    broker = SaslSluice(settings={"http.authentication": "basic"}).start()
    try:
        # Twice: the second answer comes from the cache of checked passwords.
        assert status("bob", PASSWORDS["bob"]) == 200
        assert status("bob", PASSWORDS["bob"]) == 200
        assert status("bob", "not-his") == 401
        with logged_in(broker) as s:
            assert alter(s, upsertions=[upsertion("bob", SHA512, "bob-new-pw")]) == {
                "bob": (0, None)}
        assert status("bob", PASSWORDS["bob"]) == 401
        assert status("bob", "bob-new-pw") == 200
        assert status("alice", PASSWORDS["alice"]) == 200
    finally:
        broker.close()
