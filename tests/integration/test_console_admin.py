"""The console's ACLs and Users pages (#/acls, #/users) and what they stand on: REST v3's ACL
routes and /v1/console/users, with the authorizer on and http.authentication=basic.

One sluice for the module: a plaintext Kafka listener (User:ANONYMOUS, which only creates
topics) and a SASL_PLAINTEXT one; users admin (ALL on the cluster) and alice (nothing on the
cluster) made with `sluice users` before it starts; one headless Chromium page signed in as
admin. Real clients check every action's effect: a user created on the page logs in with SCRAM
through confluent-kafka (and not with a mechanism it was not given), a new password locks the
old one out, a deleted user cannot log in; an ACL created on the page lets alice produce with
confluent-kafka, and once deleted she is refused again. Signed in as alice, both pages say why
she may not. axe-core, the keyboard walk and the screenshots as in test_console.

Rerun in upstream mode (tests/CMakeLists.txt, SLUICE_TEST_UPSTREAM=native): the console is a
gateway's over a native sluice; users are the fleet's (_sluice_security: logins checked at the
gateway's Kafka proxy), ACLs the cluster's (REST v3 over the upstream admin: alice's produce
checked at the cluster's own SASL listener). See the `server` fixture.
"""
import os
import re
import subprocess
import tempfile
import time

import pytest
import requests
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness import Sluice, sluice_binary, upstream_rerun_mode
from sasl_support import PASSWORDS, set_user
from test_browser import Browser
from test_console import check_page, confirm, page_errors, screenshot, show
from test_console_auth import acl_add
from test_http_auth import basic
from upstream_support import Gateway, proxy_kafka_args

ADMIN = ("admin", "admin-Secret-0")
JSON = {"Content-Type": "application/json"}
TOPIC = "guarded"


def security(data_dir):
    """The users and ACLs both modes start with, in a data dir."""
    set_user(data_dir, ADMIN[0], ADMIN[1])
    set_user(data_dir, "alice", PASSWORDS["alice"])
    acl_add(data_dir, "User:admin", "All", "cluster")
    acl_add(data_dir, "User:ANONYMOUS", "Create", "cluster")


def sasl_port(s):
    line = s._find_line("listening:")
    return int(re.search(r"kafka_sasl_plaintext=[^ ]*:(\d+)", line).group(1))


