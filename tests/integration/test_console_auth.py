"""Signing in to the console (http.authentication=basic,bearer, the authorizer on).

The console's files and GET /v1/console/auth are open (no data in them); a user name and
password are exchanged once for a session token (POST /v1/console/session), which then works
as a Bearer token and as /ws's access_token=; a JWT signs in as it is. In headless Chromium:
the page shows its own sign-in form (never the browser's password prompt), refuses a wrong
password, lists only the topics the principal may describe, and tails and produces over the
WebSocket with the session. One sluice for the module; users and ACLs set with the sluice CLI
on its data dir before it starts.
"""
import base64
import subprocess
import tempfile

import pytest
import requests
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, sluice_binary
from sasl_support import PASSWORDS, set_user
from test_browser import browser  # noqa: F401 (a fixture)
from test_console import BROWSER_ACCEPT, polled, screenshot, show
from test_http_auth import basic, bearer, keys  # noqa: F401 (keys: a fixture)

CONSOLE = {"X-Sluice-Console": "1"}
JSON = {"Content-Type": "application/json"}  # what every state-changing /v1 route needs


def acl_add(data_dir, principal, operation, kind, name=None):
    resource = [f"--{kind}"] + ([name] if name is not None else [])
    r = subprocess.run([sluice_binary(), "acls", "add", "--data-dir", data_dir,
                        "--allow-principal", principal, "--operation", operation] + resource,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def server(keys):
    d = tempfile.TemporaryDirectory(prefix="sluice-console-auth-")
    set_user(d.name, "alice", PASSWORDS["alice"])
    set_user(d.name, "bob", PASSWORDS["bob"])
    for op in ("Describe", "Read", "Write"):
        acl_add(d.name, "User:alice", op, "topic", "shared")
    acl_add(d.name, "User:alice", "Read", "group", "alices-group")
    acl_add(d.name, "User:bob", "Describe", "topic", "bobs")
    # The Kafka listener here is plaintext (User:ANONYMOUS): it only creates the topics.
    acl_add(d.name, "User:ANONYMOUS", "Create", "cluster")
    s = Sluice(data_dir=d.name, sqs=True, settings=dict(keys.settings(), **{
        "http.authentication": "basic,bearer", "authorizer.enabled": "true"}))
    s.start()
    admin = AdminClient({"bootstrap.servers": s.bootstrap})
    for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("shared", "secret", "bobs")
                                  ]).values():
        f.result(30)
    yield s
    s.close()
    d.cleanup()


def sign_in(server, user="alice", password=None):
    r = requests.post(server.http_url + "/v1/console/session", timeout=30,
                      headers=dict(CONSOLE, **JSON, **basic(user, password or PASSWORDS[user])))
    assert r.status_code == 200, r.text
    assert r.headers["Cache-Control"] == "no-store"
    return r.json()


# --- the sign-in routes over plain HTTP --------------------------------------------------------

def test_the_console_files_and_its_auth_question_are_open(server):
    r = requests.get(server.http_url + "/v1/console/auth", timeout=30)
    assert r.status_code == 200 and r.json() == {"schemes": ["basic", "bearer"]}
    page = requests.get(server.http_url + "/", headers={"Accept": BROWSER_ACCEPT}, timeout=30)
    assert page.status_code == 200 and "<title>sluice console</title>" in page.text
    js = requests.get(server.http_url + "/ui/console/console.js", timeout=30)
    assert js.status_code == 200 and "sign" in js.text
    # The data stays behind the guard, and so does the REST Proxy's GET /.
    for path in ("/", "/topics", "/metrics", "/v1/console/session"):
        assert requests.get(server.http_url + path, timeout=30).status_code == 401, path


