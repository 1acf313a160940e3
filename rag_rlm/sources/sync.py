"""A sync: what a source holds now, compared with what the collection holds from it, and only
the difference applied.

    read the source, item by item (its reader skips what its cheap signal says is unchanged)
      -> unchanged (same signal, or same bytes): nothing written
      -> new or changed: parsed and written whole, through the ingest pipeline's atomic write
      -> new, with the bytes of an item that is gone: renamed in the store, not re-embedded
    then, only when the whole source was read: documents of items gone from it are deleted

A document stored under another ingest recipe (ingest/recipe.py: another release's splitter,
other chunk or embedder settings) counts as not stored as recorded, so its item is read and
written again.

A source that cannot be read (SourceError) changes nothing. An item that fails keeps its
documents as they are. What was recorded of each item is saved only for documents the store
holds as recorded (checked against the store after writing), so a write cut short by a cancel
or a crash is read again next time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from ..config import Settings
from ..embed import Embedder
from ..errors import UnknownCollection
from ..ingest.ocr import OcrOptions
from ..ingest.parsers import ParseError, parse_file, sha256
from ..ingest.pipeline import ProgressFn, ingest_documents
from ..ingest.recipe import made_with, recipe
from ..memory.base import Store
from ..types import Document
from .base import Item, ItemFailure, SourceReader, SourceSpec
from .registry import Entry, SourceRegistry


@dataclass
class SyncSummary:
    source: str
    collection: str
    status: str = "done"  # done | failed | cancelled
    started: float = field(default_factory=time.time)
    finished: float = 0.0
    seconds: float = 0.0
    added: int = 0
    updated: int = 0
    refreshed: int = 0  # of the updated: same bytes, stored under an older ingest recipe
    renamed: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    chunks_written: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)  # {"item", "reason"}
    reader: dict[str, Any] = field(default_factory=dict)  # the source's describe(): commit, pages, ...
    error: str = ""

    def fail(self, item: str, reason: str) -> None:
        self.failed += 1
        self.failures.append({"item": item, "reason": reason})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def document_id(spec: SourceSpec, key: str) -> str:
    """Documents of a source are named under it, so two sources never collide (a URL's scheme
    is left out: http and https of one page are one document)."""
    if spec.kind == "web":
        parts = urlsplit(key)
        key = parts.netloc + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return f"{spec.name}/{key}"


class _Plan:
    """The comparison, made while the items stream past (the pipeline embeds and writes the
    documents it yields while later items are still being read)."""

    def __init__(self, spec: SourceSpec, previous: dict[str, Entry], stored: dict[str, str], settings: Settings,
                 summary: SyncSummary):
        self.spec, self.previous, self.settings, self.summary = spec, previous, settings, summary
        self.ocr = OcrOptions.from_settings(settings)
        self.intact = {k: e for k, e in previous.items() if e.intact(stored)}
        self.seen: set[str] = set()  # keys the source holds now (read, unchanged or failed)
        self.entries: dict[str, Entry] = {}  # what to record of each item, once its documents are stored
        self.moves: list[tuple[Item, str]] = []  # new items with a gone item's bytes: (item, hash)
        self.complete = False
        single = [(e.content_hash, k) for k, e in previous.items() if len(e.documents) == 1]
        self.by_hash = dict(single)

    def known(self) -> dict[str, Any]:
        return {k: e.known() for k, e in self.intact.items()}

    def documents(self, items: Iterable[Item | ItemFailure], stop: threading.Event) -> Iterator[Document]:
        for item in items:
            self.seen.add(item.key)
            if isinstance(item, ItemFailure):
                self.summary.fail(item.key, item.reason)
                continue
            yield from self._compare(item)
        self.complete = not stop.is_set()  # a reader stopped early returns, it does not raise

    def _compare(self, item: Item) -> Iterator[Document]:
        entry = self.intact.get(item.key)
        digest = None if item.data is None else sha256(item.data)
        if digest is None or (entry is not None and entry.content_hash == digest):
            if entry is None:  # the reader skipped an item it was not told about: a reader bug
                self.summary.fail(item.key, "not read, and not known from an earlier sync")
                return
            self.summary.unchanged += 1
            self.entries[item.key] = replace(entry, signal=item.signal, extra=dict(item.extra))
            return
        if item.key not in self.previous and digest in self.by_hash:
            self.moves.append((item, digest))  # decided once the whole source is read
            return
        yield from self._parse(item, digest)

    def _parse(self, item: Item, digest: str) -> Iterator[Document]:
        assert item.data is not None
        try:
            parsed = parse_file(_parse_path(self.spec, item), document_id(self.spec, item.key), item.data,
                                max_bytes=self.settings.max_document_bytes, ocr=self.ocr)
        except ParseError as e:
            self.summary.fail(item.key, e.reason)
            return
        for error in parsed.errors:
            self.summary.fail(item.key, error.reason)
        documents = [self._placed(d, item) for d in parsed.documents]
        self.entries[item.key] = Entry(item.signal, digest, item.location, {d.id: d.content_hash for d in documents},
                                       dict(item.extra))
        yield from documents

    def _placed(self, document: Document, item: Item) -> Document:
        """The document as the source places it: its location (what citations show and link
        to), which source it came from, and the source's access groups."""
        metadata = {**document.metadata, "source_name": self.spec.name, "source_kind": self.spec.kind,
                    "location": item.location}
        return replace(document, source=item.location, metadata=metadata, groups=tuple(self.spec.groups))

    def gone(self) -> list[str]:
        return [k for k in self.previous if k not in self.seen]

    def renamed(self, store: Store) -> Iterator[Document]:
        """Renames: a new item whose bytes are those of an item gone from the source takes over its
        document (same chunks, same vectors, new id and location). Anything else is written anew."""
        gone = set(self.gone())
        records = store.documents(self.spec.collection) if self.moves else {}
        for item, digest in self.moves:
            old_key = self.by_hash.get(digest)
            old = self.previous.get(old_key) if old_key in gone else None
            if old is None or old_key not in self.intact:
                yield from self._parse(item, digest)
                continue
            gone.discard(old_key)
            (old_id, content_hash), = old.documents.items()
            new_id = document_id(self.spec, item.key)
            record = records.get(old_id)
            metadata = {**(record.metadata if record else {}), "location": item.location}
            if store.rename_document(self.spec.collection, old_id, new_id, source=item.location, metadata=metadata):
                self.summary.renamed += 1
                self.entries[item.key] = Entry(item.signal, digest, item.location, {new_id: content_hash}, dict(item.extra))
                self.previous.pop(old_key)  # taken over: not deleted below
            else:
                yield from self._parse(item, digest)

    def delete_gone(self, store: Store) -> None:
        for key in self.gone():
            for doc_id in self.previous[key].documents:
                self.summary.deleted += bool(store.delete_document(self.spec.collection, doc_id))

    def recorded(self, store: Store) -> dict[str, Entry]:
        """What the next sync starts from: each item whose documents the store now holds as
        recorded. An item that failed, was not reached, or whose write did not complete keeps its
        earlier entry (read again next time; deleted when it leaves the source)."""
        stored = _stored(store, self.spec.collection, self.settings)
        kept = {k: e for k, e in self.previous.items() if k in self.seen or not self.complete}
        written = {k: e for k, e in self.entries.items() if e.intact(stored)}
        return {**kept, **written}


