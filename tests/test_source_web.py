"""The web source reader against a real HTTP server on loopback serving a small generated site:
linked pages, a PDF and a text file, robots.txt, a sitemap, ETag/304, redirects, a 404."""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from test_parsers import make_pdf

import rag_rlm
from rag_rlm.config import Settings
from rag_rlm.sources import Item, ItemFailure, Known, SourceError, SourceReader, SourceSpec
from rag_rlm.sources.web import WebReader, check_url

LAST_MODIFIED = "Wed, 01 Jan 2025 00:00:00 GMT"
ELSEWHERE = "http://elsewhere.invalid"
USER_AGENT = f"rag-rlm/{rag_rlm.__version__} (source sync)"


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    status: int
    at: float


@dataclass
class Site:
    """What the server serves; a test changes it between two reads."""

    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # path -> (content type, body)
    redirects: dict[str, str] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)  # forced answers (500, 503)
    slow: dict[str, float] = field(default_factory=dict)  # seconds before answering
    hits: list[Hit] = field(default_factory=list)

    def page(self, path: str, *links: str, text: str = "") -> None:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        body = f"<html><head><title>{path}</title></head><body><p>{text or path}</p>{anchors}</body></html>"
        self.files[path] = ("text/html; charset=utf-8", body.encode())

    def paths(self, status: int | None = None) -> list[str]:
        return [hit.path for hit in self.hits if status is None or hit.status == status]


class Handler(BaseHTTPRequestHandler):
    server: _SiteServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        site = self.server.site
        path = urlsplit(self.path).path
        time.sleep(site.slow.get(path, 0))
        status, headers, body = self._answer(site, path)
        site.hits.append(Hit(path, dict(self.headers.items()), status, time.monotonic()))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _answer(self, site: Site, path: str) -> tuple[int, dict[str, str], bytes]:
        if path in site.redirects:
            return 302, {"Location": site.redirects[path]}, b""
        if path in site.statuses:
            return site.statuses[path], {}, b"unavailable"
        if path not in site.files:
            return 404, {"Content-Type": "text/plain"}, b"not found"
        content_type, body = site.files[path]
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        validators = {"ETag": etag, "Last-Modified": LAST_MODIFIED}
        if self.headers.get("If-None-Match") == etag:
            return 304, validators, b""
        return 200, {"Content-Type": content_type, **validators}, body

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class _SiteServer(ThreadingHTTPServer):
    daemon_threads = True
    site: Site


def build_site() -> Site:
    site = Site()
    site.page("/", "a.html", "b.html", "docs/notes.txt", "private/secret.html", "gone.html", "away.html",
              "moved", "logo.png", "a.html#top", "#", "b.html?", "mailto:someone@example.com",
              f"{ELSEWHERE}/other.html")
    site.page("/a.html", "c.html", "paper.pdf", "/report", "/")
    site.page("/b.html", "/", text="Bee page, first version.")
    site.page("/c.html", "deep.html")
    site.page("/deep.html", text="Three hops from the start.")
    site.page("/orphan.html", text="Linked from nowhere, listed in the sitemap.")
    site.page("/private/secret.html", text="robots.txt keeps us out")
    site.files["/docs/notes.txt"] = ("text/plain", b"Release notes: the crawler reads text files.\n")
    # the URL's suffix says PDF where the Content-Type does not, and the other way round
    site.files["/paper.pdf"] = ("application/octet-stream", make_pdf([["A paper", "Linked from page a."]]))
    site.files["/report"] = ("application/pdf", make_pdf([["A report", "Served without a suffix."]]))
    site.files["/robots.txt"] = ("text/plain", b"User-agent: *\nDisallow: /private/\n")
    site.redirects["/moved"] = "/b.html"
    site.redirects["/away.html"] = f"{ELSEWHERE}/landing"
    site.redirects["/leave"] = f"{ELSEWHERE}/"
    return site


def set_sitemap(site: Site, base: str, *paths: str) -> None:
    urls = "".join(f"<url><loc>{base}{path}</loc></url>" for path in paths)
    xml = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    site.files["/sitemap.xml"] = ("application/xml", xml.encode())


