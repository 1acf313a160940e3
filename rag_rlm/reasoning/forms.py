"""Text rules the extractive reasoner plans with: question decomposition by
surface form (several questions, conjunctions, comparisons, lists) and entity spotting for
bridge questions. Pure functions of strings, so they are cheap and testable on their own."""

from __future__ import annotations

import re

from .base import SIDE, Plan, SubQuestion
from .compose import DEMONYMS, comparison_cue

WH = r"(?:who|whom|whose|what|which|where|when|why|how|is|are|was|were|does|do|did|can|could|has|have|had|will|would|should)"

_CONJ_SPLIT = re.compile(rf"\s*(?:,\s*)?\band\s+(?={WH}\b)", re.IGNORECASE)
_COMPARE_OR = re.compile(r"^(?P<head>.*?),?\s+(?P<a>[^,]+?),?\s+or\s+(?P<b>[^,?]+?)\s*\??$", re.IGNORECASE)
_BOTH = re.compile(
    r"^(?P<verb>are|were|do|did|have|has|is|was)\s+(?:both\s+)?(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+(?:of\s+)?(?P<both>both|either|the same)\b\s*(?P<rest>.*?)\??$",
    re.IGNORECASE,
)
_CAPITAL_RUN = re.compile(
    r"(?:\"[^\"]{2,60}\"|[A-Z][\w'’.-]*(?:\s+(?:of|the|de|la|and|for|in|on|von|van|du|&)?\s*[A-Z][\w'’.-]*)*)"
)
_STOP_ENTITIES = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January",
                  "February", "March", "April", "May", "June", "July", "August", "September", "October",
                  "November", "December", "Owner", "Note", "See", "Also", "However", "Today", "Yes", "No","The", "A", "An", "It", "He", "She", "They", "This", "That", "In", "On", "At", "His", "Her",
                  "Its", "Their", "As", "After", "Are", "Is", "Was", "Were", "Do", "Does", "Did", "Has", "Have",
                  "Both", "Between", "Besides", "If", "Other", "Than", "Before", "During", "From", "By", "With", "For", "When", "While",
                  "There", "These", "Those", "Who", "What", "Which", "Where", "How", "Why", "But", "And", "Or",
                  # words that are capitalised only because they open a sentence or a list item
                  "Our", "Your", "You", "We", "Please", "Each", "Every", "All", "Any", "Some", "Most", "Many",
                  "New", "Only", "Then", "Once", "Until", "Since", "Because", "Although", "Use", "Ask", "Open",
                  "Run", "Book", "Request", "Submit", "Send", "Join", "Read", "Expenses", "Employees", "Up",
                  "Everyone", "Nobody", "None", "Not", "Never", "Always", "Here", "First",
                  "Second", "Third", "Next", "Last", "Finally", "Questions", "Step", "Steps",
                  # a conjunction, preposition or participle that opens a sentence ("Born in Salt
                  # Lake City, he ...", "Following the war", "Even so"): the name starts after it
                  "Even", "Though", "Despite", "Following", "Including", "According", "Unlike", "Among",
                  "Upon", "Born"}


def plan_by_form(question: str) -> Plan:
    """Sub-questions read off the question's surface form: several questions or conjoined ones
    are *parts* (answered each on its own, in order); a comparison of named things gives one
    *side* per thing, its name as the focus. An empty plan when it is one question."""
    q = " ".join(question.split())
    for rule in (_several_questions, _conjoined_questions):
        parts = _shared_subject(rule(q))
        if len(parts) >= 2:
            return Plan(tuple(SubQuestion(p[:1].upper() + p[1:]) for p in parts), note=f"rule: {rule.__name__.strip('_')}")
    for rule in (_entity_comparison, _both_comparison, _either_or_comparison):
        sides = rule(q)
        if len(sides) >= 2:
            subs = tuple(SubQuestion(q, focus=name, kind=SIDE, query_text=ask) for name, ask in sides)
            return Plan(subs, note=f"rule: {rule.__name__.strip('_')}", comparison=comparison_cue(q))
    return Plan()


_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|he|she|him|his|her)\b", re.IGNORECASE)


