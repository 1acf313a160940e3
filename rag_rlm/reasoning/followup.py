"""`condense`: a follow-up question made to stand on its own, without a generative model.

Whether a question depends on the conversation is read from its *form*, never its length:
- ellipsis: a fragment with no clause of its own ("And vision?", "What about contractors?",
  "How about in Toronto?") takes the frame of the previous question; the new phrase replaces
  the phrase of that question closest to it in meaning ("medical" ~ "vision"), so "What share
  of medical costs does the company cover?" + "And vision?" gives "What share of vision costs
  does the company cover?";
- anaphora with no antecedent inside the question ("replace it later", "who approves them?",
  "work there", "a new one"): the pronoun is replaced by the subject of the previous question,
  the noun phrase of it that fits best in meaning the earlier question, its answer and the
  new question together (specific phrases win over "the company" or "employees");
- a definite "the plan" whose noun heads a longer phrase of the previous question ("a
  retirement plan") gets that phrase back.
Anything else ("Who is the CEO?", "If my laptop breaks, who repairs it?") is returned as is.

Noun phrases come from a function-word list (no tagger: spaCy/NLTK data cannot be installed
here): runs of the words that are not wh-words, auxiliaries, pronouns, prepositions,
conjunctions or light verbs, with the article before them. When a rewrite would be a guess
(a fragment that matches nothing in the previous question, "the same", "that process"), the
question is kept and the subject is appended in parentheses for retrieval ("Is the same true
for contractors? (vacation days)"): a visible hint reads better than a garbled sentence.

A follow-up of a follow-up is resolved in order: the previous user turn is condensed first (up
to `Thresholds.followup_depth` turns back). Each resolved turn costs one `embed` call of a few short strings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..embed import Embedder
from .base import Turn
from .claims import code_names, names_by_form, thing_named
from .compose import asks_for_a_kind
from .english import (
    ATTACHING_PREPOSITIONS,
    AUX_WORDS,
    BE_WORDS,
    DETERMINERS,
    EXTRAPOSED_WORDS,
    FUNCTION_WORDS,
    GENERIC_NOUNS,
    LIGHT_VERBS,
    MEASURE_NOUNS,
    PREPOSITIONS,
    SUBJECT_PRONOUNS,
    THING_KINDS,
    TIME_NOUNS,
    TIME_PREPOSITIONS,
    WH_WORDS,
)
from .thresholds import Thresholds

__all__ = ["Condensed", "condense"]


@dataclass(frozen=True)
class Condensed:
    question: str  # what to retrieve and answer with; the input itself when it stands alone
    subject: str = ""  # the phrase carried over from the conversation, "" if none
    reason: str = "standalone"  # standalone | no history | ellipsis | name | pronoun | definite | appended


_ELLIPSIS = re.compile(
    r"^\s*(?:(?:and|or|but)\s+)?(?:(?:what|how)\s+about|what\s+of|(?:the\s+)?same\s+(?:goes\s+)?(?=for\b|with\b))\s*",
    re.I,
)
_AND = re.compile(r"^\s*(?:and|or|also|plus)\b[\s,]*", re.I)
_TAIL = re.compile(r"[\s,]*(?:\b(?:too|as well|also|then|instead|though|please)\b[\s,]*)*[?.!\s]*$", re.I)
# a command's option keeps its dashes ("the --vgdb option"): without them it is no code name
_TOKEN = re.compile(r"\w+\(\w\)|\$?\d+(?:[.,]\d+)*%?|(?:(?<![\w-])--?)?[A-Za-z][A-Za-z0-9_]*(?:['’-][A-Za-z0-9]+)*")


@dataclass(frozen=True)
class _Tok:
    text: str
    low: str
    start: int
    end: int


@dataclass(frozen=True)
class _Phrase:
    text: str  # without its article
    start: int
    end: int
    det: str  # the article/possessive before it, lowercased, "" if none
    head: str  # the last word of its first run: "expenses" of "expenses over $500"

    @property
    def generic(self) -> bool:
        return all(w.lower() in GENERIC_NOUNS for w in _TOKEN.findall(self.text))


def condense(question: str, history: Sequence[Turn], embedder: Embedder,
             thresholds: Thresholds | None = None) -> Condensed:
    """`question` as it would be asked without the conversation before it (oldest turn first)."""
    t = thresholds or Thresholds()
    return _condense(question, history, embedder, t.followup_depth, t)


def _condense(question: str, history: Sequence[Turn], embedder: Embedder, depth: int, t: Thresholds) -> Condensed:
    if not any(t.role == "user" and t.content.strip() for t in history):
        return Condensed(question, "", "no history")
    toks = _tokens(question)
    fragment = _fragment(question)
    anaphors = [] if fragment else _anaphors(toks)
    about = fragment is None and (_ELLIPSIS.match(question) is not None  # "What about if I'm part-time?"
                                  or (not anaphors and _subjectless(question)))  # "How many per year?"
    if fragment is None and not anaphors and not about:
        return _definite(question, toks, history)
    prev, answer, carried = _antecedent(history, embedder, depth, t)
    if not prev:
        return Condensed(question, "", "standalone")
    if about:
        return Condensed(f"{prev} ({question.strip()})", prev, "appended")
    if fragment is not None:
        return _fill(question, fragment, prev, carried, embedder, t)
    return _replace(question, toks, anaphors, prev, answer, embedder, t)


def _tokens(text: str) -> list[_Tok]:
    return [_Tok(m.group(), m.group().lower().replace("’", "'"), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _content(toks: list[_Tok], i: int) -> bool:
    """A word that can be part of a noun phrase. Without a tagger, a word right after a subject
    pronoun, "to" or a leading "who" is taken for a verb ("do I *submit*", "who *approves*")."""
    if toks[i].low in FUNCTION_WORDS:
        return False
    prev, t = toks[i - 1].low if i else "", toks[i].text
    if prev == "to" and (t[:1].isupper() or t[:1].isdigit() or _plural(t)):
        return True  # "to London", "to contractors"
    if prev in BE_WORDS and i > 1 and (toks[i - 2].low in SUBJECT_PRONOUNS or toks[i - 2].low not in FUNCTION_WORDS):
        return False  # "my laptop is *broken*", "I am *eligible*": a predicate, not a thing
    if toks[i].low.endswith("er") and i + 1 < len(toks) and toks[i + 1].low == "than":
        return False  # "are prepared statements always *faster* than plain SQL": a comparison, not a thing
    return not (prev in SUBJECT_PRONOUNS or prev == "to" or (prev == "who" and i == 1))


def _phrases(text: str, attach: bool = True) -> list[_Phrase]:
    toks = _tokens(text)
    runs: list[tuple[int, int]] = []  # token index ranges [i, j)
    i = 0
    while i < len(toks):
        if _content(toks, i):
            j = i + 1  # a run stops at punctuation: "If my laptop breaks, who ..."
            while j < len(toks) and _content(toks, j) and not text[toks[j - 1].end:toks[j].start].strip():
                j += 1
            runs.extend(_predicate_split(toks, i, j) if j == len(toks) else _verb_split(toks, i, j))
            i = j
        else:
            i += 1
    out = []
    for k, (i, j) in enumerate(runs):
        det = toks[i - 1].low if i and toks[i - 1].low in DETERMINERS else ""
        end = j
        nxt = runs[k + 1] if k + 1 < len(runs) else None
        out.append(_Phrase(text[toks[i].start:toks[j - 1].end], toks[i].start, toks[j - 1].end, det, toks[j - 1].low))
        if attach and nxt and toks[j].low in ATTACHING_PREPOSITIONS and nxt[0] in (j + 1, j + 2):
            end = nxt[1]
            out.append(_Phrase(text[toks[i].start:toks[end - 1].end], toks[i].start, toks[end - 1].end, det, toks[j - 1].low))
    return out


def _verb_split(toks: list[_Tok], i: int, j: int) -> list[tuple[int, int]]:
    """The run [i, j) without the verb that do-support puts after its subject: "does the server
    *listen* on", "does TRUNCATE *fire* ON DELETE triggers", "does the Finance Director *sign*
    expense reports". The verb is the first lower-case word after a capitalised name, else the
    run's last word when nothing after the run could be the verb; else the run is kept."""
    k = i - 1 - (i > 1 and toks[i - 1].low in DETERMINERS)
    if j - i < 2 or k < 0 or toks[k].low not in {"do", "does", "did"}:
        return [(i, j)]
    if any(t.low in AUX_WORDS or t.low in LIGHT_VERBS for t in toks[j:]):
        return [(i, j)]  # the verb comes later: "What does the CONCURRENTLY option of CREATE INDEX do?"
    for v in range(i + 1, j):
        if toks[v - 1].text[:1].isupper() and toks[v].text.islower():
            return [(i, v)] + ([(v + 1, j)] if v + 1 < j else [])
    return [(i, j - 1)]


