"""How the extractive reasoner picks what to say: scoring sentences against a question, deciding
whether the evidence answers it at all, the short answer inside a sentence, and the statement that
settles a comparison. Pure functions of strings and vectors."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been being what which who whom whose "
    "when where why how did does do that this it its as i you we he she they me my your our their his her them "
    "us can could should would will shall may might must has have had not no yes there here than then so if "
    "about into over under up out any all some many much more most other such only also just very get gets got "
    "need needs there's what's it's between both either each same one ones s".split())


# Texts whose word sets are remembered: a sentence is scored by every step and question that
# reads it, and stemming its words again each time was a quarter of the answering interpreter's
# time. ~1.5 KB an entry: ~12 MB.
WORD_CACHE = 8192
QUESTION_CACHE = 1024  # questions, whose clause, words and names every sentence is scored against


@lru_cache(maxsize=WORD_CACHE)
def content_words(text: str) -> frozenset[str]:
    """Lower-case words that carry meaning, lightly stemmed (plural -s), for overlap scores.
    Frozen: the same set goes to every caller."""
    return words_of(text)


def words_of(text: str) -> frozenset[str]:
    """`content_words`, not remembered."""
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP and len(w) > 1)


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "al", "ly", "s", "e")


def _stem(word: str) -> str:
    """A light suffix stripper: "approves", "approved", "approval" and "approve" meet."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word


@dataclass(frozen=True)
class Scored:
    """Candidate sentences scored against one question."""

    scores: np.ndarray  # dense + lexical: how close each sentence is to the question
    dense: np.ndarray  # cosine similarity with the question
    coverage: np.ndarray  # share of the question's content words in the sentence (and its context)
    fit: np.ndarray | None = None  # how much each sentence answers the question (`answer_fit`)

    @property
    def best(self) -> int:
        """The closest sentence: what answerability is judged on."""
        return int(np.argmax(self.scores))

    @property
    def ranking(self) -> np.ndarray:
        return self.scores if self.fit is None else self.scores + FIT_WEIGHT * self.fit

    def order(self) -> list[int]:
        """The order an answer takes its sentences in: those close to the question (within
        LEAD_MARGIN of the closest) first, by how well they answer it, then the others. A
        sentence that says what is asked but about another thing never leads."""
        close = self.scores >= self.scores.max() - LEAD_MARGIN
        ranking = self.ranking
        return sorted(range(len(self.scores)), key=lambda i: (not close[i], -float(ranking[i])))


LEXICAL_WEIGHT = 0.3
FIT_WEIGHT = 0.3
LEAD_MARGIN = 0.15


def score(question: str, question_vector: np.ndarray, vectors: np.ndarray, contexts: Sequence[str],
          asked: str = "") -> Scored:
    """`contexts[i]` is what sentence i says with its document title and heading: the words a
    reader takes from its place ("Vision" heading over "100% covered"). `asked`: the question as
    the asker put it, when the answer's lead is chosen (its fit is scored against it)."""
    dense = vectors @ question_vector if len(vectors) else np.zeros(0, dtype=np.float32)
    words = content_words(question)
    if words:
        coverage = np.array([len(words & content_words(c)) / len(words) for c in contexts], dtype=np.float32)
    else:
        coverage = np.zeros(len(contexts), dtype=np.float32)
    fit = np.array([answer_fit(asked, c) for c in contexts], dtype=np.float32) if asked else None
    named = IDENTIFIER_WEIGHT * _identifiers_named(question, contexts)
    return Scored(dense + LEXICAL_WEIGHT * coverage + named, dense, coverage, fit)


IDENTIFIER_WEIGHT = 0.2


def _identifiers_named(question: str, contexts: Sequence[str]) -> np.ndarray:
    """Share of the question's identifiers (max_connections, pg_dump) that each context names
    whole: word overlap splits "max_connections" and finds "connections" in a neighbour's text."""
    names = [k for k in key_terms(question) if _is_identifier(k)]
    if not names:
        return np.zeros(len(contexts), dtype=np.float32)
    return np.array([sum(n in c.lower() for n in names) / len(names) for c in contexts], dtype=np.float32)


# -- the sentence that answers ----------------------------------------------------------------

_WH = r"(?:what|which|who|whom|whose|where|when|how)"
_ASKING = re.compile(rf"(?:^|[.?!]\s+)(?:(?:in|at|on|for|from|by|to|of|during|under|with)\s+)?{_WH}\b", re.IGNORECASE)
TYPE_FIT = 0.5  # a sentence holding (or lacking) a thing of the asked type: half a clause's words


