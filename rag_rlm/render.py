"""The one place where a draft becomes the text a person reads and its numbered citations.

    parts, in the question's order ─► one group of sentences per part, each sentence followed by
                                      the numbers of its sources ("... approved by Finance [1].")
    a part the evidence does not answer ─► a plain sentence saying so
    citations ─► numbered in order of first use; each lists the exact character ranges it quotes

No other module writes answer text or citation markers, and none reads them back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .ingest.sentences import entry_term
from .reasoning.base import Claim, Draft, PartDraft
from .result import Citation, PartAnswer
from .spacing import tight
from .types import Span

_END = re.compile(r"[.!?…]+[\"'”’)\]]*$")
# a name's own mark before the full stop: "the argument given to panic!." is about the macro panic!
_NAME_MARK = re.compile(r"(?<=\w)[!?]\.$")


@dataclass
class Rendered:
    text: str
    citations: list[Citation]
    parts: list[PartAnswer]
    lead: str  # the first sentence, without markers
    numbers: dict[str, int] = field(default_factory=dict)  # span id -> citation number


class Numbering:
    """Citation numbers in order of first use, shared by the answer and its sub-answers. Once
    the answer is numbered (`freeze`), its citations list only what the answer quotes: a
    sub-answer's other sentences of the same passage do not show as quoted by the answer."""

    def __init__(self) -> None:
        self.citations: dict[str, Citation] = {}
        self.frozen: set[str] = set()

    def freeze(self) -> None:
        self.frozen = set(self.citations)

    def number(self, span: Span, start: int, end: int) -> int:
        citation = self.citations.get(span.id)
        if citation is None:
            citation = self.citations[span.id] = Citation(len(self.citations) + 1, span)
        if span.id not in self.frozen and (start, end) not in citation.quotes and end > start:
            citation.quotes.append((start, end))
            citation.quotes.sort()
        return citation.n


def render(draft: Draft, collection: str, numbering: Numbering | None = None) -> Rendered:
    """The answer text of `draft`: found parts as their claims, the others as a plain "not
    found" sentence; a whole answer that is not found says so once."""
    numbering = numbering or Numbering()
    rendered = [render_part(p, collection, numbering) for p in draft.parts]
    parts = [part for part, _ in rendered]
    if draft.parts and not draft.found:
        message = not_found(draft.parts[0].question if len(draft.parts) == 1 else "", collection)
        text, lead = message, message
    else:
        text = _said_once(rendered)
        lead = next((tight(c.text) for p in draft.parts for c in p.claims), "")
    return Rendered(text, list(numbering.citations.values()), parts, lead,
                    {k: c.n for k, c in numbering.citations.items()})


def _said_once(rendered: list[tuple[PartAnswer, list[tuple[str, str]]]]) -> str:
    """The parts' answers, a paragraph each, without a sentence said twice: one sentence may answer
    two parts ("Which protocol ..., and can I change it?"), and the asker reads it once. A later
    part's sentence an earlier part said is left out; an earlier part's sentence that a later
    part's claim says whole, with more, is left to that claim. A part left with nothing adds no
    paragraph; each part's own answer keeps its sentences."""
    said: set[str] = set()
    paragraphs: list[list[tuple[str, str]]] = []
    for part, sentences in rendered:
        fresh = [s for s in sentences if s[1] not in said] if sentences else [(part.answer, part.answer)] if part.answer else []
        said.update(shown for _, shown in sentences)
        if fresh and fresh not in paragraphs:
            paragraphs.append(fresh)
    later = [" ".join(text for text, _ in p) for p in paragraphs]
    kept = [[shown for text, shown in p if not any(_says(other, _END.sub("", text)) for other in later[i + 1:])]
            for i, p in enumerate(paragraphs)]
    return "\n\n".join(" ".join(p) for p in kept if p)


