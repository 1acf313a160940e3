"""The web source reader over a real manual: the PostgreSQL HTML documentation (issue 17, web).

    apt-get install -y postgresql-doc
    .venv/bin/python bench/bench_source_web.py [--root /usr/share/doc/postgresql-doc-15/html]
                                               [--max-pages 2000] [--delay 0]

Serves the manual's folder from a loopback HTTP server in its own process (so it does not share
the reader's interpreter lock) that answers ETag / Last-Modified and 304, with a robots.txt that
disallows the SQL command reference (`/sql-*`). Reads the site twice with WebReader from
index.html: the first read fetches every page, the second sends the first read's validators and
should be 304s only. Prints pages found, seconds, pages/s, requests, 304s, robots-disallowed.
"""

from __future__ import annotations

import argparse
import email.utils
import hashlib
import mimetypes
import multiprocessing
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.sources import Item, Known, SourceSpec  # noqa: E402
from rag_rlm.sources.web import WebReader  # noqa: E402

ROBOTS = b"User-agent: *\nDisallow: /sql-\n"


def find_manual() -> Path:
    found = sorted(Path("/usr/share/doc").glob("postgresql-doc-*/html"))
    if not found:
        sys.exit("no PostgreSQL HTML manual: apt-get install -y postgresql-doc (or pass --root)")
    return found[-1]


class ManualHandler(BaseHTTPRequestHandler):
    root: Path

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = unquote(urlsplit(self.path).path)
        if path == "/robots.txt":
            return self._send(200, {"Content-Type": "text/plain"}, ROBOTS)
        file = (self.root / path.lstrip("/")).resolve()
        if not file.is_file() or self.root not in file.parents:
            return self._send(404, {"Content-Type": "text/plain"}, b"not found")
        stat = file.stat()
        etag = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'
        validators = {"ETag": etag, "Last-Modified": email.utils.formatdate(stat.st_mtime, usegmt=True)}
        if self.headers.get("If-None-Match") == etag:
            return self._send(304, validators, b"")
        content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        return self._send(200, {"Content-Type": content_type, **validators}, file.read_bytes())

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def serve(root: str, ports: multiprocessing.Queue) -> None:
    ManualHandler.root = Path(root).resolve()
    server = ThreadingHTTPServer(("127.0.0.1", 0), ManualHandler)
    server.daemon_threads = True
    ports.put(server.server_address[1])
    server.serve_forever()


def crawl(web: WebReader, known: dict[str, Known]) -> tuple[list[Item], int, float]:
    began = time.perf_counter()
    results = list(web.read(known, threading.Event()))
    seconds = time.perf_counter() - began
    found = [r for r in results if isinstance(r, Item)]
    return found, len(results) - len(found), seconds


def report(label: str, web: WebReader, found: list[Item], failed: int, seconds: float) -> None:
    counts = web.describe()
    read_in_full = sum(item.data is not None for item in found)
    print(f"{label:<7} pages {len(found):5d}  read in full {read_in_full:5d}  failed {failed:3d}  "
          f"{seconds:6.2f} s  {len(found) / seconds:7.1f} pages/s  requests {counts['requests']:5d}  "
          f"304s {counts['not_modified']:5d}  robots-disallowed {counts['robots_disallowed']:4d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="the HTML folder to serve")
    parser.add_argument("--max-pages", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    root = args.root or find_manual()
    ports: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(str(root), ports), daemon=True)
    server.start()
    try:
        start = f"http://127.0.0.1:{ports.get(timeout=30)}/index.html"
        spec = SourceSpec(name="pgdocs", kind="web", location=start, collection="bench",
                          max_pages=args.max_pages, max_depth=50, delay=args.delay)
        print(f"serving {root} ({sum(1 for _ in root.glob('*.html'))} .html files); robots.txt disallows /sql-*")
        first = WebReader(spec, Settings())
        found, failed, seconds = crawl(first, {})
        report("first", first, found, failed, seconds)
        known = {item.key: Known(item.signal, hashlib.sha256(item.data or b"").hexdigest(), item.extra)
                 for item in found}
        second = WebReader(spec, Settings())
        found, failed, seconds = crawl(second, known)
        report("second", second, found, failed, seconds)
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    main()