@lru_cache(maxsize=QUESTION_CACHE)
def asked_clause(question: str) -> tuple[str, str]:
    """The clause that asks, and its part from the wh-word on: from the question's opening
    wh-word to the first comma, or, in a statement-shaped question ("..., he served as chief of
    staff to which Queensland Senator, who ..."), the clause around its last "what"/"which". The
    rest of a long question only says which thing is meant."""
    q = " ".join(question.split())
    opening = _ASKING.search(q)
    if opening:
        at = opening.end() - 1
    else:
        found = (list(re.finditer(r"\b(?:what|which)\b", q, re.IGNORECASE))
                 or list(re.finditer(rf"\b{_WH}\b", q, re.IGNORECASE)))
        if not found:
            return q, ""
        at = found[-1].start()
    at = q.rfind(" ", 0, at) + 1  # the wh-word's start
    start = max(q.rfind(c, 0, at) for c in ",;.?!") + 1
    end = min((i for i in (q.find(c, at) for c in ",;?!") if i >= 0), default=len(q))
    relative = re.search(r"\s(?:that|who|whom|whose|which|where|when)\s", q[at + 1:end])
    end = at + 1 + relative.start() if relative else end  # "the city where X was born": X is given
    return q[start:end].strip(), q[at:end]


@lru_cache(maxsize=QUESTION_CACHE)
def asked_words(question: str) -> frozenset[str]:
    """The content words of the asking clause that are not names or figures ("is father to which
    Bollywood actress" -> father, actress): the relation a sentence that answers speaks of, where
    a sentence sharing only the subject's name merely introduces it."""
    words = asked_clause(question)[0].split()
    plain = [w for w in words if not any(ch.isdigit() for ch in w) and not w[:1].isupper()]
    return content_words(" ".join(plain))


def answer_fit(question: str, sentence: str) -> float:
    """How much `sentence` answers `question` rather than restating it: the share of the asked
    relation's words it says, plus (minus) TYPE_FIT when it holds (lacks) a thing of the asked type
    (a year for "born in what year", a name for "which Senator") that the question does not name."""
    asked = asked_words(question)
    share = len(asked & content_words(sentence)) / len(asked) if asked else 0.0
    typed = typed_candidates(question, sentence, asked_clause(question)[1])
    opposed = TYPE_FIT if _opposed(question, sentence) else 0.0
    return share + (0.0 if typed is None else TYPE_FIT if typed else -TYPE_FIT) - opposed


_NEGATED = re.compile(r"\b(?:not|no|never|without)\s+((?:[\w-]+\s*){1,3})", re.IGNORECASE)


@lru_cache(maxsize=WORD_CACHE)  # a question's is asked for every sentence scored against it
def _negated(text: str) -> frozenset[str]:
    """The words `text` says "not" of: the first content word after a not, no, never or without
    ("only the data, not the schema (data definitions)" -> schema; "not equal to co-NP" -> equal)."""
    return frozenset().union(*(next(filter(None, map(words_of, _WORD.findall(m.group(1).lower()))), frozenset())
                               for m in _NEGATED.finditer(text)))


def _opposed(question: str, sentence: str) -> bool:
    """Whether `sentence` says "not" of what the question asks for, or the other way round: for
    "only the schema, not the data", "Dump only the data, not the schema" says the same words
    and the opposite thing."""
    q_not, s_not = _negated(question), _negated(sentence)
    if not q_not and not s_not:
        return False
    q_yes, s_yes = content_words(question) - q_not, content_words(sentence) - s_not
    return bool(q_yes & s_not or q_not & s_yes)


# -- answerability ----------------------------------------------------------------------------

# Calibrated on ../shared/data/squad2 (same-topic unanswerable questions) and off-topic questions
# over examples/sample: see `rag-rlm eval` (answerability curve) and bench/eval_results.md.
DENSE_WEIGHT, COVERAGE_WEIGHT, KEY_WEIGHT, TYPE_PENALTY, UNNAMED_PENALTY = 1.0, 0.5, 0.5, 0.3, 0.5
FOUND_THRESHOLD = 0.42  # the suggested point of the squad2 curve (recursive, k=5): bench/eval_results.md


_IDENTIFIER = re.compile(r"^[A-Za-z][\w.]*[_.][\w.]*\w$")  # max_connections, pg_dump, os.path