def _shared_subject(parts: list[str]) -> list[str]:
    """"When was Halcyon founded and who founded it?": a later part's pronoun is the name the
    first part gives, so each part can be asked on its own."""
    names = entities(parts[0].split(" ", 1)[-1]) if parts else []
    if len(parts) < 2 or len(names) != 1:
        return parts
    name = names[0]

    def repl(m: re.Match[str]) -> str:
        return name + "'s" if m.group(0).lower() in ("its", "their", "his") else name

    return [parts[0]] + [_PRONOUN.sub(repl, p) for p in parts[1:]]


def split_question(question: str) -> list[str]:
    """The retrieval queries of `plan_by_form` ("Entity: question" for sides); [] for one question."""
    return [s.query for s in plan_by_form(question).sub_questions]


_COMPARE_CUE = re.compile(
    r"\b(?:both|same|either|respective|respectively|in common|between|each other)\b", re.IGNORECASE)


def _entity_comparison(q: str) -> list[tuple[str, str]]:
    """A comparison of named things ("Which band was formed first, The Exies or Circus
    Diablo?", "Are both magazines, the Woman's Viewpoint and Pick Me Up, British?") -> one
    question per thing: "Circus Diablo: Which band was formed first?" — each retrieval then
    looks for one document instead of a mix of two."""
    if len(q.split()) > 25 or not (_COMPARE_CUE.search(q) or " or " in q):
        return []
    names = [n.strip() for e in entities(q) for n in re.split(r"\s+and\s+", e)]
    names = [n for n in dict.fromkeys(names) if len(n) >= 3][:4]
    if not 2 <= len(names) <= 3:
        return []
    between = q[q.find(names[0]) + len(names[0]):q.rfind(names[-1])]
    if not re.search(r"\b(?:and|or)\b|,", between) or (" or " in q and not _COMPARE_CUE.search(q)
                                                         and " or " not in between):
        return []
    rest = residual_question(q)
    return [(name, rest) for name in names]


def _several_questions(q: str) -> list[str]:
    parts = [p.strip() + "?" for p in q.split("?") if len(p.strip().split()) >= 3]
    return parts if len(parts) >= 2 else []


def _conjoined_questions(q: str) -> list[str]:
    """"Who approves X and how many days do Y get?" -> two questions."""
    pieces = [p.strip(" ,") for p in _CONJ_SPLIT.split(q)]
    pieces = [p for p in pieces if len(p.split()) >= 3]
    if len(pieces) < 2 or not re.match(WH, pieces[0], re.IGNORECASE):
        return []
    return [p if p.endswith("?") else p.rstrip(".") + "?" for p in pieces]


def _both_comparison(q: str) -> list[tuple[str, str]]:
    """"Are X and Y both film directors?" -> "Is X film directors?", "Is Y ...?" (retrieval only
    needs the entity with the predicate, not perfect grammar)."""
    m = _BOTH.match(q)
    if not m:
        return []
    rest = m.group("rest").strip() or m.group("both")
    verb = m.group("verb").capitalize()
    return [(side.strip(), f"{verb} {side.strip()} {rest}?") for side in (m.group("a"), m.group("b"))]


def _either_or_comparison(q: str) -> list[tuple[str, str]]:
    """"Which was released first, X or Y?" -> one question per option, with the head."""
    m = _COMPARE_OR.match(q)
    if not m or not re.match(WH, m.group("head"), re.IGNORECASE):
        return []
    head = m.group("head").rstrip(" ,")
    a, b = m.group("a").strip(), m.group("b").strip()
    if len(a.split()) > 8 or len(b.split()) > 8:
        return []
    return [(a, f"{head}?"), (b, f"{head}?")]


def entities(text: str) -> list[str]:
    """Capitalised runs and quoted titles in `text`, in order of appearance, deduplicated. The
    column names of a table row ("Name: bigint; Storage Size: 8 bytes") are labels, not names."""
    seen: dict[str, None] = {}
    labels = {cell.split(":", 1)[0].strip() for cell in text.split(";")} if _ROW.fullmatch(text) else set()
    for m in _CAPITAL_RUN.finditer(text):
        cuts = [m.start(), *(m.start() + g.end() for g in _SENTENCE_GAP.finditer(m.group(0)))]
        for start, piece in zip(cuts, _SENTENCE_GAP.split(m.group(0)), strict=True):  # "Wales. Athens": two names
            words = piece.strip(" \"'.,").split()
            opening = _OPENS.search(text[:start]) is not None
            while words and (words[0] in _STOP_ENTITIES or (opening and _opening_word(words, text[start + len(piece):]))):
                words, opening = words[1:], False
            while words and words[0][:1].islower():  # "In the February Revolution": the name starts after "the"
                words = words[1:]
            if len(words) == 1 and words[0] in _STOP_ENTITIES:  # "and August"
                words = []
            ent = _POSSESSIVE.sub("", " ".join(words))  # "Peter Bonetti's team": the name is "Peter Bonetti"
            if len(ent) >= 3 and not ent.isdigit() and ent not in labels:
                seen.setdefault(ent, None)
    return list(seen)


