"""What every parser shares: the error, the result, the content hash and the text shape."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rag_rlm.errors import RagRlmError
from rag_rlm.types import Document


class ParseError(RagRlmError):
    """A file (or one JSONL line) that cannot be turned into text; `reason` says why."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass
class Parsed:
    """What came out of one file: documents, and for JSONL the lines (for mail, the attachments)
    that failed on their own."""

    documents: list[Document]
    errors: list[ParseError] = field(default_factory=list)


Parser = Callable[[Path, str, bytes], Parsed]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def document(path: Path, doc_id: str, data: bytes, title: str | None, text: str) -> Parsed:
    """The one document of a file; a file that yields no text is an error, never an empty document."""
    if not text.strip():
        raise ParseError(str(path), "empty: no text")
    return Parsed([Document(id=doc_id, title=(title or path.stem).strip(), source=str(path),
                            text=text, content_hash=sha256(data))])


def decode_text(path: Path, data: bytes) -> str:
    """UTF-8 (a BOM is dropped), newlines normalised; binary files are refused, not guessed at."""
    if b"\x00" in data:
        raise ParseError(str(path), "binary file (NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ParseError(str(path), f"not valid UTF-8 (byte {e.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def fenced(code: str) -> str:
    """Code as a Markdown fence, which the sentence splitter skips; "~~~" when the code holds "```"."""
    fence = "~~~" if "```" in code else "```"
    return f"{fence}\n{code}\n{fence}"


# what a backslash keeps from opening a quote or a heading at a line's start (as CommonMark escapes it)
ESCAPED_MARKS = ">#"


def as_text(line: str) -> str:
    """A line of a page's words that opens with what Markdown reads as a block's mark (zsh's
    ">& word, &> word: Redirects both ..." entry, a "#include" in prose), escaped: the sentence
    splitter would read a quote or a heading and drop the mark."""
    return "\\" + line if line[:1] in ESCAPED_MARKS else line


def one_line(text: str) -> str:
    return " ".join(text.split())


def labelled(headers: list[str], values: list[str]) -> str:
    """A table row as one line, each value with its column's header ("Plan: Basic; Price: $10"),
    the shape HTML table rows are stored in; empty cells are left out, a value past the last
    header (a ragged row) is kept unlabelled."""
    parts = []
    for i, value in enumerate(values):
        if value:
            header = headers[i] if i < len(headers) else ""
            parts.append(f"{header}: {value}" if header else value)
    return "; ".join(parts)