def _parse_path(spec: SourceSpec, item: Item) -> PurePosixPath:
    """The name the parser sees: it picks the format by suffix, and a page with no title of its
    own is titled by the name."""
    path = PurePosixPath(urlsplit(item.key).path if spec.kind == "web" else item.key)
    name = path.name or "index"
    if not name.lower().endswith(item.suffix):
        name += item.suffix
    return path.with_name(name) if path.name else PurePosixPath(name)


def sync(
    spec: SourceSpec,
    reader: SourceReader,
    *,
    store: Store,
    embedder: Embedder,
    settings: Settings,
    registry: SourceRegistry,
    stop: threading.Event | None = None,
    progress: bool | ProgressFn = False,
) -> SyncSummary:
    """Apply the difference between `reader`'s source and the collection. SourceError (from the
    reader, before anything is written) propagates; a stop request ends it after the document
    being written, deleting nothing."""
    stop = stop or threading.Event()
    summary = SyncSummary(spec.name, spec.collection)
    previous = registry.entries(spec)
    plan = _Plan(spec, previous, _stored(store, spec.collection, settings), settings, summary)
    items = reader.read(plan.known(), stop)
    _write(plan.documents(items, stop), spec, store, embedder, settings, stop, progress, summary)
    if plan.complete:
        _write(plan.renamed(store), spec, store, embedder, settings, stop, progress, summary)
        plan.delete_gone(store)
    summary.reader = reader.describe()
    registry.save_entries(spec, plan.recorded(store))
    summary.status = "cancelled" if stop.is_set() else "done"
    summary.finished = time.time()
    summary.seconds = round(summary.finished - summary.started, 3)
    return summary


def _stored(store: Store, collection: str, settings: Settings) -> dict[str, str]:
    """The content hash of each document stored with this run's ingest recipe (one stored with
    another is left out: stale, to be written again)."""
    current = recipe(settings)
    try:
        records = store.documents(collection)
    except UnknownCollection:
        return {}
    return {doc_id: r.content_hash for doc_id, r in records.items() if made_with(r, current)}


def _write(documents: Iterable[Document], spec: SourceSpec, store: Store, embedder: Embedder, settings: Settings,
           stop: threading.Event, progress: bool | ProgressFn, summary: SyncSummary) -> None:
    done = ingest_documents(documents, collection=spec.collection, store=store, embedder=embedder,
                            settings=settings, progress=progress, stop=stop)
    summary.added += done.documents_new
    summary.updated += done.documents_updated
    summary.refreshed += done.documents_refreshed
    summary.unchanged += done.documents_unchanged  # read again (not recorded as synced) but the same
    summary.chunks_written += done.chunks_written
    for failure in done.failed:
        summary.fail(failure["path"], failure["reason"])
