"""The generation seam: a batch of chat prompts in, one result per prompt out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import BackendError

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}
Prompt = Sequence[Message]


@dataclass(frozen=True)
class Generation:
    """One prompt's outcome: text with token counts, or the error that prevented it."""

    text: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    error: BackendError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class LLM(Protocol):
    def generate(self, prompts: Sequence[Prompt], max_new_tokens: int) -> list[Generation]:
        """Results in prompt order. A failure of one prompt is its Generation's `error`;
        only a failure of the whole backend (e.g. the model cannot run at all) raises."""
        ...

    def count_tokens(self, prompt: Prompt) -> int:
        """Prompt tokens as the backend will count them (chat template included)."""
        ...
