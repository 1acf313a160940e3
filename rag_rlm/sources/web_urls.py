"""URLs and what a crawl reads from a response: normalised keys, links, sitemap entries, suffixes.

Pure functions, no I/O: the crawl (web.py) decides what to request, this module only reads.
"""

from __future__ import annotations

import fnmatch
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Sequence
from html.parser import HTMLParser
from posixpath import splitext
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from ..ingest.parsers import PARSERS

SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
PAGE_TYPES = ("text/html", "application/xhtml+xml")
# What a Content-Type says when the URL's suffix does not (a PDF served from `/download?id=3`).
TYPE_SUFFIXES = {
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/csv": ".csv",
    "text/x-rst": ".rst",
    "message/rfc822": ".eml",
    "application/mbox": ".mbox",
    "application/epub+zip": ".epub",
    "application/vnd.oasis.opendocument.text": ".odt",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
}
# Links no parser reads: never requested, which keeps a crawl's requests for documents.
SKIPPED_SUFFIXES = frozenset(
    ".png .jpg .jpeg .gif .svg .webp .ico .bmp .tif .tiff .css .js .mjs .map .woff .woff2 .ttf .eot .otf "
    ".zip .gz .tgz .bz2 .xz .7z .rar .tar .jar .whl .exe .dmg .iso .bin .deb .rpm .msi "
    ".mp3 .mp4 .m4a .webm .avi .mov .mkv .wav .ogg .flac .json .xml .rss .atom .ics".split())
# Characters a path or query keeps as they are; everything else is percent-encoded, so that
# `a b.html` and `a%20b.html` are one key.
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


def normalise(url: str) -> str:
    """The key of a URL: scheme and host lower case, default port, fragment, empty query and
    user info dropped, an empty path made `/`, unsafe characters percent-encoded. Raises
    ValueError for a URL that has no valid host or port."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if not host:
        raise ValueError(f"no host in {url!r}")
    port = parts.port  # raises ValueError for a port that is not a number
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    netloc = host if port is None or port == DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    path = quote(parts.path or "/", safe=_PATH_SAFE)
    return urlunsplit((scheme, netloc, path, quote(parts.query, safe=_QUERY_SAFE), ""))


def site(url: str) -> str:
    """What "the same host" compares: host and non-default port. http and https of one host are
    one site (a site moving to https stays the same source)."""
    return urlsplit(url).netloc


def url_path(url: str) -> str:
    return urlsplit(url).path or "/"


def matches(path: str, globs: Iterable[str]) -> bool:
    """fnmatch on the URL path: `*` crosses `/`, so `/docs/*` is everything under /docs/."""
    return any(fnmatch.fnmatchcase(path, glob) for glob in globs)


def link_suffix(url: str) -> str:
    return splitext(url_path(url).rsplit("/", 1)[-1])[1].lower()


def worth_requesting(url: str) -> bool:
    return link_suffix(url) not in SKIPPED_SUFFIXES


def is_file_link(url: str) -> bool:
    """A link to a document that is not a page (.pdf, .txt, ...): it has no links to follow."""
    suffix = link_suffix(url)
    return suffix in PARSERS and suffix not in (".html", ".htm")


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def suffix_for(url: str, content_type: str | None) -> str | None:
    """The parser that reads a response: HTML by its Content-Type, else the URL's suffix, else
    the Content-Type's; None when no parser reads it (an image served from `/logo`)."""
    kind = media_type(content_type)
    if kind in PAGE_TYPES:
        return ".html"
    if link_suffix(url) in PARSERS:
        return link_suffix(url)
    suffix = TYPE_SUFFIXES.get(kind)
    return suffix if suffix in PARSERS else None


def same_site_links(html: str, page_url: str) -> list[str]:
    """The page's links (a and area href, resolved against <base href>) on the page's own
    site, normalised, each once, in the order they appear."""
    collector = _LinkCollector()
    collector.feed(html)
    collector.close()
    base = urljoin(page_url, collector.base) if collector.base else page_url
    links: dict[str, None] = {}
    for href in collector.hrefs:
        url = absolute(base, href)
        if url is not None and site(url) == site(page_url):
            links[url] = None
    return list(links)


def absolute(base: str, href: str) -> str | None:
    """`href` resolved against `base` and normalised; None for mailto:, javascript:, bad URLs."""
    try:
        url = normalise(urljoin(base, href.strip()))
    except ValueError:
        return None
    return url if urlsplit(url).scheme in SCHEMES else None


def sitemap_entries(xml: bytes) -> tuple[list[str], list[str]]:
    """(page URLs, nested sitemap URLs) of a sitemap or sitemap index; ([], []) when it is not
    XML. Namespaces are ignored: sitemaps in the wild get them wrong."""
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError:
        return [], []
    locs = [(el.text or "").strip() for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "loc"]
    locs = [loc for loc in locs if loc]
    if root.tag.rsplit("}", 1)[-1] == "sitemapindex":
        return [], locs
    return locs, []


def charset(content_type: str | None) -> str:
    for param in (content_type or "").split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


def decode(body: bytes, content_type: str | None) -> str:
    try:
        return body.decode(charset(content_type), errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


class _LinkCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: Sequence[tuple[str, str | None]]) -> None:
        if tag not in ("a", "area", "base"):
            return
        href = dict(attrs).get("href")
        if not href:
            return
        if tag == "base":
            self.base = self.base or href
        else:
            self.hrefs.append(href)