def test_a_password_sign_in_gives_a_session_token_that_works_as_bearer(server):
    answer = sign_in(server)
    assert answer["principal"] == "User:alice"
    assert answer["token"].startswith("sluice-session.")
    assert 0 < answer["expires_in"] <= 24 * 3600
    assert PASSWORDS["alice"] not in answer["token"]
    me = requests.get(server.http_url + "/v1/console/session", headers=bearer(answer["token"]),
                      timeout=30)
    assert me.status_code == 200 and me.json() == {"principal": "User:alice"}
    topics = requests.get(server.http_url + "/topics", headers=bearer(answer["token"]),
                          timeout=30)
    assert topics.status_code == 200
    # Only what alice may describe.
    assert topics.json() == ["shared"]
    # /metrics names every topic: the cluster's view, which alice may not describe.
    r = requests.get(server.http_url + "/metrics", headers=bearer(answer["token"]), timeout=30)
    assert r.status_code == 403 and r.json()["error_code"] == 40301


def test_a_wrong_password_from_the_console_gets_no_basic_challenge(server):
    r = requests.post(server.http_url + "/v1/console/session", timeout=30,
                      headers=dict(CONSOLE, **JSON, **basic("alice", "wrong")))
    assert r.status_code == 401 and r.json()["error_code"] == 40101
    assert r.raw.headers.getlist("WWW-Authenticate") == ['Bearer realm="sluice"']
    # Other clients still get both challenges.
    r = requests.post(server.http_url + "/v1/console/session", timeout=30,
                      headers=dict(JSON, **basic("alice", "wrong")))
    challenges = r.raw.headers.getlist("WWW-Authenticate")
    assert 'Basic realm="sluice"' in challenges and 'Bearer realm="sluice"' in challenges
    assert "wrong" not in server.log_text().replace("wrong password", "")


def test_forged_and_edited_session_tokens_are_refused(server):
    token = sign_in(server)["token"]
    _, principal, expiry, mac = token.split(".")
    admin = base64.urlsafe_b64encode(b"User:admin").decode().rstrip("=")
    for bad in (f"sluice-session.{admin}.{expiry}.{mac}",
                f"sluice-session.{principal}.{int(expiry) + 3600}.{mac}",
                f"sluice-session.{principal}.{expiry}.{mac[:-2]}AA",
                "sluice-session.garbage", "sluice-session." + "A" * 5000 + ".99999999999.x"):
        r = requests.get(server.http_url + "/topics", headers=bearer(bad), timeout=30)
        assert r.status_code == 401, bad[:80]
    r = requests.get(server.http_url + f"/ws?access_token=sluice-session.{admin}.{expiry}.{mac}",
                     timeout=30)
    assert r.status_code == 401


def test_a_jwt_is_its_own_session(server, keys):
    jwt = keys.token(sub="bob")
    me = requests.get(server.http_url + "/v1/console/session", headers=bearer(jwt), timeout=30)
    assert me.status_code == 200 and me.json() == {"principal": "User:bob"}
    r = requests.post(server.http_url + "/v1/console/session", headers=dict(JSON, **bearer(jwt)),
                      timeout=30)
    assert r.status_code == 400 and "Basic" in r.json()["message"]


def test_signing_out_ends_the_users_sessions_on_the_server(server, keys):
    """DELETE /v1/console/session: every session token of the caller's user is refused from
    then on (a copy kept elsewhere too); other users' sessions and later sign-ins work."""
    first, second = sign_in(server)["token"], sign_in(server)["token"]
    bobs = sign_in(server, "bob")["token"]

    def whoami(token):
        return requests.get(server.http_url + "/v1/console/session", headers=bearer(token),
                            timeout=30).status_code

    assert whoami(first) == whoami(second) == whoami(bobs) == 200
    # A form or text body cannot sign anyone out (no page on another origin can send it).
    r = requests.delete(server.http_url + "/v1/console/session", headers=bearer(first),
                        timeout=30)
    assert r.status_code == 415, r.text
    assert whoami(first) == 200
    r = requests.delete(server.http_url + "/v1/console/session", timeout=30,
                        headers=dict(bearer(first), **JSON), json={})
    assert r.status_code == 204, r.text
    assert whoami(first) == whoami(second) == 401
    r = requests.get(server.http_url + "/topics", headers=bearer(second), timeout=30)
    assert r.status_code == 401
    assert whoami(bobs) == 200
    again = sign_in(server)["token"]
    assert whoami(again) == 200 and whoami(first) == 401
    assert "sessions of User:alice ended" in server.log_text()
    # A JWT is not a session: signing out with it ends alice's sessions, not the JWT.
    jwt = keys.token(sub="alice")
    r = requests.delete(server.http_url + "/v1/console/session", timeout=30,
                        headers=dict(bearer(jwt), **JSON), json={})
    assert r.status_code == 204 and whoami(again) == 401 and whoami(jwt) == 200


