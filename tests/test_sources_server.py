"""Sources over HTTP on a live server: a watched folder is followed in answers, a web site is
crawled and re-synced with conditional requests only, bad definitions are clear 4xx or failed
jobs that name the cause, and sources are tenant-scoped."""

from __future__ import annotations

import functools
import http.server
import threading
import time
import uuid

import pytest
from test_server_support import KEYS, LiveServer, open_settings, shared_assistant

FACTS = {
    "falcon.md": "# Falcon\n\nThe falcon telescope is calibrated every Tuesday by the optics team.\n",
    "heron.md": "# Heron\n\nThe heron canteen serves lunch from eleven until two.\n",
}


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    return tmp_path_factory.mktemp("source_roots")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A real HTTP server over a folder (the standard library's: Last-Modified and 304s)."""
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text('<html><head><title>Intranet</title></head><body><h1>Intranet</h1>'
                                     '<p>Start here.</p><a href="parking.html">Parking</a></body></html>')
    (root / "parking.html").write_text("<html><head><title>Parking</title></head><body><h1>Parking</h1>"
                                       "<p>Visitors park in the osprey garage on level minus two.</p></body></html>")
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server(pg_url, embedder, tmp_path_factory, roots):
    assistant = shared_assistant(pg_url, tmp_path_factory.mktemp("server_data"), embedder)
    settings = open_settings(assistant, source_roots=[str(roots)], source_hosts=["127.0.0.1"],
                             api_keys=KEYS, upload_workers=1)
    with LiveServer(settings, assistant) as srv:
        yield srv


@pytest.fixture
def acme(server):
    with server.client("key-acme") as c:
        yield c


def _collection() -> str:
    return "src_" + uuid.uuid4().hex[:8]


def _wait_job(http, job: dict, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        record = http.get(job["url"]).json()
        if record["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return record
        time.sleep(0.2)


def _cited(http, collection: str, question: str) -> set[str]:
    body = http.post("/v1/ask", json={"question": question, "collection": collection}).json()
    return {c["document_id"] for c in body.get("citations", [])}


def _until(check, timeout: float) -> float:
    """Seconds until check() is true; fails after `timeout`."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, "not reflected in time"
        time.sleep(0.2)
    return time.monotonic() - start


def test_a_watched_folder_is_followed_in_answers(acme, roots):
    folder = roots / uuid.uuid4().hex[:8]
    folder.mkdir()
    for name, text in FACTS.items():
        (folder / name).write_text(text)
    collection = _collection()
    r = acme.post(f"/v1/collections/{collection}/sources", json={"name": "team", "kind": "folder",
                                                                 "location": str(folder)})
    assert r.status_code == 201, r.text
    job = _wait_job(acme, r.json()["job"])
    assert (job["status"], job["kind"], job["summary"]["added"]) == ("done", "sync", 2)
    assert "team/falcon.md" in _cited(acme, collection, "When is the falcon telescope calibrated?")

    (folder / "kestrel.md").write_text("# Kestrel\n\nThe kestrel shuttle bus leaves the north gate at 7:40.\n")
    _until(lambda: "team/kestrel.md" in _cited(acme, collection, "When does the kestrel shuttle bus leave?"), 30)
    (folder / "falcon.md").write_text("# Falcon\n\nThe falcon telescope is now calibrated every Friday.\n")
    _until(lambda: _text(acme, collection, "team/falcon.md").count("Friday") == 1, 30)
    (folder / "heron.md").unlink()
    _until(lambda: acme.get(f"/v1/collections/{collection}/documents/team/heron.md").status_code == 404, 30)

    status = acme.get(f"/v1/collections/{collection}/sources/team").json()
    assert status["last_sync"]["status"] == "done" and status["collection"] == collection
    listing = acme.get(f"/v1/collections/{collection}/sources").json()["sources"]
    assert [s["name"] for s in listing] == ["team"]


def _text(http, collection: str, doc_id: str) -> str:
    r = http.get(f"/v1/collections/{collection}/documents/{doc_id}")
    return r.json()["text"] if r.status_code == 200 else ""


def test_a_web_source_is_crawled_and_resynced_with_conditional_requests(acme, site):
    url, root = site
    collection = _collection()
    r = acme.post(f"/v1/collections/{collection}/sources",
                  json={"name": "intranet", "kind": "web", "location": url + "/", "delay": 0})
    assert r.status_code == 201, r.text
    job = _wait_job(acme, r.json()["job"])
    assert job["status"] == "done", job
    assert (job["summary"]["added"], job["summary"]["reader"]["pages"]) == (2, 2)
    cited = _cited(acme, collection, "Where do visitors park?")
    assert any(d.endswith("/parking.html") for d in cited), cited
    docs = acme.get(f"/v1/collections/{collection}/documents").json()["documents"]
    assert {d["source"] for d in docs} == {url + "/", url + "/parking.html"}

    again = _wait_job(acme, acme.post(f"/v1/collections/{collection}/sources/intranet/sync").json())
    assert again["summary"]["unchanged"] == 2 and again["summary"]["reader"]["not_modified"] == 2


def test_bad_sources_are_refused_naming_the_cause(acme, roots, tmp_path):
    collection = _collection()
    add = functools.partial(acme.post, f"/v1/collections/{collection}/sources")
    cases = [
        ({"name": "x", "kind": "folder", "location": str(tmp_path)}, "source_roots"),
        ({"name": "x", "kind": "web", "location": "http://169.254.169.254/latest/"}, "source_hosts"),
        ({"name": "x", "kind": "web", "location": "ftp://127.0.0.1/"}, "http"),
        ({"name": "x", "kind": "gopher", "location": "/"}, "kind"),
        ({"name": "../x", "kind": "folder", "location": str(roots)}, "name"),
        ({"name": "x", "kind": "folder", "location": str(roots), "every": "often"}, "every"),
        ({"name": "x", "kind": "folder", "location": str(roots / "typo")}, "does not exist"),
        ({"name": "x", "kind": "folder", "location": str(roots), "groups": ["no spaces please"]}, "groups"),
    ]
    for body, cause in cases:
        r = add(json=body)
        assert r.status_code == 422, (body, r.text)
        assert cause in r.json()["error"]["message"] + r.json()["error"].get("field", ""), (body, r.text)
    assert acme.get(f"/v1/collections/{collection}/sources").json()["sources"] == []

    r = add(json={"name": "repo", "kind": "git", "location": str(roots / "no-such-repo")})
    assert r.status_code == 201
    job = _wait_job(acme, r.json()["job"])
    assert job["status"] == "failed" and "no-such-repo" in job["error"], job
    assert add(json={"name": "repo", "kind": "git", "location": str(roots)}).status_code == 409
    assert acme.post(f"/v1/collections/{collection}/sources/nope/sync").status_code == 404


def test_a_site_that_redirects_off_host_fails_the_sync(acme, roots):
    redirect = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OffHost)
    threading.Thread(target=redirect.serve_forever, daemon=True).start()
    try:
        collection = _collection()
        r = acme.post(f"/v1/collections/{collection}/sources",
                      json={"name": "away", "kind": "web", "location": f"http://127.0.0.1:{redirect.server_address[1]}/",
                            "delay": 0})
        job = _wait_job(acme, r.json()["job"])
        assert job["status"] == "failed" and "example.org" in job["error"], job
    finally:
        redirect.shutdown()


class _OffHost(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        self.send_response(302 if self.path != "/robots.txt" else 404)
        self.send_header("Location", "http://example.org/elsewhere")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_sources_are_tenant_scoped(server, acme, roots):
    folder = roots / uuid.uuid4().hex[:8]
    folder.mkdir()
    (folder / "falcon.md").write_text(FACTS["falcon.md"])
    collection = _collection()
    r = acme.post(f"/v1/collections/{collection}/sources",
                  json={"name": "team", "kind": "folder", "location": str(folder), "sync": False})
    assert r.status_code == 201
    with server.client("key-beta") as beta:
        assert beta.get(f"/v1/collections/{collection}/sources").json()["sources"] == []
        assert beta.get(f"/v1/collections/{collection}/sources/team").status_code == 404
        assert beta.delete(f"/v1/collections/{collection}/sources/team").status_code == 404
    assert acme.delete(f"/v1/collections/{collection}/sources/team").json()["removed"] == "team"