@pytest.fixture
def served() -> Iterator[tuple[Site, str]]:
    site = build_site()
    server = _SiteServer(("127.0.0.1", 0), Handler)
    server.site = site
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    set_sitemap(site, base, "/orphan.html", "/a.html")
    yield site, base
    server.shutdown()
    server.server_close()


def reader(location: str, settings: Settings | None = None, timeout: float = 5.0, **spec: object) -> WebReader:
    options: dict[str, object] = {"delay": 0.0, **spec}
    source = SourceSpec(name="site", kind="web", location=location, collection="c", **options)  # type: ignore[arg-type]
    return WebReader(source, settings or Settings(), timeout=timeout)


def read(web: WebReader, known: dict[str, Known] | None = None) -> list[Item | ItemFailure]:
    return list(web.read(known or {}, threading.Event()))


def items(results: list[Item | ItemFailure]) -> dict[str, Item]:
    return {r.key: r for r in results if isinstance(r, Item)}


def failures(results: list[Item | ItemFailure]) -> dict[str, str]:
    return {r.key: r.reason for r in results if isinstance(r, ItemFailure)}


def remember(results: list[Item | ItemFailure]) -> dict[str, Known]:
    """What a sync records of a read."""
    return {key: Known(item.signal, hashlib.sha256(item.data or b"").hexdigest(), item.extra)
            for key, item in items(results).items()}


def keys(base: str, *paths: str) -> set[str]:
    return {base + path for path in paths}


ALL_PAGES = ("/", "/a.html", "/b.html", "/c.html", "/deep.html", "/orphan.html", "/docs/notes.txt",
             "/paper.pdf", "/report")


def test_reader_is_a_source_reader(served):
    _, base = served
    assert isinstance(reader(base), SourceReader)


def test_first_read_finds_the_site(served):
    site, base = served
    web = reader(base + "/")
    results = read(web)
    found = items(results)
    assert set(found) == keys(base, *ALL_PAGES)
    assert failures(results) == {base + "/away.html": f"redirects off the host, to {ELSEWHERE}/landing"}
    suffixes = {key[len(base):]: item.suffix for key, item in found.items()}
    assert suffixes["/paper.pdf"] == ".pdf" and suffixes["/report"] == ".pdf"
    assert suffixes["/docs/notes.txt"] == ".txt" and suffixes["/c.html"] == ".html"
    assert found[base + "/docs/notes.txt"].data == site.files["/docs/notes.txt"][1]
    assert found[base + "/"].location == base + "/"
    # links normalised: fragments and an empty query dropped, other hosts, mailto and images left out
    links = found[base + "/"].extra["links"]
    assert links.count(base + "/a.html") == 1 and links.count(base + "/b.html") == 1
    assert not any("elsewhere" in link or "mailto" in link or "#" in link for link in links)
    assert base + "/logo.png" in links and "/logo.png" not in site.paths()  # never requested
    assert found[base + "/paper.pdf"].extra == {}
    # the sitemap's page is found; robots.txt is obeyed; /moved is read once, as /b.html
    assert "/orphan.html" in site.paths()
    assert "/private/secret.html" not in site.paths()
    assert site.paths().count("/b.html") == 1
    assert web.describe() == {"pages": len(ALL_PAGES), "not_modified": 0, "requests": len(site.hits),
                              "robots_disallowed": 1, "failed": 1}
    assert {hit.headers.get("User-Agent") for hit in site.hits} == {USER_AGENT}


def test_second_read_of_an_unchanged_site_makes_only_conditional_requests(served):
    site, base = served
    known = remember(read(reader(base)))
    site.hits.clear()
    web = reader(base)
    results = read(web, known)
    found = items(results)
    assert set(found) == set(known)
    assert all(item.data is None for item in found.values())
    assert all(found[key].signal == known[key].signal and found[key].extra == known[key].extra for key in known)
    for hit in site.hits:
        if base + hit.path in known:
            assert hit.headers.get("If-None-Match") and hit.headers.get("If-Modified-Since") == LAST_MODIFIED
            assert hit.status == 304
    assert sorted(site.paths(200)) == ["/robots.txt", "/sitemap.xml"]
    assert len(site.paths(304)) == len(known) == web.describe()["not_modified"]
    assert web.describe()["requests"] == len(site.hits)