def _says(text: str, sentence: str) -> bool:
    """Whether `text` holds `sentence` as whole sentences (not as a piece of a longer one)."""
    return bool(sentence) and re.search(rf"(?:^|(?<=[.!?] )){re.escape(sentence)}(?:[.!?]|$)", text) is not None


def render_part(part: PartDraft, collection: str, numbering: Numbering) -> tuple[PartAnswer, list[tuple[str, str]]]:
    """A part's answer and the sentences it is made of, each as its text and as shown with its
    markers (none for a part not found)."""
    if not part.found or not part.claims:
        return PartAnswer(part.question, not_found(part.question, collection), False,
                          confidence=part.confidence), []
    sentences, cited, entry = [], [], ""
    for claim in part.claims:
        numbers = [numbering.number(s.span, s.start, s.end) for s in claim.sources]
        cited += [n for n in numbers if n not in cited]
        text, entry = _entry_once(claim.text, entry)
        sentences.append((tight(text), with_markers(text, numbers)))
    answer = " ".join(shown for _, shown in sentences)
    return PartAnswer(part.question, answer, True, cited, part.answer, part.confidence), sentences


def _entry_once(text: str, previous: str) -> tuple[str, str]:
    """`text` without the "name: " of the API entry the claim before it already opened with
    ("Path.resolve(strict=False): ..." twice, when the entry's words around an example are two
    blocks), and the entry `text` opens with."""
    head, colon, rest = text.partition(": ")
    name = entry_term(text)
    # a code name (dotted, called or snake_case), not a table row's "Name: date; ..."
    opening = head if colon and name and name in head and re.search(r"[._(]", name) else ""
    if opening and opening == previous and rest:
        return rest[:1].upper() + rest[1:], opening
    return text, opening


def with_markers(text: str, numbers: Sequence[int]) -> str:
    """"Claims end with their sources": the markers go before the closing punctuation, and a
    sentence without any gets a full stop."""
    text = tight(text)
    marks = "".join(f"[{n}]" for n in dict.fromkeys(numbers))
    if not marks:
        return text if _END.search(text) else text + "."
    m = _END.search(text)
    if m is None:
        return f"{text} {marks}."
    end = m.start() + 1 if _NAME_MARK.match(text, m.start()) else m.start()
    return f"{text[:end].rstrip()} {marks}{text[end:]}"


# -- "not found" ------------------------------------------------------------------------------

_PERSON = {"i": "you", "me": "you", "my": "your", "mine": "yours", "we": "you", "us": "you", "our": "your",
           "am": "are", "i'm": "you're", "i've": "you've", "i'd": "you'd", "i'll": "you'll"}
_WH = r"(?:what|who|whom|whose|which|when|where|why|how(?:\s+(?:many|much|long|often|far|old|big))?)"
_BE = {"is", "are", "was", "were"}
_AUX = _BE | {"do", "does", "did", "has", "have", "had", "can", "could", "should", "would", "will", "may", "must"}
_PRONOUNS = set(_PERSON) | {"you", "they", "he", "she", "it"}
_SUBJECTS = _PRONOUNS | {"new", "a", "an", "the", "this", "that", "these", "those", "each", "every", "all", "some",
                         "any", "your", "their", "his", "her", "its"}
# a word that makes a clause of the phrase after "what is": turning it would need a parser
_CLAUSE = {"to", "that", "which", "who", "whom", "whose", "when", "where", "while", "after", "before", "if",
           "because", "since", "until", "than", "not", "n't", "there"} | _AUX
_DANGLING = {"of", "in", "on", "at", "to", "for", "by", "with", "from", "about", "into", "like", "as"}
_PARTICIPLES = set("born built made held known given taken written found sold paid kept left led run set sent spent "
                   "shown seen done put brought bought thought told won lost begun chosen grown drawn thrown".split())


