"""Syncs the server starts by itself: on each source's schedule (`every`), when a watched folder
changes, and a full comparison of watched folders every `source_rescan_seconds`.

Several app processes may share one store; one of them is the leader (a lease in the state
store, renewed every tick) and only the leader watches and schedules, so a change is synced
once, not once per process. When the leader dies its lease lapses and another takes over.
Syncs run as jobs on the process's runner (jobs.py), one per source queued or running.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ..sources.watch import FolderWatcher
from .auth import SEP
from .errors import ApiError

log = logging.getLogger("rag_rlm.server")

TICK_SECONDS = 1.0
LEADER_KIND, LEADER_KEY = "source_scheduler", "leader"
LEADER_TTL = 15.0
RESUBMIT_SECONDS = 30.0  # a scheduled sync refused (queue full, source busy) is tried again after this


class SourceScheduler:
    def __init__(self, ctx: Any):
        from .sources import queue_sync

        self.ctx = ctx
        self.sources = ctx.assistant.sources
        self.queue_sync = queue_sync
        self.holder = uuid.uuid4().hex
        self.watcher = FolderWatcher(self._changed, ignore=(Path(ctx.settings.data_dir),))
        self._requested: set[str] = set()  # keys of sources a watched folder asked to sync
        self._submitted: dict[str, float] = {}  # when each scheduled sync was last queued
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="source-scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=5)
        self.watcher.close()
        try:
            self.sources.registry.state.release(LEADER_KIND, LEADER_KEY, self.holder)
        except Exception:
            pass

    def _changed(self, key: str) -> None:
        with self._lock:
            self._requested.add(key)

    def _loop(self) -> None:
        while not self._closed.wait(TICK_SECONDS):
            try:
                self.tick()
            except Exception:  # the store is down, say: the next tick tries again
                log.warning("source scheduler: tick failed", exc_info=True)

    def tick(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        if not self.sources.registry.state.claim(LEADER_KIND, LEADER_KEY, self.holder, LEADER_TTL):
            self.watcher.close()  # another process leads
            return
        records = self.sources.list()
        settings = self.ctx.settings
        if settings.source_watch:
            self.watcher.watch({_key(r): Path(r["spec"]["location"]) for r in records
                                if r["spec"]["kind"] == "folder"})
        with self._lock:
            requested, self._requested = self._requested, set()
        for record in records:
            key = _key(record)
            if key in requested:
                job = self._submit(record, key, now)
                if job is not None and job.get("status") == "running":
                    self._changed(key)  # it may have read past the change: sync again after it
            elif self._due(record, now) and now - self._submitted.get(key, 0) > RESUBMIT_SECONDS:
                self._submit(record, key, now)

    def _due(self, record: dict[str, Any], now: float) -> bool:
        if record.get("next_run") is not None:
            return record["next_run"] <= now
        if record["spec"]["kind"] != "folder" or not self.ctx.settings.source_watch:
            return False
        last = record.get("last_sync") or {}  # a watched folder: compared in full now and then
        return (last.get("finished") or 0) + self.ctx.settings.source_rescan_seconds <= now

    def _submit(self, record: dict[str, Any], key: str, now: float) -> dict[str, Any] | None:
        """Queue a sync; the job already queued or running for the source when there is one
        (then its status says which), None when the queue is full (the next tick tries again)."""
        stored = record["collection"]
        tenant, sep, shown = stored.partition(SEP)
        if not (sep and self.ctx.settings.api_keys):
            tenant, shown = None, stored
        try:
            created, job = self.queue_sync(self.ctx, stored, record["name"], shown, tenant)
        except ApiError:
            log.info("source %s: sync not queued (job queue full)", key)
            return None
        self._submitted[key] = now
        return None if created else job


def _key(record: dict[str, Any]) -> str:
    return f"{record['collection']}/{record['name']}"
