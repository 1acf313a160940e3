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

from .reasoning.base import Claim, Draft, PartDraft
from .result import Citation, PartAnswer
from .types import Span

_END = re.compile(r"[.!?…]+[\"'”’)\]]*$")


@dataclass
class Rendered:
    text: str
    citations: list[Citation]
    parts: list[PartAnswer]
    lead: str  # the first sentence, without markers
    numbers: dict[str, int] = field(default_factory=dict)  # span id -> citation number


class Numbering:
    """Citation numbers in order of first use, shared by the answer and its sub-answers."""

    def __init__(self) -> None:
        self.citations: dict[str, Citation] = {}

    def number(self, span: Span, start: int, end: int) -> int:
        citation = self.citations.get(span.id)
        if citation is None:
            citation = self.citations[span.id] = Citation(len(self.citations) + 1, span)
        if (start, end) not in citation.quotes and end > start:
            citation.quotes.append((start, end))
            citation.quotes.sort()
        return citation.n


def render(draft: Draft, collection: str, numbering: Numbering | None = None) -> Rendered:
    """The answer text of `draft`: found parts as their claims, the others as a plain "not
    found" sentence; a whole answer that is not found says so once."""
    numbering = numbering or Numbering()
    parts = [render_part(p, collection, numbering) for p in draft.parts]
    if draft.parts and not draft.found:
        message = not_found(draft.parts[0].question if len(draft.parts) == 1 else "", collection)
        text, lead = message, message
    else:
        text = "\n\n".join(dict.fromkeys(p.answer for p in parts if p.answer))  # one sentence may answer two parts
        lead = next((_plain(c.text) for p in draft.parts for c in p.claims), "")
    return Rendered(text, list(numbering.citations.values()), parts, lead,
                    {k: c.n for k, c in numbering.citations.items()})


def render_part(part: PartDraft, collection: str, numbering: Numbering) -> PartAnswer:
    if not part.found or not part.claims:
        return PartAnswer(part.question, not_found(part.question, collection), False,
                          confidence=part.confidence)
    sentences, cited = [], []
    for claim in part.claims:
        numbers = [numbering.number(s.span, s.start, s.end) for s in claim.sources]
        cited += [n for n in numbers if n not in cited]
        sentences.append(with_markers(claim.text, numbers))
    return PartAnswer(part.question, " ".join(sentences), True, cited, part.answer, part.confidence)


def with_markers(text: str, numbers: Sequence[int]) -> str:
    """"Claims end with their sources": the markers go before the closing punctuation, and a
    sentence without any gets a full stop."""
    text = _plain(text)
    marks = "".join(f"[{n}]" for n in dict.fromkeys(numbers))
    if not marks:
        return text if _END.search(text) else text + "."
    m = _END.search(text)
    if m is None:
        return f"{text} {marks}."
    return f"{text[:m.start()].rstrip()} {marks}{text[m.start():]}"


def _plain(text: str) -> str:
    """One line, no space before punctuation ("pg_restore ," from inline HTML tags)."""
    return re.sub(r"\s+([,.;:!?)\]”’])", r"\1", " ".join(text.split()))


# -- "not found" ------------------------------------------------------------------------------

_PERSON = {"i": "you", "me": "you", "my": "your", "mine": "yours", "we": "you", "us": "you", "our": "your",
           "am": "are"}
_WH = r"(?:what|who|whom|whose|which|when|where|why|how(?:\s+(?:many|much|long|often|far|old|big))?)"


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
    allowed". "" for shapes whose verb would need inflecting ("When does X start?"): the caller
    then quotes the question instead of guessing."""
    q = " ".join(question.strip().rstrip("?.! ").split())
    m = re.match(rf"^({_WH})\s+(is|are|was|were)\s+(.+)$", q, re.IGNORECASE)
    if m and "," not in m.group(3):  # "Which is larger, A or B": no clause to turn  # "What is the capital of France" -> "what the capital of France is"
        return _second_person(f"{m.group(1).lower()} {m.group(3)} {_be(m.group(2), m.group(3))}")
    m = re.match(rf"^({_WH}(?:\s+[\w'-]+){{0,3}}?)\s+(do|can|could|should|would|will|may|must)\s+(.+)$", q,
                 re.IGNORECASE)
    if m:  # "How many vacation days do new hires get" / "Who can I ask"
        head, aux, rest = m.group(1), m.group(2).lower(), m.group(3)
        subject_follows = rest.split()[0].lower() in _PERSON or rest.split()[0].lower() in ("you", "they", "he", "she", "it")
        if head.lower() in ("which", "who", "what") and aux != "do" and not subject_follows:
            return _second_person(f"{head.lower()} {aux} {rest}")  # "Which can store X": the wh-word is the subject
        if aux == "do":
            return _second_person(f"{head[0].lower()}{head[1:]} {rest}")
        words = rest.split()
        return _second_person(f"{head[0].lower()}{head[1:]} {words[0]} {aux} {' '.join(words[1:])}".strip())
    if re.search(r"\b(?:does|did|has|had)\b", q, re.IGNORECASE):  # the verb would need inflecting
        return ""
    m = re.match(rf"^({_WH})\s+(\w+.*)$", q, re.IGNORECASE)
    if m:  # "Who approves expenses over $500" -> "who approves expenses over $500"
        return _second_person(f"{m.group(1).lower()} {m.group(2)}")
    m = re.match(r"^(is|are|can|could|should|will|may|must)\s+(I|we|you|it|they|there)\s+(.+)$", q,
                 re.IGNORECASE)
    if m:  # "Can I carry over vacation days" -> "whether you can carry over vacation days"
        return _second_person(f"whether {m.group(2)} {m.group(1).lower()} {m.group(3)}")
    return ""


def _be(verb: str, subject: str) -> str:
    return {"am": "are"}.get(verb.lower(), verb.lower()) if subject.split()[0].lower() != "i" else "are"


def _second_person(text: str) -> str:
    """The asker's "I" is the reader's "you"."""
    return " ".join(_PERSON.get(w.lower(), w) for w in text.split())


def claims_text(claims: Sequence[Claim]) -> str:
    """Claims as plain sentences without markers (for prompts and placeholders)."""
    return " ".join(_plain(c.text) for c in claims)