def not_found(question: str, collection: str) -> str:
    """An honest, plain sentence: the documents do not say what was asked."""
    where = f"The {collection} documents" if collection else "The documents"
    if not question:
        return f"{where} do not answer this question."
    about = indirect(question)
    if about:
        return f"{where} do not say {about}."
    return f"{where} do not answer “{' '.join(question.split())}”."


def indirect(question: str) -> str:
    """A question as the clause after "do not say": "How many days do new hires get?" -> "how
    many days new hires get"; "What is X?" -> "what X is"; "Is X allowed?" -> "whether X is
    allowed". "" for every shape it cannot turn with certainty ("When was X established?",
    "When does X start?"): the caller then quotes the question, which always reads right."""
    q = " ".join(question.strip().rstrip("?.! ").split())
    m = re.match(rf"^({_WH})\s+(is|are|was|were)\s+(.+)$", q, re.IGNORECASE)
    if m:  # "What is the capital of France" -> "what the capital of France is"
        head, verb, rest = m.groups()
        return _second_person(f"{head.lower()} {rest} {_be(verb, rest)}") if _noun_phrase(rest) else ""
    m = re.match(rf"^({_WH}(?:\s+[\w'-]+){{0,3}}?)\s+(do|can|could|should|would|will|may|must)\s+(.+)$", q,
                 re.IGNORECASE)
    if m:  # "How many vacation days do new hires get" / "Who can I ask"
        head, aux, rest = m.group(1), m.group(2).lower(), m.group(3)
        first = rest.split()[0].lower()
        if aux == "do" and (first in _SUBJECTS or rest[:1].isupper()):
            return _second_person(f"{head[0].lower()}{head[1:]} {rest}")
        if first not in _PRONOUNS:
            return ""  # where the subject ends and the verb starts needs a parser
        words = rest.split()
        return _second_person(f"{head[0].lower()}{head[1:]} {words[0]} {aux} {' '.join(words[1:])}".strip())
    m = re.match(rf"^({_WH})\s+(\w+.*)$", q, re.IGNORECASE)
    if m and "," not in q and not m.group(2).lower().startswith("about ") and not any(w in _CLAUSE or w.endswith("n't") for w in m.group(2).lower().split()):
        return _second_person(f"{m.group(1).lower()} {m.group(2)}")  # "Who approves expenses over $500"; not "What about X"
    m = re.match(r"^(is|are|can|could|should|will|may|must)\s+(I|we|you|it|they|there)\s+(.+)$", q,
                 re.IGNORECASE)
    if m:  # "Can I carry over vacation days" -> "whether you can carry over vacation days"
        return _second_person(f"whether {m.group(2)} {m.group(1).lower()} {m.group(3)}")
    return ""


def _noun_phrase(text: str) -> bool:
    """Whether the words after "what is" look like a plain noun phrase, so that the verb can go
    after them: no verb form, clause word or dangling preposition in it."""
    words = text.split()
    lowered = [w.lower().strip(",;:'\"") for w in words]
    if len(words) > 10 or "," in text or lowered[-1] in _DANGLING:
        return False
    for raw, w in zip(words, lowered, strict=True):
        verbish = raw.islower() and (w.endswith(("ed", "ing")) and len(w) > 5 or w in _PARTICIPLES)
        if verbish or w in _CLAUSE or w.endswith("ly") and raw.islower() and len(w) > 4:
            return False
    return True

def _be(verb: str, subject: str) -> str:
    return {"am": "are"}.get(verb.lower(), verb.lower()) if subject.split()[0].lower() != "i" else "are"


def _second_person(text: str) -> str:
    """The asker's "I" is the reader's "you" ("US" stays the country)."""
    return " ".join(_PERSON.get(w.lower().replace("’", "'"), w) if w.islower() or w[:1] == "I" else w
                    for w in text.split())


def claims_text(claims: Sequence[Claim]) -> str:
    """Claims as plain sentences without markers (for prompts and placeholders)."""
    return " ".join(tight(c.text) for c in claims)
