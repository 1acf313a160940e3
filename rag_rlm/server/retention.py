"""Old records out of the state store: answer traces, finished upload jobs and their cancel flags
not written for `state_retention_days` are deleted at server start and then every PRUNE_SECONDS,
by a background thread of each server process (several processes pruning alike is harmless: a
delete is idempotent). A queued or running job is never pruned, however old its record."""

from __future__ import annotations

import logging
import threading
from typing import Any

from .jobs import ACTIVE

log = logging.getLogger("rag_rlm.server")

PRUNE_SECONDS = 3600.0
DAY_SECONDS = 86400.0


class Retention:
    def __init__(self, assistant: Any, days: float, every: float = PRUNE_SECONDS):
        self.assistant = assistant
        self.max_age = days * DAY_SECONDS  # 0: keep for ever
        self.every = every
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.max_age > 0:
            self._thread = threading.Thread(target=self._run, name="state-retention", daemon=True)
            self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def prune(self) -> dict[str, int]:
        return self.assistant.prune_records(self.max_age, active_jobs=ACTIVE)

    def _run(self) -> None:
        while not self._closed.is_set():
            try:
                pruned = self.prune()
                if any(pruned.values()):
                    log.info("pruned state records older than %g days: %s", self.max_age / DAY_SECONDS, pruned)
            except Exception:  # the store is down: the next round tries again
                log.warning("could not prune old state records", exc_info=True)
            self._closed.wait(self.every)
