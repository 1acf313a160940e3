"""What the knowledge base is missing, from the question log and the ratings of one window:

- `not_found`: the questions answered `found: false`, grouped by meaning (cluster.group), each
  group labelled with its most central question, with how often and when last it was asked;
- `rated_down`: the answers some key rated down, with their citations and comments;
- `most_cited` / `never_cited`: the collection's documents by how many answers cited them.

Only entries whose cited documents the caller could read count (access.sees).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..memo import normalise_question
from ..types import DocumentRecord
from .access import CanRead, sees
from .cluster import THRESHOLD, central, group
from .records import AskedQuestion, Rating, iso

MAX_GROUPS = 50
MAX_RATED = 50
MAX_MOST_CITED = 10
MAX_NEVER_CITED = 100
MAX_EXAMPLES = 5  # the distinct wordings shown under a group's label


@dataclass
class _Wording:
    """One distinct (normalised) question: how often and when last it was asked."""

    text: str
    vector: np.ndarray
    count: int = 0
    last: float = 0.0
    traces: list[str] = field(default_factory=list)


def build(questions: list[AskedQuestion], ratings: list[Rating], documents: Mapping[str, DocumentRecord],
          can_read: CanRead, *, threshold: float = THRESHOLD) -> dict[str, Any]:
    """The report (JSON-ready); `questions` and `ratings` newest first, as the stores give them."""
    shown = [q for q in questions if sees(q.cited, documents, can_read)]
    missing = [q for q in shown if not q.found and q.vector is not None]
    groups = _not_found(missing, threshold)
    rated = _rated_down([r for r in ratings if sees(r.cited(), documents, can_read)])
    cited = Counter(d for q in shown for d in q.cited)
    readable = sorted(d for d, record in documents.items() if can_read(record))
    never = [d for d in readable if not cited[d]]
    return {
        "questions": len(shown),
        "not_found_questions": sum(not q.found for q in shown),
        "not_found_groups": len(groups),
        "not_found": groups[:MAX_GROUPS],
        "rated_down": rated[:MAX_RATED],
        "rated_down_answers": len(rated),
        "most_cited": [_document(documents[d], n) for d, n in cited.most_common(MAX_MOST_CITED)],
        "never_cited": [_document(documents[d]) for d in never[:MAX_NEVER_CITED]],
        "never_cited_documents": len(never),
        "documents": len(readable),
    }


def _not_found(missing: list[AskedQuestion], threshold: float) -> list[dict[str, Any]]:
    wordings: dict[str, _Wording] = {}
    for q in missing:  # newest first: a wording's text and time are those of its latest ask
        w = wordings.setdefault(normalise_question(q.question) or q.question, _Wording(q.question, q.vector, last=q.at))
        w.count += 1
        if len(w.traces) < MAX_EXAMPLES:
            w.traces.append(q.trace_id)
    distinct = list(wordings.values())
    if not distinct:
        return []
    vectors = np.stack([w.vector for w in distinct])
    out = []
    for members in group(vectors, threshold):
        label = distinct[central(vectors, members)].text
        ranked = sorted((distinct[i] for i in members), key=lambda w: (-w.count, -w.last))
        out.append({"label": label, "count": sum(w.count for w in ranked), "last_asked": iso(max(w.last for w in ranked)),
                    "wordings": len(ranked), "questions": [{"question": w.text, "count": w.count} for w in ranked][:MAX_EXAMPLES]})
    out.sort(key=lambda g: g["last_asked"], reverse=True)
    return sorted(out, key=lambda g: -g["count"])  # the most asked first; among equals the latest


def _rated_down(ratings: list[Rating]) -> list[dict[str, Any]]:
    answers: dict[str, dict[str, Any]] = {}
    for r in ratings:  # newest first
        a = answers.setdefault(r.trace_id, {
            "trace_id": r.trace_id, "question": r.question, "answer": r.answer, "down": 0, "up": 0,
            "comments": [], "last_rated": iso(r.at),
            "citations": [{k: c.get(k) for k in ("n", "document_id", "title")} for c in r.citations]})
        a[r.rating] += 1
        if r.rating == "down" and r.comment:
            a["comments"].append(r.comment)
    down = [a for a in answers.values() if a["down"]]
    return sorted(down, key=lambda a: -a["down"])  # stable: the most recently rated first among equals


def _document(record: DocumentRecord, citations: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"document_id": record.id, "title": record.title}
    if citations is not None:
        out["citations"] = citations
    return out
