"""SASL OAUTHBEARER with JWTs the test signs: confluent-kafka (oauth_cb) produces and consumes;
bad tokens are refused; KIP-368 session lifetime, expiry and re-authentication over raw frames
(librdkafka 2.0.2 cannot re-authenticate)."""
import struct
import tempfile
import time

import pytest
from confluent_kafka import KafkaError

from harness import connect, kafka_request, read_frame
from jwt_support import Keys
from sasl_support import (SaslSluice, closed_by_peer, consume_all, kbytes, metadata_v1_all,
                          produce, sasl_handshake)

REAUTH_MS = 600000


@pytest.fixture(scope="module")
def keys():
    with tempfile.TemporaryDirectory(prefix="sluice-jwt-") as d:
        yield Keys(d)


@pytest.fixture(scope="module")
def broker(keys):
    settings = dict(keys.settings(), **{"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
                                        "connections.max.reauth.ms": REAUTH_MS})
    b = SaslSluice(settings=settings).start()
    yield b
    b.close()


def oauth_config(broker, token_fn, **extra):
    cfg = {"bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
           "sasl.mechanism": "OAUTHBEARER", "oauth_cb": token_fn}
    cfg.update(extra)
    return cfg


def callback(token):
    # confluent-kafka: (token, expiry in seconds since the epoch)
    return lambda _config: (token, time.time() + 300)


def message(token):
    return b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01"


def authenticate(sock, token, correlation_id=2):
    """SaslAuthenticate v1; returns (error_code, error_message, session_lifetime_ms)."""
    sock.sendall(kafka_request(36, 1, correlation_id, kbytes(message(token))))
    body = read_frame(sock)
    assert struct.unpack(">i", body[:4])[0] == correlation_id
    error, mlen = struct.unpack(">hh", body[4:8])
    pos = 8
    text = None
    if mlen >= 0:
        text = body[pos:pos + mlen].decode()
        pos += mlen
    blen = struct.unpack(">i", body[pos:pos + 4])[0]
    pos += 4 + blen
    lifetime = struct.unpack(">q", body[pos:pos + 8])[0]
    return error, text, lifetime


def login(broker, token):
    s = connect(broker.sasl_port)
    assert sasl_handshake(s, "OAUTHBEARER")[0] == 0
    return s, authenticate(s, token)


def metadata_ok(sock, correlation_id=4):
    sock.sendall(metadata_v1_all(correlation_id))
    body = read_frame(sock)
    return struct.unpack(">i", body[:4])[0] == correlation_id


def test_confluent_produces_and_consumes_with_a_signed_token(broker, keys):
    cfg = oauth_config(broker, callback(keys.token()))
    produce(cfg, "oauth-topic", ["a", "b", "c"])
    assert consume_all(cfg, "oauth-topic", 3) == ["a", "b", "c"]


@pytest.mark.parametrize("kid", ["rsa-1", "pem-1"])
def test_rsa_keys_from_jwks_and_pem_file_are_accepted(broker, keys, kid):
    s, (error, text, _) = login(broker, keys.token(kid=kid))
    assert (error, text) == (0, None)
    assert metadata_ok(s)
    s.close()


BAD_TOKENS = {
    "expired": (lambda k: k.token(lifetime=-3600), "expired"),
    "wrong audience": (lambda k: k.token(aud="someone-else"), "audience"),
    "wrong issuer": (lambda k: k.token(iss="https://evil.test"), "issuer"),
    "bad signature": (lambda k: k.token(kid="ec-1", key=k.stranger), "bad signature"),
    "unknown kid": (lambda k: k.token(kid="nope", key=k.stranger), "unknown key id"),
    "oversized": (lambda k: k.token(extra={"pad": "x" * 20000}), "exceeds"),
    "not a jwt": (lambda k: "not.a.jwt", "base64url"),
}


@pytest.mark.parametrize("case", sorted(BAD_TOKENS))
def test_bad_tokens_are_refused_and_the_connection_closed(broker, keys, case):
    make, reason = BAD_TOKENS[case]
    token = make(keys)
    s, (error, text, _) = login(broker, token)
    assert error == 58, text  # SASL_AUTHENTICATION_FAILED
    assert reason in text
    assert token not in text
    assert closed_by_peer(s)
    s.close()
    assert token not in broker.server.log_text()
    # The broker keeps serving others.
    s2, (error, _, _) = login(broker, keys.token())
    assert error == 0
    s2.close()


