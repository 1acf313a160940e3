"""The web source: a polite, same-host, breadth-first crawl that re-reads only what changed.

One read, in order:
1. robots.txt at the host root, with our user agent (`rag-rlm/<version> (source sync)`); its
   Crawl-delay, when longer, replaces `spec.delay`. The host unreachable, or robots.txt
   answering 5xx (RFC 9309: the site is unavailable) -> SourceError.
2. The start URL. Unreachable, 4xx/5xx, redirected off its host, disallowed, excluded, or no
   parser reads it -> SourceError, before any item, so the sync changes nothing.
3. The sitemap (`/sitemap.xml` and robots.txt's `Sitemap:` lines, same host, nested sitemap
   indexes followed): its URLs are queued one hop from the start.
4. Breadth first: each page's same-host links one hop deeper, up to `spec.max_depth` hops and
   `spec.max_pages` requested URLs. Redirects are followed within the host; the URL a page is
   finally read from is its key. Links no parser reads (images, css, archives) are not requested.

Include and exclude are fnmatch globs on the URL path (`*` crosses `/`):
- exclude prunes: an excluded URL is never requested, so nothing is found through it (the way
  to keep a crawl out of a large section);
- include selects what is ingested: a page outside it is still read for its links (include
  `/docs/*` with the start URL at `/` still reaches the docs) but not yielded; a file outside
  it (.pdf, .txt, ...) is not requested. Such pages are read in full on every sync: only
  yielded items are remembered (`Known`), so only they get conditional requests.

The signal is JSON: the validators the server sent and the parser of the body,
`{"etag": ..., "last_modified": ..., "suffix": ".html"}` (absent keys left out). A known signal
with validators sends If-None-Match / If-Modified-Since; a 304 yields the item without data and
the crawl goes on from the links remembered in `Known.extra["links"]`, so a sync of an
unchanged site makes conditional requests only.

Gone (not yielded): 404/410, robots-disallowed, excluded, or no longer a page or document. Any
other error is an ItemFailure and the documents are kept. A crawl cut short (the page cap, a
failed page, a sitemap that could not be read) reports the known pages it did not reach as
failures "not reached: ..."; a crawl that completed cleanly leaves them out, which the sync
reads as gone.

The modules: web_crawl.py (one read), web_http.py (the client, and why httpx rather than
urllib.request: every redirect hop checked before it is requested, bodies capped while
streamed, one keep-alive connection per crawl), web_urls.py (URLs, links, sitemaps; pure).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..config import Settings
from .base import Item, ItemFailure, Known, SourceError, SourceSpec
from .web_crawl import Crawl
from .web_http import USER_AGENT, Http
from .web_urls import SCHEMES, normalise, site

__all__ = ["USER_AGENT", "WebReader", "check_url"]

REQUEST_TIMEOUT = 30.0  # seconds for one request to connect and answer


def check_url(url: str, allowed_hosts: Sequence[str] | None) -> str:
    """`url` normalised when it can start a crawl: http or https, with a host, and that host
    in `allowed_hosts` (as `host` or `host:port`) unless it is None. Else SourceError."""
    scheme = urlsplit(url.strip()).scheme.lower()
    if scheme not in SCHEMES:
        raise SourceError(f"{url!r}: the scheme {scheme or '(none)'!r} is not http or https")
    try:
        start = normalise(url)
    except ValueError as e:
        raise SourceError(f"{url!r}: {e}") from None
    if allowed_hosts is not None:
        host = urlsplit(start).hostname or ""
        allowed = {name.strip().lower() for name in allowed_hosts}
        if host not in allowed and site(start) not in allowed:
            raise SourceError(f"host {host} is not in source_hosts")
    return start


class WebReader:
    """A SourceReader over one web site; see the module docstring for what a read does."""

    def __init__(self, spec: SourceSpec, settings: Settings, *, timeout: float = REQUEST_TIMEOUT):
        self.spec = spec
        self.max_bytes = settings.max_document_bytes
        self.timeout = timeout
        self._last: Crawl | None = None

    def read(self, known: Mapping[str, Known], stop: threading.Event) -> Iterator[Item | ItemFailure]:
        start = check_url(self.spec.location, None)
        with Http(delay=self.spec.delay, timeout=self.timeout, max_bytes=self.max_bytes, stop=stop) as http:
            self._last = Crawl(self.spec, http, known, stop, site(start))
            yield from self._last.run(start)

    def describe(self) -> dict[str, Any]:
        if self._last is None:
            return {"pages": 0, "not_modified": 0, "requests": 0, "robots_disallowed": 0, "failed": 0}
        return self._last.summary()
