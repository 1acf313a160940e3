"""What the extractive reasoner says besides quoted sentences: the short answer inside the lead
(a date, a figure or a name, rule `short_answer`), and the yes or no that settles a yes/no
comparison (rule `yes_no_comparison`). Which sentence answers is the reader's decision, not this
module's. Pure functions of strings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from .english import (
    AUXILIARIES,
    DEMONYMS,
    EARLY,
    LATE,
    LESS,
    MORE,
    NAMED_THINGS,
    QUESTION_CACHE,
    STOP,
    THING_KINDS,
    content_words,
)

# -- the short answer -------------------------------------------------------------------------

_YEAR = r"\b(?:1[5-9]\d\d|20\d\d)s?\b"
_DATE = (r"\b(?:\d{1,2}\s+)?(?:January|February|March|April|May|June|July|August|September|October|November|"
         r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?(?:\s+\d{1,2})?(?:,?\s+\d{4})?\b")
_NUMBER = (r"(?:[$€£]\s?)?(?<![A-Za-z]-)\b\d[\d,.]*(?![A-Za-z\d])(?:\s?(?:%|percent|per cent))?(?:\s+(?:[a-z]+\s+)?(?:days?|weeks?|months?|years?|"
           r"hours?|minutes?|people|employees|km|miles|metres|meters|feet|million|billion|thousand))?")
_PATH = r"(?<![\w/.])(?:~|\.{1,2})?/[\w.+-]*\w(?:/[\w.+-]*\w)*/?"  # /etc/hostname, ~/.config, ./build/
_NAME = r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|da|van|von|and|&)?\s*[A-Z][\w'’.-]*)*"


def short_answer(question: str, sentence: str, code_name: str = "") -> str:
    """The span of `sentence` that answers `question` when its type is clear (a date for "when",
    a figure for "how many/much", a name for "who/where", `code_name` — the first the sentence
    writes that the question does not — for "which tool/option/function"), not repeating the
    question; else ""."""
    if code_name and asks_for_a_kind(question):
        return code_name  # "Which tool restores the archive?": pg_restore, not the PostgreSQL it names
    found = typed_candidates(question, sentence)
    # two candidates of the type: which one answers is not clear, so say none
    return found[0] if found and len(set(found)) == 1 else ""


def typed_candidates(question: str, sentence: str) -> list[str] | None:
    """Spans of `sentence` of the type the question asks for (not repeating the question); None
    when the question's type is not one of date, figure or name."""
    patterns = _answer_patterns(question.lower())
    if patterns is None:
        return None
    asked = content_words(question)
    for pattern in patterns:
        found = []
        text = re.sub(_DATE, lambda m: " " * len(m.group(0)), sentence) if pattern is _NUMBER else sentence
        for m in re.finditer(pattern, text):  # a count is not the day of a date
            span = m.group(0).strip(" ,.;:")
            words = content_words(span)
            if span and words and not words <= asked and not _sentence_initial(sentence, m.start(), span):
                found.append(span)
        if found:
            return found
    return []


_NAMED_THINGS = "|".join(NAMED_THINGS)
# "Which pg_dump option ...", "What tool ...", "Is there a setting ...": the kind is the thing asked
# for, not a word after a verb ("What does Option::ok_or do?")
_ASKS_FOR_A_KIND = re.compile(rf"\b(?:which|what|is there an?|are there(?: any)?)\s+(?!(?:{'|'.join(AUXILIARIES)})\b)"
                              rf"(?:[\w.-]+\s+){{0,2}}?(?:{'|'.join(sorted(THING_KINDS))})s?\b", re.I)


def asks_for_a_kind(question: str) -> bool:
    """Whether the question asks for a thing of code by its kind ("Which option makes cd push the
    old directory?"): its answer is that thing's name, and a follow-up's "its default" is about it."""
    return _ASKS_FOR_A_KIND.search(question) is not None


