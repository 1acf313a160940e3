"""The reasoner that prompts a generation backend (local model or OpenAI-compatible server).

Budget: every step builds its prompt to fit its allowance with the backend's own token count:
evidence spans are added in order while they fit (the first one that does not is cut), and the
completion is capped at what is left (`max_new_tokens` at most). When even a prompt without
evidence leaves no room for a short completion the step does not call the model: it returns
error="budget" (plan: an empty Plan whose note says so).

Replies are parsed into the same structured drafts the extractive reasoner makes: each sentence
of the reply is a claim citing the passages its [n] markers name; a reply that says the passages
do not answer (NOT FOUND) is a part with `found=False`.

Failures of the model are values, not exceptions: a backend error or an unusable reply gives a
Draft with `error` set (answer: no claims; merge: the parts kept as they are; reflect: the draft
unchanged), or an empty Plan with a note. The tokens and calls of a returned Draft or Plan are
those of that step alone; `llm_calls` counts prompts generated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..llm.base import LLM, Generation, Message
from ..types import Span
from .base import Draft, Evidence, Part, PartDraft, Plan, Rewrite, SentenceScorer, SubQuestion, Turn
from .prompts import Prompts, clean, parse_claims, parse_plan, parse_verdict, render_claims, render_evidence
from .scoring import ThresholdAnswerability
from .thresholds import Thresholds
from .verify import verify

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
    def __init__(self, llm: LLM, max_new_tokens: int = 256, prompts: Prompts | str | Path | None = None, *,
                 scorer: SentenceScorer | None = None, thresholds: Thresholds | None = None):
        """`prompts`: a Prompts object, or a folder of `<template>.txt` overrides. `scorer`: the
        reader that checks every claim of a reflected draft against the sentence it cites (no
        check without one)."""
        if max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens must be > 0, got {max_new_tokens}")
        self.llm = llm
        self.max_new_tokens = max_new_tokens
        self.prompts = prompts if isinstance(prompts, Prompts) else Prompts.load(prompts)
        self.scorer = scorer
        self.thresholds = thresholds or Thresholds()

    @property
    def identity(self) -> str:
        return f"llm/{self.scorer.identity if self.scorer else 'unchecked'}/{self.thresholds.fingerprint}"

    # -- the steps ---------------------------------------------------------------------------

    def plan(self, question: str, evidence: Evidence, allowance: int) -> Plan:
        glimpse = [replace(s, text=s.text[:PLAN_SPAN_CHARS]) for s in evidence.spans[:PLAN_SPANS]]
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

    def answer(self, questions: Sequence[SubQuestion], evidence: Sequence[Evidence], allowance: int) -> list[Draft]:
        if len(questions) != len(evidence):
            raise ValueError(f"{len(questions)} questions but {len(evidence)} evidence lists")
        if not questions:
            return []
        share = allowance // len(questions)
        room = share - self._reserve(share)
        fits = [self._fit("answer", {"question": q.query}, e.spans, room) for q, e in zip(questions, evidence, strict=True)]
        ready = [f for f in fits if f is not None]
        # one batched call, so one completion cap: the one that fits every prompt of the batch
        cap = min((self._cap(share, f) for f in ready), default=0)
        gens = iter(self.llm.generate([f.messages for f in ready], cap) if ready else [])
        return [self._answer_draft(q.text, next(gens), f) if f else _budget_draft(q.text)
                for q, f in zip(questions, fits, strict=True)]

    def merge(self, question: str, own: Draft, parts: Sequence[Part], plan: Plan, allowance: int) -> Draft:
        """Independent parts stay parts (no model call: the structure is already right);
        dependent sub-questions and hops are combined by the model into one answer."""
        if parts and all(not p.sub_question.depends_on and p.sub_question.kind == "part" for p in parts):
            return Draft(tuple(p.draft.parts[0] if p.draft.parts else PartDraft(p.sub_question.text) for p in parts))
        answered = [own, *(p.draft for p in parts)]
        evidence = list(dict.fromkeys(s for d in answered for s in d.cited))
        fallback = _best(question, answered)
        if not any(d.found for d in answered):
            return replace(fallback, error=None if own.ok else own.error)
        lines = [f"Q: {p.sub_question.text}\nA: {render_claims(p.draft, evidence) or '(not found)'}" for p in parts]
        values = {"question": question, "parts": "\n\n".join(lines)}
        fit = self._fit("merge", values, evidence, allowance - self._reserve(allowance))
        if fit is None:
            return replace(fallback, error="budget")
        gen = self.llm.generate([fit.messages], self._cap(allowance, fit))[0]
        usage = {"tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "llm_calls": 1}
        if gen.error is not None:
            return replace(fallback, error=f"backend: {gen.error}", **usage)
        part, notes = parse_claims(question, clean(gen.text), list(fit.spans))
        if fallback.found and not any(c.sources for c in part.claims):  # ungrounded rewrite: keep what is grounded
            return replace(fallback, notes=("merged answer cited nothing: best part kept",), **usage)
        return Draft((part,), notes=notes, **usage)

    def reflect(self, question: str, draft: Draft, evidence: Evidence, allowance: int) -> Draft:
        """The model's verdict on its draft (revised when it says so), then the reader's check
        of every claim against the sentence it cites: what is unsupported is dropped."""
        return self._checked(self._revised(question, draft, evidence, allowance))

    def _checked(self, draft: Draft) -> Draft:
        if self.scorer is None or not draft.ok or not draft.parts:
            return draft
        t = self.thresholds
        checked, notes = verify(draft, self.scorer, ThresholdAnswerability(t.support_share * t.found),
                                ThresholdAnswerability(t.found))
        missing = tuple(dict.fromkeys((*draft.missing, *(p.question for p in checked.parts if not p.found))))
        return replace(checked, notes=(*draft.notes, *notes), missing=missing)

    def _revised(self, question: str, draft: Draft, evidence: Evidence, allowance: int) -> Draft:
        # the draft's [k] is cited[k-1], so its citations lead the evidence list
        seen = {s.id for s in draft.cited}
        shown = list(draft.cited) + [s for s in evidence.spans if s.id not in seen]
        values = {"question": question, "draft": render_claims(draft, shown) or "(not found)"}
        unchanged = replace(draft, tokens_in=0, tokens_out=0, llm_calls=0)
        if len(draft.parts) != 1:  # a multi-part answer is checked part by part by its sub-steps
            return replace(unchanged, missing=tuple(p.question for p in draft.parts if not p.found))
        fit = self._fit("reflect", values, shown, allowance - self._reserve(allowance))
        if fit is None:
            return replace(unchanged, error="budget")
        gen = self.llm.generate([fit.messages], self._cap(allowance, fit))[0]
        usage = {"tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "llm_calls": 1}
        if gen.error is not None:
            return replace(unchanged, error=f"backend: {gen.error}", **usage)
        ok, revised, missing = parse_verdict(clean(gen.text))
        if ok:
            return replace(unchanged, missing=missing, **usage)
        part, notes = parse_claims(draft.parts[0].question, revised, list(fit.spans))
        if draft.found and part.found and not any(c.sources for c in part.claims):
            return replace(unchanged, missing=missing, notes=(*draft.notes, "revision cited nothing: draft kept"), **usage)
        return Draft((part,), missing=missing, notes=(*notes, "revised by reflection"), **usage)

    def condense(self, question: str, history: Sequence[Turn], allowance: int) -> Rewrite:
        """The condense-question step: the model rewrites the follow-up to stand on its own,
        within the request's budget like any other step."""
        turns = "\n".join(f"{t.role}: {t.content}" for t in history[-6:])
        fit = self._fit("condense", {"question": question, "history": turns}, [], allowance - self._reserve(allowance))
        if fit is None:
            return Rewrite(question, error="budget")
        gen = self.llm.generate([fit.messages], min(self._cap(allowance, fit), 96))[0]
        usage = {"tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "llm_calls": 1}
        text = clean(gen.text).splitlines()[0].strip() if gen.error is None and clean(gen.text) else ""
        ok = 3 <= len(text) <= 4 * len(question) + 200
        return Rewrite(text if ok else question, error=None if gen.error is None else f"backend: {gen.error}", **usage)

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

    def _answer_draft(self, question: str, gen: Generation, fit: _Fit) -> Draft:
        usage = {"tokens_in": gen.tokens_in, "tokens_out": gen.tokens_out, "llm_calls": 1}
        if gen.error is not None:
            return Draft((PartDraft(question),), error=f"backend: {gen.error}", **usage)
        text = clean(gen.text)
        if not text:
            return Draft((PartDraft(question),), error="empty answer", **usage)
        part, notes = parse_claims(question, text, list(fit.spans))
        return Draft((part,), notes=notes, **usage)


def _budget_draft(question: str) -> Draft:
    return Draft((PartDraft(question),), error="budget")


def _best(question: str, drafts: Sequence[Draft]) -> Draft:
    """Without the model: the first answer that found something, as the question's answer."""
    for d in drafts:
        if d.found:
            return Draft((replace(d.parts[0], question=question),))
    return Draft((PartDraft(question),))
