"""The two sentence scorers behind `SentenceScorer`, and the answerability judge behind
`Answerability`:

- `ReaderScorer`: the trained reader reads (question, "title — heading: sentence") and gives the
  probability that the sentence answers the question.
- `RankFused`: the reader's scores laid onto the order of the sum of the reader's and the
  bi-encoder's ranks where the reader is unsure (`sentence_order = "fused"`, the default, around
  the reader): which sentence comes first can change, `found` cannot.
- `CosineBlend`: the reader's logit moved by the bi-encoder's cosine (a reader card calibrated
  with a blend asks for it).
- `JudgedScorer`: the reader orders the candidates and a second reader, the judge, says how much
  the best of them answers (`RAG_RLM_JUDGE`).
- `EmbeddingScorer`: the bi-encoder's cosine between the question and the stored sentence vector,
  plus a share of the question's words the sentence's context says (`RAG_RLM_READER=none`: no
  reader, answers from sentence similarity alone, as before the reader existed).

Both reasoners pick, judge and check claims through these, never through their own rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..reader.data import reader_text
from .base import Candidate
from .english import content_words
from .forms import core_question


def candidate_text(c: Candidate) -> str:
    """A stored sentence as the reader reads it."""
    return reader_text(c.span.title, c.judged_as or c.sentence.text, c.sentence.heading)


class ReaderScorer:
    def __init__(self, reader):  # a rag_rlm.reader.Reader
        self.reader = reader
        self.identity = f"reader:{reader.identity}"

    def score(self, question: str, candidates: Sequence[Candidate], question_vector: np.ndarray | None = None) -> np.ndarray:
        return self.reader.score(question, [candidate_text(c) for c in candidates])

    def score_texts(self, question: str, texts: Sequence[str]) -> np.ndarray:
        return self.reader.score(question, list(texts))


class EmbeddingScorer:
    """Similarity, not reading: it cannot tell a sentence that answers from one on the same topic."""

    identity = "embedding"

    def __init__(self, embedder, lexical_weight: float = 0.3):  # an Embedder; Thresholds.lexical_weight
        self.embedder = embedder
        self.lexical_weight = lexical_weight

    def score(self, question: str, candidates: Sequence[Candidate], question_vector: np.ndarray | None = None) -> np.ndarray:
        if not candidates:
            return np.zeros(0, dtype=np.float32)
        qv = question_vector if question_vector is not None else self.embedder.embed([question])[0]
        dense = np.stack([c.vector for c in candidates]) @ qv
        return (dense + self.lexical_weight * coverage(question, [c.context for c in candidates])).astype(np.float32)

    def score_texts(self, question: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        vectors = self.embedder.embed([question, *texts])
        return (vectors[1:] @ vectors[0] + self.lexical_weight * coverage(question, texts)).astype(np.float32)


def coverage(question: str, texts: Sequence[str]) -> np.ndarray:
    """Share of the question's content words each text says."""
    words = content_words(question)
    if not words:
        return np.zeros(len(texts), dtype=np.float32)
    return np.array([len(words & content_words(t)) / len(words) for t in texts], dtype=np.float32)