def _predicate_split(toks: list[_Tok], i: int, j: int) -> list[tuple[int, int]]:
    """A yes/no question that is "is"/"are", a run and nothing more: the run without its last
    word, the predicate ("Is TRUNCATE *MVCC-safe*?", "Is remote work *paid*?")."""
    subject_first = i == 1 or (i == 2 and toks[1].low in DETERMINERS)
    last = toks[j - 1].text
    named = last[:1].isupper() and last[1:].islower()  # "Is the default level Read *Committed*?"
    if j - i < 2 or toks[0].low not in BE_WORDS or not subject_first or named:
        return _verb_split(toks, i, j)
    return [(i, j - 1)]


def _has_clause(toks: list[_Tok]) -> bool:
    return any(t.low in WH_WORDS or t.low in AUX_WORDS or t.low in LIGHT_VERBS or t.low in SUBJECT_PRONOUNS for t in toks)


def _fragment(question: str) -> tuple[str, str, bool] | None:
    """(the new phrase, its leading preposition, whether "and"/"what about" marked it) of an
    elliptical question; None for a question with a clause of its own."""
    m = _ELLIPSIS.match(question) or _AND.match(question)
    rest = question[m.end():] if m else question
    rest = _TAIL.sub("", rest).strip(" ,")
    toks = _tokens(rest)
    if _has_clause(toks) or not any(_content(toks, i) for i in range(len(toks))):
        return None  # a clause of its own, or nothing to put in ("Them?", "And?")
    prep = toks[0].low if toks[0].low in PREPOSITIONS else ""
    if prep:
        rest = rest[toks[1].start:] if len(toks) > 1 else ""
    rest = re.sub(r"^(?:the|a|an)\s+", "", rest, flags=re.I)
    if not m and rest[:1].isupper() and rest[1:2].islower():
        rest = rest[:1].lower() + rest[1:]  # "Vision?" is capitalized for starting the sentence
    return (rest, prep, bool(m)) if rest else None


