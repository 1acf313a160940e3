"""Drafts and solved nodes as JSON-able dicts, for the memo cache shared through the state store:
a memo hit gives back the whole answer, its sub-question tree included."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..types import Span
from .base import Claim, Draft, PartDraft, Source, SubQuestion


def draft_to_dict(draft: Draft) -> dict[str, Any]:
    return {"parts": [_part_to_dict(p) for p in draft.parts], "error": draft.error, "notes": list(draft.notes)}


def draft_from_dict(value: dict[str, Any]) -> Draft:
    return Draft(tuple(_part_from_dict(p) for p in value.get("parts", [])), error=value.get("error"),
                 notes=tuple(value.get("notes", ())))


def node_to_dict(node: Any) -> dict[str, Any]:
    """A controller Node (sub-question, draft, spans, children, status) as a dict."""
    return {"sub": {**asdict(node.sub), "depends_on": list(node.sub.depends_on)},
            "draft": draft_to_dict(node.draft), "spans": [asdict(s) for s in node.spans],
            "children": [node_to_dict(c) for c in node.children], "status": node.status}


def node_from_dict(value: dict[str, Any], node_type: type) -> Any:
    sub = value["sub"]
    return node_type(SubQuestion(sub["text"], tuple(sub.get("depends_on", ())), sub.get("focus", ""),
                                 sub.get("kind", "part"), sub.get("query_text", "")),
                     draft_from_dict(value["draft"]), [Span(**s) for s in value.get("spans", [])],
                     [node_from_dict(c, node_type) for c in value.get("children", [])], value.get("status", "ok"))


def _part_to_dict(part: PartDraft) -> dict[str, Any]:
    return {"question": part.question, "found": part.found, "confidence": part.confidence, "focus": part.focus,
            "claims": [{"text": c.text, "score": c.score, "answer": c.answer,
                        "sources": [{"span": asdict(s.span), "start": s.start, "end": s.end} for s in c.sources]}
                       for c in part.claims]}


def _part_from_dict(value: dict[str, Any]) -> PartDraft:
    claims = tuple(Claim(c["text"], tuple(Source(Span(**s["span"]), s["start"], s["end"]) for s in c["sources"]),
                         c.get("score", 0.0), c.get("answer", "")) for c in value.get("claims", []))
    return PartDraft(value["question"], claims, value.get("found", False), value.get("confidence", 0.0),
                     value.get("focus", ""))
