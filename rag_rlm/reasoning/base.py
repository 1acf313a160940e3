"""The reasoning seam: the four steps of the flow (plan, answer, merge, reflect).

Each step is given the token allowance the controller reserved for it and must not spend more
(`Draft.tokens_in + Draft.tokens_out <= allowance`); it trims evidence or output to fit. The
extractive reasoner counts the tokens it reads and writes with the embedder's tokenizer, the LLM
reasoner counts prompt and completion tokens with the model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..types import Span


@dataclass(frozen=True)
class SubQuestion:
    """`text` may hold placeholders #1, #2... for the answers of earlier sub-questions it
    `depends_on` (0-based indices); it is asked once those are known."""

    text: str
    depends_on: tuple[int, ...] = ()


@dataclass(frozen=True)
class Plan:
    sub_questions: tuple[SubQuestion, ...] = ()  # empty: answer the question directly
    note: str = ""  # why this plan (rule that fired, or "unparseable plan output")
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0


@dataclass(frozen=True)
class Draft:
    """An answer with the spans it cites, in citation order ([1] is cited[0])."""

    text: str
    cited: tuple[Span, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0
    error: str | None = None  # the model's fault (e.g. backend failed): recorded, not raised
    missing: tuple[str, ...] = ()  # reflect: queries for evidence that is still missing
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Part:
    """A sub-question with its answer, as merge sees it."""

    question: str
    draft: Draft


class Reasoner(Protocol):
    def plan(self, question: str, spans: Sequence[Span], allowance: int) -> Plan: ...

    def answer(self, questions: Sequence[str], spans: Sequence[Sequence[Span]], allowance: int) -> list[Draft]:
        """Batched: one draft per question, each from its own spans; `allowance` is the total."""
        ...

    def merge(self, question: str, parts: Sequence[Part], allowance: int) -> Draft: ...

    def reflect(self, question: str, draft: Draft, spans: Sequence[Span], allowance: int) -> Draft:
        """The draft checked against the evidence: revised, or unchanged; `missing` names
        what to retrieve once more for."""
        ...
