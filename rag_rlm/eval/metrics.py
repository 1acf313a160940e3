"""Answer and retrieval metrics. Pure functions of strings and id lists.

Answer metrics use the SQuAD normalisation (lower case, no punctuation, no articles, single
spaces) and take the best score over the acceptable gold strings.

Answerability: an answer is *declined* when the system says the collection does not answer the
question. Two shares describe it: of the unanswerable questions, how many were declined (higher
is better), and of the answerable ones, how many were wrongly declined (lower is better). Sweeping
a threshold over the answerability score (declined when score < threshold) trades one for the
other; `answerability_curve` gives that trade-off and `pick_threshold` a point on it.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
_CITATION = re.compile(r"\[\d+\]")


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, punctuation removed, articles removed, spaces collapsed."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def strip_citations(text: str) -> str:
    """An answer without its [n] citation markers (they are not words of the answer)."""
    return _CITATION.sub(" ", text)


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    pred = normalize_answer(strip_citations(prediction))
    return float(any(pred == normalize_answer(g) for g in golds))


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """Best SQuAD token F1 over the gold strings."""
    pred = normalize_answer(strip_citations(prediction)).split()
    return max((_f1(pred, normalize_answer(g).split()) for g in golds), default=0.0)


def _f1(pred: list[str], gold: list[str]) -> float:
    if not pred or not gold:
        return float(pred == gold)
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def containment(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when a normalised gold string occurs in the normalised answer on word boundaries."""
    pred = f" {normalize_answer(strip_citations(prediction))} "
    return float(any((g := normalize_answer(gold)) and f" {g} " in pred for gold in golds))


def lead_containment(lead: str, golds: Sequence[str]) -> float:
    """`containment` of the answer's first sentence: is the gold answer said up front?"""
    return containment(lead, golds)


def word_count(text: str) -> int:
    """Words of an answer: whitespace-separated tokens with a letter or digit, [n] markers not
    counted (so "Paris [1]." is one word)."""
    return sum(1 for token in strip_citations(text).split() if any(ch.isalnum() for ch in token))


def support_recall(found: Iterable[str], gold: Sequence[str]) -> float:
    """Share of the gold supporting documents among the documents found."""
    gold_set = set(gold)
    if not gold_set:
        return 1.0
    return len(gold_set & set(found)) / len(gold_set)


def all_supporting(found: Iterable[str], gold: Sequence[str]) -> float:
    """1.0 when every gold supporting document was found."""
    return float(set(gold) <= set(found))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's
    default); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def declined_shares(declined: Sequence[bool], answerable: Sequence[bool]) -> tuple[float, float]:
    """(share of unanswerable questions declined, share of answerable questions wrongly
    declined); NaN for a kind with no questions."""
    unanswerable = [d for d, a in zip(declined, answerable, strict=True) if not a]
    answerable_declined = [d for d, a in zip(declined, answerable, strict=True) if a]
    return mean([float(d) for d in unanswerable]), mean([float(d) for d in answerable_declined])


def answerability_curve(scores: Sequence[float], answerable: Sequence[bool]) -> list[dict[str, float]]:
    """Per threshold t (declined when score < t), the declined-unanswerable share and the
    wrongly-declined-answerable share, for every t that changes them: each distinct score (the
    lowest declines nothing) and one just above the highest (declines everything). Both shares
    grow with t. Empty unless there are questions of both kinds."""
    pairs = [(s, a) for s, a in zip(scores, answerable, strict=True) if math.isfinite(s)]
    n_ans = sum(1 for _, a in pairs if a)
    n_unans = len(pairs) - n_ans
    if not n_ans or not n_unans:
        return []
    distinct = sorted({s for s, _ in pairs})
    thresholds = [*distinct, math.nextafter(distinct[-1], math.inf)]
    ordered = sorted(pairs)
    curve, i, declined_ans, declined_unans = [], 0, 0, 0
    for t in thresholds:  # one pass: move every score below t into the declined counts
        while i < len(ordered) and ordered[i][0] < t:
            if ordered[i][1]:
                declined_ans += 1
            else:
                declined_unans += 1
            i += 1
        curve.append({"threshold": t, "declined_unanswerable": declined_unans / n_unans,
                      "wrongly_declined": declined_ans / n_ans})
    return curve


def pick_threshold(curve: Sequence[dict[str, float]], max_wrongly_declined: float = 0.10) -> dict[str, float] | None:
    """The point of the curve that declines the most unanswerable questions while wrongly
    declining at most `max_wrongly_declined` of the answerable ones (ties: fewer wrongly
    declined, then the lower threshold); None for an empty curve."""
    allowed = [p for p in curve if p["wrongly_declined"] <= max_wrongly_declined + 1e-12]
    if not allowed:
        return None
    return min(allowed, key=lambda p: (-p["declined_unanswerable"], p["wrongly_declined"], p["threshold"]))
