"""Constructed unanswerable questions: an answerable question changed in one detail so that the
sentence that answered it no longer does — the way SQuAD 2.0's writers made theirs (Rajpurkar et
al., 2018: entity swap, number swap, antonym, negation). The reader learns from them that a
sentence on the same topic with the same words is not an answer when the detail asked about
differs. Each change carries a weight: how sure it is to make the question unanswerable."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from ..reasoning.english import ANTONYMS, CAPITALISED_FUNCTION_WORDS

# How much a constructed label is trusted, per kind of change (human labels weigh 1).
WEIGHTS = {"number": 0.8, "name": 0.7, "antonym": 0.5, "negation": 0.3}

_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_NAME = re.compile(r"\b[A-Z][a-z][\w'’-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w'’-]*)*")
_NEGATABLE = re.compile(r"^(\s*(?:what|which|who|where|when|how)\b[^?]*?\b(?:is|was|are|were|can|could|will|would))\b",
                        re.IGNORECASE)


@dataclass(frozen=True)
class Changed:
    question: str
    kind: str
    weight: float


def names_in(text: str) -> list[str]:
    """Capitalised runs of `text` that are not a capitalised function word."""
    out = []
    for m in _NAME.finditer(text):
        name = m.group(0)
        if name.split()[0] not in CAPITALISED_FUNCTION_WORDS:
            out.append(name)
    return out


def perturb(question: str, sentence: str, context: str, names: tuple[str, ...], rng: random.Random) -> Changed | None:
    """One change of `question` that `sentence` (and its whole `context`) cannot answer, or None
    when no kind of change applies. The kinds are tried in a random order."""
    kinds = ["number", "name", "antonym", "negation"]
    rng.shuffle(kinds)
    for kind in kinds:
        changed = _CHANGES[kind](question, sentence, context, names, rng)
        if changed and changed != question:
            return Changed(changed, kind, WEIGHTS[kind])
    return None


def _number(question: str, sentence: str, context: str, names: tuple[str, ...], rng: random.Random) -> str | None:
    """A figure the question shares with its sentence, changed to one the context never gives."""
    shared = [m for m in _NUMBER.finditer(question) if m.group(0) in sentence]
    if not shared:
        return None
    m = rng.choice(shared)
    raw = m.group(0).replace(",", "")
    try:
        value = float(raw)
    except ValueError:
        return None
    for _ in range(10):
        if 1000 <= value <= 2100 and value.is_integer():  # a year: a nearby other one
            new = str(int(value) + rng.choice([-1, 1]) * rng.randint(2, 40))
        elif value.is_integer():
            new = str(int(value) * rng.randint(2, 5) + rng.randint(1, 9))
        else:
            new = f"{value * rng.uniform(1.5, 4):.1f}"
        if new not in context:
            return question[:m.start()] + new + question[m.end():]
    return None


def _name(question: str, sentence: str, context: str, names: tuple[str, ...], rng: random.Random) -> str | None:
    """A name the question shares with its sentence, swapped for another name of the same article
    that the context of the answer does not give."""
    shared = [n for n in names_in(question[1:]) if n in sentence]
    if not shared:
        return None
    old = rng.choice(shared)
    options = [n for n in names if n not in context and len(n.split()) == len(old.split()) and n != old]
    if not options:
        return None
    return question.replace(old, rng.choice(options), 1)


def _antonym(question: str, sentence: str, context: str, names: tuple[str, ...], rng: random.Random) -> str | None:
    """A word that says which one ("first", "largest", "before") turned into its opposite, when
    the sentence says the original word and not the opposite."""
    words = [m for m in re.finditer(r"[a-z]+", question) if m.group(0) in ANTONYMS]
    words = [m for m in words if re.search(rf"\b{m.group(0)}\b", sentence, re.IGNORECASE)
             and not re.search(rf"\b{ANTONYMS[m.group(0)]}\b", sentence, re.IGNORECASE)]
    if not words:
        return None
    m = rng.choice(words)
    return question[:m.start()] + ANTONYMS[m.group(0)] + question[m.end():]


def _negation(question: str, sentence: str, context: str, names: tuple[str, ...], rng: random.Random) -> str | None:
    """"Who was the first ...?" -> "Who was not the first ...?", when the sentence negates nothing."""
    if re.search(r"\b(?:not|never|no)\b|n't\b", sentence + " " + question, re.IGNORECASE):
        return None
    m = _NEGATABLE.match(question)
    if not m:
        return None
    return question[:m.end()] + " not" + question[m.end():]


_CHANGES = {"number": _number, "name": _name, "antonym": _antonym, "negation": _negation}
