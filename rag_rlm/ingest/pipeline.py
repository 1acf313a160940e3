"""The ingest flow, shared by the CLI and the HTTP upload endpoint.

    discover -> hash raw bytes (unchanged and stored with this recipe: skip, no parsing) -> parse
      -> parts: a document's text in bounded segments, each chunked and sentence-split
         (parts.py, segments.py; a small document is one part)
      -> embed chunks and sentences in batches across documents and parts (a background
         thread keeps the model busy)
      -> store.write_parts per document, its parts consumed as they arrive: chunks, sentences
         (sentence memory), and its record with the hash and recipe last

A document is skipped only when its stored record holds the same bytes made with the same ingest
recipe (recipe.py: this release's segmentation and the chunking and embedding settings); one
stored under another recipe is written again and counted as updated and as refreshed.

Sentence vectors are, by default, the mean of the chunk pass's token vectors over each sentence
(settings.sentence_vectors = "pool"): the same forward pass makes chunk and sentence vectors, so
ingest runs as fast as without sentences. Encoding each sentence on its own ("encode") ranked
answer-bearing sentences a little better on the dev sets (bench_sentence_vectors.py: p@1 +1 to +3
points, MRR +2 to +5) for ~2.3x the encode work (bench_ingest.py: a quarter of the throughput).

The embedder is the bottleneck, so it runs in its own thread on batches of chunks from
several documents while this thread parses, chunks and writes. Only this thread touches the
store. Memory holds a few batches, never a whole large document's chunks or vectors (issue 9:
bench/bench_ingest_memory.py). A failed file is recorded and the run goes on; a stop request
(Ctrl-C) ends the run after the document being written, or inside a large one between two parts
(the store keeps its old version); whatever was not written is redone by the next run.

Access groups (rag_rlm.access): `ingest_paths(groups=...)` gives every document those groups
(None keeps a stored document's groups; a new one gets none), and `ingest_documents` writes each
document's own. A document whose content is unchanged but whose groups differ gets the new ones
without being parsed or embedded again (`store.set_groups`, counted as updated). A writer whose
`access` does not read a stored document cannot replace it: that document fails, unchanged.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rag_rlm.access import EVERYTHING, Access, normalise_groups
from rag_rlm.config import Settings
from rag_rlm.embed import Embedder
from rag_rlm.errors import StoreError, UnknownCollection
from rag_rlm.memory.base import DocumentPart, Store
from rag_rlm.types import Document, DocumentRecord

from .discover import SourceFile, discover
from .ocr import OcrOptions
from .parsers import MULTI_DOCUMENT_FORMATS, PARSERS, ParseError, parse_file, sha256
from .parts import Part, ahead, batches, document_parts, submit
from .recipe import METADATA_KEY, is_current, recipe

ProgressFn = Callable[[int, int | None, int], None]  # (documents done, total or None, chunks written)
# Chunks go to the embedder EMBED_GROUP batches at a time: sentence-transformers sorts each call's
# texts by length before batching, so a larger call pads less; a smaller one lets writing the
# last group overlap less with encoding. bench_ingest.py: 64 chunks a call ran at 0.65x the raw
# encode throughput, 256 at 0.80x.
EMBED_GROUP = 4
IN_FLIGHT = 2  # embed batches queued ahead of the writer: enough to never leave the model idle
HIDDEN = "not written: a stored document of this id is in access groups this caller does not hold"


@dataclass
class IngestSummary:
    documents_new: int = 0
    documents_updated: int = 0
    documents_refreshed: int = 0  # of the updated: same bytes, stored under an older ingest recipe
    documents_unchanged: int = 0
    documents_failed: int = 0
    documents_pruned: int = 0
    chunks_written: int = 0
    seconds: float = 0.0
    chunks_per_second: float = 0.0
    failed: list[dict[str, str]] = field(default_factory=list)
    interrupted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def fail(self, path: str, reason: str) -> None:
        self.documents_failed += 1
        self.failed.append({"path": path, "reason": reason})


@dataclass
class _Item:
    """One step of the stream the producers hand to the writer."""

    document: Document | None = None  # to chunk, embed and write
    unchanged: bool = False
    error: ParseError | None = None
    document_id: str = ""  # of an unchanged document
    regroup: tuple[str, ...] | None = None  # unchanged content whose stored groups become these


def ingest_paths(
    paths: Iterable[str | Path],
    *,
    collection: str,
    store: Store,
    embedder: Embedder,
    settings: Settings,
    glob: str | None = None,
    prune: bool = False,
    progress: bool | ProgressFn = True,
    stop: threading.Event | None = None,
    relative_sources: bool = False,
    groups: Collection[str] | None = None,
    access: Access = EVERYTHING,
) -> IngestSummary:
    """Ingest files and folders into `collection`. Raises FileNotFoundError for a missing path.
    `relative_sources`: store each document's source as its path under the root given (uploads,
    whose temporary folder means nothing later) instead of the absolute path. `groups`: the
    documents' access groups (None: keep the stored ones); `access`: what the writer reads
    (module docstring)."""
    paths = list(paths)  # read twice: discovery, then the roots that --prune may touch
    sources = discover(paths, glob=glob, suffixes=PARSERS, exclude=[settings.data_dir])
    known = _known(store, collection)
    # a file of several documents (JSONL, mail) makes the count of documents unknown until parsed
    total = None if any(s.path.suffix.lower() in MULTI_DOCUMENT_FORMATS for s in sources) else len(sources)
    seen: set[str] = set()
    parsed_ok: set[str] = set()
    wanted = None if groups is None else normalise_groups(groups)
    items = _file_items(sources, known, seen, parsed_ok, settings.max_document_bytes, OcrOptions.from_settings(settings),
                        relative_sources, _Rules(wanted, access, recipe(settings)))
    summary = _run(items, known, collection, store, embedder, settings, progress, stop, total)
    if prune and not summary.interrupted:
        roots = [Path(p).resolve() for p in paths]
        summary.documents_pruned = _prune(store, collection, known, roots, seen, parsed_ok)
    return summary


def ingest_documents(
    documents: Iterable[Document],
    *,
    collection: str,
    store: Store,
    embedder: Embedder,
    settings: Settings,
    progress: bool | ProgressFn = False,
    stop: threading.Event | None = None,
    access: Access = EVERYTHING,
) -> IngestSummary:
    """Ingest already-parsed documents (a sync's); unchanged content hashes are skipped, and each
    document's own access groups are written (an unchanged one's too, without re-embedding)."""
    known = _known(store, collection)
    rules = _Rules(None, access, recipe(settings))

    def items() -> Iterator[_Item]:
        for doc in documents:
            yield rules.item(doc.id, doc.source or doc.id, known.get(doc.id), doc, normalise_groups(doc.groups))

    return _run(items(), known, collection, store, embedder, settings, progress, stop, None)


def _known(store: Store, collection: str) -> dict[str, DocumentRecord]:
    try:
        return dict(store.documents(collection))
    except UnknownCollection:
        return {}


@dataclass(frozen=True)
class _Rules:
    """What a run does with a document it meets, given its stored record: the groups it writes
    (None: the stored ones), what the writer may replace, and the recipe a stored document must
    have been made with to be left as it is."""

    groups: tuple[str, ...] | None
    access: Access
    recipe: str

    def current(self, record: DocumentRecord | None, content_hash: str) -> bool:
        return record is not None and is_current(record, content_hash, self.recipe)

    def item(self, doc_id: str, path: str, record: DocumentRecord | None, doc: Document | None,
             own: tuple[str, ...] | None = None) -> _Item:
        """`doc` None: its content is known to be unchanged (not parsed); `own`: the document's
        own groups, which win over the run's (a sync's documents)."""
        if record is not None and not self.access.allows(record.groups):
            return _Item(error=ParseError(path, HIDDEN))
        wanted = own if own is not None else self.groups
        if wanted is None:
            wanted = record.groups if record is not None else ()
        if doc is not None and not self.current(record, doc.content_hash):
            return _Item(replace(doc, groups=wanted, metadata={**doc.metadata, METADATA_KEY: self.recipe}))
        regroup = wanted if record is not None and tuple(record.groups) != wanted else None
        return _Item(unchanged=True, document_id=doc_id, regroup=regroup)


def _file_items(
    sources: list[SourceFile], known: dict[str, DocumentRecord], seen: set[str], parsed_ok: set[str],
    max_bytes: int, ocr: OcrOptions, relative: bool, rules: _Rules,
) -> Iterator[_Item]:
    """Read, hash and parse files lazily, so memory holds only the documents in flight."""
    for source in sources:
        path = str(source.path)
        try:
            size = source.path.stat().st_size
            if size > max_bytes:  # refused before reading: one huge file must not exhaust memory
                yield _Item(error=ParseError(path, f"the file is {size} bytes, over the limit of {max_bytes} "
                                                   f"(max_document_bytes)"))
                continue
            data = source.path.read_bytes()
        except OSError as e:
            yield _Item(error=ParseError(path, f"unreadable: {e.strerror or e}"))
            continue
        record = known.get(source.doc_id)
        if source.path.suffix.lower() != ".jsonl" and rules.current(record, sha256(data)):
            seen.add(source.doc_id)  # unchanged: no parsing at all
            yield rules.item(source.doc_id, path, record, None)
            continue
        try:
            parsed = parse_file(source.path, source.doc_id, data, max_bytes=max_bytes, ocr=ocr)
        except ParseError as e:
            yield _Item(error=e)
            continue
        del data  # the raw bytes need not stay while a large file's text is ingested
        if not parsed.errors:  # a JSONL file with bad lines: their ids are unknown, prune nothing
            parsed_ok.add(path)
        yield from (_Item(error=e) for e in parsed.errors)
        for doc in parsed.documents:
            if relative:
                doc = replace(doc, source=source.path.relative_to(source.root).as_posix())
            if doc.id in seen:
                yield _Item(error=ParseError(path, f"duplicate document id {doc.id!r} (already ingested from "
                                                   f"another file in this run)"))
                continue
            seen.add(doc.id)
            yield rules.item(doc.id, path, known.get(doc.id), doc)


_Step = _Item | Part  # what flows from the files to the writer, in order


class _Interrupted(Exception):
    """A stop request in the middle of a document: raised through the store's write, which
    then keeps the document's old version."""


