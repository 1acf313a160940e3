"""Running the blocking controller from async handlers: whole answers, or a stream of events.

The controller runs in the context's thread pool. For streams its `on_event` callback hops onto
the event loop through `call_soon_threadsafe` into an asyncio queue; when the consumer goes away
(client disconnect) or the deadline passes, the cancel event tells the controller to stop.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..access import EVERYTHING, Access
from ..errors import BudgetExceeded, RagRlmError
from .context import ServerContext

log = logging.getLogger("rag_rlm.server")
_WORDS = re.compile(r"\S*\s*")
# the controller enforces request_timeout itself (BudgetExceeded); this is the backstop
_GRACE_SECONDS = 5.0


@dataclass
class AnswerCall:
    question: str
    collection: str
    request_id: str
    public_collection: str  # the name the caller used (stored names carry the tenant prefix)
    options: dict[str, Any] = field(default_factory=dict)  # top_k, max_depth, token_budget, reflect, history
    access: Access = EVERYTHING  # the caller's: what the answer may be built from
    caller: Any = None  # the auth.Caller asking (its tenant and access groups go in the question log)

    def run(self, ctx: ServerContext, cancel: threading.Event, on_event: Any = None) -> dict[str, Any]:
        try:
            result = ctx.assistant.ask(self.question, self.collection, cancel=cancel, on_event=on_event,
                                       request_id=self.request_id, access=self.access, **self.options)
        except BudgetExceeded as e:
            if e.partial_answer is None:
                raise
            result = e.partial_answer  # out of time/tokens: what was done is still an answer
        out = result.to_dict()
        out["collection"] = self.public_collection
        ctx.metrics.record_answer(out)
        ctx.insights.record(result, self.collection, self.caller)  # in the background
        return out


async def answer(ctx: ServerContext, call: AnswerCall) -> dict[str, Any]:
    cancel = threading.Event()
    async with ctx.gate.slot():
        future = asyncio.get_running_loop().run_in_executor(ctx.executor, call.run, ctx, cancel)
        try:
            return await asyncio.wait_for(future, ctx.settings.request_timeout + _GRACE_SECONDS)
        except TimeoutError:
            raise BudgetExceeded(f"no answer within {ctx.settings.request_timeout:g} s") from None
        finally:
            cancel.set()  # a no-op when done; stops the work when we gave up on it


def split_words(text: str) -> list[str]:
    """Answer text as word-sized deltas whose concatenation is the text."""
    return [w for w in _WORDS.findall(text) if w]


async def stream(ctx: ServerContext, call: AnswerCall) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Events in order: plan, sub_answer*, delta*, citations, then done (or error)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancel = threading.Event()

    def on_event(kind: str, data: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (kind, data))

    def work() -> None:
        try:
            outcome: tuple[str, Any] = ("result", call.run(ctx, cancel, on_event))
        except Exception as e:  # handed to the consumer, which reports it as an error event
            if not isinstance(e, RagRlmError):
                log.error("unhandled error in streamed answer", exc_info=e, extra={"request_id": call.request_id})
            outcome = ("failure", e)
        loop.call_soon_threadsafe(queue.put_nowait, outcome)

    try:
        async with ctx.gate.slot():
            loop.run_in_executor(ctx.executor, work)
            deadline = loop.time() + ctx.settings.request_timeout + _GRACE_SECONDS
            async for event in _ordered(queue, deadline, loop):
                yield event
    finally:
        cancel.set()


async def _ordered(queue: asyncio.Queue[tuple[str, Any]], deadline: float,
                   loop: asyncio.AbstractEventLoop) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    sent: set[str] = set()
    while True:
        try:
            kind, data = await asyncio.wait_for(queue.get(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            yield "error", _error_data(BudgetExceeded("no answer within the request timeout"))
            return
        if kind == "failure":
            yield "error", _error_data(data)
            return
        if kind != "plan" and "plan" not in sent:  # not every answer is decomposed: say so
            sent.add("plan")
            yield "plan", {"sub_questions": []}
        if kind == "result":
            if "answer" not in sent:
                for word in split_words(data.get("answer", "")):
                    yield "delta", {"text": word}
            if "citations" not in sent:
                yield "citations", {"citations": data.get("citations", [])}
            yield "done", data
            return
        if kind in sent and kind != "sub_answer":
            continue
        sent.add(kind)
        if kind == "answer":
            for word in split_words(data.get("text", "")):
                yield "delta", {"text": word}
        elif kind in ("plan", "sub_answer", "citations"):
            yield kind, data


def _error_data(exc: Exception) -> dict[str, Any]:
    from .errors import error_body

    if isinstance(exc, RagRlmError):
        return error_body(type(exc).__name__, str(exc))
    return error_body("internal_error", "internal error")
