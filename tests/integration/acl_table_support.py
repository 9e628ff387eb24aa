"""Support for test_acl_table.py: one sluice with every front behind authentication (SASL
SCRAM-SHA-256 on a SASL_PLAINTEXT Kafka listener, HTTP Basic, SQS SigV4) and the authorizer on,
users with a password and an AWS key each, ACLs written from grant strings with `sluice acls add`
before it starts, a client per user and front, and each front's denial form turned into one
exception (Denied) so that a test can compare fronts."""
import base64
import json
import subprocess
import tempfile

import boto3
import botocore.auth
import requests
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from harness import Sluice, sluice_binary, upstream_rerun_mode
from sasl_support import users
from ws_support import WsClient

REGION = "us-east-1"
ACCOUNT = "000000000000"
# Every HTTP request and WebSocket upgrade claims to come from here: the host of an ACL is the
# connection's peer address on every front, never a header the client wrote (a host-bound row
# names this address).
FORWARDED_FOR = "10.9.9.9"


class Denied(Exception):
    """A front refused in its own form; `texts` holds what it said (Kafka: the error's name),
    one entry per request of the action."""

    def __init__(self, texts):
        super().__init__(" | ".join(texts))
        self.texts = list(texts)


# --- users and grants -----------------------------------------------------------------------------
def password(user):
    return f"{user}-Secret-25"


def aws_key(user):
    """(access key id, secret): AKIA + the user's name, 20 characters."""
    return f"AKIA{user.upper():0<16}"[:20], f"{user}/Secret+Key0123456789abcdefghijklmno"


def grant_flags(principal, grant):
    """`sluice acls add` flags of one grant string "[User:* ]allow|deny OPERATION TYPE[:NAME]
    [from HOST]" given to `principal` (a user name) unless it names User:*. NAME ending in `*`
    (other than `*` itself) is a PREFIXED pattern of what precedes the `*`; `*` alone is the
    LITERAL wildcard; the cluster has no NAME; the host is `*` unless given."""
    if grant.startswith("User:* "):
        principal, grant = "User:*", grant[len("User:* "):]
    else:
        principal = "User:" + principal
    grant, _, host = grant.partition(" from ")
    permission, operation, resource = grant.split()
    flags = [f"--{permission}-principal", principal, f"--{permission}-host", host or "*",
             "--operation", operation]
    kind, _, name = resource.partition(":")
    if kind == "cluster":
        return flags + ["--cluster"]
    if name.endswith("*") and name != "*":
        return flags + [f"--{kind}", name[:-1], "--resource-pattern-type", "prefixed"]
    return flags + [f"--{kind}", name, "--resource-pattern-type", "literal"]


