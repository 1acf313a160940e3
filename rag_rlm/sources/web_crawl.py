"""One read of a web site: the queue, robots.txt, the sitemap, redirects, and what was reached.

web.py says what a read does and why; this is how.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urljoin
from urllib.robotparser import RobotFileParser

from .base import Item, ItemFailure, Known, SourceError, SourceSpec
from .web_http import (
    REDIRECTS,
    USER_AGENT,
    Answer,
    FetchFailed,
    Http,
    Stopped,
    conditional_headers,
    make_signal,
    signal_suffix,
)
from .web_urls import (
    absolute,
    decode,
    is_file_link,
    matches,
    same_site_links,
    site,
    sitemap_entries,
    suffix_for,
    url_path,
    worth_requesting,
)

MAX_REDIRECTS = 10
MAX_SITEMAPS = 50  # sitemap files read per crawl, nested indexes included
GONE = (404, 410)
PAGE_SUFFIXES = (".html", ".htm")


class _OffSite(Exception):
    def __init__(self, target: str):
        super().__init__(target)
        self.target = target


class Crawl:
    """One read: the queue, what this read knows the state of, and why it may be incomplete."""

    def __init__(self, spec: SourceSpec, http: Http, known: Mapping[str, Known], stop: threading.Event,
                 home: str):
        self.spec, self.http, self.known, self.stop, self.home = spec, http, known, stop, home
        self.robots = RobotFileParser()
        self.queue: deque[tuple[str, int]] = deque()
        self.judged: set[str] = set()  # URLs queued or turned away: each is judged once
        self.taken: set[str] = set()  # keys read (or 304) this time
        self.accounted: set[str] = set()  # keys whose state this read knows: read, gone or failed
        self.problems: list[str] = []  # why the crawl may have missed pages (besides errors)
        self.visited = 0  # URLs taken from the queue: what the page cap counts
        self.pages = self.not_modified = self.disallowed = self.failed = 0
        self.errors = 0  # failures that may hide pages (an off-host redirect hides none)

    def summary(self) -> dict[str, Any]:
        return {"pages": self.pages, "not_modified": self.not_modified, "requests": self.http.requests,
                "robots_disallowed": self.disallowed, "failed": self.failed}

    def run(self, start: str) -> Iterator[Item | ItemFailure]:
        try:
            yield from self._crawl(start)
        except Stopped:
            return  # the sync sees a stopped read and deletes nothing

    def _crawl(self, start: str) -> Iterator[Item | ItemFailure]:
        self._read_robots(start)
        yield from self._take(self._open_start(start), 0)
        self._read_sitemaps(start)
        while self.queue and not self.stop.is_set():
            if self.visited >= self.spec.max_pages:
                self.problems.append(f"the crawl stopped at the page cap of {self.spec.max_pages}")
                break
            url, depth = self.queue.popleft()
            yield from self._visit(url, depth)
        if not self.stop.is_set():
            yield from self._unreached()

    # --- the host's rules and the start -------------------------------------------------

    def _read_robots(self, start: str) -> None:
        try:
            answer = self._get(urljoin(start, "/robots.txt"), obey_robots=False)
        except FetchFailed as e:
            raise SourceError(f"{start}: the host cannot be reached: {e.reason}") from None
        except _OffSite:
            answer = None  # another host's rules are not this one's
        status = answer.status if answer is not None else 404
        if status >= 500:
            raise SourceError(f"{start}: robots.txt answered HTTP {status}: the site is unavailable")
        if status == 200 and answer is not None:
            self.robots.parse(decode(answer.body, answer.headers.get("content-type")).splitlines())
        elif status in (401, 403):
            self.robots.disallow_all = True  # urllib.robotparser's reading of a guarded robots.txt
        else:
            self.robots.allow_all = True
        crawl_delay = self.robots.crawl_delay(USER_AGENT)
        if crawl_delay:
            self.http.delay = max(self.http.delay, float(crawl_delay))

    def _open_start(self, start: str) -> Answer:
        self.judged.add(start)
        self.visited = 1
        try:
            answer = self._get(start)
        except FetchFailed as e:
            raise SourceError(f"{start}: {e.reason}") from None
        except _OffSite as e:
            raise SourceError(f"{start} redirects off its host, to {e.target}") from None
        if answer is None:
            raise SourceError(f"{start}: robots.txt disallows it to {USER_AGENT}")
        if answer.status not in (200, 304):
            raise SourceError(f"{start} answered HTTP {answer.status}")
        if matches(url_path(answer.url), self.spec.exclude):
            raise SourceError(f"{answer.url}: the start URL is excluded")
        if answer.status == 200 and suffix_for(answer.url, answer.headers.get("content-type")) is None:
            raise SourceError(f"{answer.url}: no parser reads {answer.headers.get('content-type')!r}")
        return answer

    def _read_sitemaps(self, start: str) -> None:
        if self.spec.max_depth < 1:
            return
        sitemaps = deque([urljoin(start, "/sitemap.xml"), *(self.robots.site_maps() or ())])
        read: set[str] = set()
        while sitemaps and len(read) < MAX_SITEMAPS and not self.stop.is_set():
            url = absolute(start, sitemaps.popleft())
            if url is None or url in read or site(url) != self.home:
                continue
            read.add(url)
            pages, nested = self._read_sitemap(url)
            sitemaps.extend(nested)
            for page in pages:
                link = absolute(url, page)
                if link is not None:
                    self._admit(link, 1)

    def _read_sitemap(self, url: str) -> tuple[list[str], list[str]]:
        try:
            answer = self._get(url)
        except FetchFailed as e:
            self.problems.append(f"sitemap {url}: {e.reason}")
            return [], []
        except _OffSite:
            return [], []
        if answer is None or answer.status in GONE:
            return [], []
        if answer.status != 200:
            self.problems.append(f"sitemap {url} answered HTTP {answer.status}")
            return [], []
        return sitemap_entries(answer.body)

    # --- one URL ------------------------------------------------------------------------

    def _get(self, url: str, *, obey_robots: bool = True) -> Answer | None:
        """GET `url`, following redirects within the host; each hop is checked against
        robots.txt and sent the validators of its own known signal. None: nothing to read (a
        hop robots.txt disallows, or one this read has read already). Raises FetchFailed, or
        _OffSite for a redirect to another host."""
        for _ in range(MAX_REDIRECTS + 1):
            if obey_robots and not self._allowed(url):
                return None
            answer = self.http.get(url, conditional_headers(self.known.get(url)))
            if answer.status not in REDIRECTS:
                return answer
            target = absolute(url, answer.headers.get("location", ""))
            if target is None:
                raise FetchFailed(f"HTTP {answer.status} without a usable Location")
            if site(target) != self.home:
                raise _OffSite(target)
            if target in self.taken:
                return None
            url = target
        raise FetchFailed(f"more than {MAX_REDIRECTS} redirects")

    def _visit(self, url: str, depth: int) -> Iterator[Item | ItemFailure]:
        self.visited += 1
        try:
            answer = self._get(url)
        except FetchFailed as e:
            yield self._failed_page(url, e.reason, depth)
            return
        except _OffSite as e:
            # a definite answer, not an error: it hides no page of this host
            yield self._failure(url, f"redirects off the host, to {e.target}", hides_pages=False)
            return
        if answer is not None:
            yield from self._take(answer, depth)

    def _take(self, answer: Answer, depth: int) -> Iterator[Item | ItemFailure]:
        key = answer.url
        if key in self.taken:  # reached again through a redirect
            return
        self.taken.add(key)
        self.judged.add(key)
        self.accounted.add(key)
        if matches(url_path(key), self.spec.exclude) or answer.status in GONE:
            return
        if answer.status == 304:
            yield from self._not_modified(key, depth)
            return
        if answer.status != 200:
            yield self._failed_page(key, f"HTTP {answer.status}", depth)
            return
        content_type = answer.headers.get("content-type")
        suffix = suffix_for(key, content_type)
        if suffix is None:  # no parser reads it: not part of the source
            return
        extra: dict[str, Any] = {}
        if suffix in PAGE_SUFFIXES:
            extra["links"] = same_site_links(decode(answer.body, content_type), key)
            self._follow(extra["links"], depth)
        if self._included(key):
            self.pages += 1
            yield Item(key, key, make_signal(answer.headers, suffix), answer.body, suffix, extra)

    def _not_modified(self, key: str, depth: int) -> Iterator[Item | ItemFailure]:
        known = self.known.get(key)
        if known is None:  # we sent no validators for it
            yield self._failure(key, "HTTP 304 to an unconditional request")
            return
        self.not_modified += 1
        self._follow(self._remembered_links(key), depth)
        if self._included(key):
            self.pages += 1
            yield Item(key, key, known.signal, None, signal_suffix(known.signal), known.extra)

    # --- the queue ------------------------------------------------------------------------

    def _follow(self, links: Iterable[str], depth: int) -> None:
        if depth + 1 <= self.spec.max_depth:
            for url in links:
                self._admit(url, depth + 1)

    def _admit(self, url: str, depth: int) -> None:
        if url in self.judged:
            return
        self.judged.add(url)
        if site(url) != self.home or not worth_requesting(url):
            return
        if matches(url_path(url), self.spec.exclude) or (is_file_link(url) and not self._included(url)):
            self.accounted.add(url)  # gone from what this source ingests
            return
        if self._allowed(url):
            self.queue.append((url, depth))

    def _allowed(self, url: str) -> bool:
        if self.robots.can_fetch(USER_AGENT, url):
            return True
        self.disallowed += 1
        self.accounted.add(url)  # the site asks us not to read it: gone from the source
        return False

    def _included(self, url: str) -> bool:
        return not self.spec.include or matches(url_path(url), self.spec.include)

    def _remembered_links(self, key: str) -> list[str]:
        known = self.known.get(key)
        links = known.extra.get("links", []) if known is not None else []
        return [link for link in links if isinstance(link, str)]

    def _failed_page(self, key: str, reason: str, depth: int) -> ItemFailure:
        # what it linked to last time is still worth reaching
        self._follow(self._remembered_links(key), depth)
        return self._failure(key, reason)

    def _failure(self, key: str, reason: str, *, hides_pages: bool = True) -> ItemFailure:
        self.failed += 1
        self.errors += hides_pages
        self.accounted.add(key)
        return ItemFailure(key, reason)

    def _unreached(self) -> Iterator[ItemFailure]:
        missing = [key for key in self.known if key not in self.accounted]
        reasons = [*self.problems, *([f"{self.errors} page(s) failed"] if self.errors else [])]
        if not missing or not reasons:
            return  # a crawl that completed cleanly: what it did not reach is gone
        why = "; ".join(reasons)
        for key in missing:
            yield self._failure(key, f"not reached: {why}")
