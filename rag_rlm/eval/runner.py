"""Run the questions through the two modes and score every answer.

- flat: one retrieval of top-k for the whole question, then one answer step (`max_depth=0`,
  no reflection), with the same reasoner as the recursive mode.
- recursive: the full controller (decomposition up to `settings.max_depth`, reflection with
  its second retrieval) with the same k per retrieval.

Each (mode, k) run gets a fresh Assistant with an in-process memo only, so no answer comes from
another run's memo or an earlier eval's. Each mode keeps one reasoner across its k runs (in the
order given): the extractive reasoner's sentence-vector cache is then warm from the mode's
smaller k when the next k runs. That is the same for both modes, and it keeps 100 questions x 3 k
x 2 modes affordable on a small CPU; latency at the second and later k is a warm-cache figure.

A row's answer metrics (exact match, F1, containment, lead containment) are NaN for an
unanswerable question, and its recall figures NaN when the question has no supporting ids: the
report averages each over the rows it applies to.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..assistant import Assistant, build_reasoner
from ..config import Settings
from ..embed import Embedder
from ..errors import BudgetExceeded, RagRlmError, UnknownCollection
from ..memory import Store
from ..reasoning.base import Reasoner
from . import metrics
from .data import Question

MODES = ("flat", "recursive")


@dataclass
class Row:
    """One question answered in one mode with one k."""

    id: str
    mode: str
    k: int
    type: str
    question: str
    answer: str
    gold_answers: list[str]
    supporting_ids: list[str]
    documents_read: list[str]  # distinct documents of every span an answer step saw, first seen first
    recall: float  # NaN: no supporting ids
    all_supporting: float
    exact_match: float  # answer metrics: NaN for an unanswerable question
    f1: float
    containment: float
    lead_containment: float  # the gold answer in the answer's first sentence
    answerable: bool  # False: the question has no gold answer; declining it is right
    found: bool  # the system's verdict: does the collection answer the question?
    confidence: float  # the answerability score `found` was decided on (higher = more answerable)
    lead: str  # the answer's first sentence, without markers
    words: int  # words of the answer, [n] markers not counted
    seconds: float
    llm_calls: int
    tokens_in: int
    tokens_out: int
    cache_hits: int
    retrievals: int
    sub_questions: list[str]
    status: str
    error: str | None = None
    short_answer: str = ""  # the number, date or name the answer gives at a glance, when one answers
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _NoSharedState:
    """The Assistant's shared state (memo entries, traces) kept nowhere: an eval must not be
    answered from an earlier run's memo, nor fill the store with hundreds of traces."""

    def get(self, kind: str, key: str) -> dict | None:
        return None

    def put(self, kind: str, key: str, value: dict) -> None:
        return None


def run_eval(
    questions: Sequence[Question],
    collection: str,
    *,
    settings: Settings,
    store: Store,
    embedder: Embedder,
    modes: Sequence[str] = MODES,
    ks: Sequence[int] = (2, 5, 10),
    on_row: Callable[[Row], None] = lambda row: None,
    make_reasoner: Callable[[], Reasoner] | None = None,
) -> list[Row]:
    """Every question in every mode for every k. `make_reasoner` builds the reasoner of each
    run (default: the one the settings configure), e.g. for ablations of its options."""
    store.collection_info(collection)  # UnknownCollection before any work
    reasoners = {mode: make_reasoner() if make_reasoner else build_reasoner(settings, embedder) for mode in modes}
    rows: list[Row] = []
    for k in ks:
        for mode in modes:
            assistant = Assistant(settings, store=store, embedder=embedder, reasoner=reasoners[mode],
                                  state=_NoSharedState())
            for q in questions:
                row = ask_one(assistant, q, collection, mode, k)
                rows.append(row)
                on_row(row)
    return rows


def ask_one(assistant: Assistant, q: Question, collection: str, mode: str, k: int) -> Row:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    flat = mode == "flat"
    try:
        result = assistant.ask(q.question, collection, top_k=k, max_depth=0 if flat else None,
                               reflect=False if flat else None)
    except UnknownCollection:
        raise
    except BudgetExceeded as e:  # a timeout still carries what was done
        if e.partial_answer is None:
            return _failed(q, mode, k, str(e))
        result = e.partial_answer
    except RagRlmError as e:  # one failed question is a row with its error, not a failed eval
        return _failed(q, mode, k, str(e))
    docs = result.evidence_documents()
    u = result.usage
    said = (result.answer, result.lead) if result.found else ("", "")
    return Row(q.id, mode, k, q.type, q.question, result.answer, list(q.answers), list(q.supporting_ids), docs,
               **_retrieval_scores(q, docs), **_answer_scores(q, *said),
               answerable=q.answerable, found=bool(result.found), confidence=float(result.confidence),
               lead=result.lead, words=metrics.word_count(result.answer), seconds=u.seconds,
               llm_calls=u.llm_calls, tokens_in=u.tokens_in, tokens_out=u.tokens_out, cache_hits=u.cache_hits,
               retrievals=u.retrievals, sub_questions=_sub_questions(result.sub_questions), status=result.status,
               short_answer=result.short_answer if result.found else "", extra=q.extra)


def _retrieval_scores(q: Question, docs: list[str]) -> dict[str, float]:
    if not q.supporting_ids:
        return {"recall": math.nan, "all_supporting": math.nan}
    return {"recall": metrics.support_recall(docs, q.supporting_ids),
            "all_supporting": metrics.all_supporting(docs, q.supporting_ids)}


def _answer_scores(q: Question, answer: str, lead: str) -> dict[str, float]:
    """Scores of what the answer says; a declined answer says nothing (pass ""), though its
    sentence quotes the question ("... do not answer “Which is older, X or Y?”")."""
    if not q.answerable:
        return dict.fromkeys(("exact_match", "f1", "containment", "lead_containment"), math.nan)
    return {"exact_match": metrics.exact_match(answer, q.answers), "f1": metrics.token_f1(answer, q.answers),
            "containment": metrics.containment(answer, q.answers),
            "lead_containment": metrics.lead_containment(lead, q.answers)}


def _sub_questions(subs: list) -> list[str]:
    out = []
    for sub in subs:
        out.append(sub.question)
        out += _sub_questions(sub.sub_questions)
    return out


def _failed(q: Question, mode: str, k: int, error: str) -> Row:
    """A question whose answer failed: it scores 0 where it applies, and is not a verdict on
    answerability (the report leaves it out of those figures)."""
    return Row(q.id, mode, k, q.type, q.question, "", list(q.answers), list(q.supporting_ids), [],
               **_retrieval_scores(q, []), **_answer_scores(q, "", ""),  # 0 where they apply
               answerable=q.answerable, found=False, confidence=math.nan, lead="", words=0, seconds=0.0,
               llm_calls=0, tokens_in=0, tokens_out=0, cache_hits=0, retrievals=0, sub_questions=[],
               status="error", error=error, extra=q.extra)
