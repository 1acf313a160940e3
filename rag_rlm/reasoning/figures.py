"""Figures and what they measure, for comparisons ("Which plan covers more of the premium, A or
B?"). A figure is a number with its unit, read as one of a few measures (a share, money, a
duration, a size, a length, a weight, a date, a count). Two sides are compared only on figures
of the same measure, and of the measure the question asks about when it names one: a waiting
period in days is never weighed against a share of salary, nor a count against a year."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .english import (
    AUXILIARIES,
    COMPARED_MEASURES,
    DETERMINERS,
    EARLY,
    LATE,
    LESS,
    MONTHS,
    UNIT_MEASURES,
    comparison_words,
)

_MONTH = "|".join(MONTHS)
_DATE = re.compile(rf"\b(?:\d{{1,2}}\s+)?(?:{_MONTH})\.?(?:\s+\d{{1,2}})?(?:,?\s+(?P<year>\d{{4}}))?\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<![\d.,])(?P<year>1[0-9]\d\d|20\d\d)s?\b(?![.,]\d)")
_FIGURE = re.compile(r"(?P<currency>[$€£])?\s?(?P<number>\d[\d,]*(?:\.\d+)?)(?:[\s-]?(?P<unit>%|[A-Za-z]+(?:\s+cent)?))?")


# Units of one measure on one scale, so "2048 bytes" and "3.5 GB" compare.
_SCALE = {
    "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3,
    "tib": 1024.0**4, "kilobytes": 1e3, "megabytes": 1e6, "gigabytes": 1e9, "terabytes": 1e12, "bits": 1 / 8,
    "ms": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3, "microsecond": 1e-6, "microseconds": 1e-6,
    "nanosecond": 1e-9, "nanoseconds": 1e-9, "minute": 60.0, "minutes": 60.0, "hour": 3600.0, "hours": 3600.0, "day": 86400.0, "days": 86400.0,
    "week": 604800.0, "weeks": 604800.0, "month": 2.63e6, "months": 2.63e6, "year": 3.156e7, "years": 3.156e7,
    "km": 1e3, "kilometres": 1e3, "kilometers": 1e3, "mile": 1609.0, "miles": 1609.0, "feet": 0.3048,
    "ft": 0.3048, "inches": 0.0254, "cm": 0.01, "mm": 1e-3, "g": 1e-3, "grams": 1e-3, "tonnes": 1e3,
    "tons": 1e3, "pounds": 0.4536, "lb": 0.4536, "lbs": 0.4536,
}


@dataclass(frozen=True)
class Figure:
    value: float  # on the measure's one scale (bytes, seconds, metres, kilograms)
    measure: str  # percent | money | duration | size | length | weight | date | count
    text: str  # as written: "80%", "$1,200", "8 bytes", "1997"


def figures_in(text: str) -> list[Figure]:
    """The figures of `text`, in order: dates as their year (a date's day is no size), then every
    other number with the measure its unit (or currency sign) gives."""
    out: list[tuple[int, Figure]] = []
    taken: list[tuple[int, int]] = []
    for m in _DATE.finditer(text):
        if m.group("year"):
            out.append((m.start(), Figure(float(m.group("year")), "date", m.group(0).strip())))
        taken.append(m.span())
    for m in _YEAR.finditer(text):
        if not _inside(m.span(), taken) and _unit_after(text, m.end()) is None:
            out.append((m.start(), Figure(float(m.group("year")), "date", m.group("year"))))
            taken.append(m.span())
    for m in _FIGURE.finditer(text):
        if _inside(m.span("number"), taken):
            continue
        value = float(m.group("number").replace(",", ""))
        unit = (m.group("unit") or "").lower()
        number = (m.group("currency") or "") + m.group("number")
        if unit in UNIT_MEASURES:
            measure, shown = UNIT_MEASURES[unit], m.group(0).strip()
            value *= _SCALE.get(unit, 1.0)
        elif m.group("currency"):
            measure, shown = "money", number
        else:
            measure, shown = "count", number
        out.append((m.start(), Figure(value, measure, shown)))
    return [f for _, f in sorted(out, key=lambda pair: pair[0])]


def asked_figures(question: str, text: str) -> list[Figure]:
    """`figures_in(text)`, or, for a table row ("Name: integer; Storage Size: 4 bytes; Range:
    -2147483648 to +2147483647") whose column the question names ("a larger range"), only
    that cell's: the row's first figure measures another thing."""
    cells = text.rstrip(".").split("; ")
    if len(cells) >= 2 and all(": " in cell for cell in cells):
        named = columns_named(set(_LETTERS.findall(question.lower())), text)
        if named:
            return figures_in(named[0][1])
    return figures_in(text)


_LETTERS = re.compile(r"[a-z]+")


def columns_named(words: set[str], row: str) -> list[tuple[str, str]]:
    """The (label, value) cells after a table row's first ("Name: date; Storage Size: 4 bytes;
    High Value: 5874897 AD") whose label's words are all among `words` (lower case)."""
    cells = (cell.partition(": ") for cell in row.rstrip(".").split("; ")[1:])
    return [(label, value) for label, sep, value in cells
            if sep and (said := set(_LETTERS.findall(label.lower()))) and said <= words]


def _unit_after(text: str, at: int) -> str | None:
    m = re.match(r"[\s-]?(%|[A-Za-z]+)", text[at:])
    return UNIT_MEASURES.get(m.group(1).lower()) if m else None


def _inside(span: tuple[int, int], taken: Sequence[tuple[int, int]]) -> bool:
    return any(a <= span[0] < b for a, b in taken)


def asked_measures(question: str, cue: str) -> frozenset[str]:
    """The measures a comparison asks about (pass the question without the sides' names): a date
    for "first"/"later", a share for "a larger share of salary", money for "cheaper"...; empty
    when it does not say (then the sides must merely agree)."""
    if cue in EARLY | LATE:
        return frozenset({"date"})
    for word in re.findall(r"[a-z]+", question.lower()):  # the first word that names one
        if word in COMPARED_MEASURES:
            return frozenset(COMPARED_MEASURES[word])
    return frozenset()


def comparable(question: str, cue: str, sides: Sequence[Sequence[Figure]]) -> list[Figure] | None:
    """One figure per side, all of one measure (the asked one when the question names it), the
    first such in each side's sentence; None when the sides give no figures of a shared measure.
    A bare number (a count) is compared only when the question asks for a count ("more
    employees"): otherwise it is a version, an index or a list number ("New in version 3.5" is
    no speed). A date is compared only when the question asks when ("first", "later"): a year
    says nothing of "more varied music"."""
    wanted = asked_measures(question, cue)
    shared = set.intersection(*({f.measure for f in side} for side in sides)) if sides else set()
    measures = [m for m in ("percent", "money", "duration", "size", "length", "weight", "date", "count")
                if m in shared and (m in wanted if wanted or m in ("count", "date") else True)]
    if not measures:
        return None
    measure = measures[0]
    return [next(f for f in side if f.measure == measure) for side in sides]


def winner(cue: str, values: Sequence[float]) -> int | None:
    """Index of the side the cue picks; None for a tie."""
    if len(set(values)) < len(values):
        return None
    smallest = cue in EARLY | LESS
    pick = min if smallest else max
    return values.index(pick(values))


def predicate(question: str) -> str:
    """What the question says the winner does, in its own words: "Which plan covers more of the
    premium, A or B?" -> "covers more of the premium"; "Which club was founded first" -> "was
    founded first"; "" when the question has no such head."""
    # the options follow the head: after a comma, or, with no comma, from the determiner before "or" (a side's
    # question is "Which club was founded first The or ?" once the names are taken out)
    head = re.split(r"[,:?]|\s+or\s+", " ".join(question.split()), maxsplit=1)[0]
    words = head.split()
    while len(words) > 2 and words[-1].lower() in DETERMINERS:
        words = words[:-1]
    if len(words) < 2 or words[0].lower() not in ("which", "what", "who"):
        return ""
    rest = words[1:]
    if len(rest) >= 2 and rest[0].lower() not in AUXILIARIES and not rest[0].endswith("s") \
            and (rest[1].lower() in AUXILIARIES or rest[1].endswith(("s", "ed"))):
        rest = rest[1:]  # "Which club was founded first": the noun names the kind, not the winner
    said = " ".join(rest)
    return said if comparison_words(said) else ""