@lru_cache(maxsize=QUESTION_CACHE)
def _answer_patterns(ask: str) -> tuple[str, ...] | None:
    """The shapes an answer to `ask` (lower case) takes: dates, figures or names; None if unclear."""
    if re.match(r"^\s*(?:in\s+)?(?:what|which)\s+(?:year|date|day)\b|^\s*when\b", ask):
        return (_DATE, _YEAR)
    if re.match(r"^\s*how\s+(?:many|much|long|old|often|far)\b|^\s*what\s+(?:percentage|share|percent|"
                r"amount|number)\b|^\s*what\s+(?:is|was|are|were)\s+(?:\w+\s+)?(?:population|size|height|length|"
                r"area|capacity|attendance)\b", ask):
        return (_NUMBER,)
    if re.match(r"^\s*where\b", ask):
        return (_PATH, _NAME)  # a file's place is its path ("/etc/hostname"), not a name the sentence also says
    if re.match(rf"^\s*(?:who|whom|whose)\b|^\s*(?:what|which)\s+(?:\w+\s+){{0,3}}?(?:{_NAMED_THINGS})\b", ask):
        return (_NAME,)
    return None


def _sentence_initial(sentence: str, start: int, span: str) -> bool:
    """"The", "First," or "Here's" opening a sentence is no name: one word there is taken only when the
    text writes it capitalised once more ("Sentry ... Sentry")."""
    opens = start == 0 or re.search(r"[.!?]\s+$", sentence[:start]) is not None
    return opens and len(span.split()) == 1 and (span.lower() in STOP | {"our", "please", "each", "every"}
                                                 or sentence.count(span) < 2)


# -- comparisons ------------------------------------------------------------------------------


def comparison_cue(question: str) -> str:
    """The word that says what a comparison asks for ("first", "larger"), or ""."""
    for word in re.findall(r"[a-z]+", question.lower()):
        if word in EARLY | LATE | MORE | LESS:
            return word
    return ""


# -- yes/no comparisons -----------------------------------------------------------------------

_YES_NO = re.compile(r"^(are|were|is|was|do|does|did|have|has)\b", re.IGNORECASE)


def verdict(question: str, sides: Sequence[tuple[str, str]]) -> bool | None:
    """The answer to a yes/no comparison ("Are X and Y both film directors?", "Were X and Y of
    the same nationality?") from each side's (name, sentence), or None when the sentences do not
    settle it: both say what is asked (yes), or one says something else of the kind (no: a
    "Hungarian" director is no "American" one, "Jiangsu province" is not "Jiangxi province").
    A sentence that is merely silent settles nothing."""
    if len(sides) < 2 or not _YES_NO.match(question.strip()):
        return None
    same = re.search(r"\bsame\s+([a-z]+)", question, re.IGNORECASE)
    if same:
        values = [_values(text, same.group(1).lower()) for _, text in sides]
        return None if not all(values) else all(v & values[0] for v in values)
    names = set().union(*(content_words(name) for name, _ in sides))
    wanted = content_words(question) - names
    if not wanted:
        return None
    if all(wanted <= content_words(text) for _, text in sides):
        return True
    asked = {w for w in wanted if w.capitalize() in DEMONYMS}
    if any(asked and _demonyms(text) and not asked & _demonyms(text) for _, text in sides):
        return False
    return None


def _demonyms(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Z][a-z]+", text) if w in DEMONYMS}


def _values(text: str, noun: str) -> set[str]:
    """What `text` gives as its `noun` ("Jiangsu" for province in "a city in Jiangsu province";
    "Louisiana" for state in "the State of Louisiana"; the nationality words for nationality)."""
    if noun in ("nationality", "nationalities", "country", "citizenship"):
        return _demonyms(text)
    before = re.findall(rf"({_NAME})\s+{noun}s?\b", text)  # lower case: "United States" is a name, no state
    after = re.findall(rf"\b(?i:{noun})s?\s+of\s+({_NAME})", text)
    return {v.lower() for v in before + after}


def yes_no(question: str, names: Sequence[str], answer: bool) -> str:
    """The sentence that says the verdict in the question's own words: "Yes: Medici and Senet are
    both board games." / "No: Nantong and Jingdezhen are not situated in the same province."; ""
    when the question's shape gives no words for it."""
    q = " ".join(question.split()).rstrip(" ?")
    verb = q.split(" ", 1)[0].lower()
    last = max((q.rfind(n) + len(n) for n in names if n in q), default=-1)
    said = q[last:].strip(" ,") if last > 0 else ""
    if not said:
        return ""
    subject = " and ".join(names)
    return f"Yes: {subject} {verb} {said}." if answer else f"No: {subject} {verb} not {said}."