def configure_data_dir(path, user_names, grants):
    """Writes `user_names` (password and AWS key each) and the ACLs of `grants` into a data dir."""
    for user in user_names:
        r = users("set", user, "--data-dir", path, stdin=password(user) + "\n")
        assert r.returncode == 0, r.stderr
        key_id, secret = aws_key(user)
        r = users("set", user, "--data-dir", path, "--aws-access-key-id", key_id,
                  stdin=secret + "\n")
        assert r.returncode == 0, r.stderr
    done = []
    for user, grant in grants:
        flags = grant_flags(user, grant)
        if flags in done:
            continue
        done.append(flags)
        r = subprocess.run([sluice_binary(), "acls", "add", "--data-dir", path, *flags],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, (flags, r.stderr)


def start_server(user_names, grants, super_user):
    """A started sluice (SQS listener on, a SASL_PLAINTEXT Kafka listener as `sasl_port`) whose
    data dir has `user_names` (password and AWS key each) and the ACLs of `grants`, a list of
    (user, grant string). Returns (server, its temporary directory). In upstream rerun mode
    (harness.py) the server is a GatewayPair."""
    d = tempfile.TemporaryDirectory(prefix="sluice-acl-table-")
    configure_data_dir(d.name, user_names, grants)
    settings = {"authorizer.enabled": "true", "super.users": "User:" + super_user,
                "http.authentication": "basic", "sqs.authentication": "sigv4"}
    if upstream_rerun_mode():
        return GatewayPair(d, user_names, grants, settings, super_user), d
    s = Sluice(data_dir=d.name, sqs=True, args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
               settings=settings)
    try:
        s.start()
        s.sasl_port = sasl_port_of(s)
    except BaseException:
        s.close()
        d.cleanup()
        raise
    return s, d


def sasl_port_of(s):
    line = s._find_line("listening:")
    return int(line.split("kafka_sasl_plaintext=")[1].split()[0].rsplit(":", 1)[1])


class GatewayPair:
    """Upstream mode: a native sluice on `d` (the SQS front: `sqs_url`) and a gateway in front
    of it (the HTTP fronts: `http_port`, `http_url`; the Kafka proxy on a SASL_PLAINTEXT
    listener: `sasl_port`) with the same users and ACLs in a data dir of its own (they stay
    local in upstream mode until issue 28), which reaches the upstream over SASL/SCRAM as the
    super user (the authorization is the gateway's, on every front)."""

    def __init__(self, d, user_names, grants, settings, super_user):
        from upstream_support import Gateway
        self.upstream = Sluice(data_dir=d.name, sqs=True,
                               args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"],
                               settings=settings, rerun=False)
        self.upstream.http = False
        self.gateway = None
        try:
            self.upstream.start()
            self.sasl_port = sasl_port_of(self.upstream)
            self.sqs_port = self.upstream.sqs_port
            props = {"upstream.security.protocol": "SASL_PLAINTEXT",
                     "upstream.sasl.mechanism": "SCRAM-SHA-512",
                     "upstream.sasl.username": super_user,
                     "upstream.sasl.password": password(super_user)}
            self.gateway = Gateway(f"127.0.0.1:{self.sasl_port}", {**settings, **props},
                                   args=["--kafka", "SASL_PLAINTEXT://127.0.0.1:0"])
            configure_data_dir(self.gateway.data_dir, user_names, grants)
            self.gateway.start()
            # Kafka clients log in at the gateway's proxy, which forwards to the upstream.
            self.sasl_port = sasl_port_of(self.gateway)
            self.gateway.wait_log(" served on 127.0.0.1:", timeout=30)
            self.http_port = self.gateway.http_port
        except BaseException:
            self.close()
            raise

    @property
    def http_url(self):
        return self.gateway.http_url

    @property
    def sqs_url(self):
        return self.upstream.sqs_url

    def close(self):
        try:
            if self.gateway is not None:
                self.gateway.close()
        finally:
            self.upstream.close()


# --- clients --------------------------------------------------------------------------------------
def basic(user):
    return "Basic " + base64.b64encode(f"{user}:{password(user)}".encode()).decode()


class RestSession:
    """A keep-alive requests session of one user against the HTTP listener; 20 s per request."""

    def __init__(self, base, session):
        self.base, self.s = base, session

    def get(self, path, **kw):
        return self.s.get(self.base + path, timeout=20, **kw)

    def post(self, path, data=b"", **kw):
        return self.s.post(self.base + path, data=data, timeout=20, **kw)

    def put(self, path, data=b"", **kw):
        return self.s.put(self.base + path, data=data, timeout=20, **kw)

    def delete(self, path, **kw):
        return self.s.delete(self.base + path, timeout=20, **kw)


class Fronts:
    """One sluice's fronts, with a client per user where a client can be kept (a producer and an
    admin client per user: one SCRAM login each, not one per test)."""

    def __init__(self, server):
        self.server = server
        self._sessions = {}
        self._sqs = {}
        self._producers = {}
        self._admins = {}
        self._cluster_id = None

    def close(self):
        """Drops the kept Kafka clients (each a librdkafka instance that would otherwise keep
        reconnecting to the stopped server) and the HTTP sessions."""
        for p in self._producers.values():
            p.flush(5)
        self._producers.clear()
        self._admins.clear()
        for s in self._sessions.values():
            s.close()
        self._sessions.clear()

    def kafka_config(self, user, **extra):
        cfg = {"bootstrap.servers": f"127.0.0.1:{self.server.sasl_port}",
               "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
               "sasl.username": user, "sasl.password": password(user)}
        cfg.update(extra)
        return cfg

    def producer(self, user):
        if user not in self._producers:
            self._producers[user] = Producer(self.kafka_config(
                user, **{"message.timeout.ms": 10000, "linger.ms": 0}))
        return self._producers[user]

    def admin(self, user):
        if user not in self._admins:
            self._admins[user] = AdminClient(self.kafka_config(user))
        return self._admins[user]

    def rest(self, user):
        if user not in self._sessions:
            s = requests.Session()
            s.headers["Authorization"] = basic(user)
            s.headers["X-Forwarded-For"] = FORWARDED_FOR
            self._sessions[user] = s
        return RestSession(self.server.http_url, self._sessions[user])

    def ws(self, user):
        return WsClient(self.server.http_port, timeout=20,
                        headers=[f"Authorization: {basic(user)}",
                                 f"X-Forwarded-For: {FORWARDED_FOR}"])

    def sqs(self, user):
        """Debian's boto3: the Query protocol."""
        if user not in self._sqs:
            key_id, secret = aws_key(user)
            self._sqs[user] = boto3.client(
                "sqs", endpoint_url=self.server.sqs_url, region_name=REGION,
                aws_access_key_id=key_id, aws_secret_access_key=secret,
                config=Config(retries={"max_attempts": 1}, read_timeout=20, connect_timeout=10))
        return self._sqs[user]

    def sqs_json(self, user, action, params):
        """An AWS JSON 1.0 request as the newer SDKs send it, signed by botocore's SigV4Auth."""
        req = AWSRequest(method="POST", url=self.server.sqs_url + "/", data=json.dumps(params),
                         headers={"Content-Type": "application/x-amz-json-1.0",
                                  "X-Amz-Target": "AmazonSQS." + action})
        botocore.auth.SigV4Auth(Credentials(*aws_key(user)), "sqs", REGION).add_auth(req)
        p = req.prepare()
        return requests.request(p.method, p.url, headers=dict(p.headers), data=p.body,
                                timeout=20)

    def queue_url(self, name):
        return f"{self.server.sqs_url}/{ACCOUNT}/{name}"

    def cluster_id(self):
        if self._cluster_id is None:
            r = self.rest("root").get("/v3/clusters")
            self._cluster_id = r.json()["data"][0]["cluster_id"]
        return self._cluster_id


# --- each front's answer --------------------------------------------------------------------------
def http_outcome(r, ok=(200,)):
    """REST, SSE and console: 403 with error_code 40301 is a denial; `ok` statuses pass."""
    if r.status_code == 403:
        body = r.json()
        assert body["error_code"] == 40301, r.text
        raise Denied([body["message"]])
    assert r.status_code in ok, (r.status_code, r.text)


def sqs_query_outcome(call, ok_codes=()):
    """boto3 (Query): AccessDenied is a denial; the error codes in `ok_codes` are the handler's
    answers past the ACL."""
    try:
        call()
    except ClientError as e:
        code = e.response["Error"]["Code"]
        if code == "AccessDenied":
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400, e.response
            raise Denied([e.response["Error"]["Message"]]) from None
        assert code in ok_codes, (code, e.response["Error"]["Message"])


def sqs_json_outcome(r, ok_codes=()):
    """AWS JSON 1.0: __type ...#AccessDeniedException (status 400, x-amzn-query-error
    AccessDenied;Sender) is a denial; `ok_codes` as for the Query protocol."""
    if r.status_code == 200:
        return
    body = r.json()
    kind = body["__type"].split("#")[-1]
    if kind == "AccessDeniedException":
        assert r.status_code == 400, r.text
        assert r.headers["x-amzn-query-error"] == "AccessDenied;Sender", r.headers
        raise Denied([body["message"]])
    assert kind in ok_codes or kind.removesuffix("Exception") in ok_codes, r.text


def ws_outcome(ctx, user, message, ok_op):
    """Sends one op on a new session: an error frame with code 40301 and the op's id is a
    denial; `ok_op` with that id is the answer of an allowed op."""
    with ctx.ws(user) as c:
        c.send(message)
        while True:
            m = c.recv()
            if m.get("id") != message["id"]:
                continue  # records of an allowed subscription, ...
            if m["op"] == "error":
                assert m["code"] == 40301, m
                raise Denied([m["message"]])
            assert m["op"] == ok_op, m
            return


def kafka_error(e):
    """The KafkaError of a KafkaException (or the error itself)."""
    return e.args[0] if isinstance(e, KafkaException) else e


def kafka_denial(err, code):
    """Raises Denied when `err` (a KafkaError or None) is `code`; fails on any other error."""
    if err is None:
        return
    assert err.code() == code, err
    raise Denied([err.name()])


def same_answer(*calls):
    """Runs each call (several requests of one front's action, e.g. two routes): all must pass
    or all must be denied; a denial carries every text."""
    texts = []
    for call in calls:
        try:
            call()
            texts.append(None)
        except Denied as d:
            texts.append(d.texts[0])
    denied = [t for t in texts if t is not None]
    assert not denied or len(denied) == len(texts), f"requests of one action disagree: {texts}"
    if denied:
        raise Denied(denied)