@lru_cache(maxsize=QUESTION_CACHE)
def key_terms(question: str) -> frozenset[str]:
    """Names, identifiers and figures the question gives ("Lisbon", "2017", "$500",
    "random_page_cost"): evidence that lacks one of them is about something else, however
    similar it sounds. An identifier is kept whole: it must appear as it is written."""
    words = question.split()
    keys = set()
    for i, raw in enumerate(words):
        w = raw.strip("?,.!;:\"'()“”‘’")
        if not w:
            continue
        if _IDENTIFIER.match(w):
            keys.add(w.lower())
        elif any(ch.isdigit() for ch in w) or (i > 0 and w[:1].isupper() and w.lower() not in STOP):
            keys |= content_words(w)
    return frozenset(keys)


def _is_identifier(key: str) -> bool:
    """A key term kept whole (max_connections, os.path), as `key_terms` keeps identifiers."""
    return "_" in key or "." in key


def _named(key: str, words: set[str], text: str) -> bool:
    return key in text if _is_identifier(key) else key in words


def _written(identifier: str, lower: str) -> bool:
    """Whether lower-case `lower` writes `identifier`: whole, or for a dotted name its last part
    (a manual says "most_common()" under "Counter objects", never "Counter.most_common")."""
    last = identifier.rsplit(".", 1)[-1]
    return identifier in lower or bool(re.search(rf"(?<![\w.]){re.escape(last)}\b", lower))


def confidence(question: str, best_dense: float, best_coverage: float, evidence: Sequence[str],
               best_sentence: str = "", names: str | None = None) -> float:
    """How sure we are that the evidence answers the question: the best sentence's similarity and
    word coverage, whether the evidence names what the question names, and whether the best
    sentence holds the kind of thing asked for (a date for "when", a figure for "how many").
    `names` replaces the question as the source of the names the evidence must give (a hop must
    name its focus, not the names its parent question gave)."""
    keys = key_terms(question if names is None else f"_ {names}")  # names: what must be named
    # the union of the texts' remembered word sets: the words of the texts joined by spaces
    words, lower = frozenset().union(*map(content_words, evidence)), " ".join(evidence).lower()
    key_share = sum(_named(k, words, lower) for k in keys) / len(keys) if keys else 1.0
    typed_miss = best_sentence and typed_candidates(question, best_sentence) == []
    # an identifier the evidence never writes (random_page_cost) means it is about another one,
    # however alike its sentences read ("The default value is one" of a neighbouring parameter)
    identifiers = [k for k in keys if _is_identifier(k) and ("_" in k or min(map(len, k.split("."))) >= 2)]  # not "u.s"
    unnamed = bool(identifiers) and not any(_written(k, lower) for k in identifiers)
    return (DENSE_WEIGHT * best_dense + COVERAGE_WEIGHT * best_coverage + KEY_WEIGHT * (key_share - 1.0)
            - (TYPE_PENALTY if typed_miss else 0.0) - (UNNAMED_PENALTY if unnamed else 0.0))


# -- the short answer -------------------------------------------------------------------------