def _run(
    items: Iterable[_Item],
    known: dict[str, DocumentRecord],
    collection: str,
    store: Store,
    embedder: Embedder,
    settings: Settings,
    progress: bool | ProgressFn,
    stop: threading.Event | None,
    total: int | None,
) -> IngestSummary:
    summary = IngestSummary()
    started = time.perf_counter()
    writer = _Writer(store, collection, known, summary, _progress(progress, total), total, stop or threading.Event())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed") as pool:
        groups = batches(_steps(items, embedder, settings), settings.batch_size * EMBED_GROUP)
        embedded = ahead((submit(pool, embedder, b, settings.sentence_vectors) for b in groups), IN_FLIGHT)
        try:
            writer.run(step for batch in embedded for step in batch)
        finally:
            embedded.close()  # interrupted: drop what is queued, let the running encode end
            summary.seconds = round(time.perf_counter() - started, 3)
            summary.chunks_per_second = round(summary.chunks_written / summary.seconds, 1) if summary.seconds else 0.0
            writer.report.close()
    return summary


def _steps(items: Iterable[_Item], embedder: Embedder, settings: Settings) -> Iterator[_Step]:
    """Files and records as they come, each document turned into its parts (on this thread,
    while the embed thread encodes the batches before)."""
    for item in items:
        if item.document is None or item.unchanged:
            yield item
            continue
        empty = True
        for part in document_parts(item.document, embedder, settings):
            empty = False
            yield part
        if empty:
            yield _Item(error=ParseError(item.document.source, "empty: no text"))


