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
"""

from __future__ import annotations

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
    recall: float
    all_supporting: float
    exact_match: float
    f1: float
    containment: float
    seconds: float
    llm_calls: int
    tokens_in: int
    tokens_out: int
    cache_hits: int
    retrievals: int
    sub_questions: list[str]
    status: str
    error: str | None = None
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
    return Row(q.id, mode, k, q.type, q.question, result.answer, list(q.answers), list(q.supporting_ids), docs,
               metrics.support_recall(docs, q.supporting_ids), metrics.all_supporting(docs, q.supporting_ids),
               metrics.exact_match(result.answer, q.answers), metrics.token_f1(result.answer, q.answers),
               metrics.containment(result.answer, q.answers), u.seconds, u.llm_calls, u.tokens_in, u.tokens_out,
               u.cache_hits, u.retrievals, _sub_questions(result.sub_questions), result.status, extra=q.extra)


def _sub_questions(subs: list) -> list[str]:
    out = []
    for sub in subs:
        out.append(sub.question)
        out += _sub_questions(sub.sub_questions)
    return out


def _failed(q: Question, mode: str, k: int, error: str) -> Row:
    return Row(q.id, mode, k, q.type, q.question, "", list(q.answers), list(q.supporting_ids), [], 0.0, 0.0, 0.0,
               0.0, 0.0, 0.0, 0, 0, 0, 0, 0, [], "error", error, q.extra)