def test_the_console_actions_ask_kafkas_acls(server):
    token = sign_in(server)["token"]
    headers = dict(bearer(token), **JSON)
    url = server.http_url

    def refused(method, path, needle, **kw):
        r = requests.request(method, url + path, headers=headers, timeout=30, **kw)
        assert r.status_code == 403, (path, r.status_code, r.text)
        assert needle in r.json()["message"], r.json()

    # READ on the group (as Kafka's OffsetCommit), then READ on the topic.
    refused("POST", "/v1/console/groups/others/reset-offsets", "READ group others",
            json={"topic": "shared", "to": "earliest"})
    refused("POST", "/v1/console/groups/alices-group/reset-offsets", "READ topic secret",
            json={"topic": "secret", "to": "earliest"})
    r = requests.post(url + "/v1/console/groups/alices-group/reset-offsets", headers=headers,
                      json={"topic": "shared", "to": "earliest"}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["offsets"] == [{"topic": "shared", "partition": 0, "offset": 0}]
    # DELETE on the group, which she has on none.
    refused("DELETE", "/v1/console/groups/alices-group", "DELETE group alices-group", json={})
    # Purging a queue is DELETE on its topic, which she may only read and write.
    refused("POST", "/v1/console/queues/shared/purge", "DELETE topic shared", json={})


# --- the console in Chromium -------------------------------------------------------------------

def open_console(browser, server):
    browser.goto(f"{server.http_url}/?interval=300")
    browser.wait("document.body.dataset.signIn === 'open'", "the sign-in form")


def test_the_console_signs_in_with_a_password_and_shows_only_alices_topics(server, browser):
    open_console(browser, server)
    assert browser.eval("document.getElementById('sign-in').open") is True
    assert browser.eval("document.getElementById('sign-in-password').hidden") is False
    assert browser.eval("document.getElementById('sign-in-token').hidden") is False
    screenshot(browser, "sign-in")
    browser.fill("#sign-in-user", "alice")
    browser.fill("#sign-in-secret", "not-her-password")
    browser.click("#sign-in-submit")
    browser.wait("document.getElementById('sign-in-error').textContent !== ''",
                 "the refusal of a wrong password")
    assert "invalid credentials" in browser.eval(
        "document.getElementById('sign-in-error').textContent")
    browser.fill("#sign-in-secret", PASSWORDS["alice"])
    browser.click("#sign-in-submit")
    browser.wait("document.body.dataset.signIn === 'done'", "the sign-in")
    assert browser.eval("document.body.dataset.principal") == "User:alice"
    show(browser, "#/topics", "topics")
    browser.wait("(window.sluiceConsole.last.topics || []).length > 0", "the topic list")
    names = browser.eval("window.sluiceConsole.last.topics")
    assert names == ["shared"]
    assert browser.eval("window.sluiceConsole.errors") == []
    # Her sizes are "–", and the page says why: /metrics needs DESCRIBE on the cluster.
    note = browser.wait("document.getElementById('sizes-note') &&"
                        " document.getElementById('sizes-note').textContent", "the sizes note")
    assert "DESCRIBE on the cluster" in note and "403" in note, note
    # The password is not kept by the page: only the session token is.
    stored = browser.eval("sessionStorage.getItem('sluice.console.session')")
    assert PASSWORDS["alice"] not in stored and "sluice-session." in stored
    screenshot(browser, "signed-in")

    # What the ACLs refuse is said, with the server's reason: deleting a topic alice may only
    # read, and a topic she may not describe.
    browser.click("button[data-delete-topic='shared']")
    browser.wait("document.body.dataset.confirm === 'open'", "the confirmation")
    browser.click("#confirm-ok")
    browser.wait("document.getElementById('topic-action').dataset.error === '403'",
                 "the refusal of the delete")
    refusal = browser.eval("document.getElementById('topic-action').textContent")
    assert "not deleted" in refusal and "shared" in refusal and "(403)" in refusal, refusal
    screenshot(browser, "refused-delete")
    show(browser, "#/topic/secret", "topic")
    message = browser.wait("document.querySelector('#view p.error') &&"
                           " document.querySelector('#view p.error').textContent",
                           "the refusal of another user's topic")
    assert "not allowed" in message and "403" in message, message

    # Tail and produce over /ws with the session token.
    show(browser, "#/tail", "tail")
    browser.fill("#tail-topic", "shared")
    browser.click("#tail-start")
    browser.wait("document.body.dataset.tailing === 'shared'", "the tail to start")
    # The tail lives while its page is shown: produce with a Kafka-less path, the REST
    # Proxy, as alice.
    token = browser.eval("JSON.parse(sessionStorage.getItem('sluice.console.session')).token")
    r = requests.post(server.http_url + "/topics/shared", timeout=30,
                      headers=dict(bearer(token), **{
                          "Content-Type": "application/vnd.kafka.json.v2+json"}),
                      data='{"records":[{"value":"hello from alice"}]}')
    assert r.status_code == 200, r.text
    browser.wait("[...document.querySelectorAll('#tail-rows td.value')]"
                 ".some(td => td.textContent === '\"hello from alice\"')", "the tailed record")
    show(browser, "#/produce?topic=shared", "produce")
    browser.fill("#produce-value", "produced by alice")
    browser.click("#produce-send")
    browser.wait("document.getElementById('produce-result').dataset.offset !== undefined",
                 "the produce ack")

    # A reload keeps the session (this tab's sessionStorage): no form.
    browser.reload()
    browser.wait("document.body.dataset.principal === 'User:alice'", "the kept session")
    assert browser.eval("document.body.dataset.signIn === undefined") is True

    # Signing out brings the form back and forgets the token.
    browser.click("#sign-out")
    browser.wait("document.body.dataset.signIn === 'open'", "the form after signing out")
    assert browser.eval("sessionStorage.getItem('sluice.console.session')") is None


def test_signing_out_and_in_as_another_user_in_the_same_tab(server, browser):
    """alice (DESCRIBE, READ, WRITE on shared) signs out; bob (DESCRIBE on bobs) signs in in
    the same tab: the page shows and allows what bob may, nothing of alice's."""
    open_console(browser, server)
    browser.fill("#sign-in-user", "alice")
    browser.fill("#sign-in-secret", PASSWORDS["alice"])
    browser.click("#sign-in-submit")
    browser.wait("document.body.dataset.signIn === 'done'", "alice's sign-in")
    show(browser, "#/topics", "topics")
    browser.wait("JSON.stringify(window.sluiceConsole.last.topics) === '[\"shared\"]'",
                 "alice's topic list")
    show(browser, "#/produce?topic=shared", "produce")
    browser.fill("#produce-value", "alice was here")
    browser.click("#produce-send")
    browser.wait("document.getElementById('produce-result').dataset.offset !== undefined",
                 "alice's produce ack")
    show(browser, "#/topics", "topics")

    alices = browser.eval("JSON.parse(sessionStorage.getItem('sluice.console.session')).token")
    browser.click("#sign-out")
    browser.wait("document.body.dataset.signIn === 'open'", "the form after signing out")
    assert browser.eval("document.getElementById('sign-in-note').textContent") == "Signed out."
    # Her session ended on the server too: a copy of the token is refused.
    r = requests.get(server.http_url + "/v1/console/session", headers=bearer(alices),
                     timeout=30)
    assert r.status_code == 401
    # Behind the form nothing of alice's is left: no page, no answers kept, no refreshes (one
    # meeting a 401 would start a second sign-in over this one).
    assert browser.eval("document.getElementById('view').children.length") == 0
    assert browser.eval("JSON.stringify(window.sluiceConsole.last)") == "{}"
    assert browser.eval("document.body.dataset.ready === undefined") is True
    assert browser.eval("document.getElementById('sign-in-user').value") == ""
    # The browser's Back while the form is open: that page is shown once someone signs in.
    browser.eval("(location.hash = '#/groups', null)")
    browser.fill("#sign-in-user", "bob")
    browser.fill("#sign-in-secret", PASSWORDS["bob"])
    browser.click("#sign-in-submit")
    browser.wait("document.body.dataset.signIn === 'done' &&"
                 " document.body.dataset.principal === 'User:bob'", "bob's sign-in")
    browser.wait("document.body.dataset.ready === 'groups'", "the groups page, for bob")
    assert browser.eval("document.getElementById('sign-in-note').textContent") == "Signed out."
    # It stays so: refreshes as bob, no form again.
    polled(browser)
    polled(browser)
    assert browser.eval("document.getElementById('sign-in').open") is False
    assert browser.eval("document.body.dataset.principal") == "User:bob"
    show(browser, "#/topics", "topics")
    assert browser.eval("document.getElementById('principal').textContent") == \
        "signed in as User:bob"
    assert browser.eval("document.getElementById('sign-in').open") is False
    stored = browser.eval("JSON.parse(sessionStorage.getItem('sluice.console.session'))")
    assert stored["principal"] == "User:bob"
    # The topics page, drawn again for bob: his topic only, in the list and in the table.
    browser.wait("document.body.dataset.ready === 'topics' &&"
                 " JSON.stringify(window.sluiceConsole.last.topics) === '[\"bobs\"]'",
                 "bob's topic list")
    shown = browser.eval("[...document.querySelectorAll('#view a')].map(a => a.textContent)"
                         ".filter(t => t === 'shared' || t === 'bobs')")
    assert shown == ["bobs"], shown
    show(browser, "#/topic/bobs", "topic")
    # His topic's partitions; its configs need DESCRIBE_CONFIGS, which he lacks: said so.
    errors = browser.eval("[...document.querySelectorAll('#view p.error')]"
                          ".map(p => p.textContent)")
    assert errors == ["configs: not allowed: Not authorized to DESCRIBE_CONFIGS topic bobs. "
                      "(403)"], errors
    show(browser, "#/topic/shared", "topic")
    message = browser.wait("document.querySelector('#view p.error') &&"
                           " document.querySelector('#view p.error').textContent",
                           "the refusal of alice's topic to bob")
    assert "not allowed" in message and "403" in message, message
    # What alice could do bob may not: producing to shared goes over bob's WebSocket session.
    show(browser, "#/produce?topic=shared", "produce")
    browser.fill("#produce-value", "bob tries")
    browser.click("#produce-send")
    browser.wait("document.getElementById('produce-result').dataset.error !== undefined",
                 "the refusal of bob's produce")
    assert "40301" in browser.eval("document.getElementById('produce-result').dataset.error")
    assert browser.eval("window.sluiceConsole.errors") == []
    screenshot(browser, "signed-in-again-as-bob")
    # The server saw bob, never alice, after the switch.
    token = browser.eval("JSON.parse(sessionStorage.getItem('sluice.console.session')).token")
    me = requests.get(server.http_url + "/v1/console/session", headers=bearer(token), timeout=30)
    assert me.json() == {"principal": "User:bob"}
    browser.click("#sign-out")
    browser.wait("document.body.dataset.signIn === 'open'", "the form after bob signs out")
    me = requests.get(server.http_url + "/v1/console/session", headers=bearer(token), timeout=30)
    assert me.status_code == 401


def test_the_console_signs_in_with_a_jwt(server, browser, keys):
    open_console(browser, server)
    browser.fill("#sign-in-jwt", keys.token(sub="bob", lifetime=600))
    browser.click("#sign-in-submit")
    browser.wait("document.body.dataset.signIn === 'done'", "the sign-in")
    assert browser.eval("document.body.dataset.principal") == "User:bob"
    show(browser, "#/topics", "topics")
    browser.wait("(window.sluiceConsole.last.topics || []).length > 0", "bob's topic list")
    assert browser.eval("window.sluiceConsole.last.topics") == ["bobs"]
