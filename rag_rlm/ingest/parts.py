"""The stream between parsing and the store: documents as parts, grouped into embed batches.

    document -> segments -> a Part per segment (its chunks and sentences, offsets and indices
                the document's own) -> batches of about `limit` chunks, across documents
             -> embedded on the embed thread, IN_FLIGHT batches ahead of the writer

A small document is one part, and several documents share a batch (the model runs on full
batches); a large one is many parts, and at no time are more than a few batches' chunks, tokens
and vectors in memory, whatever the document's size.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

from rag_rlm.config import Settings
from rag_rlm.embed import Embedder
from rag_rlm.types import Chunk, Document, Sentence

from .chunker import chunk_text
from .segments import segments
from .sentences import SentenceSplitter
from .sentvec import pool_sentences

T = TypeVar("T")


@runtime_checkable
class TokenEmbedder(Protocol):
    """An embedder that also returns each text's token vectors (sentence vectors by pooling)."""

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]: ...


@dataclass
class Part:
    """Consecutive chunks of one document (all of a small one) and the sentences they cover;
    the vectors are filled in by `embed_batch`."""

    document: Document
    chunks: list[Chunk]
    sentences: list[Sentence]
    last: bool = False  # the document's last part
    vectors: np.ndarray | None = None
    sentence_vectors: np.ndarray | None = None


def document_parts(document: Document, embedder: Embedder, settings: Settings) -> Iterator[Part]:
    """The parts of `document` in order, the last one marked; none when it has no text. Made
    lazily, one segment ahead (to know which part is the last)."""
    parts = (p for p in _segment_parts(document, embedder, settings) if p.chunks)
    part = next(parts, None)
    if part is None:
        return
    for following in parts:
        yield part
        part = following
    part.last = True
    yield part


def _segment_parts(document: Document, embedder: Embedder, settings: Settings) -> Iterator[Part]:
    splitter = SentenceSplitter(document.id)  # headings and fences carry across segments
    index = 0
    for start, end in segments(document.text):
        piece = document.text[start:end]
        chunks = chunk_text(document.id, piece, embedder, chunk_tokens=settings.chunk_tokens,
                            overlap=settings.chunk_overlap, base=start, first_index=index)
        index += len(chunks)
        yield Part(document, chunks, splitter.split(piece, start))


def batches(steps: Iterable[T], limit: int) -> Iterator[list[T]]:
    """Consecutive steps, a batch closed once its parts hold `limit` chunks. Anything else (a
    skipped or failed file) rides behind the parts before it, to keep the order; with no part
    waiting it goes on at once."""
    batch: list[T] = []
    chunks = 0
    for step in steps:
        if not isinstance(step, Part) and not chunks:
            yield [step]
            continue
        batch.append(step)
        if isinstance(step, Part):
            chunks += len(step.chunks)
            if chunks >= limit:
                yield batch
                batch, chunks = [], 0
    if batch:
        yield batch


def submit(pool: Executor, embedder: Embedder, batch: list[T], how: str) -> Future[list[T]]:
    """The batch with its parts' vectors, on the embed thread (at once when it has no part)."""
    if any(isinstance(step, Part) for step in batch):
        return pool.submit(embed_batch, embedder, batch, how)
    done: Future[list[T]] = Future()
    done.set_result(batch)
    return done


def embed_batch(embedder: Embedder, batch: list[T], how: str) -> list[T]:
    """Fills in the vectors of the batch's parts in one embedder call; sentence vectors pooled
    from the chunks' token vectors (how == "pool") or encoded with the chunks."""
    parts = [step for step in batch if isinstance(step, Part)]
    if how == "pool" and isinstance(embedder, TokenEmbedder):
        vectors, tokens = embedder.embed_with_tokens([c.text for p in parts for c in p.chunks])
        row = 0
        for p in parts:
            n = len(p.chunks)
            p.vectors, p.sentence_vectors = vectors[row:row + n], pool_sentences(p.chunks, tokens[row:row + n],
                                                                                p.sentences)
            row += n
        return batch
    vectors = embedder.embed([t for p in parts for t in [*(c.text for c in p.chunks), *(s.text for s in p.sentences)]])
    row = 0
    for p in parts:
        n, m = len(p.chunks), len(p.sentences)
        p.vectors, p.sentence_vectors = vectors[row:row + n], vectors[row + n:row + n + m]
        row += n + m
    return batch


def ahead(futures: Iterator[Future[T]], n: int) -> Iterator[T]:
    """The futures' results in order, `n` more submitted ahead of the one waited on, so the
    embedder is never idle while the writer writes. Closing it cancels what has not started."""
    queue: deque[Future[T]] = deque()
    try:
        for future in futures:
            queue.append(future)
            if len(queue) > n:
                yield queue.popleft().result()
        while queue:
            yield queue.popleft().result()
    finally:
        for future in queue:
            future.cancel()