def test_a_changed_page_comes_back_with_data(served):
    site, base = served
    known = remember(read(reader(base)))
    site.page("/b.html", "/", text="Bee page, second version.")
    found = items(read(reader(base), known))
    assert found[base + "/b.html"].data == site.files["/b.html"][1]
    assert found[base + "/b.html"].signal != known[base + "/b.html"].signal
    assert [key for key, item in found.items() if item.data is not None] == [base + "/b.html"]


def test_same_bytes_with_a_new_etag_are_still_read(served):
    site, base = served
    known = remember(read(reader(base)))
    stale = {key: Known('{"etag": "\\"old\\"", "suffix": ".html"}', k.content_hash, k.extra)
             for key, k in known.items()}
    found = items(read(reader(base), stale))
    assert found[base + "/c.html"].data == site.files["/c.html"][1]  # the sync compares the hash


def test_pages_gone_from_a_clean_crawl_are_left_out(served):
    site, base = served
    known = remember(read(reader(base)))
    site.page("/c.html", text="No longer links to deep.")
    del site.files["/deep.html"]
    del site.files["/paper.pdf"]  # still linked: a 404
    set_sitemap(site, base, "/a.html")
    del site.files["/orphan.html"]
    results = read(reader(base), known)
    assert set(items(results)) == keys(base, *ALL_PAGES) - keys(base, "/deep.html", "/paper.pdf", "/orphan.html")
    assert set(failures(results)) == {base + "/away.html"}  # no deletion is mistaken for a failure


def test_a_failed_page_keeps_its_known_links_reachable_and_unreached_pages_fail(served):
    site, base = served
    known = remember(read(reader(base)))
    site.statuses["/a.html"] = 500
    site.statuses["/sitemap.xml"] = 503
    results = read(reader(base), known)
    failed = failures(results)
    assert failed[base + "/a.html"] == "HTTP 500"
    # c.html, paper.pdf and report are reached through a.html's remembered links
    assert keys(base, "/c.html", "/deep.html", "/paper.pdf", "/report") <= set(items(results))
    # orphan.html was only in the sitemap: not reached, so reported as failed, not left out
    assert failed[base + "/orphan.html"].startswith("not reached: sitemap")
    assert "1 page(s) failed" in failed[base + "/orphan.html"]


def test_the_page_cap_reports_unreached_known_pages_as_failures(served):
    site, base = served
    known = remember(read(reader(base)))
    site.hits.clear()
    web = reader(base, max_pages=3)
    results = read(web, known)
    found, failed = items(results), failures(results)
    assert len(found) <= 3
    not_reached = {key for key, reason in failed.items() if reason.startswith("not reached:")}
    assert not_reached and all("page cap of 3" in failed[key] for key in not_reached)
    assert set(found) | not_reached == set(known)
    assert len([p for p in site.paths() if p not in ("/robots.txt", "/sitemap.xml")]) == 3
    assert web.describe()["failed"] == len(failed)


def test_depth_limits_the_hops_from_the_start(served):
    _, base = served
    found = items(read(reader(base, max_depth=1)))
    assert set(found) == keys(base, "/", "/a.html", "/b.html", "/docs/notes.txt", "/orphan.html")
    only_start = items(read(reader(base, max_depth=0)))
    assert set(only_start) == {base + "/"}


def test_exclude_prunes_and_include_selects_what_is_ingested(served):
    site, base = served
    found = items(read(reader(base, exclude=("/docs/*",), include=("/a.html", "/c.html", "/deep.html"))))
    assert set(found) == keys(base, "/a.html", "/c.html", "/deep.html")
    assert "/docs/notes.txt" not in site.paths()  # excluded: never requested
    assert "/paper.pdf" not in site.paths()  # a file outside include: never requested
    assert "/b.html" in site.paths()  # a page outside include: read for its links


