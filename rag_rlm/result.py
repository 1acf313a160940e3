"""What an answer looks like to callers: text, numbered citations, parts, the sub-question tree,
whether the collection answers the question at all, and usage."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .types import Span


@dataclass
class Usage:
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cache_hits: int = 0
    retrievals: int = 0
    seconds: float = 0.0
    token_budget: int = 0


@dataclass
class Citation:
    """A numbered source: the span (chunk) and the exact character ranges of its document that
    the answer quotes (`quotes`, document offsets), for highlighting it in place."""

    n: int
    span: Span
    quotes: list[tuple[int, int]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        s = self.span
        return {"n": self.n, "id": s.id, "document_id": s.document_id, "title": s.title, "source": s.source,
                "chunk_index": s.chunk_index, "start": s.start, "end": s.end, "score": round(float(s.score), 4),
                "text": s.text, "quotes": [list(q) for q in self.quotes]}


@dataclass
class PartAnswer:
    """One part of a multi-part question (a one-part question has one)."""

    question: str
    answer: str  # the rendered text of this part, with its [n] markers
    found: bool
    citations: list[int] = field(default_factory=list)
    short_answer: str = ""
    confidence: float = 0.0


@dataclass
class SubAnswer:
    question: str
    answer: str
    status: str  # ok | error | skipped
    error: str | None = None
    citations: list[int] = field(default_factory=list)  # numbers in Result.citations
    cache_hit: bool = False
    sub_questions: list[SubAnswer] = field(default_factory=list)
    found: bool = False
    focus: str = ""
    kind: str = "part"


@dataclass
class Result:
    question: str
    collection: str
    answer: str
    citations: list[Citation]
    sub_questions: list[SubAnswer]
    usage: Usage
    trace_id: str
    status: str = "ok"  # ok | partial (some sub-question failed) | degraded (budget/time cut work)
    notes: list[str] = field(default_factory=list)
    evidence: list[Span] = field(default_factory=list)  # every span an answer step read
    found: bool = False  # does the collection answer the question?
    confidence: float = 0.0  # the answerability score `found` was decided on
    parts: list[PartAnswer] = field(default_factory=list)
    lead: str = ""  # the first sentence of the answer, without markers
    short_answer: str = ""  # a number, date or name, when one answers the question
    resolved_question: str = ""  # the question as answered, when a conversation changed it
    related: list[dict[str, str]] = field(default_factory=list)  # documents read, when not found

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "resolved_question": self.resolved_question or self.question,
            "collection": self.collection,
            "answer": self.answer,
            "found": self.found,
            "confidence": round(float(self.confidence), 4),
            "short_answer": self.short_answer,
            "parts": [asdict(p) for p in self.parts],
            "citations": [c.to_dict() for c in self.citations],
            "related_documents": list(self.related),
            "sub_questions": [asdict(s) for s in self.sub_questions],
            "usage": asdict(self.usage),
            "trace_id": self.trace_id,
            "status": self.status,
            "notes": list(self.notes),
        }

    def evidence_documents(self) -> list[str]:
        return list(dict.fromkeys(s.document_id for s in self.evidence))
