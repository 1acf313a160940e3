"""What every handler needs, built once per app and handed out as Litestar dependencies."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from litestar import Request

from ..config import Settings
from ..insights import Insights
from .auth import Caller, authenticate
from .errors import ApiError
from .jobs import JobRunner
from .limits import AnswerGate, RateLimiter
from .metrics import Metrics
from .retention import Retention
from .schedule import SourceScheduler


@dataclass
class ServerContext:
    settings: Settings
    # rag_rlm.assistant.Assistant, used only through its facade (not store/state/embedder). Any, not
    # a TYPE_CHECKING import: Litestar (msgspec) evaluates these hints at run time; importing it loads models
    assistant: Any
    owns_assistant: bool
    metrics: Metrics = field(default_factory=Metrics)
    limiter: RateLimiter = field(init=False)
    auth_failures: RateLimiter = field(init=False)  # per client address: slows key guessing
    gate: AnswerGate = field(init=False)
    # answers get their own bounded pool: the shared one also serves uploads and listings
    executor: ThreadPoolExecutor = field(init=False)
    jobs: JobRunner = field(init=False)  # upload and sync jobs: started with the app, closed with it
    scheduler: SourceScheduler = field(init=False)  # syncs on schedules and folder changes
    retention: Retention = field(init=False)  # prunes old traces and jobs: started with the app
    insights: Insights = field(init=False)  # the question log and answer feedback (rag_rlm.insights)

    def __post_init__(self) -> None:
        s = self.settings
        self.limiter = RateLimiter(s.rate_limit_per_minute)
        self.auth_failures = RateLimiter(s.auth_failures_per_minute)
        self.gate = AnswerGate(s.max_concurrent_answers, s.max_queued_answers)
        self.executor = ThreadPoolExecutor(s.max_concurrent_answers, thread_name_prefix="answer")
        self.jobs = JobRunner(self.assistant, s, self.gate)
        self.scheduler = SourceScheduler(self)
        self.retention = Retention(self.assistant, s.state_retention_days)
        self.insights = Insights.open(s, embed=self.assistant.embed_questions)

    def start(self) -> None:
        self.jobs.start()  # marks jobs of a stopped server failed, cleans folders
        self.scheduler.start()
        self.retention.start()  # prunes old records

    def close(self) -> None:
        self.retention.close()
        self.scheduler.close()
        self.jobs.close()
        self.insights.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self.owns_assistant:
            self.assistant.close()


def provide_context(request: Request[Any, Any, Any]) -> ServerContext:
    return request.app.state["server"]


def provide_caller(request: Request[Any, Any, Any]) -> Caller:
    """Authenticate, then charge the caller's rate limit; every /v1 route depends on this."""
    ctx: ServerContext = request.app.state["server"]
    caller = _authenticate(ctx, request)
    request.scope["state"]["caller"] = caller
    ctx.limiter.check(caller.rate_key)
    return caller


def _authenticate(ctx: ServerContext, request: Request[Any, Any, Any]) -> Caller:
    """An address that sent `auth_failures_per_minute` bad keys is refused before its key is
    even looked at, right or wrong: otherwise the 429/200 difference would still answer guesses."""
    if not ctx.settings.api_keys:
        return authenticate(request, ctx.settings.api_keys)
    address = request.client.host if request.client else "unknown"
    wait = ctx.auth_failures.take(address, spend=False)
    if wait > 0:
        raise ApiError(429, "rate_limited", f"too many failed authentications from this address "
                       f"({ctx.settings.auth_failures_per_minute}/minute); retry later",
                       headers={"Retry-After": str(max(1, math.ceil(wait)))})
    try:
        return authenticate(request, ctx.settings.api_keys)
    except ApiError:
        ctx.auth_failures.take(address)
        raise