class _Writer:
    """The one user of the store: counts what was skipped or failed, and writes each document
    from its parts as they arrive embedded."""

    def __init__(self, store: Store, collection: str, known: dict[str, DocumentRecord], summary: IngestSummary,
                 report: _Bar, total: int | None, stop: threading.Event):
        self.store, self.collection, self.known, self.summary = store, collection, known, summary
        self.report, self.total, self.stop = report, total, stop
        self.done = 0  # documents (and failures) counted
        self.writing = 0  # chunks of the document being written so far

    def run(self, steps: Iterator[_Step]) -> None:
        for step in steps:
            if self.stop.is_set():
                self.summary.interrupted = True
                return
            if isinstance(step, Part):
                if not self._document(step, steps):
                    self.summary.interrupted = True
                    return
            elif step.error is not None:
                self.summary.fail(step.error.path, step.error.reason)
            elif step.regroup is not None:
                self._regroup(step.document_id, step.regroup)
            else:
                self.summary.documents_unchanged += 1
            self.done += 1
            self.report(self.done, self.total, self.summary.chunks_written)

    def _regroup(self, document_id: str, groups: tuple[str, ...]) -> None:
        """Unchanged content, new access groups: the record and chunks change, nothing is embedded."""
        try:
            if self.store.set_groups(self.collection, document_id, groups):
                self.summary.documents_updated += 1
                return
            reason = "deleted while this run went on"
        except StoreError as e:
            reason = f"store: {e}"
        self.summary.fail(document_id, f"groups not changed: {reason}")

    def _document(self, first: Part, steps: Iterator[_Step]) -> bool:
        """Write the document that `first` begins; False when a stop request cut it short."""
        doc, parts = first.document, self._parts(first, steps)
        try:
            self.store.write_parts(self.collection, doc, parts)
        except _Interrupted:
            return False
        except StoreError as e:  # this document is not stored; the store kept what it had
            self.summary.fail(doc.source if doc.source else doc.id, f"store: {e}")
            try:
                for _ in parts:  # its parts still queued are passed over
                    pass
            except _Interrupted:
                return False
            return True
        if doc.id in self.known:
            self.summary.documents_updated += 1
            self.summary.documents_refreshed += self.known[doc.id].content_hash == doc.content_hash
        else:
            self.summary.documents_new += 1
        self.summary.chunks_written += self.writing
        return True

    def _parts(self, first: Part, steps: Iterator[_Step]) -> Iterator[DocumentPart]:
        """The document's parts for the store, pulled from the stream as the store asks."""
        part, self.writing = first, 0
        while True:
            yield DocumentPart(part.chunks, part.vectors, part.sentences, part.sentence_vectors)
            self.writing += len(part.chunks)
            if part.last:
                return
            # a large document moves the bar part by part, and a stop request need not wait for it
            self.report(self.done, self.total, self.summary.chunks_written + self.writing)
            if self.stop.is_set():
                raise _Interrupted
            step = next(steps)
            assert isinstance(step, Part) and step.document is first.document, "a document's parts are consecutive"
            part = step