def _anaphors(toks: list[_Tok]) -> list[int]:
    """Indices of the referring words that have no antecedent inside the question."""
    found = []
    for i, t in enumerate(toks):
        prev = toks[i - 1].low if i else ""
        nxt = toks[i + 1].low if i + 1 < len(toks) else ""
        nxt_content = i + 1 < len(toks) and _content(toks, i + 1)
        w = t.low
        if w == "it":
            after = [x.low for x in toks[i + 1:i + 4]]
            adj = after[1] if after and after[0] in AUX_WORDS and len(after) > 1 else (after[0] if after else "")
            if adj in EXTRAPOSED_WORDS and any(x in {"to", "that", "if", "whether", "for"} for x in after):
                continue  # "is it possible to ...": nothing is referred to
        elif w == "there":
            if prev in AUX_WORDS or nxt in AUX_WORDS or nxt == "be":
                continue  # "is there a limit?"
        elif w in {"that", "this", "these", "those"}:
            if nxt in TIME_NOUNS or (w == "that" and i and _content(toks, i - 1) and nxt and nxt not in THING_KINDS):
                continue  # "this year"; "the laptop that broke", "true that ..." ("give that option" refers)
            if nxt == "same":
                continue  # "those same endpoints" refers as "the same" does, by its "same"
        elif w == "one":
            if nxt == "of" or nxt_content or prev in {"no", "than", "at", ""} or not (
                prev in DETERMINERS | {"another", "which"} or _content(toks, i - 1)
            ):
                continue
        elif w == "same":
            if prev not in {"the", "this", "that", "these", "those"}:
                continue
        elif w not in {"its", "they", "them", "their", "he", "she", "him", "his", "her"}:
            continue
        if not _antecedent_inside(toks, i):
            found.append(i)
    return found


