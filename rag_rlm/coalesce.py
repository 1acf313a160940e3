"""Callers that arrive while a forward pass runs are served together by the next one: under
concurrent requests one pass serves many. The embedder's encodes and the reader's pairs both
go through it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

T = TypeVar("T")


class _Pending(Generic[T]):
    """One caller's items waiting for a pass, and what came back."""

    def __init__(self, items: list[T]):
        self.items = items
        self.result: np.ndarray = np.zeros(0, dtype=np.float32)
        self.error: Exception | None = None
        self.done = threading.Event()


class Coalescer(Generic[T]):
    """`coalescer(items)` -> `run(items)`'s rows for these items, `run` called once for every
    caller waiting when the previous pass ends. `lock` is held during a pass (a caller that runs
    the model another way passes the same lock)."""

    def __init__(self, run: Callable[[list[T]], Any], lock: threading.Lock | None = None):
        self._run = run
        self.lock = lock or threading.Lock()
        self._queue_lock = threading.Lock()
        self._queue: list[_Pending[T]] = []

    def __call__(self, items: Sequence[T]) -> np.ndarray:
        mine = _Pending(list(items))
        with self._queue_lock:
            self._queue.append(mine)
        while not mine.done.is_set():
            with self.lock:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                if batch:
                    self._serve(batch)
        if mine.error is not None:
            raise mine.error
        return mine.result

    def _serve(self, batch: list[_Pending[T]]) -> None:
        try:
            out = np.asarray(self._run([item for pending in batch for item in pending.items]))
        except Exception as e:  # every waiting caller gets the error, not a hang
            for pending in batch:
                pending.error = e
                pending.done.set()
            return
        row = 0
        for pending in batch:
            pending.result = out[row:row + len(pending.items)]
            row += len(pending.items)
            pending.done.set()
