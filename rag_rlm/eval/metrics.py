"""Answer and retrieval metrics. Pure functions of strings and id lists.

Answer metrics use the SQuAD normalisation (lower case, no punctuation, no articles, single
spaces) and take the best score over the acceptable gold strings.
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
