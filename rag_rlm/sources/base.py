"""The source seam: what a sync needs from a place where documents live.

A `SourceReader` lists what its source holds now, item by item. Each item carries a cheap
change signal (a folder's mtime and size, a Git blob id, a web page's ETag / Last-Modified),
and the reader is told what the last sync recorded for each item (`Known`), so an item whose
signal did not change is reported without being read (`data is None`). The sync (sync.py)
compares the items with what the collection holds from the source and applies the difference.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import RagRlmError

KINDS = ("folder", "git", "web")


class SourceError(RagRlmError):
    """The source as a whole cannot be read (folder gone, repository unreachable, site down,
    a start URL that redirects off its host): the sync fails and changes nothing."""


@dataclass(frozen=True)
class SourceSpec:
    """A named source of a collection. `collection` is the stored name (tenant-prefixed)."""

    name: str
    kind: str  # one of KINDS
    location: str  # folder path; repository path or URL; start URL
    collection: str
    branch: str = ""  # git: "" = the remote's default branch
    every: float = 0.0  # seconds between scheduled syncs in the server; 0 = none
    include: tuple[str, ...] = ()  # globs on the item's relative path (folder, git) or URL path (web)
    exclude: tuple[str, ...] = ()
    max_pages: int = 500  # web: the crawl's page cap
    max_depth: int = 5  # web: links followed from the start URL
    delay: float = 0.5  # web: seconds between two requests to the host
    groups: tuple[str, ...] = ()  # access groups given to the source's documents


@dataclass(frozen=True)
class Known:
    """What the last sync recorded of one item."""

    signal: str
    content_hash: str  # sha256 of the raw bytes, as the ingest pipeline's hash
    extra: Mapping[str, Any] = field(default_factory=dict)  # the reader's own memory (web: links)


@dataclass(frozen=True)
class Item:
    """One item the source holds now."""

    key: str  # its stable place in the source: relative path (folder, git) or URL (web)
    location: str  # what citations show and link to: relative path, `path@commit`, URL
    signal: str  # the cheap change signal
    data: bytes | None  # None: the signal equals the known one and the item was not read
    suffix: str  # the parser that reads it (".html", ".pdf", ...): PARSERS' keys
    extra: Mapping[str, Any] = field(default_factory=dict)  # kept in `Known.extra` for the next sync


@dataclass(frozen=True)
class ItemFailure:
    """An item that could not be read this time. Its documents are kept as they are (a failure
    is never taken for a deletion)."""

    key: str
    reason: str


@runtime_checkable
class SourceReader(Protocol):
    def read(self, known: Mapping[str, Known], stop: threading.Event) -> Iterator[Item | ItemFailure]:
        """Every item the source holds now, each key once. Raises SourceError (before the first
        item) when the source cannot be read at all. A known key that is neither yielded nor
        failed is gone from the source: only say so when it is sure (a crawl cut short by the
        page cap or by errors reports the known pages it did not reach as failures). Stops early,
        without raising, once `stop` is set; the sync then deletes nothing."""
        ...

    def describe(self) -> dict[str, Any]:
        """After `read`: what the source was at (git: {"commit": sha}; web: {"pages": n,
        "not_modified": n, "requests": n}); shown in the source's status."""
        ...
