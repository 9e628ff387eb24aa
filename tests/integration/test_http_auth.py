"""HTTP authentication (http.authentication=basic,bearer): REST, the WebSocket upgrade, SSE and
the console pass one guard; 401 with WWW-Authenticate and the REST Proxy body; Basic against the
SASL users, Bearer against the OAUTHBEARER keys, access_token= in the query on /ws and SSE only;
/healthz and /readyz stay open."""
import asyncio
import base64
import tempfile

import pytest
import requests
import websockets
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice
from jwt_support import Keys
from sasl_support import PASSWORDS, set_user


@pytest.fixture(scope="module")
def keys():
    with tempfile.TemporaryDirectory(prefix="sluice-jwt-") as d:
        yield Keys(d)


@pytest.fixture(scope="module")
def broker(keys):
    d = tempfile.TemporaryDirectory(prefix="sluice-http-auth-")
    set_user(d.name, "alice", PASSWORDS["alice"])
    s = Sluice(data_dir=d.name, settings=dict(keys.settings(),
                                              **{"http.authentication": "basic,bearer"}))
    s.start()
    admin = AdminClient({"bootstrap.servers": s.bootstrap})
    for f in admin.create_topics([NewTopic("authed", 1, 1)]).values():
        f.result(30)
    # One record in topic "authed" for the streams to deliver.
    r = requests.post(s.http_url + "/topics/authed", timeout=30,
                      headers=dict(basic("alice", PASSWORDS["alice"]),
                                   **{"Content-Type": "application/vnd.kafka.json.v2+json"}),
                      json={"records": [{"value": {"n": 1}}]})
    assert r.status_code == 200, r.text
    yield s
    s.close()
    d.cleanup()


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def bearer(token):
    return {"Authorization": "Bearer " + token}


def get(broker, path, headers=None):
    return requests.get(broker.http_url + path, headers=headers or {}, timeout=30)


def assert_unauthorized(r):
    assert r.status_code == 401, r.text
    assert r.json()["error_code"] == 40101
    challenges = r.raw.headers.getlist("WWW-Authenticate")
    assert 'Basic realm="sluice"' in challenges and 'Bearer realm="sluice"' in challenges


def test_no_credentials_get_401_with_both_challenges(broker):
    for path in ["/topics", "/v3/clusters", "/metrics", "/v1/groups", "/"]:
        assert_unauthorized(get(broker, path))
    # The console's files hold no data: open, so the page can show its own sign-in form.
    assert get(broker, "/ui/").status_code == 200


def test_wrong_password_and_unknown_user_are_refused_alike(broker):
    wrong = get(broker, "/topics", basic("alice", "nope"))
    unknown = get(broker, "/topics", basic("nobody", "nope"))
    assert_unauthorized(wrong)
    assert_unauthorized(unknown)
    assert wrong.json() == unknown.json()
    # The log is read by a thread: wait (bounded) for the lines.
    broker.wait_log("authentication failed: user 'alice'")
    broker.wait_log("authentication failed: user 'nobody'")
    assert "nope" not in broker.log_text()


def test_good_basic_and_good_bearer_pass(broker, keys):
    r = get(broker, "/topics", basic("alice", PASSWORDS["alice"]))
    assert r.status_code == 200, r.text
    r = get(broker, "/topics", bearer(keys.token()))
    assert r.status_code == 200, r.text
    r = requests.post(broker.http_url + "/topics/authed", timeout=30,
                      headers=dict(bearer(keys.token(kid="rsa-1")),
                                   **{"Content-Type": "application/vnd.kafka.json.v2+json"}),
                      json={"records": [{"value": {"n": 1}}]})
    assert r.status_code == 200, r.text


def test_expired_or_foreign_bearer_is_refused(broker, keys):
    assert_unauthorized(get(broker, "/topics", bearer(keys.token(lifetime=-3600))))
    assert_unauthorized(get(broker, "/topics", bearer(keys.token(key=keys.stranger))))
    assert_unauthorized(get(broker, "/topics", bearer("garbage")))
    assert_unauthorized(get(broker, "/topics", {"Authorization": "Digest x"}))


def test_probes_stay_open(broker):
    assert get(broker, "/healthz").status_code == 200
    assert get(broker, "/readyz").status_code == 200


