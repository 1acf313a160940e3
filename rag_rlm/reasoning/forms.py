"""The question's surface forms, which the extractive reasoner plans with: several questions or
conjoined ones (parts), comparisons of named things (sides), and the entities a bridge goes
through. Pure functions of strings; each form is a rule of `rules.RULES`, switchable by name."""

from __future__ import annotations

import re

from .base import SIDE, Plan, SubQuestion
from .compose import comparison_cue
from .english import ADVERB_ENDINGS, DEMONYMS, DISCOURSE_WORDS, NOT_ENTITIES, words_of
from .rules import RuleSet

WH = r"(?:who|whom|whose|what|which|where|when|why|how|is|are|was|were|does|do|did|can|could|has|have|had|will|would|should)"

_CONJ_SPLIT = re.compile(rf"\s*(?:,\s*)?\band\s+(?={WH}\b)", re.IGNORECASE)
_COMPARE_OR = re.compile(r"^(?P<head>.*?)[,:]?\s+(?P<a>[^,:]+?),?\s+or\s+(?P<b>[^,:?]+?)\s*\??$", re.IGNORECASE)
_BOTH = re.compile(
    r"^(?P<verb>are|were|do|did|have|has|is|was)\s+(?:both\s+)?(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+(?:of\s+)?(?P<both>both|either|the same)\b\s*(?P<rest>.*?)\??$",
    re.IGNORECASE,
)
_CAPITAL_RUN = re.compile(
    r"(?:\"[^\"]{2,60}\"|[A-Z][\w'’.-]*(?:\s+(?:of|the|de|la|and|for|in|on|von|van|du|&)?\s*[A-Z][\w'’.-]*)*)"
)
def plan_by_form(question: str, rules: RuleSet | None = None) -> Plan:
    """Sub-questions read off the question's surface form: several questions or conjoined ones
    are *parts* (answered each on its own, in order); a comparison of named things gives one
    *side* per thing, its name as the focus. An empty plan when it is one question."""
    rules = rules or RuleSet()
    q = " ".join(question.split())
    for rule in (_several_questions, _conjoined_questions):
        name = rule.__name__.strip("_")
        parts = rule(q) if name in rules else []
        if len(parts) >= 2:
            fired: tuple[str, ...] = (name,)
            if "answer_subject" in rules and (subs := _answer_subject(parts)):
                return Plan(subs, note=f"rule: {name}", rules=(name, "answer_subject"))
            if "shared_subject" in rules and (shared := _shared_subject(parts)) != parts:
                parts, fired = shared, (name, "shared_subject")
            return Plan(tuple(SubQuestion(_capitalised(p)) for p in parts), note=f"rule: {name}", rules=fired)
    for rule in (_entity_comparison, _both_comparison, _either_or_comparison):
        name = rule.__name__.strip("_")
        sides = rule(q) if name in rules else []
        if len(sides) >= 2:
            subs = tuple(SubQuestion(q, focus=side, kind=SIDE, query_text=ask) for side, ask in sides)
            return Plan(subs, note=f"rule: {name}", comparison=comparison_cue(q), rules=(name,))
    return Plan()


_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|he|she|him|his|her)\b", re.IGNORECASE)
_IT = re.compile(r"\b(?:it|its)\b", re.IGNORECASE)


# "How much storage does a date use": the subject between "does" and its verb
_DO_SUBJECT = re.compile(r"\b(?:does|do|did)\s+(?:a|an|the)\s+([\w.-]+)\s+[a-z]+\b(?!\s+(?:a|an|the)\b)", re.I)


def _shared_subject(parts: list[str]) -> list[str]:
    """"When was Halcyon founded and who founded it?": a later part's pronoun is the name the
    first part gives (a capitalised name, a code name as in "What does shutil.copy2 do", or the
    subject of "does a date use"), so each part can be asked on its own."""
    from .claims import code_names  # claims reads this module's TABLE_ROW

    if len(parts) < 2:
        return parts
    first = parts[0].split(" ", 1)[-1]
    names, pronoun = entities(first), _PRONOUN
    if not names:  # a thing, not a person or a group: only "it" refers to it
        names, pronoun = list(dict.fromkeys(first[a:b] for a, b in code_names(first))), _IT
        if len(names) > 1 and (subject := _CODE_SUBJECT.match(first)) and subject.group(1) in names:
            names = [subject.group(1)]  # "does pool_recycle in create_engine do": pool_recycle is asked about
        if not names and (subject := _DO_SUBJECT.search(first)):
            names = ["the " + subject.group(1)]
    if len(names) != 1:
        return parts
    name = names[0]

    def repl(m: re.Match[str]) -> str:
        return name + "'s" if m.group(0).lower() in ("its", "their", "his") else name

    return [parts[0]] + [pronoun.sub(repl, p) for p in parts[1:]]


