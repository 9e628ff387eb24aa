"""The browser files served by the real binary at /ui/: every file of gateway/http/ui/ byte for
byte with its content type, ETag and Cache-Control, 304 on a matching If-None-Match, HEAD,
the /ui redirect, 404 for unknown files, 405 for other methods."""
import json
import os

from harness import ROOT, connect
from test_http_basics import Reader, request

UI_DIR = os.path.join(ROOT, "gateway", "http", "ui")

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}


def ui_files():
    out = []
    for folder, _, names in os.walk(UI_DIR):
        for name in names:
            # The folders' READMEs describe the source and are not embedded (gateway/CMakeLists.txt).
            if name.startswith(".") or name.endswith("~") or name == "README.md":
                continue
            full = os.path.join(folder, name)
            out.append(os.path.relpath(full, UI_DIR).replace(os.sep, "/"))
    return sorted(out)


def get(port, target, headers=(), method="GET"):
    with connect(port) as s:
        s.sendall(request(method, target, headers=list(headers)))
        return Reader(s).response(head=(method == "HEAD"))


def test_every_ui_file_is_served_exactly_with_its_type_and_caching_headers(broker):
    files = ui_files()
    assert {"index.html", "app.js", "style.css", "sluice.js", "sluice.mjs", "events.html",
            "events.js"} <= set(files)
    etags = set()
    with connect(broker.http_port) as s:
        r = Reader(s)
        for name in files:  # one keep-alive connection for all of them
            s.sendall(request("GET", "/ui/" + name))
            status, headers, body = r.response()
            assert status == 200, name
            with open(os.path.join(UI_DIR, name), "rb") as f:
                assert body == f.read(), name
            assert headers["content-type"] == TYPES[os.path.splitext(name)[1]], name
            assert headers["cache-control"] == "no-cache", name
            assert headers["x-content-type-options"] == "nosniff", name
            etag = headers["etag"]
            assert etag.startswith('"') and etag.endswith('"') and len(etag) == 18, etag
            etags.add(etag)
    assert len(etags) == len(files)  # a digest of each file's bytes


def test_the_folder_serves_the_index_and_bare_ui_redirects_to_it(broker):
    status, headers, body = get(broker.http_port, "/ui/")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    with open(os.path.join(UI_DIR, "index.html"), "rb") as f:
        assert body == f.read()
    assert b'<script src="sluice.js">' in body

    status, headers, _ = get(broker.http_port, "/ui")
    assert status == 308
    assert headers["location"] == "/ui/"
    status, headers, _ = get(broker.http_port, "/ui?topic=orders&group=g1")
    assert status == 308
    assert headers["location"] == "/ui/?topic=orders&group=g1"


def test_a_matching_if_none_match_is_304_without_a_body(broker):
    _, headers, _ = get(broker.http_port, "/ui/sluice.js")
    etag = headers["etag"]
    with connect(broker.http_port) as s:
        r = Reader(s)
        for inm in [etag, "W/" + etag, '"nope", ' + etag, "*"]:
            s.sendall(request("GET", "/ui/sluice.js", headers=["If-None-Match: " + inm]))
            status, h, body = r.response()
            assert status == 304, inm
            assert body == b""
            assert h["etag"] == etag
            assert h["cache-control"] == "no-cache"
            assert "content-length" not in h and "transfer-encoding" not in h
        # The connection goes on after the 304s: the next answer parses from its first byte.
        s.sendall(request("GET", "/ui/sluice.js", headers=['If-None-Match: "other"']))
        status, h, body = r.response()
        assert status == 200 and h["etag"] == etag and body.startswith(b"/*")


def test_head_gives_the_headers_of_get_without_the_body(broker):
    with connect(broker.http_port) as s:
        r = Reader(s)
        s.sendall(request("HEAD", "/ui/style.css"))
        status, headers, _ = r.response(head=True)
        assert status == 200
        assert headers["content-type"] == "text/css; charset=utf-8"
        assert int(headers["content-length"]) == os.path.getsize(
            os.path.join(UI_DIR, "style.css"))
        s.sendall(request("GET", "/healthz"))
        assert r.response()[2] == b'{"status":"ok"}'


def test_unknown_files_are_404_and_other_methods_405(broker):
    for target in ["/ui/nope.js", "/ui/index.htm", "/ui/../healthz", "/ui/%2e%2e/healthz",
                   "/ui/sluice.js/", "/ui/SLUICE.JS", "/ui/.hidden", "/ui/README.md",
                   "/ui/console/vendor/README.md"]:
        status, headers, body = get(broker.http_port, target)
        assert status == 404, target
        assert headers["content-type"] == "application/json", target
        assert json.loads(body)["error_code"] == 404, target
    status, _, body = get(broker.http_port, "/ui/%zz")
    assert status == 400
    status, headers, _ = get(broker.http_port, "/ui/app.js", method="DELETE")
    assert status == 405
    assert headers["allow"] == "GET, HEAD"
    assert broker.alive()
