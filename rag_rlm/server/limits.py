"""Request limits: a per-tenant token bucket and a bounded gate for answer work.

The gate lets `max_concurrent_answers` answers run and up to `max_queued_answers` wait; beyond
that a request is refused at once with 503 + Retry-After instead of piling up threads and memory.
A running upload job holds one of the same slots (`hold`, from its worker thread), so ingest and
answers share one capacity; between documents it hands its slot to a waiting answer (`yield_to`)
and queues behind it, so a long ingest delays an answer by one document, not by the whole job.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
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


class _Slots:
    """A first-come-first-served counting semaphore that coroutines (answers, on the server's
    loop) and threads (upload job workers) both take; a release hands the slot to the first waiter."""

    def __init__(self, n: int):
        self._free = n
        self._waiters: deque[Callable[[], None]] = deque()  # each wakes its waiter
        self._lock = threading.Lock()

    def waiting(self) -> int:
        return len(self._waiters)

    def _take_or_wait(self, wake: Callable[[], None]) -> bool:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return True
            self._waiters.append(wake)
            return False

    def _withdraw(self, wake: Callable[[], None]) -> None:
        """A waiter gives up: out of the line, or, when the slot was handed over meanwhile, on to the next."""
        with self._lock:
            if wake in self._waiters:
                self._waiters.remove(wake)
                return
        self.release()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        granted: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            loop.call_soon_threadsafe(lambda: granted.done() or granted.set_result(None))

        if self._take_or_wait(wake):
            return
        try:
            await granted
        except BaseException:  # cancelled while waiting (client gone, timeout)
            self._withdraw(wake)
            raise

    def acquire_blocking(self, stop: threading.Event) -> bool:
        """Wait for a slot in a thread; False (and no slot) once `stop` is set."""
        granted = threading.Event()
        if self._take_or_wait(granted.set):
            return True
        while not granted.wait(0.2):
            if stop.is_set():
                self._withdraw(granted.set)
                return False
        return True

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft()()
                return
            self._free += 1


class AnswerGate:
    def __init__(self, concurrent: int, queued: int):
        self.concurrent = concurrent
        self.limit = concurrent + queued
        self.admitted = 0  # answers only (upload jobs have their own queue and limit)
        self._slots = _Slots(concurrent)
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
        self.admitted += 1
        try:
            await self._slots.acquire()
            try:
                t0 = time.perf_counter()
                yield
                self._avg_seconds = 0.8 * self._avg_seconds + 0.2 * (time.perf_counter() - t0)
            finally:
                self._slots.release()
        finally:
            self.admitted -= 1

    def hold(self, stop: threading.Event) -> bool:
        """Take a slot from a worker thread, waiting in line with answers; False once `stop` is set."""
        return self._slots.acquire_blocking(stop)

    def release(self) -> None:
        self._slots.release()

    def yield_to(self, stop: threading.Event) -> bool:
        """A held slot goes to the first waiting answer, if any, and is taken back in turn after
        it; False (and no slot held) when `stop` is set meanwhile."""
        if not self._slots.waiting():
            return True
        self._slots.release()
        return self._slots.acquire_blocking(stop)


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