@pytest.fixture(scope="module")
def server():
    """`sasl_port`: where users log in (the console's users are this server's); `acl_port`:
    where the ACLs the page edits decide (alice's produce). Native mode: one sluice, both the
    same port. Upstream rerun mode (SLUICE_TEST_UPSTREAM=native): a gateway (HTTP, and its
    Kafka proxy on SASL_PLAINTEXT, whose logins are the gateway fleet's users) in front of a
    native sluice; REST v3's ACL routes edit the cluster's ACLs, which a client of the
    cluster's own SASL listener meets."""
    d = tempfile.TemporaryDirectory(prefix="sluice-console-admin-")
    security(d.name)
    settings = {"http.authentication": "basic", "authorizer.enabled": "true"}
    if upstream_rerun_mode():
        # The gateway reaches the cluster over its plaintext listener as User:ANONYMOUS, a
        # super user there (the gateway's own authorizer decides for its callers).
        up = Sluice(data_dir=d.name, args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
                    rerun=False, settings=dict(settings, **{"super.users": "User:ANONYMOUS"}))
        up.http = False
        up.start()
        s = Gateway(up.bootstrap, settings, args=proxy_kafka_args("SASL_PLAINTEXT"))
        security(s.data_dir)
        try:
            s.start()
            s.wait_log(" served on 127.0.0.1:", timeout=30)
        except BaseException:
            s.close()
            up.close()
            raise
        s.acl_port = sasl_port(up)
    else:
        up = None
        s = Sluice(data_dir=d.name, args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
                   rerun=False, settings=settings)
        s.start()
        s.acl_port = sasl_port(s)
        s.upstream_bootstrap = None
    s.sasl_port = sasl_port(s)
    admin = AdminClient({"bootstrap.servers": s.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        f.result(30)
    yield s
    s.close()
    if up is not None:
        up.close()
    d.cleanup()


@pytest.fixture(scope="module")
def page(server):
    b = Browser()
    try:
        sign_in(b, server, *ADMIN)
        yield b
    finally:
        b.close()


def sign_in(browser, server, user, password):
    browser.goto(f"{server.http_url}/?interval=300")
    browser.wait("document.body.dataset.signIn === 'open'", "the sign-in form")
    browser.fill("#sign-in-user", user)
    browser.fill("#sign-in-secret", password)
    browser.click("#sign-in-submit")
    browser.wait("document.body.dataset.signIn === 'done'", "the sign-in")
    browser.wait("document.body.dataset.ready !== undefined", "the first page")


def sasl(server, user, password, mechanism, port=None):
    return {"bootstrap.servers": f"127.0.0.1:{port or server.sasl_port}",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


def logs_in(server, user, password, mechanism="SCRAM-SHA-512"):
    """Whether a confluent-kafka client logs in: its metadata request answered (True), or its
    login refused (False, as soon as error_cb reports it)."""
    errors = []
    p = Producer(dict(sasl(server, user, password, mechanism), error_cb=errors.append))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            p.list_topics(timeout=0.5)
            return True
        except KafkaException:
            p.poll(0)  # serves error_cb
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            return False
    raise AssertionError(f"{user}'s login with {mechanism} neither succeeded nor was refused")


def alice_produces(server):
    """Whether alice's record is stored (None) or refused (the error), with confluent-kafka."""
    outcome = []
    p = Producer(dict(sasl(server, "alice", PASSWORDS["alice"], "PLAIN", server.acl_port),
                      **{"acks": "all", "message.timeout.ms": 8000}))
    p.produce(TOPIC, b"from alice", on_delivery=lambda err, msg: outcome.append(err))
    p.flush(15)
    assert len(outcome) == 1
    return outcome[0]


def stored_user(server, name):
    """The credentials stored for `name` (None: none): its line of DATA_DIR/credentials, or in
    upstream mode the latest value of its record in the cluster's _sluice_security (the
    credentials as that file writes them after the name)."""
    if server.upstream_bootstrap is None:
        with open(server.data_dir + "/credentials") as f:
            return next((l for l in f if l.startswith(f"user {name} ")), None)
    c = Consumer({"bootstrap.servers": server.upstream_bootstrap, "group.id": "stored-user",
                  "enable.auto.commit": False})
    try:
        tp = TopicPartition("_sluice_security", 0)
        _, end = c.get_watermark_offsets(tp, timeout=10)
        c.assign([TopicPartition("_sluice_security", 0, 0)])
        latest, offset = None, 0
        deadline = time.monotonic() + 30
        while offset < end and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            offset = m.offset() + 1
            if m.key() == f"user:{name}".encode():
                latest = m.value()
        assert offset >= end, "_sluice_security not read to its end"
        return None if latest is None else latest.decode()
    finally:
        c.close()


def as_user(server, user, password):
    return dict(basic(user, password), **JSON)


# --- /v1/console/users over plain HTTP --------------------------------------------------------

def test_the_users_routes_answer_clear_errors_and_ask_kafkas_acls(server):
    url = server.http_url + "/v1/console/users"
    admin = as_user(server, *ADMIN)

    def error(method, path, status, needle, headers=admin, **kw):
        r = requests.request(method, url + path, headers=headers, timeout=30, **kw)
        assert r.status_code == status, (method, path, r.status_code, r.text)
        body = r.json()
        # The guard's refusals carry the REST Proxy's code (40301), the routes' the status.
        assert body["error_code"] == (40301 if status == 403 else status), body
        assert needle in body["message"], body

    error("POST", "", 400, "not JSON", data="{nope")
    error("POST", "", 400, "name", json={"password": "p"})
    error("POST", "", 400, "name", json={"name": "", "password": "p"})
    error("POST", "", 400, "user name", json={"name": "has space", "password": "p"})
    error("POST", "", 400, "password", json={"name": "dave"})
    error("POST", "", 400, "password", json={"name": "dave", "password": ""})
    error("POST", "", 400, "NUL", json={"name": "dave", "password": "a\u0000b"})
    error("POST", "", 400, "unknown mechanism GSSAPI",
          json={"name": "dave", "password": "p", "mechanisms": ["GSSAPI"]})
    error("POST", "", 400, "mechanisms", json={"name": "dave", "password": "p", "mechanisms": []})
    error("POST", "", 400, "iterations",
          json={"name": "dave", "password": "p", "iterations": 100})
    error("POST", "", 400, "unknown field salt", json={"name": "dave", "password": "p", "salt": 1})
    error("POST", "", 409, "user alice exists", json={"name": "alice", "password": "p"})
    error("POST", "", 415, "Content-Type", headers=basic(*ADMIN), data="{}")
    error("PUT", "/nobody", 404, "no user nobody", json={"password": "p"})
    error("DELETE", "/nobody", 404, "no user nobody", json={})
    # Nobody was made by the refused requests.
    listed = requests.get(url, headers=admin, timeout=30).json()["users"]
    assert [u["name"] for u in listed] == ["admin", "alice"]
    assert listed[0]["mechanisms"] == [{"mechanism": m, "iterations": 4096} for m in
                                       ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")]
    # alice has nothing on the cluster: DESCRIBE to list, ALTER to change, as Kafka asks.
    alice = as_user(server, "alice", PASSWORDS["alice"])
    error("GET", "", 403, "Not authorized to DESCRIBE the cluster", headers=alice)
    error("POST", "", 403, "Not authorized to ALTER the cluster", headers=alice,
          json={"name": "mallory", "password": "mallory-Secret"})
    error("PUT", "/admin", 403, "Not authorized to ALTER the cluster", headers=alice,
          json={"password": "taken-over"})
    error("DELETE", "/admin", 403, "Not authorized to ALTER the cluster", headers=alice, json={})
    assert logs_in(server, *ADMIN)
    # A console session ends when its own user changes, and only then: alice's new password
    # signs her out, admin stays signed in.
    def session(user, password):
        r = requests.post(server.http_url + "/v1/console/session", timeout=30,
                          headers=dict(basic(user, password), **JSON))
        assert r.status_code == 200, r.text
        return {"Authorization": "Bearer " + r.json()["token"]}

    def whoami(headers):
        return requests.get(server.http_url + "/v1/console/session", headers=headers,
                            timeout=30).status_code

    hers, mine = session("alice", PASSWORDS["alice"]), session(*ADMIN)
    r = requests.put(url + "/alice", headers=admin, json={"password": "alice-New-2"}, timeout=30)
    assert r.status_code == 200, r.text
    assert whoami(hers) == 401 and whoami(mine) == 200
    r = requests.put(url + "/alice", headers=admin, json={"password": PASSWORDS["alice"]},
                     timeout=30)
    assert r.status_code == 200 and whoami(mine) == 200
    # A password never reaches the log.
    for secret in ("mallory-Secret", "taken-over", "alice-New-2"):
        assert secret not in server.log_text()


# --- the Users page ---------------------------------------------------------------------------

def test_the_users_page_creates_changes_and_deletes_a_user(server, page):
    show(page, "#/users", "users")
    rows = "Array.from(document.querySelectorAll('#user-rows tr'), tr => tr.dataset.user)"
    page.wait(f"{rows}.includes('alice')", "the users")
    assert page.eval(rows) == ["admin", "alice"]
    check_page(page, "users", actions=["user-create-name", "user-create-password",
                                       "user-create-plain", "user-create-submit",
                                       "user-password-name", "user-password-submit"])
    # What the page refuses before sending.
    page.click("#user-create-submit")
    page.wait("document.getElementById('user-action').dataset.error === 'invalid'",
              "the refusal of an empty form")
    assert "name is required" in page.eval("document.getElementById('user-action').textContent")

    # Create carol with SCRAM only: she logs in with SCRAM-SHA-512 and -256 (and with PLAIN,
    # which sluice checks against a SCRAM credential when a user has no PLAIN verifier, as
    # after AlterUserScramCredentials), and no PLAIN verifier is stored.
    page.fill("#user-create-name", "carol")
    page.fill("#user-create-password", "carol-Secret-5")
    page.click("#user-create-plain")
    page.click("#user-create-submit")
    page.wait("document.getElementById('user-action').dataset.created === 'carol'",
              "carol created")
    assert page.eval("document.getElementById('user-create-password').value") == ""
    row = "document.querySelector('#user-rows tr[data-user=\"carol\"]')"
    page.wait(f"{row} !== null", "carol's row")
    assert page.eval(f"{row}.dataset.mechanisms") == "SCRAM-SHA-256,SCRAM-SHA-512"
    assert logs_in(server, "carol", "carol-Secret-5", "SCRAM-SHA-512")
    assert logs_in(server, "carol", "carol-Secret-5", "SCRAM-SHA-256")
    assert logs_in(server, "carol", "carol-Secret-5", "PLAIN")
    assert not logs_in(server, "carol", "wrong-password", "SCRAM-SHA-512")
    assert not logs_in(server, "carol", "wrong-password", "PLAIN")
    # Stored salted (the data dir's users file, or upstream the fleet's _sluice_security),
    # never as typed.
    line = stored_user(server, "carol")
    assert line is not None
    assert "scram-sha-256=4096:" in line and "scram-sha-512=4096:" in line
    assert "plain=" not in line and "carol-Secret-5" not in line
    # Creating her again: the server's refusal, shown.
    page.fill("#user-create-name", "carol")
    page.fill("#user-create-password", "again")
    page.click("#user-create-submit")
    page.wait("document.getElementById('user-action').dataset.error === '409'", "the conflict")
    assert "carol exists" in page.eval("document.getElementById('user-action').textContent")

    # A new password: the old one no longer logs in.
    page.call("user", cmd="select", selector="#user-password-name", value="carol")
    page.fill("#user-password-new", "carol-Secret-6")
    page.click("#user-password-submit")
    page.wait("document.getElementById('user-action').dataset.changed === 'carol'",
              "the password changed")
    assert logs_in(server, "carol", "carol-Secret-6")
    assert not logs_in(server, "carol", "carol-Secret-5")

    # Delete, after the confirmation: she can no longer log in.
    page.click("button[data-delete-user='carol']")
    screenshot(page, "users-confirm-delete")
    confirm(page)
    page.wait("document.getElementById('user-action').dataset.deleted === 'carol'",
              "carol deleted")
    page.wait(f"{row} === null", "carol's row gone")
    assert not logs_in(server, "carol", "carol-Secret-6")
    assert stored_user(server, "carol") is None
    assert "carol-Secret" not in server.log_text()


# --- the ACLs page ----------------------------------------------------------------------------

def test_the_acls_page_filters_creates_and_deletes_an_acl(server, page):
    assert alice_produces(server) is not None  # nothing lets her write yet
    show(page, "#/acls", "acls")
    rows = "document.querySelectorAll('#acl-rows tr')"
    page.wait(f"{rows}.length >= 2", "the ACLs set before the start")
    # The page says whose ACLs these are: over a gateway the cluster's, not the fleet's that
    # the gateway enforces (sluice acls --upstream).
    mode = page.wait("document.getElementById('acl-scope').dataset.mode", "the ACLs' scope")
    scope = page.eval("document.getElementById('acl-scope').textContent")
    if upstream_rerun_mode():
        assert mode == "upstream" and "cluster's ACLs" in scope, scope
        assert "sluice acls --upstream" in scope, scope
    else:
        assert mode == "native" and scope == "The cluster's ACLs (REST v3 …/acls).", scope
    # On the page first: a principal without its type is refused before anything is sent.
    page.call("type", cmd="select", selector="#acl-create-type", value="TOPIC")
    page.fill("#acl-create-name", TOPIC)
    page.fill("#acl-create-principal", "alice")
    page.call("op", cmd="select", selector="#acl-create-operation", value="WRITE")
    page.click("#acl-create-submit")
    page.wait("document.getElementById('acl-action').dataset.error === 'invalid'",
              "the page's refusal")
    assert "TYPE:NAME" in page.eval("document.getElementById('acl-action').textContent")
    page.fill("#acl-create-principal", "User:alice")
    page.click("#acl-create-submit")
    page.wait("document.getElementById('acl-action').dataset.created !== undefined",
              "the ACL created")
    alice = "document.querySelector('#acl-rows tr[data-principal=\"User:alice\"]')"
    page.wait(f"{alice} !== null && {alice}.dataset.operation === 'WRITE'", "alice's ACL")
    # Its effect, with a Kafka client: alice's record is stored now.
    assert alice_produces(server) is None

    # Filters: by principal, then an operation she has no ACL for.
    page.fill("#acl-filter-principal", "User:alice")
    page.click("#acl-filter-submit")
    page.wait("window.sluiceConsole.last.acls.length === 1", "the principal's ACLs")
    assert page.eval("window.sluiceConsole.last.acls[0].resource_name") == TOPIC
    page.call("op", cmd="select", selector="#acl-filter-operation", value="READ")
    page.click("#acl-filter-submit")
    page.wait("document.getElementById('acl-count').textContent === '0'", "no READ ACL")
    page.call("op", cmd="select", selector="#acl-filter-operation", value="ANY")
    page.call("type", cmd="select", selector="#acl-filter-type", value="CLUSTER")
    page.fill("#acl-filter-principal", "")
    page.click("#acl-filter-submit")
    page.wait("window.sluiceConsole.last.acls.length === 2 && window.sluiceConsole.last.acls"
              ".every(a => a.resource_type === 'CLUSTER')", "the cluster's ACLs")
    page.call("type", cmd="select", selector="#acl-filter-type", value="ANY")
    page.click("#acl-filter-submit")
    page.wait(f"{alice} !== null", "every ACL again")
    check_page(page, "acls", actions=["acl-filter-type", "acl-filter-principal",
                                      "acl-filter-submit", "acl-create-type",
                                      "acl-create-principal", "acl-create-submit"])

    # Delete it, after the confirmation: alice is refused again.
    page.click("button[data-delete-acl='User:alice WRITE guarded']")
    screenshot(page, "acls-confirm-delete")
    confirm(page)
    page.wait("document.getElementById('acl-action').dataset.deleted === "
              "'User:alice WRITE guarded'", "the ACL deleted")
    page.wait(f"{alice} === null", "alice's row gone")
    assert alice_produces(server) is not None
    # The cluster's ACLs are left as they were.
    left = requests.get(server.http_url + "/v3/clusters", headers=basic(*ADMIN), timeout=30)
    cluster = left.json()["data"][0]["cluster_id"]
    acls = requests.get(f"{server.http_url}/v3/clusters/{cluster}/acls", headers=basic(*ADMIN),
                        timeout=30).json()["data"]
    assert sorted(a["principal"] for a in acls) == ["User:ANONYMOUS", "User:admin"]
    assert page_errors(page) == []


# --- a user without rights ----------------------------------------------------------------------

def test_the_acls_page_lists_the_gateways_own_acls_over_a_gateway(server, page):
    """Upstream mode: the ACLs the gateway enforces (the fleet's in _sluice_security, over its
    data dir's) are listed under the cluster's, read-only; native mode has one set."""
    r = requests.get(f"{server.http_url}/v1/console/gateway-acls", headers=basic(*ADMIN),
                     timeout=30)
    show(page, "#/acls", "acls")
    page.wait("document.getElementById('acl-scope').dataset.mode", "the ACLs' scope")
    if not upstream_rerun_mode():
        assert r.status_code == 404, r.text
        assert page.eval("document.getElementById('gateway-acls').hidden") is True
        return
    assert r.status_code == 200, r.text
    admin_all = {"resource_type": "CLUSTER", "resource_name": "kafka-cluster",
                 "pattern_type": "LITERAL", "principal": "User:admin", "host": "*",
                 "operation": "ALL", "permission": "ALLOW"}
    assert admin_all in r.json()["data"], r.text
    # One more for the fleet, through _sluice_security: listed once the gateway has read it,
    # and not among the cluster's.
    done = subprocess.run([sluice_binary(), "acls", "add", "--allow-principal",
                           "User:fleet-reader", "--operation", "Read", "--topic", TOPIC,
                           "--upstream", server.bootstrap],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    page.wait("document.querySelector('#gateway-acl-rows tr[data-principal=\"User:fleet-reader\"]')"
              " !== null", "the fleet's ACL on the page")
    assert page.eval("document.getElementById('gateway-acls').hidden") is False
    assert all(a["principal"] != "User:fleet-reader"
               for a in page.eval("window.sluiceConsole.last.acls"))
    screenshot(page, "acls-gateway")


def alice_describes(http_url):
    """alice's GET of the topic over REST v3 at a gateway: its status (403 until an ACL of the
    gateway's lets her DESCRIBE it)."""
    r = requests.get(f"{http_url}/v3/clusters", headers=basic(*ADMIN), timeout=30)
    assert r.status_code == 200, r.text
    cluster = r.json()["data"][0]["cluster_id"]
    return requests.get(f"{http_url}/v3/clusters/{cluster}/topics/{TOPIC}",
                        headers=basic("alice", PASSWORDS["alice"]), timeout=30).status_code


def wait_status(http_url, status, what, timeout=15):
    """Waits (bounded) until alice_describes answers `status` at a gateway that learns the
    change from _sluice_security."""
    deadline = time.monotonic() + timeout
    got = alice_describes(http_url)
    while got != status and time.monotonic() < deadline:
        time.sleep(0.1)
        got = alice_describes(http_url)
    assert got == status, f"{what}: alice's describe answered {got}, not {status}"


def test_the_gateways_own_acls_are_changed_from_the_console_for_the_fleet(server, page):
    """Upstream mode: POST and DELETE /v1/console/gateway-acls change the ACLs the gateway
    enforces through _sluice_security: in force at once on this gateway, on a second gateway
    of the same cluster once its mirror reads the record; ALTER on the cluster is asked; bad
    input is 400. Native mode has no such routes."""
    url = server.http_url + "/v1/console/gateway-acls"
    admin = as_user(server, *ADMIN)
    alice_binding = {"resource_type": "TOPIC", "resource_name": TOPIC,
                     "pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
                     "operation": "DESCRIBE", "permission": "ALLOW"}
    if not upstream_rerun_mode():
        r = requests.post(url, headers=admin, json=alice_binding, timeout=30)
        assert r.status_code in (404, 405), r.text
        return

    # Bad input: the REST Proxy's error shape, nothing stored.
    def refused(method, status, code, needle, headers=admin, query="", **kw):
        r = requests.request(method, url + query, headers=headers, timeout=30, **kw)
        assert r.status_code == status, (method, query, r.status_code, r.text)
        body = r.json()
        assert body["error_code"] == code and needle in body["message"], body

    refused("POST", 400, 400, "Malformed JSON", data="{")
    refused("POST", 400, 400, "resource_type", json=dict(alice_binding, resource_type="TABLE"))
    refused("POST", 400, 40002, "pattern", json=dict(alice_binding, pattern_type="MATCH"))
    missing = {k: v for k, v in alice_binding.items() if k != "principal"}
    refused("POST", 400, 400, "principal is required", json=missing)
    refused("POST", 400, 40002, "principal", json=dict(alice_binding, principal="alice"))
    refused("DELETE", 400, 400, "operation is required",
            query="?resource_type=TOPIC&pattern_type=LITERAL&permission=ALLOW")
    # A form from another page (no JSON content type) never reaches the route.
    r = requests.post(url, headers=basic(*ADMIN), data="resource_type=TOPIC", timeout=30)
    assert r.status_code == 415, r.text
    # alice has no ALTER on the cluster: refused on both routes.
    alice = as_user(server, "alice", PASSWORDS["alice"])
    refused("POST", 403, 40301, "", headers=alice, json=alice_binding)
    refused("DELETE", 403, 40301, "", headers=alice, json={},
            query="?resource_type=ANY&pattern_type=ANY&operation=ANY&permission=ANY")
    assert all(a["principal"] != "User:alice"
               for a in requests.get(url, headers=admin, timeout=30).json()["data"])

    # A second gateway of the fleet (the same cluster), whose mirror reads the change.
    second = Gateway(server.bootstrap, {"http.authentication": "basic",
                                        "authorizer.enabled": "true"})
    security(second.data_dir)
    try:
        second.start()
        assert alice_describes(server.http_url) == 403
        wait_status(second.http_url, 403, "the second gateway before the ACL")

        # Created on the page: in force here when the page says so, there soon after.
        show(page, "#/acls", "acls")
        page.wait("document.getElementById('gateway-acls').hidden === false",
                  "the gateway's ACLs section")
        page.call("type", cmd="select", selector="#gateway-acl-create-type", value="TOPIC")
        page.fill("#gateway-acl-create-name", TOPIC)
        page.fill("#gateway-acl-create-principal", "User:alice")
        page.call("op", cmd="select", selector="#gateway-acl-create-operation",
                  value="DESCRIBE")
        page.click("#gateway-acl-create-submit")
        page.wait("document.getElementById('gateway-acl-action').dataset.created !== undefined",
                  "the gateway's ACL created")
        row = "document.querySelector('#gateway-acl-rows tr[data-principal=\"User:alice\"]')"
        page.wait(f"{row} !== null && {row}.dataset.operation === 'DESCRIBE'", "alice's row")
        assert alice_describes(server.http_url) == 200
        wait_status(second.http_url, 200, "the second gateway after the ACL")
        # Not the cluster's.
        assert all(a["principal"] != "User:alice"
                   for a in page.eval("window.sluiceConsole.last.acls"))

        # Deleted after the confirmation: refused again on both.
        page.click("#gateway-acl-rows button[data-delete-acl='User:alice DESCRIBE guarded']")
        confirm(page)
        page.wait("document.getElementById('gateway-acl-action').dataset.deleted === "
                  "'User:alice DESCRIBE guarded'", "the gateway's ACL deleted")
        page.wait(f"{row} === null", "alice's row gone")
        assert alice_describes(server.http_url) == 403
        wait_status(second.http_url, 403, "the second gateway after the delete")
        # A filter that matches nothing deletes nothing.
        r = requests.delete(url + "?resource_type=TOPIC&pattern_type=LITERAL&operation=ANY"
                            "&permission=ANY&principal=User:alice", headers=admin, json={},
                            timeout=30)
        assert r.status_code == 200 and r.json() == {"data": []}, r.text
        assert page_errors(page) == []
    finally:
        second.close()
    assert "gateway ACLs not" not in server.log_text()


def test_a_gateway_acl_change_the_cluster_cannot_store_is_a_clear_503():
    """Upstream mode: with the cluster gone, POST /v1/console/gateway-acls answers 503 (50302)
    within upstream.request.timeout.ms, naming why, and the gateway's ACLs are unchanged."""
    if not upstream_rerun_mode():
        return
    up = Sluice(rerun=False)
    up.http = False
    up.start()
    gw = Gateway(up.bootstrap, {"authorizer.enabled": "true", "super.users": "User:ANONYMOUS",
                                "upstream.request.timeout.ms": "2000"})
    try:
        gw.start()
        url = gw.http_url + "/v1/console/gateway-acls"
        acl = {"resource_type": "GROUP", "resource_name": "g", "pattern_type": "PREFIXED",
               "principal": "User:carol", "host": "*", "operation": "READ",
               "permission": "ALLOW"}
        r = requests.post(url, headers=JSON, json=acl, timeout=30)
        assert r.status_code == 201, r.text
        up.stop()
        r = requests.post(url, headers=JSON, json=dict(acl, principal="User:dave"), timeout=30)
        assert r.status_code == 503, r.text
        assert r.json()["error_code"] == 50302, r.text
        assert "not changed" in r.json()["message"], r.text
        listed = requests.get(url, timeout=30).json()["data"]
        assert [a["principal"] for a in listed] == ["User:carol"], listed
        assert "gateway ACLs not added by User:ANONYMOUS" in gw.log_text()
    finally:
        gw.close()
        up.close()


def test_a_user_without_rights_is_told_why_on_both_pages(server):
    page = Browser()
    try:
        refusals_shown(server, page)
    finally:
        page.close()


def refusals_shown(server, page):
    sign_in(page, server, "alice", PASSWORDS["alice"])
    assert page.eval("document.body.dataset.principal") == "User:alice"
    for hash_, name, needle in (("#/acls", "acls", "DESCRIBE the cluster"),
                                ("#/users", "users", "DESCRIBE the cluster")):
        show(page, hash_, name)
        message = page.wait("document.querySelector('#view p.error') &&"
                            " document.querySelector('#view p.error').textContent",
                            f"the refusal on the {name} page")
        assert "not allowed" in message and needle in message and "(403)" in message, message
        screenshot(page, name + "-refused")
    page.fill("#user-create-name", "mallory")
    page.fill("#user-create-password", "mallory-Secret-1")
    page.click("#user-create-submit")
    page.wait("document.getElementById('user-action').dataset.error === '403'",
              "the refusal of the create")
    text = page.eval("document.getElementById('user-action').textContent")
    assert "not created: not allowed: Not authorized to ALTER the cluster." in text, text
    show(page, "#/acls", "acls")
    page.fill("#acl-create-name", TOPIC)
    page.fill("#acl-create-principal", "User:alice")
    page.click("#acl-create-submit")
    page.wait("document.getElementById('acl-action').dataset.error === '403'",
              "the refusal of the ACL")
    assert "ALTER the cluster" in page.eval("document.getElementById('acl-action').textContent")
    assert not logs_in(server, "mallory", "mallory-Secret-1", "PLAIN")
    assert alice_produces(server) is not None


# --- the version ------------------------------------------------------------------------------

def test_the_version_is_the_projects_with_its_commit(server):
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "CMakeLists.txt")
    with open(top) as f:
        project = re.search(r"project\(sluice VERSION (\S+)", f.read()).group(1)
    printed = subprocess.run([sluice_binary(), "--version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    assert re.fullmatch(r"sluice " + re.escape(project) + r"( \(commit [0-9a-f]{7,40}\))?",
                        printed), printed
    overview = requests.get(server.http_url + "/v1/console/overview", headers=basic(*ADMIN),
                            timeout=30).json()
    assert "sluice " + overview["version"] == printed
