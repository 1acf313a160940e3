"""Plain values that cross module boundaries: documents, chunks, spans."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Document:
    """A parsed source document, before chunking."""

    id: str
    title: str
    source: str  # path or URL it came from
    text: str
    content_hash: str  # hash of the raw bytes (or record) it was parsed from
    metadata: dict[str, Any] = field(default_factory=dict)
    groups: tuple[str, ...] = ()  # access groups (rag_rlm.access); none: everyone in the tenant reads it


@dataclass(frozen=True)
class Chunk:
    """A piece of a document; `start`/`end` are character offsets into `Document.text`."""

    document_id: str
    index: int
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class DocumentRecord:
    """What a store keeps about a document besides its chunks."""

    id: str
    title: str
    source: str
    content_hash: str
    chunk_count: int
    metadata: dict[str, Any] = field(default_factory=dict)
    groups: tuple[str, ...] = ()  # access groups, sorted; none: everyone in the tenant reads it


@dataclass(frozen=True)
class Span:
    """A retrieved chunk with its similarity score: the unit of evidence and citation."""

    document_id: str
    chunk_index: int
    title: str
    source: str
    text: str
    start: int
    end: int
    score: float

    @property
    def id(self) -> str:
        return span_id(self.document_id, self.chunk_index)


@dataclass(frozen=True)
class Sentence:
    """A sentence of a stored document, as a reader sees it: `text` has the Markdown syntax
    rendered away (heading marks, list bullets, table pipes, `[text](url)` as its text), while
    `start`/`end` are exact character offsets into `Document.text`, so a citation can point at
    (and highlight) the very place it quotes. `heading` is the section it sits under."""

    document_id: str
    index: int  # its position in the document
    text: str
    start: int
    end: int
    heading: str = ""
    kind: str = "text"  # text | heading | item (a list item) | row (a table row)


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    documents: int
    chunks: int
    version: str  # changes whenever the collection's content changes


def span_id(document_id: str, chunk_index: int) -> str:
    return f"{document_id}#{chunk_index}"
