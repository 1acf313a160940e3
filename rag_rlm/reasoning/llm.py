"""The reasoner that prompts a generation backend (local model or OpenAI-compatible server).

Budget: every step builds its prompt to fit its allowance with the backend's own token count:
evidence spans are added in order while they fit (the first one that does not is cut), and the
completion is capped at what is left (`max_new_tokens` at most). When even a prompt without
evidence leaves no room for a short completion the step does not call the model: it returns
error="budget" (plan: an empty Plan whose note says so).

Failures of the model are values, not exceptions: a backend error or an unusable reply gives a
Draft with `error` set (answer: empty text; merge: the parts joined without the model; reflect:
the draft unchanged), or an empty Plan with a note. The tokens and calls of a returned Draft or
Plan are those of that step alone; `llm_calls` counts prompts generated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..llm.base import LLM, Generation, Message
from ..types import Span
from .base import Draft, Part, Plan
from .prompts import (
    Prompts,
    clean,
    parse_plan,
    parse_verdict,
    remap_citations,
    render_evidence,
    renumber_citations,
)

MIN_NEW_TOKENS = 16  # below this no useful plan or answer fits: report "budget" instead
MAX_SUB_QUESTIONS = 6
PLAN_SPANS, PLAN_SPAN_CHARS = 3, 400  # the planner needs a glimpse of the evidence, not all of it
MIN_CUT_CHARS = 40  # a cut span shorter than this is noise


@dataclass(frozen=True)
class _Fit:
    messages: list[Message]
    tokens: int
    spans: tuple[Span, ...]  # the evidence shown, [1] first


class LLMReasoner:
    def __init__(self, llm: LLM, max_new_tokens: int = 256, prompts: Prompts | str | Path | None = None):
        """`prompts`: a Prompts object, or a folder of `<template>.txt` overrides."""
        if max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens must be > 0, got {max_new_tokens}")
        self.llm = llm
        self.max_new_tokens = max_new_tokens
        self.prompts = prompts if isinstance(prompts, Prompts) else Prompts.load(prompts)

    # -- the four steps ----------------------------------------------------------------------

    def plan(self, question: str, spans: Sequence[Span], allowance: int) -> Plan:
        glimpse = [replace(s, text=s.text[:PLAN_SPAN_CHARS]) for s in spans[:PLAN_SPANS]]
        fit = self._fit("plan", {"question": question}, glimpse, allowance - self._reserve(allowance))
        if fit is None:
            return Plan(note="budget: no room for a plan prompt; answered directly")
        gen = self.llm.generate([fit.messages], self._cap(allowance, fit))[0]
        usage = {"tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "llm_calls": 1}
        if gen.error is not None:
            return Plan(note=f"plan failed: {gen.error}", **usage)
        subs, note = parse_plan(clean(gen.text))
        if len(subs) == 1:
            subs, note = (), "one sub-question: answered directly"
        if len(subs) > MAX_SUB_QUESTIONS:  # dependencies point backwards, so a prefix stays valid
            subs, note = subs[:MAX_SUB_QUESTIONS], f"{note}; kept the first {MAX_SUB_QUESTIONS}"
        return Plan(sub_questions=subs, note=note, **usage)

    def answer(self, questions: Sequence[str], spans: Sequence[Sequence[Span]], allowance: int) -> list[Draft]:
        if len(questions) != len(spans):
            raise ValueError(f"{len(questions)} questions but {len(spans)} span lists")
        if not questions:
            return []
        share = allowance // len(questions)
        room = share - self._reserve(share)
        fits = [self._fit("answer", {"question": q}, s, room) for q, s in zip(questions, spans, strict=True)]
        ready = [f for f in fits if f is not None]
        # one batched call, so one completion cap: the one that fits every prompt of the batch
        cap = min((self._cap(share, f) for f in ready), default=0)
        gens = iter(self.llm.generate([f.messages for f in ready], cap) if ready else [])
        return [self._answer_draft(next(gens), f) if f else _budget_draft() for f in fits]

    def merge(self, question: str, parts: Sequence[Part], allowance: int) -> Draft:
        evidence, lines, joined = _combine(parts)
        fallback = _draft(joined, evidence)
        if not joined:
            return replace(fallback, error="no sub-question was answered")
        values = {"question": question, "parts": "\n\n".join(lines)}
        fit = self._fit("merge", values, evidence, allowance - self._reserve(allowance))
        if fit is None:
            return replace(fallback, error="budget")
        gen = self.llm.generate([fit.messages], self._cap(allowance, fit))[0]
        usage = {"tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "llm_calls": 1}
        if gen.error is not None:
            return replace(fallback, error=f"backend: {gen.error}", **usage)
        merged = _draft(clean(gen.text), evidence, **usage)
        if fallback.cited and not merged.cited:  # ungrounded rewrite: keep what is grounded
            return replace(fallback, notes=("merged answer cited nothing: parts joined instead",), **usage)
        return merged

    def reflect(self, question: str, draft: Draft, spans: Sequence[Span], allowance: int) -> Draft:
        # the draft's [k] is cited[k-1], so its citations lead the evidence list
        seen = {s.id for s in draft.cited}
        evidence = list(draft.cited) + [s for s in spans if s.id not in seen]
        values = {"question": question, "draft": draft.text}
        unchanged = replace(draft, tokens_in=0, tokens_out=0, llm_calls=0)
        fit = self._fit("reflect", values, evidence, allowance - self._reserve(allowance))
        if fit is None:
            return replace(unchanged, error="budget")
        gen = self.llm.generate([fit.messages], self._cap(allowance, fit))[0]
        usage = {"tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "llm_calls": 1}
        if gen.error is not None:
            return replace(unchanged, error=f"backend: {gen.error}", **usage)
        ok, revised, missing = parse_verdict(clean(gen.text))
        if ok:
            return replace(unchanged, missing=missing, **usage)
        new = _draft(revised, evidence, missing=missing, **usage)
        if draft.cited and not new.cited:
            note = "revision cited nothing: draft kept"
            return replace(unchanged, missing=missing, notes=(*draft.notes, note), **usage)
        return replace(new, notes=(*new.notes, "revised by reflection"))

    # -- fitting prompts into allowances -----------------------------------------------------

    def _reserve(self, allowance: int) -> int:
        """Tokens kept back for the completion when choosing how much evidence to show."""
        return min(self.max_new_tokens, max(MIN_NEW_TOKENS, allowance // 4))

    def _cap(self, allowance: int, fit: _Fit) -> int:
        return min(self.max_new_tokens, allowance - fit.tokens)

    def _fit(self, step: str, values: dict[str, str], spans: Sequence[Span], room: int) -> _Fit | None:
        """The step's prompt with as many leading spans as fit in `room` tokens, or None when
        not even the prompt without evidence does. Only a tail is ever left out, so [k] keeps
        meaning spans[k-1] (merge and reflect rely on it: their prompts already cite)."""
        best = self._build(step, values, [])
        if best.tokens > room:
            return None
        shown: list[tuple[Span, str]] = []
        for span in spans:
            whole = self._build(step, values, [*shown, (span, span.text)])
            if whole.tokens <= room:
                best, shown = whole, [*shown, (span, span.text)]
                continue
            cut = self._cut(step, values, shown, span, room)
            return cut or best
        return best

    def _cut(self, step: str, values: dict[str, str], shown: list[tuple[Span, str]], span: Span,
             room: int) -> _Fit | None:
        """The longest prefix of `span` (binary search on characters) that still fits."""
        lo, hi, best = MIN_CUT_CHARS, len(span.text) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            fit = self._build(step, values, [*shown, (span, span.text[:mid].rstrip() + " ...")])
            if fit.tokens <= room:
                best, lo = fit, mid + 1
            else:
                hi = mid - 1
        return best

    def _build(self, step: str, values: dict[str, str], shown: list[tuple[Span, str]]) -> _Fit:
        evidence = render_evidence([(span.title, text) for span, text in shown])
        messages = self.prompts.messages(step, evidence=evidence, **values)
        return _Fit(messages, self.llm.count_tokens(messages), tuple(span for span, _ in shown))

    def _answer_draft(self, gen: Generation, fit: _Fit) -> Draft:
        usage = {"tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "llm_calls": 1}
        if gen.error is not None:
            return Draft(text="", error=f"backend: {gen.error}", **usage)
        text = clean(gen.text)
        if not text:
            return Draft(text="", error="empty answer", **usage)
        return _draft(text, list(fit.spans), **usage)


def _budget_draft() -> Draft:
    return Draft(text="", error="budget")


def _draft(text: str, evidence: Sequence[Span], **fields: object) -> Draft:
    """A Draft whose [k] markers are renumbered to its own `cited` tuple."""
    text, used, dropped = renumber_citations(text, len(evidence))
    notes = [] if used else ["no citations"]
    if dropped:
        notes.append(f"removed {dropped} citation(s) of passages that were not given")
    return Draft(text=text, cited=tuple(evidence[i] for i in used), notes=tuple(notes), **fields)  # type: ignore[arg-type]


def _combine(parts: Sequence[Part]) -> tuple[list[Span], list[str], str]:
    """The parts' spans in one list (each span once), their answers renumbered to it, the
    lines shown to the model, and the answered parts joined (the fallback answer)."""
    evidence: list[Span] = []
    index: dict[str, int] = {}
    lines, answers = [], []
    for part in parts:
        draft = part.draft
        if not draft.ok or not draft.text:
            lines.append(f"Q: {part.question}\nA: (no answer: {draft.error or 'empty'})")
            continue
        mapping = {}
        for k, span in enumerate(draft.cited, 1):
            if span.id not in index:
                index[span.id] = len(evidence)
                evidence.append(span)
            mapping[k] = index[span.id] + 1
        text = remap_citations(draft.text, mapping)
        lines.append(f"Q: {part.question}\nA: {text}")
        answers.append(text)
    return evidence, lines, "\n\n".join(answers)
