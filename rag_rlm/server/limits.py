"""Request limits: a per-tenant token bucket and a bounded gate for answer work.

The gate lets `max_concurrent_answers` answers run and up to `max_queued_answers` wait; beyond
that a request is refused at once with 503 + Retry-After instead of piling up threads and memory.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .errors import ApiError


class RateLimiter:
    """Token bucket per key: `per_minute` requests a minute, bursts up to `per_minute`."""

    def __init__(self, per_minute: int):
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)
        self._lock = threading.Lock()

    def take(self, key: str, spend: bool = True) -> float:
        """Spend one token (or, with `spend` false, only look); returns 0 when one is there,
        else the seconds until one is."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                if spend:
                    self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def check(self, key: str) -> None:
        wait = self.take(key)
        if wait > 0:
            raise ApiError(429, "rate_limited", f"rate limit of {int(self.capacity)} requests/minute exceeded",
                           headers={"Retry-After": str(max(1, math.ceil(wait)))})


class AnswerGate:
    def __init__(self, concurrent: int, queued: int):
        self.concurrent = concurrent
        self.limit = concurrent + queued
        self.admitted = 0
        self._sem: asyncio.Semaphore | None = None  # made on first use, inside the server's loop
        self._avg_seconds = 1.0

    def check(self) -> None:
        if self.admitted >= self.limit:
            raise ApiError(503, "overloaded", f"{self.admitted} answers running or queued; try again shortly",
                           headers={"Retry-After": str(self.retry_after())})

    def retry_after(self) -> int:
        # time for the queue ahead to drain, from the recent average answer time
        return max(1, math.ceil(self._avg_seconds * self.admitted / self.concurrent))

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self.check()
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrent)
        self.admitted += 1
        try:
            async with self._sem:
                t0 = time.perf_counter()
                yield
                self._avg_seconds = 0.8 * self._avg_seconds + 0.2 * (time.perf_counter() - t0)
        finally:
            self.admitted -= 1


def check_question(question: str, max_chars: int, field: str = "question") -> str:
    if not question.strip():
        raise ApiError(422, "validation_error", f"{field} must not be empty", field=field)
    if len(question) > max_chars:
        raise ApiError(422, "validation_error",
                       f"{field} is {len(question)} characters; the limit is {max_chars}", field=field)
    _refuse_nul(question, field, field)
    return question


def _refuse_nul(text: str, field: str, where: str) -> None:
    # PostgreSQL text cannot hold NUL: let it through and the store fails with a 503
    if "\x00" in text:
        raise ApiError(422, "validation_error", f"{where} must not contain NUL characters", field=field)


MAX_HISTORY_TURNS = 20


def check_history(history: list[dict[str, str]], max_chars: int) -> list[dict[str, str]]:
    """Earlier turns of a conversation: at most MAX_HISTORY_TURNS, each within the question cap
    (the request's own types are checked by its schema)."""
    if len(history) > MAX_HISTORY_TURNS:
        raise ApiError(422, "validation_error",
                       f"history has {len(history)} turns; the limit is {MAX_HISTORY_TURNS}", field="history")
    for i, turn in enumerate(history):
        if len(turn["content"]) > max_chars:
            raise ApiError(422, "validation_error", f"history[{i}].content is {len(turn['content'])} characters; "
                           f"the limit is {max_chars}", field="history")
        _refuse_nul(turn["content"], "history", f"history[{i}].content")
    return history