def test_confluent_reports_a_refused_token(broker, keys):
    from confluent_kafka import Producer
    errors = []
    p = Producer(oauth_config(broker, callback(keys.token(lifetime=-3600)),
                              error_cb=errors.append))
    p.produce("never", b"x")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(
            e.code() == KafkaError._AUTHENTICATION for e in errors):
        p.poll(0.2)
    p.purge()
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


def test_session_lifetime_is_the_reauth_maximum_or_the_token_expiry(broker, keys):
    s, (error, _, lifetime) = login(broker, keys.token(lifetime=3600))
    assert error == 0 and lifetime == REAUTH_MS
    s.close()
    s, (error, _, lifetime) = login(broker, keys.token(lifetime=120))
    assert error == 0 and 0 < lifetime <= 120000
    s.close()


def test_reauthentication_on_a_live_connection(broker, keys):
    s, (error, _, _) = login(broker, keys.token(lifetime=120))
    assert error == 0
    assert metadata_ok(s, 5)
    assert sasl_handshake(s, "OAUTHBEARER", correlation_id=6)[0] == 0
    error, text, lifetime = authenticate(s, keys.token(lifetime=3600), correlation_id=7)
    assert (error, text, lifetime) == (0, None, REAUTH_MS)
    assert metadata_ok(s, 8)
    s.close()


def test_reauthentication_as_another_principal_is_refused(broker, keys):
    s, (error, _, _) = login(broker, keys.token(sub="alice"))
    assert error == 0
    assert sasl_handshake(s, "OAUTHBEARER", correlation_id=6)[0] == 0
    error, text, _ = authenticate(s, keys.token(sub="mallory"), correlation_id=7)
    assert error == 58 and "principal" in text
    assert closed_by_peer(s)
    s.close()


def test_reauthentication_with_another_mechanism_is_refused(broker, keys):
    s, (error, _, _) = login(broker, keys.token())
    assert error == 0
    assert sasl_handshake(s, "PLAIN", correlation_id=6)[0] == 33  # UNSUPPORTED_SASL_MECHANISM
    assert closed_by_peer(s)
    s.close()


def test_expired_session_refuses_the_next_request_then_closes(broker, keys):
    s, (error, _, lifetime) = login(broker, keys.token(lifetime=2))
    assert error == 0 and 0 < lifetime <= 2000
    assert metadata_ok(s, 5)
    # The session's end is a point in time: wait for the clock to pass it.
    time.sleep(lifetime / 1000 + 0.2)
    s.sendall(metadata_v1_all(9))
    assert closed_by_peer(s)
    s.close()
    broker.server.wait_log("Metadata after the SASL session of User:alice expired; closing")


def test_expired_session_may_still_reauthenticate(broker, keys):
    s, (error, _, lifetime) = login(broker, keys.token(lifetime=2))
    assert error == 0
    time.sleep(lifetime / 1000 + 0.2)
    assert sasl_handshake(s, "OAUTHBEARER", correlation_id=6)[0] == 0
    error, _, lifetime = authenticate(s, keys.token(lifetime=3600), correlation_id=7)
    assert (error, lifetime) == (0, REAUTH_MS)
    assert metadata_ok(s, 8)
    s.close()


def test_plain_still_works_beside_oauthbearer(broker):
    from sasl_support import client_config
    produce(client_config(broker, "PLAIN"), "plain-beside-oauth", ["p"])


def test_oauthbearer_without_keys_is_refused_at_start(tmp_path):
    import subprocess
    from harness import sluice_binary
    r = subprocess.run([sluice_binary(), "--data-dir", str(tmp_path), "--kafka",
                        "SASL_PLAINTEXT://127.0.0.1:0", "--http", "off", "--sqs", "off",
                        "--set", "sasl.enabled.mechanisms=OAUTHBEARER"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "sasl.oauthbearer.jwks.location" in r.stderr


def test_unreadable_jwks_is_refused_at_start(tmp_path):
    import subprocess
    from harness import sluice_binary
    bad = tmp_path / "jwks.json"
    bad.write_text("{not json")
    r = subprocess.run([sluice_binary(), "--data-dir", str(tmp_path / "d"), "--kafka",
                        "SASL_PLAINTEXT://127.0.0.1:0", "--http", "off", "--sqs", "off",
                        "--set", "sasl.enabled.mechanisms=OAUTHBEARER",
                        "--set", f"sasl.oauthbearer.jwks.location={bad}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert str(bad) in r.stderr
