"""The reasoning seam: the steps of the flow (plan, answer, merge, reflect) and the values they
pass, plus `condense`, which turns a follow-up into a question that stands on its own.

A draft is data, not text: claims (a sentence or a short span of the evidence, with the exact
places it comes from), grouped by the part of the question they answer, and per part whether the
evidence answers it at all. Reasoners produce drafts; `rag_rlm.render` alone turns one into the
text a person reads and its numbered citations. Nothing parses answer text back into structure.

Each step is given the token allowance the controller reserved for it and must not spend more
(`tokens_in + tokens_out <= allowance`); it trims evidence or output to fit. The extractive
reasoner counts the tokens it reads and writes with the embedder's tokenizer, the LLM reasoner
counts prompt and completion tokens with the model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from ..types import Sentence, Span

PART, HOP, SIDE = "part", "hop", "side"


@dataclass(frozen=True)
class SubQuestion:
    """One sub-question of a plan.

    `text` is what the asker sees, in their own words; `focus` is the entity a hop or a side of a
    comparison is about, which retrieval puts first (`query`). `kind` says how its answer joins
    the parent's: a *part* of a multi-part question is answered on its own (one group of the
    answer per part, in the question's order), a *hop* fetches evidence for the parent's own
    answer (a bridge to another document), a *side* is one of the things a comparison compares.
    `text` may hold placeholders #1, #2... for the answers of earlier sub-questions it
    `depends_on` (0-based indices); it is asked once those are known."""

    text: str
    depends_on: tuple[int, ...] = ()
    focus: str = ""
    kind: str = PART
    query_text: str = ""  # what retrieval asks besides the focus, when not `text` itself

    @property
    def query(self) -> str:
        ask = self.query_text or self.text
        return f"{self.focus}: {ask}" if self.focus else ask


@dataclass(frozen=True)
class Source:
    """A cited place: the retrieved span, and the characters of its document that are quoted."""

    span: Span
    start: int
    end: int


@dataclass(frozen=True)
class Claim:
    """A sentence (or a short span) of the evidence, and where it comes from. `answer` is the
    short answer inside it (a number, a date, a name) when one stands out."""

    text: str
    sources: tuple[Source, ...]
    score: float = 0.0
    answer: str = ""
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)  # for ranking in merge
    context: str = field(default="", compare=False, repr=False)  # with its title and heading, for merge's word overlap
    # the question and text the scorer read when the claim was chosen: reflection re-reads them
    read_as: tuple[str, str] = field(default=("", ""), compare=False, repr=False)
    kind: str = "quote"  # quote: sentences of the evidence; verdict: says what its quotes settle; generated: a model's


@dataclass(frozen=True)
class Plan:
    sub_questions: tuple[SubQuestion, ...] = ()  # empty: answer the question directly
    note: str = ""  # why this plan (rule that fired, or "unparseable plan output")
    comparison: str = ""  # for sides: what is compared ("first", "larger", ...), "" if nothing
    rules: tuple[str, ...] = ()  # the rules of `rules.RULES` that fired
    links: tuple[tuple[str, Claim], ...] = ()  # bridge: each hop's focus and the sentence that named it
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0


@dataclass(frozen=True)
class PartDraft:
    """The answer to one part of the question. `found` is False when the evidence does not
    answer it (then `claims` is empty); `confidence` is the answerability score it was judged on."""

    question: str
    claims: tuple[Claim, ...] = ()
    found: bool = False
    confidence: float = 0.0
    focus: str = ""

    @property
    def answer(self) -> str:
        return next((c.answer for c in self.claims if c.answer), "")


@dataclass(frozen=True)
class Draft:
    """An answer as data: parts in the question's order, each with its claims."""

    parts: tuple[PartDraft, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0
    error: str | None = None  # the model's fault (e.g. backend failed): recorded, not raised
    missing: tuple[str, ...] = ()  # reflect: queries for evidence that is still missing
    notes: tuple[str, ...] = field(default=())
    rules: tuple[str, ...] = ()  # the rules of `rules.RULES` that fired

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def found(self) -> bool:
        return any(p.found for p in self.parts)

    @property
    def claims(self) -> tuple[Claim, ...]:
        return tuple(c for p in self.parts for c in p.claims)

    @property
    def cited(self) -> tuple[Span, ...]:
        """The spans the claims cite, each once, in order of first citation."""
        out: dict[str, Span] = {}
        for claim in self.claims:
            for source in claim.sources:
                out.setdefault(source.span.id, source.span)
        return tuple(out.values())

    def with_usage(self, tokens_in: int = 0, tokens_out: int = 0, llm_calls: int = 0) -> Draft:
        return replace(self, tokens_in=tokens_in, tokens_out=tokens_out, llm_calls=llm_calls)


def failed(error: str, question: str = "") -> Draft:
    """A draft for a step that could not run (budget, backend): no claims, the error recorded."""
    return Draft(parts=(PartDraft(question),) if question else (), error=error)


@dataclass(frozen=True)
class EvidenceSentence:
    """A stored sentence of a retrieved span, with its vector when sentence memory has one."""

    sentence: Sentence
    span: Span
    vector: np.ndarray | None = None


@dataclass(frozen=True)
class Evidence:
    """What one (sub-)question retrieved: the spans, best first, their stored sentences (empty
    when the collection has no sentence memory: the reasoner then splits the spans itself), and
    the query's vector (so the answer step encodes nothing the retrieval already did)."""

    spans: tuple[Span, ...]
    sentences: tuple[EvidenceSentence, ...] = ()
    query_vector: np.ndarray | None = None


@dataclass(frozen=True)
class Candidate:
    """A sentence of the evidence, the retrieved span it was read from, and its vector."""

    sentence: Sentence
    span: Span
    vector: np.ndarray
    # what the reader reads of it when that is less than what is said: a lead-in is judged by
    # its own words, not by the words of the code said after it
    judged_as: str = ""

    @property
    def context(self) -> str:
        """What it says with its place: the words a reader takes from title and heading."""
        return f"{self.span.title} {self.sentence.heading} {self.sentence.text}"


class SentenceScorer(Protocol):
    """How much each candidate answers a question, on a scale its `Answerability` reads: the
    reader's probability, or the bi-encoder's similarity when no reader is configured.
    `identity` names the scorer in memo keys (a new reader never serves the old one's answers)."""

    identity: str

    def score(self, question: str, candidates: Sequence[Candidate], question_vector: np.ndarray | None = None) -> np.ndarray:
        ...

    def score_texts(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """The same for texts that are not stored sentences (a claim a model wrote, a chain of
        two sentences)."""
        ...


class Answerability(Protocol):
    """Whether the best scores say the evidence answers the question, and how sure that is."""

    threshold: float

    def judge(self, scores: np.ndarray) -> tuple[bool, float]: ...


@dataclass(frozen=True)
class Part:
    """A sub-question with its answer, as merge sees it."""

    sub_question: SubQuestion
    draft: Draft


@dataclass(frozen=True)
class Rewrite:
    """A follow-up made standalone, and what making it cost."""

    question: str
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0
    error: str | None = None
    rules: tuple[str, ...] = ()
    # the follow-up's words put into the earlier question's frame ("What about the laptop?" ->
    # "Can I work from another laptop?"): it must also read better than the two read together
    framed: bool = True


@dataclass(frozen=True)
class Turn:
    """One earlier message of a conversation."""

    role: str  # user | assistant
    content: str


class Reasoner(Protocol):
    def plan(self, question: str, evidence: Evidence, allowance: int) -> Plan: ...

    def answer(self, questions: Sequence[SubQuestion], evidence: Sequence[Evidence], allowance: int) -> list[Draft]:
        """Batched: one draft per question, each from its own evidence; `allowance` is the total."""
        ...

    def merge(self, question: str, own: Draft, parts: Sequence[Part], plan: Plan, allowance: int) -> Draft:
        """One draft from the question's own answer and its sub-questions' answers: parts stay
        parts, hops feed the question's own part, sides become a comparison."""
        ...

    def reflect(self, question: str, draft: Draft, evidence: Evidence, allowance: int) -> Draft:
        """The draft checked against the evidence: revised, or unchanged; `missing` names
        what to retrieve once more for."""
        ...

    def condense(self, question: str, history: Sequence[Turn], allowance: int) -> Rewrite:
        """The question as it would be asked without the conversation before it (a follow-up
        such as "And vision?" gets its subject back); unchanged when it stands on its own. Its
        tokens count in the request's budget like any step's."""
        ...