def _antecedent_inside(toks: list[_Tok], i: int) -> bool:
    """A specific noun phrase before the pronoun: "If *my laptop* breaks, who repairs it?"."""
    plural = toks[i].low in {"they", "them", "their", "these", "those"}
    limit = i
    while toks[i].low == "one" and limit and (_content(toks, limit - 1) or toks[limit - 1].low in DETERMINERS):
        limit -= 1  # "a new one": its own modifiers are no antecedent
    for j in range(limit):
        if not _content(toks, j) or toks[j].low in GENERIC_NOUNS:
            continue
        if (j and toks[j - 1].low in DETERMINERS) or (j and toks[j].text[:1].isupper()):
            return True
        if plural and toks[j].low.endswith("s") and not toks[j].low.endswith("ss"):
            return True
    return False


def _subjectless(question: str) -> bool:
    """A wh-question with nothing of its own to ask about but time ("How many per year?")."""
    toks = _tokens(question)
    return bool(toks) and toks[0].low in WH_WORDS and all(p.head in TIME_NOUNS for p in _phrases(question))


def _antecedent(history: Sequence[Turn], embedder: Embedder, depth: int, t: Thresholds) -> tuple[str, str, str]:
    """The latest user question that has a phrase to carry (itself resolved first when it was a
    follow-up too), the answer given to it ("" if none), and the phrase it brought in when it
    was elliptical itself (a chain of "And X?" turns swaps the same slot)."""
    users = [i for i, turn in enumerate(history) if turn.role == "user"][::-1][:t.followup_depth]
    for i in users:
        text = history[i].content.strip()
        if not _phrases(text):
            continue  # "thanks!", "why?"
        fragment = _fragment(text)
        if depth > 1:
            text = _condense(text, history[:i], embedder, depth - 1, t).question
        answer = next((turn.content for turn in history[i + 1:] if turn.role == "assistant"), "")
        return text, answer[:400], fragment[0] if fragment else ""
    return "", "", ""


def _other_name(before: str, phrase: str) -> str:
    """The earlier question asked of the name `phrase` is, in place of the one name it asked about
    ("And path.normalize?" after "What does path.isAbsolute return for ''?", "And ChaCha20Poly1305?"
    after "What nonce length does AESCCM accept?"), or "". Names embed too poorly to be matched by
    meaning, and the follow-up read alone reads well against any sentence about the new name, so
    the swap is not weighed against it (reason "name")."""
    names = names_by_form(before)
    if len(names) != 1 or names_by_form(phrase) != [(0, len(phrase))]:
        return ""
    a, b = names[0]
    return before[:a] + phrase + before[b:]