# the code name a question is about when it names several: the subject right after its auxiliary
# ("[What] does pool_recycle in create_engine do", "[What] is the os.sep of ntpath")
_CODE_SUBJECT = re.compile(r"(?:does|do|did|is|are|was|were|can|should|will)\s+(?:the\s+)?([\w.:-]*\w)", re.I)
# "Which setting limits …", "What tool restores …": a wh-word that picks a thing by its kind
# ("What happens …" asks for no thing: after "what", a word ending in "s" is taken for a verb)
_ASKS_FOR_A_THING = re.compile(rf"^(?:which\s+(?!{WH}\b)[a-z]|what\s+(?!{WH}\b)[a-z][\w-]*[a-rt-z]\s)", re.I)
# the pronoun of a thing, not of a person: "who founded it" refers to the asked thing as well
_THING_PRONOUN = re.compile(r"\b(?:it|its|they|them|their)\b", re.IGNORECASE)


def _answer_subject(parts: list[str]) -> tuple[SubQuestion, ...]:
    """"Which setting limits the memory used by VACUUM, and what is its default?": the pronoun is
    the setting the first part asks for, not a thing it names, so the later part waits for that
    answer ("What is #1's default?", filled in by the controller)."""
    if len(parts) < 2 or not _ASKS_FOR_A_THING.match(parts[0]) or not _THING_PRONOUN.search(" ".join(parts[1:])):
        return ()

    def repl(m: re.Match[str]) -> str:
        return "#1's" if m.group(0).lower() in ("its", "their") else "#1"

    # the first pronoun only: in "how many times does it repeat it" the second is another thing
    later = [_THING_PRONOUN.sub(repl, p, count=1) for p in parts[1:]]
    return (SubQuestion(_capitalised(parts[0])),
            *(SubQuestion(_capitalised(p), depends_on=(0,) if "#1" in p else ()) for p in later))


def _capitalised(part: str) -> str:
    return part[:1].upper() + part[1:]


def split_question(question: str) -> list[str]:
    """The retrieval queries of `plan_by_form` ("Entity: question" for sides); [] for one question."""
    return [s.query for s in plan_by_form(question).sub_questions]


# "in the same county as Kelbrook" describes one thing by another: no comparison of the two
_COMPARE_CUE = re.compile(
    r"\b(?:both|same(?!\s+\w+\s+as\b)|either|respective|respectively|in common|between|each other)\b", re.IGNORECASE)


def _entity_comparison(q: str) -> list[tuple[str, str]]:
    """A comparison of named things ("Which club was founded first, The Harrow Lights or Velvet
    Orchard?", "Are both journals, the Kelbrook Review and Varn Weekly, British?") -> one
    question per thing: "Velvet Orchard: Which club was founded first?" — each retrieval then
    looks for one document instead of a mix of two. A nationality ("British") is what is asked
    of the things, not a thing."""
    if len(q.split()) > 25 or not (_COMPARE_CUE.search(q) or " or " in q):
        return []
    names = [n.strip() for e in entities(q) for n in re.split(r"\s+and\s+", e)]
    names = [n for n in dict.fromkeys(names) if len(n) >= 3 and n not in DEMONYMS][:4]
    if not 2 <= len(names) <= 3:
        return []
    between = q[q.find(names[0]) + len(names[0]):q.rfind(names[-1])]
    if not re.search(r"\b(?:and|or)\b|,", between) or (" or " in q and not _COMPARE_CUE.search(q)
                                                         and " or " not in between):
        return []
    if " or " in q and not _COMPARE_CUE.search(q) and not _CHOICE.search(q):
        return []  # "What build type do I get with Makefiles or Ninja ...?": either one, no choice between them
    rest = residual_question(q)
    return [(name, rest) for name in names]


# a question that chooses between the things it names without a comparison's cue: it opens with
# "which" or "who" ("Which painter is Welsh, Mara Voss or Ilan Dupree?"), or ends with its options
_CHOICE = re.compile(r"^\s*(?:which|who)\b|,[^,]*\bor\b[^,]*\?\s*$", re.IGNORECASE)


# a "?" that ends a question; one that a lower-case word follows is a name ("the ? operator")
_QUESTION_END = re.compile(r"\?(?=\s+[^a-z\s]|\s*$)")


