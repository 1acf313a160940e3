"""What an answer looks like to callers: text, numbered citations, the sub-question tree, usage."""

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
class SubAnswer:
    question: str
    answer: str
    status: str  # ok | error | skipped
    error: str | None = None
    citations: list[int] = field(default_factory=list)  # numbers in Result.citations
    cache_hit: bool = False
    sub_questions: list[SubAnswer] = field(default_factory=list)


@dataclass
class Result:
    question: str
    collection: str
    answer: str
    citations: list[Span]
    sub_questions: list[SubAnswer]
    usage: Usage
    trace_id: str
    status: str = "ok"  # ok | partial (some sub-question failed) | degraded (budget/time cut work)
    notes: list[str] = field(default_factory=list)
    evidence: list[Span] = field(default_factory=list)  # every span an answer step read

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "collection": self.collection,
            "answer": self.answer,
            "citations": [citation_dict(n, s) for n, s in enumerate(self.citations, 1)],
            "sub_questions": [asdict(s) for s in self.sub_questions],
            "usage": asdict(self.usage),
            "trace_id": self.trace_id,
            "status": self.status,
            "notes": list(self.notes),
        }

    def evidence_documents(self) -> list[str]:
        return list(dict.fromkeys(s.document_id for s in self.evidence))


def citation_dict(n: int, span: Span) -> dict[str, Any]:
    return {
        "n": n,
        "id": span.id,
        "document_id": span.document_id,
        "title": span.title,
        "source": span.source,
        "chunk_index": span.chunk_index,
        "start": span.start,
        "end": span.end,
        "score": round(float(span.score), 4),
        "text": span.text,
    }