_POSSESSIVE = re.compile(r"['’]s?$")
_ROW = re.compile(r"[^:;]+:[^;]*(?:;[^:;]+:[^;]*)+")  # how a table row is stored: "Header: cell; Header: cell"
_SENTENCE_GAP = re.compile(r"(?<=[a-z]{3})\.\s+")  # not after "Sgt." or "Mrs."
_OPENS = re.compile(r"(?:^|[.!?:]\s+)$")
_DETERMINER_AFTER = re.compile(r"\s+(?:the|a|an|whether|how|which|what|if|that)\b")


def _opening_word(words: list[str], after: str) -> bool:
    """A word capitalised only because it opens a sentence or a description: an adverb
    ("Originally", "Otherwise"; not "Shelly Beach" or "Italy"), or a verb before its object, as
    a manual's descriptions start ("Determines the maximum ...", "Specifies whether ...")."""
    word = words[0]
    alone = len(words) == 1 or words[1][:1].islower()  # "Shelly Beach" is a name
    if alone and (word.endswith(_ADVERB_ENDINGS) or word in _DISCOURSE):
        return True
    following = " " + " ".join(words[1:]) if len(words) > 1 else after
    return word.endswith("s") and _DETERMINER_AFTER.match(following) is not None


_ADVERB_ENDINGS = ("ally", "ously", "ively", "ently", "antly", "ately", "ably", "ibly", "ortly", "ingly")
_DISCOURSE = frozenset("Otherwise Hence Thus Therefore Moreover Furthermore Nevertheless Nonetheless Meanwhile "
                       "Instead Indeed Likewise Consequently Accordingly Alternatively Similarly Still Overall "
                       "Conversely Again Further Besides".split())


def novel_entities(question: str, text: str) -> list[str]:
    """Entities of `text` that the question does not already name (bridge candidates)."""
    q = question.lower()
    q_words = set(re.findall(r"\w+", q))
    # a longer form of a name the question gives ("Herbert Weston Scott Howell III" for "Scott
    # Howell") is the question's own subject, not a hop
    named = [set(re.findall(r"\w+", e.lower())) for e in entities(question) if len(e.split()) >= 2]
    out = []
    for ent in (e for run in entities(text) for e in re.split(r"\s+(?:and|&)\s+", run)):  # two names, two hops
        words = set(re.findall(r"\w+", ent.lower()))
        if len(ent) < 3 or ent.lower() in q or (words and words <= q_words):
            continue
        if any(n <= words for n in named):
            continue
        if ent in DEMONYMS:  # "American": an adjective, not a thing to look up
            continue
        out.append(ent)
    return out


def residual_question(question: str) -> str:
    """The question without the names it gives (capitalised runs and quoted titles, the
    leading word kept): what is left to ask about the entity a bridge found. "Which river flows
    through the town where Ada Quill was born?" -> "Which river flows through the town where
    was born?"."""
    q = " ".join(question.split())
    first, _, rest = q.partition(" ")
    for name in sorted((e for e in entities(rest) if len(e) >= 3), key=len, reverse=True):
        rest = re.sub(rf"(?:\b[Tt]he\s+)?{re.escape(name)}(?:['’]s\b)?", " ", rest)
    rest = re.sub(r"[\"“”]\s*[\"“”]", " ", rest)
    rest = re.sub(r"\b(?:and|or)\b(?=\s*(?:[,?.]|$|\b(?:and|or|both)\b))", " ", rest)  # dangling
    rest = re.sub(r"\b(?:the|a|an)\b(?=\s*(?:[,?.]|$|\b(?:and|or|the)\b))", " ", rest)
    rest = re.sub(r"(?:\s*,)+\s*(?=[?.]|$)", "", rest)
    rest = re.sub(r",(?:\s*,)+", ",", rest)
    rest = re.sub(r"\s+([,?.])", r"\1", " ".join(rest.split())).strip(" ,")
    out = f"{first} {rest}".strip()
    return out if len(out.split()) >= 3 else q