def _several_questions(q: str) -> list[str]:
    # what follows the last "?" asks nothing: a statement ("I want to set err when Close fails.") says
    # what the asker is after, and a parenthesis is what a follow-up carried from the earlier question
    parts = [p.strip() + "?" for p in _QUESTION_END.split(q)[:-1] if len(p.strip().split()) >= 3]
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
    """"Which was released first, X or Y?" -> one question per option, with the head. A modifier
    shares the other option's noun: "short-term or long-term disability insurance" compares
    short-term disability insurance with long-term disability insurance."""
    m = _COMPARE_OR.match(q)
    if not m or not re.match(WH, m.group("head"), re.IGNORECASE):
        return []
    head = m.group("head").rstrip(" ,:")
    if len(head.split()) < 2:  # "Does the company pay for a gym or fitness membership?" asks whether, not which
        return []
    a, b = m.group("a").strip(), m.group("b").strip()
    if len(a.split()) > 8 or len(b.split()) > 8:
        return []
    if len(a.split()) == 1 and len(b.split()) >= 2 and a[:1].islower():
        a = f"{a} {b.split(' ', 1)[1]}"
    return [(a, f"{head}?"), (b, f"{head}?")]


def entities(text: str) -> list[str]:
    """Capitalised runs and quoted titles in `text`, in order of appearance, deduplicated. The
    column names of a table row ("Name: bigint; Storage Size: 8 bytes") are labels, not names."""
    seen: dict[str, None] = {}
    labels = {cell.split(":", 1)[0].strip() for cell in text.split(";")} if TABLE_ROW.fullmatch(text) else set()
    for m in _CAPITAL_RUN.finditer(text):
        cuts = [m.start(), *(m.start() + g.end() for g in _SENTENCE_GAP.finditer(m.group(0)))]
        for start, piece in zip(cuts, _SENTENCE_GAP.split(m.group(0)), strict=True):  # "Wales. Athens": two names
            words = piece.strip(" \"'.,").split()
            opening = _OPENS.search(text[:start]) is not None
            while words and (words[0] in NOT_ENTITIES or (opening and _opening_word(words, text[start + len(piece):]))):
                words, opening = words[1:], False
            while words and words[0][:1].islower():  # "In the February Revolution": the name starts after "the"
                words = words[1:]
            if len(words) == 1 and words[0] in NOT_ENTITIES:  # "and August"
                words = []
            ent = _POSSESSIVE.sub("", " ".join(words))  # "Peter Bonetti's team": the name is "Peter Bonetti"
            if len(ent) >= 3 and not ent.isdigit() and ent not in labels:
                seen.setdefault(ent, None)
    return list(seen)


_POSSESSIVE = re.compile(r"['’]s?$")
TABLE_ROW = re.compile(r"[^:;]+:[^;]*(?:;[^:;]+:[^;]*)+")  # how a table row is stored: "Header: cell; Header: cell"
_SENTENCE_GAP = re.compile(r"(?<=[a-z]{3})\.\s+")  # not after "Sgt." or "Mrs."
_OPENS = re.compile(r"(?:^|[.!?:]\s+)$")
_DETERMINER_AFTER = re.compile(r"\s+(?:the|a|an|whether|how|which|what|if|that)\b")


def _opening_word(words: list[str], after: str) -> bool:
    """A word capitalised only because it opens a sentence or a description: an adverb
    ("Originally", "Otherwise"; not "Shelly Beach" or "Italy"), or a verb before its object, as
    a manual's descriptions start ("Determines the maximum ...", "Specifies whether ...", and in
    the imperative: "Make the path absolute", "Return a new object")."""
    word = words[0]
    alone = len(words) == 1 or words[1][:1].islower()  # "Shelly Beach" is a name
    if alone and (word.endswith(ADVERB_ENDINGS) or word in DISCOURSE_WORDS):
        return True
    following = " " + " ".join(words[1:]) if len(words) > 1 else after
    return (word.endswith("s") or alone) and _DETERMINER_AFTER.match(following) is not None