def test_oversize_and_slow_pages_fail_with_the_reason(served):
    site, base = served
    site.page("/b.html", "/big.html", "/slow.html")
    site.files["/big.html"] = ("text/html", b"<p>" + b"x" * 20_000 + b"</p>")
    site.page("/slow.html")
    site.slow["/slow.html"] = 1.5
    failed = failures(read(reader(base, Settings().replace(max_document_bytes=10_000), timeout=0.5)))
    assert "max_document_bytes" in failed[base + "/big.html"]
    assert failed[base + "/slow.html"].startswith("timed out")


def test_start_url_redirecting_off_host_is_a_source_error(served):
    site, base = served
    with pytest.raises(SourceError, match="elsewhere.invalid"):
        read(reader(base + "/leave"))
    assert "/leave" in site.paths()


def test_start_url_failing_is_a_source_error_before_any_item(served):
    site, base = served
    site.statuses["/"] = 503
    results: list[object] = []
    with pytest.raises(SourceError, match="503"):
        for result in reader(base).read({}, threading.Event()):
            results.append(result)
    assert results == []


def test_an_unreachable_site_is_a_source_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    with pytest.raises(SourceError, match="cannot be reached"):
        read(reader(f"http://127.0.0.1:{port}/"))


def test_other_schemes_are_refused():
    with pytest.raises(SourceError, match="'ftp'"):
        read(reader("ftp://example.com/pub/"))
    with pytest.raises(SourceError, match="'file'"):
        check_url("file:///etc/passwd", None)


def test_check_url_checks_the_host_against_source_hosts():
    assert check_url("HTTPS://Docs.Example.com#intro", None) == "https://docs.example.com/"
    assert check_url("http://127.0.0.1:8080/x", ["127.0.0.1:8080"]) == "http://127.0.0.1:8080/x"
    assert check_url("https://docs.example.com/a", ["docs.example.com"]) == "https://docs.example.com/a"
    with pytest.raises(SourceError, match="host evil.example is not in source_hosts"):
        check_url("https://evil.example/", ["docs.example.com"])
    with pytest.raises(SourceError, match="no host"):
        check_url("http:///path", None)


def test_delay_is_kept_between_requests(served):
    site, base = served
    read(reader(base, delay=0.2, max_depth=1, max_pages=3))
    gaps = [later.at - earlier.at for earlier, later in zip(site.hits, site.hits[1:], strict=False)]
    assert len(gaps) >= 3
    assert min(gaps) >= 0.18


def test_stop_ends_a_read_promptly_without_raising(served):
    site, base = served
    stop = threading.Event()
    results = []
    for result in reader(base).read({}, stop):
        results.append(result)
        stop.set()
        requests_at_stop = len(site.hits)
    assert len(results) == 1 and len(site.hits) == requests_at_stop
    # a stop during the polite delay cuts the wait short
    slow_stop = threading.Event()
    threading.Timer(0.3, slow_stop.set).start()
    began = time.monotonic()
    list(reader(base, delay=10.0).read({}, slow_stop))
    assert time.monotonic() - began < 3.0


def test_sitemaps_named_in_robots_txt_and_nested_indexes_are_read(served):
    site, base = served
    site.files["/robots.txt"] = ("text/plain", f"User-agent: *\nDisallow: /private/\n"
                                               f"Sitemap: {base}/maps/index.xml\n".encode())
    index = f'<sitemapindex><sitemap><loc>{base}/maps/pages.xml</loc></sitemap></sitemapindex>'
    site.files["/maps/index.xml"] = ("application/xml", index.encode())
    set_sitemap(site, base, "/hidden.html", "/private/secret.html")
    site.files["/maps/pages.xml"] = site.files.pop("/sitemap.xml")  # no /sitemap.xml: a 404
    site.page("/hidden.html", text="Only in a nested sitemap.")
    web = reader(base)
    found = items(read(web))
    assert base + "/hidden.html" in found
    assert base + "/orphan.html" not in found  # /sitemap.xml listed it; that sitemap is gone
    assert "/private/secret.html" not in site.paths()
    assert web.describe()["robots_disallowed"] == 1  # one URL, met as a link and in the sitemap
