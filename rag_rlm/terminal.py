"""An answer (the /v1/ask response) as a person reads it in a terminal, for `ask` and `chat`:

    New hires get 22 vacation days per calendar year, prorated in the year they join [1].

    Sources:
      [1] Vacation policy — vacation-policy.txt, chars 84-165
      [2] Travel policy — travel-policy.html, section "Approval", chars 437-597

and when the collection does not answer:

    Not found. The sample documents do not say what the capital of France is.

    Closest documents:
      Travel policy — travel-policy.html

A document is named by its title and its id, which for a file is its path under the folder it
was ingested from (as on the web page; the stored `source` is an absolute path on the machine
that ingested it). The place is the section the quote sits in, when the cited chunk shows its
heading, and the quoted characters of the document text (what /v1/.../documents/{id} returns).
"""

from __future__ import annotations

import re
from typing import Any

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def format_answer(answer: dict[str, Any]) -> str:
    text = answer.get("answer") or ""
    if not answer.get("found"):
        lines = [f"Not found. {text}".rstrip()]
        related = answer.get("related_documents") or []
        if related:
            closest = [f"  {_document(d.get('title', ''), d.get('id', ''))}" for d in related]
            lines += ["", "Closest documents:", *closest]
        return "\n".join(lines)
    citations = answer.get("citations") or []
    if not citations:
        return text
    return "\n".join([text, "", "Sources:", *(citation_line(c) for c in citations)])


def citation_line(citation: dict[str, Any]) -> str:
    document = _document(citation.get("title", ""), citation.get("document_id", ""))
    return f"  [{citation.get('n')}] {document}, {place(citation)}"


def place(citation: dict[str, Any]) -> str:
    quotes = [tuple(q) for q in citation.get("quotes") or []] or [(citation.get("start", 0), citation.get("end", 0))]
    chars = "chars " + ", ".join(f"{start}-{end}" for start, end in quotes)
    section = _section(citation, quotes[0][0])
    return f'section "{section}", {chars}' if section else chars


def notes(answer: dict[str, Any]) -> list[str]:
    """What the person should know about how the answer was made (cut short, a part failed)."""
    said = [f"note: {n}" for n in answer.get("notes") or []]
    if answer.get("status") == "partial":
        said.append("note: part of the question could not be answered (see sub_questions in --json)")
    return said


def _document(title: str, document_id: str) -> str:
    if not title or title == document_id:
        return document_id
    return f"{title} — {document_id}"


def _section(citation: dict[str, Any], quote_start: int) -> str:
    """The last Markdown heading of the chunk before the quote (chunk text is the document's
    text from `start`, so offsets translate by subtraction)."""
    text = citation.get("text") or ""
    before = text[: max(0, quote_start - int(citation.get("start", 0)))]
    for line in reversed(before.splitlines()):
        found = _HEADING.match(line.strip())
        if found:
            return found.group(1)
    return ""
