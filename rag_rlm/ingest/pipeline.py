"""The ingest flow, shared by the CLI and the HTTP upload endpoint.

    discover -> hash raw bytes (unchanged: skip, no parsing) -> parse -> chunk, split sentences
      -> embed chunks and sentences in batches across documents (a background thread keeps
         the model busy)
      -> store.write_document per document: chunks, sentences (sentence memory), and its
         record with the hash last

Sentence vectors are, by default, the mean of the chunk pass's token vectors over each sentence
(settings.sentence_vectors = "pool"): the same forward pass makes chunk and sentence vectors, so
ingest runs as fast as without sentences. Encoding each sentence on its own ("encode") ranked
answer-bearing sentences a little better on the dev sets (bench_sentence_vectors.py: p@1 +1 to +3
points, MRR +2 to +5) for ~2.3x the encode work (bench_ingest.py: a quarter of the throughput).

The embedder is the bottleneck, so it runs in its own thread on batches of chunks from
several documents while this thread parses, chunks and writes. Only this thread touches the
store. A failed file is recorded and the run goes on; a stop request (Ctrl-C) ends the run
after the document being written, and whatever was not written is redone by the next run.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rag_rlm.config import Settings
from rag_rlm.embed import Embedder
from rag_rlm.errors import StoreError, UnknownCollection
from rag_rlm.memory.base import Store
from rag_rlm.types import Chunk, Document, DocumentRecord, Sentence

from .chunker import chunk_text
from .discover import SourceFile, discover
from .parsers import PARSERS, ParseError, parse_file, sha256
from .sentences import split_sentences
from .sentvec import pool_sentences

ProgressFn = Callable[[int, int | None, int], None]  # (documents done, total or None, chunks written)
# Chunks go to the embedder EMBED_GROUP batches at a time: sentence-transformers sorts each call's
# texts by length before batching, so a larger call pads less; a smaller one lets writing the
# last group overlap less with encoding. bench_ingest.py: 64 chunks a call ran at 0.65x the raw
# encode throughput, 256 at 0.80x.
EMBED_GROUP = 4
IN_FLIGHT = 2  # embed batches queued ahead of the writer: enough to never leave the model idle


@dataclass
class IngestSummary:
    documents_new: int = 0
    documents_updated: int = 0
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
) -> IngestSummary:
    """Ingest files and folders into `collection`. Raises FileNotFoundError for a missing path.
    `relative_sources`: store each document's source as its path under the root given (uploads,
    whose temporary folder means nothing later) instead of the absolute path."""
    paths = list(paths)  # read twice: discovery, then the roots that --prune may touch
    sources = discover(paths, glob=glob, suffixes=PARSERS, exclude=[settings.data_dir])
    known = _known(store, collection)
    total = None if any(s.path.suffix.lower() == ".jsonl" for s in sources) else len(sources)
    seen: set[str] = set()
    parsed_ok: set[str] = set()
    items = _file_items(sources, known, seen, parsed_ok, settings.max_document_bytes, relative_sources)
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
) -> IngestSummary:
    """Ingest already-parsed documents (uploads); unchanged content hashes are skipped."""
    known = _known(store, collection)

    def items() -> Iterator[_Item]:
        for doc in documents:
            record = known.get(doc.id)
            yield _Item(doc, unchanged=record is not None and record.content_hash == doc.content_hash)

    return _run(items(), known, collection, store, embedder, settings, progress, stop, None)


def _known(store: Store, collection: str) -> dict[str, DocumentRecord]:
    try:
        return dict(store.documents(collection))
    except UnknownCollection:
        return {}


def _file_items(
    sources: list[SourceFile], known: dict[str, DocumentRecord], seen: set[str], parsed_ok: set[str],
    max_bytes: int, relative: bool,
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
        if source.path.suffix.lower() != ".jsonl" and record and record.content_hash == sha256(data):
            seen.add(source.doc_id)  # unchanged: no parsing at all
            yield _Item(unchanged=True)
            continue
        try:
            parsed = parse_file(source.path, source.doc_id, data, max_bytes=max_bytes)
        except ParseError as e:
            yield _Item(error=e)
            continue
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
            record = known.get(doc.id)
            yield _Item(doc, unchanged=record is not None and record.content_hash == doc.content_hash)


@dataclass
class _Pending:
    document: Document
    chunks: list[Chunk]
    sentences: list[Sentence]


@dataclass
class _Batch:
    documents: list[_Pending]
    vectors: Future[np.ndarray]  # the chunks' rows, then the sentences', document by document


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
    report = _progress(progress, total)
    done = 0
    pending: list[_Pending] = []
    pending_chunks = 0
    in_flight: deque[_Batch] = deque()
    stop = stop or threading.Event()

    def tick(n: int = 1) -> None:
        nonlocal done
        done += n
        report(done, total, summary.chunks_written)

    def write(batch: _Batch) -> None:
        vectors = batch.vectors.result()
        row = 0
        for p in batch.documents:
            if stop.is_set():
                summary.interrupted = True
                return
            n, m = len(p.chunks), len(p.sentences)
            _write_one(store, collection, p, vectors[row:row + n], vectors[row + n:row + n + m], known, summary)
            row += n + m
            tick()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed") as pool:
        def submit() -> None:
            nonlocal pending, pending_chunks
            in_flight.append(_Batch(pending, pool.submit(_embed, embedder, pending, settings.sentence_vectors)))
            pending, pending_chunks = [], 0
            while len(in_flight) > IN_FLIGHT and not summary.interrupted:
                write(in_flight.popleft())

        try:
            for item in items:
                if stop.is_set() or summary.interrupted:
                    summary.interrupted = True
                    break
                if item.error is not None:
                    summary.fail(item.error.path, item.error.reason)
                    tick()
                elif item.unchanged:
                    summary.documents_unchanged += 1
                    tick()
                else:
                    assert item.document is not None
                    chunks = _chunks(item.document, embedder, settings)
                    if not chunks:
                        summary.fail(item.document.source, "empty: no text")
                        tick()
                        continue
                    pending.append(_Pending(item.document, chunks, split_sentences(item.document.text,
                                                                                   item.document.id)))
                    pending_chunks += len(chunks)
                    if pending_chunks >= settings.batch_size * EMBED_GROUP:
                        submit()
            if pending and not summary.interrupted:
                submit()
            while in_flight and not summary.interrupted:
                write(in_flight.popleft())
        finally:
            for batch in in_flight:  # interrupted: drop what is queued, let the running encode end
                batch.vectors.cancel()
            summary.seconds = round(time.perf_counter() - started, 3)
            summary.chunks_per_second = round(summary.chunks_written / summary.seconds, 1) if summary.seconds else 0.0
            report.close()
    return summary


def _embed(embedder: Embedder, pending: list[_Pending], how: str) -> np.ndarray:
    """The vectors of a batch: each document's chunks, then its sentences (on the embed thread)."""
    with_tokens = getattr(embedder, "embed_with_tokens", None)
    if how != "pool" or with_tokens is None:
        return embedder.embed([t for p in pending for t in [*(c.text for c in p.chunks),
                                                             *(s.text for s in p.sentences)]])
    vectors, tokens = with_tokens([c.text for p in pending for c in p.chunks])
    parts, row = [], 0
    for p in pending:
        n = len(p.chunks)
        parts += [vectors[row:row + n], pool_sentences(p.chunks, tokens[row:row + n], p.sentences)]
        row += n
    return np.concatenate(parts).astype(np.float32, copy=False)


def _chunks(document: Document, embedder: Embedder, settings: Settings) -> list[Chunk]:
    return chunk_text(document.id, document.text, embedder,
                      chunk_tokens=settings.chunk_tokens, overlap=settings.chunk_overlap)


def _write_one(
    store: Store, collection: str, p: _Pending, vectors: np.ndarray, sentence_vectors: np.ndarray,
    known: dict[str, DocumentRecord], summary: IngestSummary,
) -> None:
    doc, chunks = p.document, p.chunks
    try:
        store.write_document(collection, doc, chunks, vectors, p.sentences, sentence_vectors)
    except StoreError as e:  # this document is not stored; the store kept what it had
        summary.fail(doc.source if doc.source else doc.id, f"store: {e}")
        return
    if doc.id in known:
        summary.documents_updated += 1
    else:
        summary.documents_new += 1
    summary.chunks_written += len(chunks)


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