_YEAR = r"\b(?:1[5-9]\d\d|20\d\d)s?\b"
_DATE = (r"\b(?:\d{1,2}\s+)?(?:January|February|March|April|May|June|July|August|September|October|November|"
         r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?(?:\s+\d{1,2})?(?:,?\s+\d{4})?\b")
_NUMBER = (r"(?:[$€£]\s?)?\b\d[\d,.]*(?:\s?(?:%|percent|per cent))?(?:\s+(?:[a-z]+\s+)?(?:days?|weeks?|months?|years?|"
           r"hours?|minutes?|people|employees|km|miles|metres|meters|feet|million|billion|thousand))?")
_NAME = r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|da|van|von|and|&)?\s*[A-Z][\w'’.-]*)*"


def short_answer(question: str, sentence: str) -> str:
    """The span of `sentence` that answers `question` when its type is clear (a date for "when",
    a figure for "how many/much", a name for "who/where"), not repeating the question; else ""."""
    found = typed_candidates(question, sentence)
    # two candidates of the type: which one answers is not clear, so say none
    return found[0] if found and len(set(found)) == 1 else ""


def typed_candidates(question: str, sentence: str, ask: str = "") -> list[str] | None:
    """Spans of `sentence` of the type the question asks for (not repeating the question); None
    when the question's type is not one of date, figure or name. `ask`: the words that say the
    type, when not the question's opening (`asked_clause`)."""
    patterns = _answer_patterns((ask or question).lower())
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


# what a manual says a default is: "The default is typically 128 megabytes", "5432 by default",
# "Read Committed is the default isolation level" (not "Non-default values of BLCKSZ ...")
_DEFAULT = (r"(?i:(?<=\bdefault is )|(?<=\bdefault value is )|(?<=\bdefaults to ))[^,;.()]+"
            r"|[\w.-]+(?= by default\b)|\b[A-Z][\w-]*(?: [A-Z][\w-]*)*(?= is the default\b)")


_NAMED_THINGS = (r"city|country|town|company|person|team|band|state|river|film|movie|book|school|university|actor|"
                 r"actress|singer|senator|politician|president|player|author|writer|director|network|station|"
                 r"label|magazine|album|song|county|province|island|club|league|party|family|tribes?")


@lru_cache(maxsize=QUESTION_CACHE)
def _answer_patterns(ask: str) -> tuple[str, ...] | None:
    """The shapes an answer to `ask` (lower case) takes: dates, figures or names; None if unclear."""
    if re.match(r"^\s*(?:in\s+)?(?:what|which)\s+(?:year|date|day)\b|^\s*when\b", ask):
        return (_DATE, _YEAR)
    if re.match(r"^\s*how\s+(?:many|much|long|old|often|far)\b|^\s*what\s+(?:percentage|share|percent|"
                r"amount|number)\b|^\s*what\s+(?:is|was|are|were)\s+(?:\w+\s+)?(?:population|size|height|length|"
                r"area|capacity|attendance)\b", ask):
        return (_NUMBER,)
    if re.match(rf"^\s*(?:who|whom|whose|where)\b|^\s*(?:what|which)\s+(?:\w+\s+){{0,3}}?(?:{_NAMED_THINGS})\b", ask):
        return (_NAME,)
    if re.match(r"^\s*what\s+(?:is|are|was|were)\s+(?:the\s+)?defaults?\b", ask):
        return (_DEFAULT,)
    return None


def _sentence_initial(sentence: str, start: int, span: str) -> bool:
    """"The" or "Our" opening a sentence is no name; a real name keeps its capitals elsewhere too."""
    return start == 0 and len(span.split()) == 1 and span.lower() in STOP | {"our", "please", "each", "every"}


# -- comparisons ------------------------------------------------------------------------------

_EARLY = {"first", "earlier", "earliest", "older", "oldest", "before", "sooner"}
_LATE = {"later", "latest", "newer", "newest", "younger", "youngest", "last", "after", "more recently", "recent"}
_MORE = {"more", "most", "larger", "largest", "bigger", "biggest", "higher", "highest", "longer", "longest",
         "taller", "tallest", "greater", "greatest", "heavier", "faster", "wider"}
_LESS = {"less", "least", "fewer", "fewest", "smaller", "smallest", "lower", "lowest", "shorter", "shortest",
         "cheaper", "slower", "lighter"}


def comparison_cue(question: str) -> str:
    """The word that says what a comparison asks for ("first", "larger"), or ""."""
    for word in re.findall(r"[a-z]+", question.lower()):
        if word in _EARLY | _LATE | _MORE | _LESS:
            return word
    return ""


def figure(text: str, cue: str) -> float | None:
    """The figure a side's sentence gives for the cue: a year for first/later, else a number."""
    if cue in _EARLY | _LATE:
        m = re.search(_YEAR, text)
        return float(m.group(0)[:4]) if m else None
    undated = re.sub(_DATE, lambda d: " " * len(d.group(0)), text)  # the 16 of "16 February 1954" is no size
    m = re.search(r"\d[\d,]*(?:\.\d+)?", undated)
    return float(m.group(0).replace(",", "")) if m else None


def winner(cue: str, figures: Sequence[float]) -> int:
    """Index of the side the cue picks."""
    smallest = cue in _EARLY | _LESS
    return int(np.argmin(figures) if smallest else np.argmax(figures))


# -- yes/no comparisons -----------------------------------------------------------------------

# Nationality words: "American" is what a person or a thing is (an adjective), not a thing itself.
DEMONYMS = frozenset(
    "American British English French German Italian Spanish Australian Canadian Indian Chinese Japanese "
    "Russian Irish Scottish Welsh European African Asian Mexican Swedish Dutch Korean Brazilian Polish Greek "
    "Turkish Israeli Jewish Christian Catholic Roman Norwegian Danish Finnish Portuguese Austrian Swiss "
    "Belgian Egyptian Persian Arab Arabic Latin Hindi Soviet Indonesian Filipino Argentine Chilean "
    "Pakistani Iranian Iraqi Ukrainian Hungarian Czech Romanian Serbian Croatian Nigerian Kenyan".split())


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
