"""The vector-store seam: what ingest, the controller and the server need from vector memory."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..types import Chunk, CollectionInfo, Document, DocumentRecord, Sentence, Span


@dataclass(frozen=True)
class DocumentPart:
    """Consecutive chunks of one document with their vectors, and the sentences they cover
    with theirs. Indices are the document's own: a later part continues where the one before
    ended."""

    chunks: Sequence[Chunk]
    vectors: np.ndarray
    sentences: Sequence[Sentence] = ()
    sentence_vectors: np.ndarray | None = None


@runtime_checkable
class VectorStore(Protocol):
    """Chunks with vectors, grouped by document, grouped by collection.

    Writes are per document and atomic as far as the backend allows: a write replaces every
    chunk and sentence of the document (a changed file never leaves old and new chunks mixed),
    and the document's record (with its content hash) is written last, so an interrupted ingest
    is simply redone by the next run.
    """

    def write_document(
        self, collection: str, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
        sentences: Sequence[Sentence] = (), sentence_vectors: np.ndarray | None = None,
    ) -> None:
        """Chunks with their vectors, and the document's sentences with theirs (sentence memory:
        answering then scores sentences without encoding them), in one atomic replacement:
        `write_parts` with one part."""
        ...

    def write_parts(self, collection: str, document: Document, parts: Iterable[DocumentPart]) -> None:
        """The document written as a sequence of parts, consumed one at a time (a large
        document's parts are embedded while the first ones are written, so its vectors never
        all exist at once); as atomic as `write_document`: readers see the old version until
        the last part is in, and when `parts` raises (or the store fails) the old version stays
        and the error propagates."""
        ...

    def delete_document(self, collection: str, document_id: str) -> bool: ...

    def rename_document(self, collection: str, old_id: str, new_id: str, *, source: str,
                        metadata: Mapping[str, Any] | None = None) -> bool:
        """Move a document's chunks, sentences and record to `new_id`, with its vectors as they
        are (a file renamed with unchanged content is not embedded again), the new `source`, and
        `metadata` replaced when given. A document already stored as `new_id` is replaced (its
        chunks and sentences gone). Atomic as far as the backend allows: readers see the old id
        or the new one, not both or neither; the collection's version changes. False (and
        nothing changed) when `old_id` does not exist."""
        ...

    def set_groups(self, collection: str, document_id: str, groups: Collection[str]) -> bool:
        """Replace a document's access groups (its record and every chunk; nothing is embedded
        again) and bump the collection's version; False when the document is not there."""
        ...

    def search(
        self,
        collection: str,
        vector: np.ndarray,
        k: int,
        where: Mapping[str, str] | None = None,
        text: str | None = None,
        groups: Collection[str] | None = None,
    ) -> list[Span]:
        """Top-k spans by cosine similarity, best first. `where` filters on document fields
        (`document_id`, `title`, `source` or a metadata key); `text`, when given and the store
        supports it, adds keyword search fused by reciprocal rank (hybrid search). `groups`:
        the caller's access groups (rag_rlm.access): only chunks of documents without groups or
        sharing one of them are searched, inside the store's query, and still k of them when
        that many exist; None searches every document."""
        ...


@runtime_checkable
class SentenceMemory(Protocol):
    """The sentences stored beside the chunks, read back for the spans an answer uses."""

    def sentences(self, collection: str, spans: Sequence[Span]) -> tuple[list[Sentence], np.ndarray]:
        """Every stored sentence that overlaps one of `spans` (same document, character ranges
        intersecting), each once, grouped by document in the order the spans name them and in
        document order within one; with their vectors as an (n, dim) float32 array. Empty
        (with a (0, dim) array) for documents written without sentences."""
        ...

    def document_text(self, collection: str, document_id: str) -> str:
        """The document's text rebuilt from its chunks, with the exact offsets of the original
        (gaps between chunks, which are only white space, come back as newlines). Raises
        UnknownCollection, or KeyError for a missing document."""
        ...


@runtime_checkable
class Catalog(Protocol):
    """What is stored: collections, their documents and content versions."""

    def collections(self) -> list[CollectionInfo]: ...

    def documents(self, collection: str) -> dict[str, DocumentRecord]: ...

    def collection_info(self, collection: str) -> CollectionInfo:
        """Raises UnknownCollection when it does not exist."""
        ...

    def version(self, collection: str) -> str:
        """`collection_info(collection).version` without the counts, which every answer would
        pay for (its memo key needs the version alone). UnknownCollection when absent."""
        ...


class Store(VectorStore, SentenceMemory, Catalog, Protocol):
    """A backend implements all three, plus `close`."""

    def close(self) -> None: ...