class _WithCosine:
    """A scorer that reads the inner scorer's scores together with the bi-encoder's cosine between
    the question and each candidate (stored sentence vectors, or the texts embedded)."""

    def __init__(self, inner, embedder):  # a SentenceScorer, an Embedder
        self.inner = inner
        self.embedder = embedder
        self.reader = getattr(inner, "reader", None)

    def score(self, question: str, candidates: Sequence[Candidate], question_vector: np.ndarray | None = None) -> np.ndarray:
        scores = self.inner.score(question, candidates, question_vector)
        if not self._moves(scores):
            return scores
        qv = question_vector if question_vector is not None else self.embedder.embed([question])[0]
        return self._combined(scores, np.stack([c.vector for c in candidates]) @ qv)

    def score_texts(self, question: str, texts: Sequence[str]) -> np.ndarray:
        scores = self.inner.score_texts(question, texts)
        if not self._moves(scores):
            return scores
        vectors = self.embedder.embed([question, *texts])
        return self._combined(scores, vectors[1:] @ vectors[0])

    def _moves(self, scores: np.ndarray) -> bool:
        """Whether the cosine can change these scores (else it is not computed)."""
        return len(scores) > 0

    def _combined(self, scores: np.ndarray, cosines: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class CosineBlend(_WithCosine):
    """The reader's logit plus `weight` x (the bi-encoder's cosine - `centre`), read as a probability.
    The reader learned from Wikipedia questions; on a manual it meets first, asked as a story, the
    bi-encoder (trained on far more kinds of text) picks the answering sentence more often
    (bench/eval_results.md, twenty-fourth round), and on the older sets the sum reads better than
    either. `centre` is the cosine at which the reader's probability is left as it is; the reader's
    card names both with the threshold calibrated on the blend."""

    def __init__(self, inner, embedder, weight: float, centre: float):  # a SentenceScorer, an Embedder
        super().__init__(inner, embedder)
        self.weight = weight
        self.centre = centre
        self.identity = f"{inner.identity}+cosine*{weight:g}@{centre:g}"

    def _combined(self, probabilities: np.ndarray, cosines: np.ndarray) -> np.ndarray:
        p = np.clip(np.asarray(probabilities, dtype=np.float64), 1e-7, 1 - 1e-7)
        logits = np.log(p / (1 - p)) + self.weight * (np.asarray(cosines, dtype=np.float64) - self.centre)
        return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)


class RankFused(_WithCosine):
    """The reader's own scores handed out in a fused order: the candidates the reader scores at
    least `floor` (reflection's support level) first, each placed by the sum of its rank by the
    reader and its rank by the bi-encoder's cosine among all candidates (ties to the reader), then
    the rest in the reader's order, and the candidate placed i-th gets the reader's i-th best
    score. Which supported sentence comes first can change; the best score, and so `found`, and
    every ratio between successive scores stay the reader's. A rank sum has no scale to tip, where
    a blend of scores moved declines (twenty-fifth round); the floor keeps a sentence the reader
    does not support from coming first only to be dropped by reflection (thirty-first round).
    The order is fused only when the reader's best score is under `below`: a sentence the reader
    is sure of keeps its place; and the first place goes to a sentence the reader scores at `lead`
    (the found threshold) by itself, so reflection, which reads each shown sentence alone, never
    declines a part the reader found (thirty-second round)."""

    def __init__(self, inner, embedder, floor: float, below: float = 1.0, lead: float = 0.0):  # a SentenceScorer, an Embedder
        super().__init__(inner, embedder)
        self.floor = floor
        self.below = below
        self.lead = lead
        self.identity = (f"{inner.identity}+rank-fused@{floor:.4g}" + (f"<{below:g}" if below < 1 else "")
                         + (f"^{lead:.4g}" if lead > 0 else ""))

    def _moves(self, scores: np.ndarray) -> bool:
        scores = np.asarray(scores)
        return (len(scores) > 0 and float(scores.max()) < self.below
                and int((scores >= self.floor).sum()) >= 2)  # one supported sentence stays first

    def _combined(self, scores: np.ndarray, cosines: np.ndarray) -> np.ndarray:
        return fused(scores, cosines, self.floor, self.lead)


def fused(scores: np.ndarray, cosines: np.ndarray, floor: float = 0.0, lead: float = 0.0) -> np.ndarray:
    """`scores`' values, sorted, laid onto this order: the scores at `floor` or above by the sum of
    their rank by `scores` and by `cosines` (ranks among all candidates; ties to `scores`), then the
    others in the order of `scores`; the first of that order scoring `lead` or more moves to the
    front."""
    scores = np.asarray(scores, dtype=np.float32)
    by_score = np.argsort(np.argsort(-scores, kind="stable"), kind="stable")
    by_cosine = np.argsort(np.argsort(-np.asarray(cosines), kind="stable"), kind="stable")
    below = scores < floor  # the primary key last: below the floor, then the rank sum, then the reader
    order = list(np.lexsort((by_score, np.where(below, 0, by_score + by_cosine), below)))
    first = next((i for i in order if scores[i] >= lead), order[0])
    order.remove(first)
    order.insert(0, first)
    out = np.empty_like(scores)
    out[order] = np.sort(scores)[::-1]
    return out