def test_query_token_is_not_accepted_on_rest_routes(broker, keys):
    assert_unauthorized(get(broker, "/topics?access_token=" + keys.token()))


def test_sse_takes_the_token_in_the_query(broker, keys):
    assert_unauthorized(get(broker, "/topics/authed/events?from=earliest"))
    expired = keys.token(lifetime=-3600)
    assert_unauthorized(get(broker, "/topics/authed/events?access_token=" + expired))
    path = "/topics/authed/events?from=earliest&format=json&limit=1&access_token="
    with requests.get(broker.http_url + path + keys.token(), stream=True, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["Content-Type"].startswith("text/event-stream")
        data = next(line for line in r.iter_lines() if line.startswith(b"data:"))
        assert b'"n":1' in data


async def ws_status(url, headers=None):
    """The HTTP status of a WebSocket upgrade: 101, or the refusal's status."""
    try:
        async with websockets.connect(url, extra_headers=headers or {}, open_timeout=20) as ws:
            await ws.send('{"op":"subscribe","id":1,"topics":["authed"],"from":"earliest"}')
            reply = await asyncio.wait_for(ws.recv(), 20)
            assert '"subscribed"' in reply
            return 101
    except websockets.exceptions.InvalidStatusCode as e:
        return e.status_code


def test_websocket_upgrade_needs_credentials(broker, keys):
    base = f"ws://127.0.0.1:{broker.http_port}/ws"
    assert asyncio.run(ws_status(base)) == 401
    assert asyncio.run(ws_status(base + "?access_token=bad")) == 401
    assert asyncio.run(ws_status(base + "?access_token=" + keys.token())) == 101
    assert asyncio.run(ws_status(base, basic("alice", PASSWORDS["alice"]))) == 101


def test_failures_are_counted_by_front_and_mechanism(broker):
    get(broker, "/topics", basic("alice", "wrong-again"))
    text = get(broker, "/metrics", basic("alice", PASSWORDS["alice"])).text
    assert 'sluice_authentication_failures_total{front="http",mechanism="basic"}' in text
    assert 'sluice_authentications_total{front="http",mechanism="bearer"}' in text


def test_default_is_open(tmp_path):
    with Sluice(data_dir=str(tmp_path)) as s:
        assert get(s, "/topics").status_code == 200


def test_bearer_without_keys_is_refused_at_start(tmp_path):
    s = Sluice(data_dir=str(tmp_path), settings={"http.authentication": "bearer"})
    with pytest.raises(RuntimeError, match="http.authentication"):
        s.start()


def test_sighup_reloads_the_token_keys():
    """An identity provider rotates its key: after SIGHUP tokens signed with the new key pass
    and those signed with the old one are refused; a file that no longer holds a key is logged
    and the keys in use stay."""
    import signal

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    with tempfile.TemporaryDirectory(prefix="sluice-jwt-rotate-") as kd, \
            tempfile.TemporaryDirectory(prefix="sluice-http-auth-rotate-") as dd:
        keys = Keys(kd)
        s = Sluice(data_dir=dd, settings=dict(keys.settings(),
                                              **{"http.authentication": "basic,bearer"}))
        s.start()
        try:
            old_key = keys.pem_key
            new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            assert get(s, "/topics", bearer(keys.token(kid="pem-1", key=old_key))).status_code \
                == 200
            assert_unauthorized(get(s, "/topics", bearer(keys.token(kid="pem-1", key=new_key))))

            with open(keys.pem_path, "wb") as f:
                f.write(new_key.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
            s.proc.send_signal(signal.SIGHUP)
            s.wait_log("token keys reloaded (3 keys)")
            assert get(s, "/topics", bearer(keys.token(kid="pem-1", key=new_key))).status_code \
                == 200
            assert_unauthorized(get(s, "/topics", bearer(keys.token(kid="pem-1", key=old_key))))
            # The JWKS keys were read again too.
            assert get(s, "/topics", bearer(keys.token(kid="ec-1"))).status_code == 200

            with open(keys.pem_path, "w") as f:
                f.write("not a key\n")
            s.proc.send_signal(signal.SIGHUP)
            line = s.wait_log("token key reload failed")
            assert keys.pem_path in line
            assert get(s, "/topics", bearer(keys.token(kid="pem-1", key=new_key))).status_code \
                == 200
        finally:
            s.stop()