def novel_entities(question: str, text: str) -> list[str]:
    """Entities of `text` that the question does not already name (bridge candidates)."""
    q = question.lower()
    q_words = set(re.findall(r"\w+", q))
    # a longer form of a name the question gives ("Herbert Weston Scott Howell III" for "Scott
    # Howell") is the question's own subject, not a hop
    named = [set(re.findall(r"\w+", e.lower())) for e in entities(question) if len(e.split()) >= 2]
    asked = words_of(question.replace("'s", "").replace("’s", ""))
    out = []
    for ent in (e for run in entities(text) for e in re.split(r"\s+(?:and|&)\s+", run)):  # two names, two hops
        words = set(re.findall(r"\w+", ent.lower()))
        if len(ent) < 3 or ent.lower() in q or (words and words <= q_words):
            continue
        if (stems := words_of(ent)) and stems <= asked:  # "Dates" for "a date" or "the date's"
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
    if any(q.startswith(f"{e} ") for e in entities(q) if " " in e):  # it opens with a name: no asking word to keep
        first, rest = "", q
    # "American" in "both American directors" is part of the ask, not a name
    for name in sorted((e for e in entities(rest) if len(e) >= 3 and e not in DEMONYMS), key=len, reverse=True):
        rest = re.sub(rf"(?:\b[Tt]he\s+)?{re.escape(name)}(?:['’]s\b)?", " ", rest)
    rest = re.sub(r"[\"“”]\s*[\"“”]", " ", rest)
    rest = re.sub(r"\b(?:and|or)\b(?=\s*(?:[,?.]|$|\b(?:and|or|both)\b))", " ", rest)  # dangling
    rest = re.sub(r"\b(?:the|a|an)\b(?=\s*(?:[,?.]|$|\b(?:and|or|the)\b))", " ", rest)
    rest = re.sub(r"(?:\s*,)+\s*(?=[?.]|$)", "", rest)
    rest = re.sub(r",(?:\s*,)+", ",", rest)
    rest = re.sub(r"\s+([,?.])", r"\1", " ".join(rest.split())).strip(" ,")
    out = f"{first} {rest}".strip()
    return out if len(out.split()) >= 3 else q


_WH_WORD = re.compile(r"\b(?:who|whom|whose|what|which|where|when|why|how)\b", re.IGNORECASE)
LONG_QUESTION = 12  # words: a question this long may carry clauses that only say which thing is meant


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z`'\"(])")


def asking_sentence(q: str) -> str:
    """The last sentence that asks, of a question told as a story ("My nightly job writes the report
    twice and the second copy is empty. Does the scheduler retry a job that timed out?"): the scene
    names what is meant, and the reader, trained on short questions, reads the asking sentence
    better alone (`scoring.CoreQuestionScorer` keeps the better of both scores). "" for a question
    of one sentence, or when the asking one says nothing alone ("Why does it fail?")."""
    return _asking(_sentences(q))


def remarked_after(q: str) -> bool:
    """Whether the question asks first and remarks after ("Which setting replaces a worker that grows
    too big? I have a leaky C extension."): a sentence asked first was written to be read alone, and
    the remark says why it is asked; retrieved with it, it draws passages that repeat the remark."""
    sentences = _sentences(q)
    return not sentences[-1].endswith("?") and bool(_asking(sentences))


def _asking(sentences: list[str]) -> str:
    asking = [s for s in sentences if s.endswith("?")]
    if len(sentences) < 2 or not asking or len(words_of(asking[-1])) < 2:
        return ""
    return asking[-1]


def _sentences(q: str) -> list[str]:
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(q):  # "(INSERT ... ON CONFLICT)" is one sentence's aside, not two sentences
        if sentences and sentences[-1].count("(") > sentences[-1].count(")"):
            sentences[-1] += f" {piece}"
        else:
            sentences.append(piece)
    return sentences


# a comma between clauses: not one inside code ("`for i, r := range s`") or a parenthesis ("f(a, b)")
_CLAUSE_COMMA = re.compile(r",(?![^`]*`(?:[^`]*`[^`]*`)*[^`]*$)(?![^(]*\))")


def core_question(question: str) -> str:
    """A long question without the clauses set off by commas that only say which thing is meant:
    its opening and the clause that asks ("Ann Lee, known for her roles in ..., is mother to which
    actress?" -> "Ann Lee is mother to which actress?"); "" when it has no such clauses. The reader
    was trained on short questions and reads the core better (`scoring.CoreQuestionScorer`)."""
    q = " ".join(question.split())
    if len(q.split()) < LONG_QUESTION:
        return ""
    if asked := asking_sentence(q):
        return asked
    segments = [seg.strip() for seg in _CLAUSE_COMMA.split(q) if seg.strip()]
    asking = [i for i, seg in enumerate(segments) if _WH_WORD.search(seg)]
    if len(segments) < 2 or not asking:
        return ""
    ask = segments[asking[0]]
    core = ask if asking[0] == 0 or _WH_WORD.match(ask) else f"{segments[0]} {ask}"
    core = core if core.endswith("?") else core.rstrip(".") + "?"
    return core if core != q else ""
