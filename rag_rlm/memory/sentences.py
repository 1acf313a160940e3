"""What both stores share of sentence memory: checking what is written, choosing the sentences
that overlap spans, and rebuilding a document's text from its chunks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..errors import StoreError
from ..types import Chunk, Document, Sentence, Span
from .base import DocumentPart


def rebuild_text(chunks: Sequence[tuple[str, int, int]]) -> str:
    """A document's text from its (text, start, end) chunks: every chunk at its own offsets,
    overlaps written once, the gaps between chunks (white space only) as newlines."""
    parts: list[str] = []
    pos = 0
    for text, start, end in sorted(chunks, key=lambda c: (c[1], c[2])):
        if end <= pos:
            continue
        if start > pos:
            parts.append("\n" * (start - pos))
            pos = start
        parts.append(text[pos - start:])
        pos = end
    return "".join(parts)


def check_part(document: Document, part: DocumentPart, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A part's chunk and sentence vectors as float32 arrays, after checking that they match
    the part and that everything belongs to `document`; `dim`: the dimension of the parts
    before it (every part of one document has the same)."""
    vectors = check_chunks(document, part.chunks, part.vectors)
    if dim is not None and vectors.shape[1] != dim:
        raise StoreError(f"document {document.id!r}: a part has {vectors.shape[1]}-dimensional vectors, "
                         f"the ones before it {dim}")
    return vectors, check_sentences(document, part.sentences, part.sentence_vectors, vectors.shape[1])


def check_chunks(document: Document, chunks: Sequence[Chunk], vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(chunks) or vectors.shape[1] == 0:
        raise StoreError(
            f"document {document.id!r}: expected {len(chunks)} vectors as a 2-D array, got shape {vectors.shape}")
    for chunk in chunks:
        if chunk.document_id != document.id:
            raise StoreError(f"chunk {chunk.index} belongs to {chunk.document_id!r}, not {document.id!r}")
    return vectors


def check_sentences(
    document: Document, sentences: Sequence[Sentence], vectors: np.ndarray | None, dim: int
) -> np.ndarray:
    if not sentences:
        return np.zeros((0, dim), dtype=np.float32)
    array = np.asarray(vectors if vectors is not None else np.zeros((0, 0)), dtype=np.float32)
    if array.ndim != 2 or array.shape != (len(sentences), dim):
        raise StoreError(f"document {document.id!r}: expected {len(sentences)} sentence vectors of dimension"
                         f" {dim}, got shape {array.shape}")
    for s in sentences:
        if s.document_id != document.id:
            raise StoreError(f"sentence {s.index} belongs to {s.document_id!r}, not {document.id!r}")
    return array


def overlapping(sentences: Iterable[Sentence], spans: Sequence[Span]) -> list[Sentence]:
    """The sentences that overlap a span of their document, each once, grouped by document in
    the order the spans first name them, in document order within one."""
    rank: dict[str, int] = {}
    ranges: dict[str, list[tuple[int, int]]] = {}
    for span in spans:
        rank.setdefault(span.document_id, len(rank))
        ranges.setdefault(span.document_id, []).append((span.start, span.end))
    chosen = {(s.document_id, s.index): s for s in sentences
              if any(s.start < hi and s.end > lo for lo, hi in ranges.get(s.document_id, ()))}
    return sorted(chosen.values(), key=lambda s: (rank[s.document_id], s.index))
