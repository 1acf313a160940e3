"""What every handler needs, built once per app and handed out as Litestar dependencies."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from litestar import Request

from ..config import Settings
from .auth import Caller, authenticate
from .limits import AnswerGate, RateLimiter
from .metrics import Metrics


@dataclass
class ServerContext:
    settings: Settings
    # rag_rlm.assistant.Assistant, used only through its facade (not store/state/embedder). Any, not
    # a TYPE_CHECKING import: Litestar (msgspec) evaluates these hints at run time; importing it loads models
    assistant: Any
    owns_assistant: bool
    metrics: Metrics = field(default_factory=Metrics)
    limiter: RateLimiter = field(init=False)
    gate: AnswerGate = field(init=False)
    # answers get their own bounded pool: the shared one also serves uploads and listings
    executor: ThreadPoolExecutor = field(init=False)

    def __post_init__(self) -> None:
        s = self.settings
        self.limiter = RateLimiter(s.rate_limit_per_minute)
        self.gate = AnswerGate(s.max_concurrent_answers, s.max_queued_answers)
        self.executor = ThreadPoolExecutor(s.max_concurrent_answers, thread_name_prefix="answer")

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self.owns_assistant:
            self.assistant.close()


def provide_context(request: Request[Any, Any, Any]) -> ServerContext:
    return request.app.state["server"]


def provide_caller(request: Request[Any, Any, Any]) -> Caller:
    """Authenticate, then charge the caller's rate limit; every /v1 route depends on this."""
    ctx: ServerContext = request.app.state["server"]
    caller = authenticate(request, ctx.settings.api_keys)
    request.scope["state"]["caller"] = caller
    ctx.limiter.check(caller.rate_key)
    return caller
