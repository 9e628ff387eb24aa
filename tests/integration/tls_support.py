"""TLS test support: certificates made with the openssl command line in a temporary directory
(a CA, server certificates for 127.0.0.1/localhost, a client certificate, and an unrelated CA),
a sluice with SSL and SASL_SSL listeners, and raw Kafka requests over Python's ssl module."""
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess

from harness import Sluice, kafka_request, read_frame


def _openssl(*args, cwd):
    r = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


class Pki:
    """Files in `d`: ca.pem/ca.key; server1.pem/.key (serial 0x1001) and server2.pem/.key
    (serial 0x1002), both for 127.0.0.1 and localhost; client.pem/.key (CN=Client-Alice,
    O=sluice); other-ca.pem and other-server.pem/.key (a CA the clients do not trust); and
    server.pem/server.key, the live copies a sluice is started with. `names`: more DNS names
    the server certificates carry (e.g. "*.kafka.test")."""

    def __init__(self, d, names=()):
        self.dir = str(d)
        ext = os.path.join(self.dir, "san.ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost" +
                    "".join(f",DNS:{n}" for n in names) + "\n")
        for ca in ("ca", "other-ca"):
            _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                     f"/CN=sluice-test-{ca}", "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
                     cwd=self.dir)
        for name, ca, serial, subject in (("server1", "ca", "0x1001", "/CN=localhost"),
                                          ("server2", "ca", "0x1002", "/CN=localhost"),
                                          ("other-server", "other-ca", "0x2001", "/CN=localhost"),
                                          ("client", "ca", "0x3001", "/O=sluice/CN=Client-Alice")):
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout",
                     f"{name}.key", "-out", f"{name}.csr", cwd=self.dir)
            args = ["x509", "-req", "-days", "2", "-in", f"{name}.csr", "-CA", f"{ca}.pem",
                    "-CAkey", f"{ca}.key", "-set_serial", serial, "-out", f"{name}.pem"]
            if name != "client":
                args += ["-extfile", "san.ext"]
            _openssl(*args, cwd=self.dir)
        self.use_server(1)

    def path(self, name):
        return os.path.join(self.dir, name)

    def use_server(self, n, key_from=None):
        """Copies server<n> over the live server.pem/server.key (the key from `key_from`)."""
        shutil.copyfile(self.path(f"server{n}.pem"), self.path("server.pem"))
        shutil.copyfile(self.path(key_from or f"server{n}.key"), self.path("server.key"))

    def settings(self, **extra):
        s = {"ssl.certificate.location": self.path("server.pem"),
             "ssl.key.location": self.path("server.key"),
             "ssl.ca.location": self.path("ca.pem")}
        s.update(extra)
        return s


class TlsSluice:
    """A sluice with a plaintext, an SSL and a SASL_SSL listener on the PKI's certificate."""

    def __init__(self, pki, data_dir=None, settings=None):
        self.server = Sluice(data_dir=data_dir, settings=pki.settings(**(settings or {})),
                             args=["--kafka", "SSL://127.0.0.1:0",
                                   "--kafka", "SASL_SSL://127.0.0.1:0"])
        self.ssl_port = None
        self.sasl_ssl_port = None

    def start(self):
        self.server.start()
        line = self.server._find_line("listening:")
        self.ssl_port = int(re.search(r"kafka_ssl=[^ ]*:(\d+)", line).group(1))
        self.sasl_ssl_port = int(re.search(r"kafka_sasl_ssl=[^ ]*:(\d+)", line).group(1))
        return self

    def close(self):
        self.server.close()

    @property
    def ssl_bootstrap(self):
        return f"127.0.0.1:{self.ssl_port}"

    @property
    def sasl_ssl_bootstrap(self):
        return f"127.0.0.1:{self.sasl_ssl_port}"


def client_context(pki, ca="ca.pem", cert=None, key=None):
    ctx = ssl.create_default_context(cafile=pki.path(ca))
    if cert:
        ctx.load_cert_chain(pki.path(cert), pki.path(key))
    return ctx


def tls_connect(port, ctx, timeout=10):
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        return ctx.wrap_socket(raw, server_hostname="localhost")
    except BaseException:
        raw.close()
        raise


def api_versions_ok(sock, correlation_id=7):
    """Sends ApiVersions v0 and checks the answer: error 0 and the correlation id echoed."""
    sock.sendall(kafka_request(18, 0, correlation_id))
    body = read_frame(sock)
    cid, error = struct.unpack(">ih", body[:6])
    return cid == correlation_id and error == 0


def peer_serial(sock):
    return sock.getpeercert()["serialNumber"]


def tls_closed(sock, timeout=10):
    """True when the server ends the TLS connection (EOF, an alert, a reset) within `timeout`
    seconds; False when it stays open and silent."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except socket.timeout:
        return False
    except (ssl.SSLError, ConnectionError):
        return True