def _fill(question: str, fragment: tuple[str, str, bool], before: str, carried: str, embedder: Embedder,
          t: Thresholds) -> Condensed:
    phrase, prep, explicit = fragment
    if not prep and (named := _other_name(before, phrase)):
        return Condensed(named, phrase, "name")  # one name for another: no guess at a frame
    if prep in TIME_PREPOSITIONS:  # "And after three years?": a condition on the earlier question, not a new subject
        rewritten = f"{before.rstrip(' ?.!')} {prep} {phrase}?"
        return Condensed(rewritten, phrase, "ellipsis")
    if prep and (same := _after_preposition(before, prep)):  # "on Windows" after "What is os.EOL on POSIX?"
        a, b = same
        return Condensed(_the_ask_of(before[:a] + phrase + before[b:], phrase), phrase, "ellipsis")
    words = {w.lower() for w in _TOKEN.findall(phrase)}
    slots = [(a, b) for a, b in _slots(before) if not {w.lower() for w in _TOKEN.findall(before[a:b])} <= words]
    best, top = 0, -1.0
    if slots:
        # single words embed poorly on their own; in a carrier phrase MiniLM ranks "vision"
        # nearer "medical" than "company", and "Toronto" nearer "Lisbon" than "office"
        vecs = embedder.embed([f"what about {t}" for t in (phrase, *(before[a:b] for a, b in slots))])
        sims = vecs[1:] @ vecs[0]
        for k, (a, b) in enumerate(slots):
            text = before[a:b]
            sims[k] += 0.05 * (_plural(text) == _plural(phrase)) + 0.1 * (text.lower() == carried.lower())
            sims[k] -= 0.1 * all(w.lower() in GENERIC_NOUNS | MEASURE_NOUNS for w in _TOKEN.findall(text))
        best = int(np.argmax(sims))
        top = float(sims[best])
        # the head of "new hires" replaced: its modifiers go with it ("contractors", not "new
        # contractors") unless they matter much less than the head does
        a, b = slots[best]
        best = next((k for k, (x, y) in enumerate(slots)
                     if y == b and x < a and sims[k] >= 0.7 * top and _is_run(before, x, y)), best)
    if top < (t.followup_fill if explicit else t.followup_bare):
        if not explicit:  # "Parental leave policy?": a query of its own, not a follow-up
            return Condensed(question, "", "standalone")
        # nothing in the earlier question is like the new phrase: ask the earlier question
        # with the new phrase beside it rather than guess where it goes
        return Condensed(f"{before} ({' '.join(filter(None, (prep, phrase)))})", before, "appended")
    a, b = slots[best]
    if before[a:a + 1].isupper() and not phrase[:1].isupper():
        phrase = phrase[:1].upper() + phrase[1:]
    rewritten = before[:a] + phrase + before[b:]
    end = a + len(phrase)
    subject = next((p.text for p in _phrases(rewritten, attach=False) if p.start <= a and end <= p.end), phrase)
    return Condensed(_the_ask_of(rewritten, phrase), subject, "ellipsis")


def _after_preposition(text: str, prep: str) -> tuple[int, int] | None:
    """The one noun phrase of `text` right after `prep` (without its article): the place an
    "And on Windows?" takes. None when the preposition is not there once."""
    places = [m.end() for m in re.finditer(rf"\b{re.escape(prep)}\s+(?:(?:the|a|an)\s+)?", text, re.I)]
    if len(places) != 1:
        return None
    return next(((p.start, p.end) for p in _phrases(text, attach=False) if p.start == places[0]), None)


def _the_ask_of(question: str, phrase: str) -> str:
    """Of an earlier question with several asks ("Can I work from another country, and who
    approves expenses?"), the one the new phrase went into: a follow-up asks about one thing."""
    from .forms import plan_by_form

    asks = [s.text for s in plan_by_form(question).sub_questions if s.kind == "part"]
    return next((a for a in asks if phrase in a), question) if len(asks) > 1 else question


def _is_run(text: str, a: int, b: int) -> bool:
    return any(p.start == a and p.end == b for p in _phrases(text, attach=False))


def _plural(text: str) -> bool:
    last = text.lower().split()[-1] if text.split() else ""
    return last.endswith("s") and not last.endswith("ss")


def _slots(text: str) -> list[tuple[int, int]]:
    """Every run of up to three words inside a noun phrase: "medical", "costs", "medical costs"."""
    out = []
    for p in _phrases(text, attach=False):
        words = list(_TOKEN.finditer(text, p.start, p.end))
        for i in range(len(words)):
            for j in range(i, min(i + 3, len(words))):
                out.append((words[i].start(), words[j].end()))
    return out


def _named_in_answer(prev: str, answer: str) -> str:
    """The code name the answer gave when the earlier question asked for a thing by its kind
    ("Which option makes valgrind exit with a nonzero code?" -> "--error-exitcode"): what a
    follow-up's "its default" is about. "" otherwise."""
    if not asks_for_a_kind(prev):
        return ""
    thing = thing_named(answer, prev)
    name = max((thing[a:b] for a, b in code_names(thing)), key=len, default="")
    return "" if name.lower() in prev.lower() else name


