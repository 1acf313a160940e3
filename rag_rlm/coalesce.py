"""Callers that arrive while a forward pass runs are served together by the next one: under
concurrent requests one pass serves many. The embedder's encodes and the reader's pairs both
go through it.

A server runs several passes of a model at once (`lanes`), each on a share of the cores: the
passes are small (a question, a dozen sentence pairs), and two of them on one core each read
more pairs a second than one spread over both (bench/bench_server.py: 5.3 -> 6.6 answers/s with
the reader on 2 cores). A command (ingest, ask, eval) runs one pass at a time on every core."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
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
    caller waiting when a pass ends, up to `lanes` passes at once. A caller that runs the model
    another way (ingest's token vectors) takes a lane with `lane()`."""

    def __init__(self, run: Callable[[list[T]], Any], lanes: int = 1):
        self._run = run
        self._changed = threading.Condition()  # a caller queued, or a pass ended
        self._queue: list[_Pending[T]] = []
        self._running = 0
        self.lanes = lanes

    @property
    def lanes(self) -> int:
        return self._lanes

    @lanes.setter
    def lanes(self, lanes: int) -> None:
        if lanes < 1:
            raise ValueError(f"lanes must be >= 1, got {lanes}")
        with self._changed:
            self._lanes = lanes
            self._changed.notify_all()

    @contextlib.contextmanager
    def lane(self) -> Iterator[None]:
        """A lane for a pass run outside the queue, once one is free."""
        with self._changed:
            while self._running >= self._lanes:
                self._changed.wait()
            self._running += 1
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        with self._changed:
            self._running -= 1
            self._changed.notify_all()

    def __call__(self, items: Sequence[T]) -> np.ndarray:
        mine = _Pending(list(items))
        with self._changed:
            self._queue.append(mine)
        while not mine.done.is_set():
            with self._changed:
                while not mine.done.is_set() and (self._running >= self._lanes or not self._queue):
                    self._changed.wait()  # mine is in another lane's pass, or every lane is busy
                if mine.done.is_set():
                    break
                batch, self._queue = self._queue, []  # mine, and whoever queued with it
                self._running += 1
            try:
                self._serve(batch)
            finally:
                self._release()
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


def cores() -> int:
    """The CPU cores this process may run on: `taskset`'s or a container's cpuset, and no more than
    a container's CPU quota (`docker run --cpus 2` on a 64-core host is 2), not the machine's."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 1
    try:
        quota = quota_cpus(Path("/sys/fs/cgroup/cpu.max").read_text())
    except OSError:  # no cgroup v2 file: no quota to honour
        quota = None
    return max(1, min(n, quota or n))


def quota_cpus(cpu_max: str) -> int | None:
    """CPUs a cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD" for none) allows, rounded up."""
    fields = cpu_max.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        quota, period = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return max(1, -(-quota // period)) if quota > 0 and period > 0 else None


def serving_parallelism(lanes: int, workers: int, answers: int) -> tuple[int, int]:
    """(lanes, threads) of a server's models: `lanes` passes of each model at once in each of
    `workers` processes, each pass on `threads` torch threads, so that the passes fill the cores
    once. `lanes` 0: one per core of the process's share, but no more than the `answers` it runs
    at once (answers are what passes serve: more lanes than answers would mostly stand idle)."""
    share = max(1, cores() // max(1, workers))
    lanes = lanes or max(1, min(share, answers))
    return lanes, max(1, share // lanes)


def use_threads(threads: int) -> bool:
    """Torch threads per pass for this process and the workers it starts, unless OMP_NUM_THREADS
    says otherwise (the operator's choice wins); whether it was set."""
    if os.environ.get("OMP_NUM_THREADS"):
        return False
    os.environ["OMP_NUM_THREADS"] = str(threads)  # worker processes import torch afresh
    import torch

    torch.set_num_threads(threads)
    return True