def _prune(
    store: Store, collection: str, known: dict[str, DocumentRecord], roots: list[Path],
    seen: set[str], parsed_ok: set[str],
) -> int:
    """Delete documents stored from files under `roots` that are gone, and records of a JSONL
    file that parsed cleanly this run but no longer holds them. Documents from elsewhere (other
    folders, uploads) are never touched."""
    pruned = 0
    for doc_id, record in known.items():
        if doc_id in seen or not record.source:
            continue
        source = Path(record.source)
        if not any(source == r or r in source.parents for r in roots):
            continue
        if not source.exists() or str(source) in parsed_ok:
            pruned += bool(store.delete_document(collection, doc_id))
    return pruned


class _Bar:
    def __init__(self, fn: ProgressFn | None, bar: Any):
        self.fn, self.bar = fn, bar

    def __call__(self, done: int, total: int | None, chunks: int) -> None:
        if self.fn is not None:
            self.fn(done, total, chunks)
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
            self.bar.set_postfix(chunks=chunks, refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _progress(progress: bool | ProgressFn, total: int | None) -> _Bar:
    """A tqdm bar on stderr when asked for and stderr is a terminal; or the caller's callback."""
    if callable(progress):
        return _Bar(progress, None)
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        return _Bar(None, tqdm(total=total, unit="doc", file=sys.stderr, dynamic_ncols=True))
    return _Bar(None, None)