def _replace(question: str, toks: list[_Tok], anaphors: list[int], prev: str, answer: str,
             embedder: Embedder, t: Thresholds) -> Condensed:
    if (named := _named_in_answer(prev, answer)) and all(toks[i].low in {"it", "its"} or _names_a_kind(toks, i)
                                                         for i in anaphors):
        out = question
        for i in sorted(anaphors, reverse=True):
            tok = toks[i]
            end = toks[i + 1].end if _names_a_kind(toks, i) else tok.end  # "that option" -> "--parallel"
            out = out[:tok.start] + (f"{named}'s" if tok.low == "its" else named) + out[end:]
        return Condensed(out, named, "pronoun")
    cands = _phrases(prev)
    if not cands:
        return Condensed(question, "", "standalone")
    context = [prev, question] + ([answer] if answer.strip() else [])
    vecs = embedder.embed([*context, *(c.text for c in cands)])
    score = (vecs[len(context):] @ vecs[:len(context)].T).sum(axis=1)
    plural = any(toks[i].low in {"they", "them", "their", "these", "those"} for i in anaphors)
    for k, c in enumerate(cands):
        score[k] -= t.followup_generic_penalty * (c.generic or c.head.lower() in MEASURE_NOUNS)
        score[k] += 0.1 * (_plural(c.head) == plural)
    subject = _the_named_thing(cands, cands[int(np.argmax(score))])
    det = subject.det if subject.det in {"", "my", "our"} else "the"  # "a new laptop" -> "the new laptop"
    np_text = f"{det} {subject.text}".lstrip()
    edits: list[tuple[int, int, str]] = []
    for i in anaphors:
        t, w = toks[i], toks[i].low
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if w == "same" or (w in {"this", "that", "these", "those"} and nxt and _content(toks, i + 1)):
            words = {x.lower() for x in _TOKEN.findall(subject.text)}
            if w == "same" or not nxt or nxt.low not in words:
                return Condensed(f"{question.strip()} ({subject.text})", subject.text, "appended")
            edits.append((t.start, nxt.end, np_text))  # "that plan" -> "the retirement plan"
        elif w == "one":
            edits.append((t.start, t.end, subject.head))  # "a new one" -> "a new laptop"
        elif w == "there":
            edits.append((t.start, t.end, ("at " if subject.det else "in ") + np_text))
        elif w in {"its", "their", "his"} or (w == "her" and nxt and _content(toks, i + 1)):
            edits.append((t.start, t.end, np_text + ("'" if np_text.endswith("s") else "'s")))
        else:
            edits.append((t.start, t.end, np_text))
    out = question
    for a, b, text in sorted(edits, reverse=True):
        if a == 0 or re.fullmatch(r"[\s\"'(]*", question[:a]):
            text = text[:1].upper() + text[1:]
        out = out[:a] + text + out[b:]
    return Condensed(out, subject.text, "pronoun")


def _the_named_thing(cands: list[_Phrase], subject: _Phrase) -> _Phrase:
    """Of "the default value of shared_buffers", the thing named: "shared_buffers". The earlier
    question asked for one property of it, answered already; a follow-up asks something new of
    the thing ("Can it be changed without a restart?"), and its entry is where that is said."""
    named = [c for c in cands if subject.start < c.start and c.end == subject.end
             and code_names(c.text) == [(0, len(c.text))]]
    return named[0] if named else subject


def _names_a_kind(toks: list[_Tok], i: int) -> bool:
    """Whether toks[i] is a demonstrative before a kind of thing of code: "that option", "this setting"."""
    return toks[i].low in {"this", "that"} and i + 1 < len(toks) and toks[i + 1].low in THING_KINDS


def _definite(question: str, toks: list[_Tok], history: Sequence[Turn]) -> Condensed:
    """"When does the plan start?" after "... a retirement plan?": the earlier, longer phrase."""
    prev = next((t.content for t in reversed(history) if t.role == "user" and t.content.strip()), "")
    # only a phrase the earlier question introduced ("a retirement plan"): "the deputy CEO" was
    # already definite, and "Who is the CEO?" asks about someone else
    longer = {p.head: p for p in _phrases(prev, attach=False)
              if " " in p.text and p.det in {"a", "an", "my", "our"} and not p.generic}
    for i, t in enumerate(toks[:-1]):
        n = toks[i + 1]
        if t.low == "the" and n.low in longer:
            subject = longer[n.low].text
            return Condensed(question[:n.start] + subject + question[n.end:], subject, "definite")
    return Condensed(question, "", "standalone")
