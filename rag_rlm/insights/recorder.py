"""Answered questions into the log off the answering thread: an answer is never held up by the
log's write or by the question's embedding.

Answers hand their question to a queue; one thread takes what has gathered, embeds the questions
not found (the ones a report groups by meaning) in one call (the assistant's answer embedder
remembers what retrieval just encoded, so a question answered a moment ago is not encoded again)
and writes each. A full queue (the store down for
long) drops the question with a warning rather than growing without bound; a failed write is
logged and the next one tried.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from collections.abc import Callable, Sequence

import numpy as np

from .records import AskedQuestion
from .store import QuestionLog

log = logging.getLogger("rag_rlm.insights")
MAX_QUEUED = 1000
_BATCH = 64
_STOP = None

Embed = Callable[[Sequence[str]], np.ndarray]


class QuestionRecorder:
    def __init__(self, sink: QuestionLog, embed: Embed | None, max_queued: int = MAX_QUEUED):
        self._sink = sink
        self._embed = embed
        self._queue: queue.Queue[AskedQuestion | None] = queue.Queue(max_queued)
        self._idle = threading.Condition()
        self._pending = 0
        self._thread = threading.Thread(target=self._work, name="question-log", daemon=True)
        self._thread.start()

    def submit(self, asked: AskedQuestion) -> None:
        with self._idle:
            self._pending += 1
        try:
            self._queue.put_nowait(asked)
        except queue.Full:
            self._done(1)
            log.warning("question log: %d questions wait to be written; this one is dropped", self._queue.maxsize)

    def flush(self, timeout: float) -> bool:
        """Wait until every question submitted so far is written (or failed); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float = 5.0) -> None:
        self.flush(timeout)
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch = [first]
            while len(batch) < _BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    self._queue.put(_STOP)  # seen after this batch is written
                    break
                batch.append(item)
            try:
                self._write(batch)
            finally:
                self._done(len(batch))

    def _write(self, batch: list[AskedQuestion]) -> None:
        vectors: list[np.ndarray | None] = [None] * len(batch)
        # only a question not found is grouped by meaning in a report: only those are embedded
        missing = [i for i, a in enumerate(batch) if not a.found]
        if self._embed is not None and missing:
            try:
                for i, vector in zip(missing, self._embed([batch[i].question for i in missing]), strict=True):
                    vectors[i] = vector
            except Exception:
                log.exception("question log: embedding %d questions failed; written without vectors", len(missing))
        for asked, vector in zip(batch, vectors, strict=True):
            try:
                self._sink.log(dataclasses.replace(asked, vector=vector))
            except Exception:
                log.exception("question log: a question could not be written")

    def _done(self, n: int) -> None:
        with self._idle:
            self._pending -= n
            self._idle.notify_all()