class JudgedScorer:
    """The reader's scores, scaled so that their best is the judge's best: the reader picks which
    sentence answers, the judge (a reader trained on manuals' own questions, answered and not)
    says whether any does. The judge reads manuals' unanswerable questions better than the
    reader; it picks the answering sentence no better, and worse on multi-hop questions
    (bench/eval_results.md, twenty-seventh round). Order and ratios are the reader's, so every
    threshold on ratios reads as before; `found` and the support level are on the judge's scale
    (its card's threshold), and a claim checked alone is read by the judge alone.

    The judge reads only the reader's best `reads` candidates: on the recorded calls of manuals
    read first, its decisions are those it makes reading all of them (bench/eval_results.md,
    twenty-eighth round), and a call offers the reader about 15."""

    def __init__(self, chooser, judge, reads: int = 3):  # two SentenceScorers
        self.chooser = chooser
        self.judge = judge
        self.reads = reads
        self.identity = f"{chooser.identity}+judge{reads}:{judge.identity}"
        self.reader = getattr(chooser, "reader", None)
        self.judge_reader = getattr(judge, "reader", None)

    def score(self, question: str, candidates: Sequence[Candidate], question_vector: np.ndarray | None = None) -> np.ndarray:
        chosen = self.chooser.score(question, candidates, question_vector)
        best = self._best(chosen)
        return _scaled(chosen, self.judge.score(question, [candidates[i] for i in best], question_vector))

    def score_texts(self, question: str, texts: Sequence[str]) -> np.ndarray:
        chosen = self.chooser.score_texts(question, texts)
        return _scaled(chosen, self.judge.score_texts(question, [texts[i] for i in self._best(chosen)]))

    def _best(self, chosen: np.ndarray) -> list[int]:
        return [int(i) for i in np.argsort(-np.asarray(chosen), kind="stable")[:self.reads]]


def _scaled(chosen: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """`chosen` scaled so its best is `judged`'s best (one text: the judge's score); a chooser
    whose best is not above 0 says none answers."""
    chosen = np.asarray(chosen, dtype=np.float32)
    top = float(chosen.max()) if len(chosen) else 0.0
    if top <= 0.0:
        return np.zeros_like(chosen)
    return (chosen * (float(np.max(judged)) / top)).astype(np.float32)


class CoreQuestionScorer:
    """A scorer that also reads a long question's core (`forms.core_question`: its opening and
    the clause that asks) and keeps the better score: the reader learned from short questions, and
    a clause that only says which thing is meant draws it to sentences that repeat that clause."""

    def __init__(self, inner):  # a SentenceScorer
        self.inner = inner
        self.identity = f"{inner.identity}+core"
        self.reader = getattr(inner, "reader", None)

    def score(self, question: str, candidates: Sequence[Candidate], question_vector: np.ndarray | None = None) -> np.ndarray:
        scores = self.inner.score(question, candidates, question_vector)
        core = core_question(question)
        return np.maximum(scores, self.inner.score(core, candidates)) if core else scores

    def score_texts(self, question: str, texts: Sequence[str]) -> np.ndarray:
        scores = self.inner.score_texts(question, texts)
        core = core_question(question)
        return np.maximum(scores, self.inner.score_texts(core, texts)) if core else scores


@dataclass(frozen=True)
class ThresholdAnswerability:
    """Found when the best score reaches the threshold; the best score is the confidence."""

    threshold: float

    def judge(self, scores: np.ndarray) -> tuple[bool, float]:
        best = float(np.max(scores)) if len(scores) else 0.0
        return best >= self.threshold, best
