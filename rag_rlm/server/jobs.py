"""Background jobs (uploads and source syncs): a bounded queue, a fixed number of workers,
states that every process can read.

    queued ──► running ──► done | failed | cancelled
       └─────► cancelled (DELETE while it waits) | failed (interrupted: the server stopped)

A large upload is saved under `{data_dir}/uploads/{job id}/` and queued here; so is a sync of a
source (kind "sync", no folder; one per source queued or running here). `upload_workers`
threads take jobs in order; each first holds one of the answer gate's slots (limits.py), so
ingest and answers share the server's capacity. A process holds at most `upload_workers +
max_queued_jobs` jobs; one more upload is refused with 503 + Retry-After naming the limit.

The job's record lives in the state store (kind `upload_job`), with timestamps and progress. Its
process rewrites it every HEARTBEAT_SECONDS (`heartbeat`; `owner`: host, pid, boot id), so a job
whose process died does not say `running` forever: its owner's pid is gone on this host, or its
heartbeat is STALE_SECONDS old, and it is marked failed with INTERRUPTED (at start, and whenever
it is read) and its folder removed. A cancel sent to another process is a flag (`upload_job_cancel`)
that the owner sees at its next heartbeat. A job's folder is removed on every path: done, failed,
cancelled, refused, and at the next start for a process that died.

Cancelling a running job sets its stop event: ingest ends after the document being written, so
every document written stays, whole (a new upload of the same files skips them as unchanged).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Settings
from .errors import ApiError
from .limits import AnswerGate

log = logging.getLogger("rag_rlm.server")

ACTIVE = ("queued", "running")
HEARTBEAT_SECONDS = 2.0
STALE_SECONDS = 30.0  # fifteen missed heartbeats: the owner is gone (or hung)
ORPHAN_SECONDS = 3600.0  # a folder no job names: an inline upload still ingesting, or a crash's
PROGRESS_SECONDS = 0.5  # progress is written at most this often
INTERRUPTED = "interrupted: the server stopped before it finished; upload the files again"
CANCELLING = ("cancelling: the job stops after the document being written; documents already "
              "written stay, each one whole")
_PUBLIC = ("id", "kind", "source", "status", "collection", "files", "bytes", "created", "started", "finished", "heartbeat",
           "progress", "summary", "error", "cancel_requested")
_HOST = socket.gethostname()
_BOOTS: set[str] = set()  # runners alive in this process (tests run several servers in one)


def public(record: dict[str, Any]) -> dict[str, Any]:
    """What a caller sees of a job: no tenant, no owner process."""
    return {**{k: record[k] for k in _PUBLIC if k in record}, "url": f"/v1/jobs/{record['id']}"}


def ingest_folder(assistant: Any, folder: Path, collection: str, shown: str,
                  skipped: Sequence[dict[str, str]] = (), **options: Any) -> dict[str, Any]:
    """Ingest an upload's folder; the summary names files by their uploaded names and the
    collection by the caller's name (`shown`): neither the folder nor a stored name leaves.
    `skipped`: parts not saved (hidden, unsupported type), reported as failed files."""
    out = assistant.ingest_files([folder], collection, relative_sources=True, **options).to_dict()
    for failure in out.get("failed", []):
        failure["path"] = str(failure.get("path", "")).removeprefix(str(folder)).lstrip("/")
        failure["reason"] = _scrub(str(failure.get("reason", "")), folder, collection, shown)
    out["failed"] = [*out.get("failed", []), *skipped]
    out["documents_failed"] = out.get("documents_failed", 0) + len(skipped)
    return out


def _scrub(text: str, folder: Path, collection: str, shown: str) -> str:
    """Text without the upload's folder or the uploads root, and with the caller's collection name."""
    for path in (str(folder) + "/", str(folder), str(folder.parent)):
        text = text.replace(path, "")
    return text.replace(collection, shown)


Work = Callable[[threading.Event, Callable[[int, int | None, int], None]], dict[str, Any]]


@dataclass
class _Job:
    record: dict[str, Any]
    collection: str  # the stored name; the record holds the caller's
    # (stop, progress) -> the summary; an upload's ingest or a source's sync
    work: Work
    folder: Path | None = None  # an upload's saved files, removed when the job ends
    stop: threading.Event = field(default_factory=threading.Event)
    shutdown: bool = False  # stopped because the server is closing, not by a cancel
    held: bool = False  # holds a slot of the answer gate
    saved: float = 0.0  # when progress was last written


class JobRunner:
    def __init__(self, assistant: Any, settings: Settings, gate: AnswerGate):
        self.assistant = assistant
        self.gate = gate
        self.workers = settings.upload_workers
        self.queued = settings.max_queued_jobs
        self.root = Path(settings.data_dir) / "uploads"
        self.boot = uuid.uuid4().hex
        self._jobs: dict[str, _Job] = {}  # queued and running in this process
        self._queue: deque[_Job] = deque()  # not yet taken by a worker
        self._lock = threading.RLock()  # the above, and each record with its write
        self._wake = threading.Condition(self._lock)
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._avg_seconds = 30.0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        _BOOTS.add(self.boot)
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self.recover()
        except Exception:  # a store down at start must not keep the server from answering
            log.exception("could not check for upload jobs left by a stopped server")
        self._threads = [threading.Thread(target=self._work, name=f"upload-{i}", daemon=True)
                         for i in range(self.workers)]
        self._threads.append(threading.Thread(target=self._beat, name="upload-heartbeat", daemon=True))
        for t in self._threads:
            t.start()

    def close(self, timeout: float = 5.0) -> None:
        """Waiting jobs fail as interrupted at once; running ones stop after their document."""
        self._closed.set()
        with self._lock:
            waiting = list(self._queue)
            self._queue.clear()
            for job in self._jobs.values():
                job.shutdown = True
                job.stop.set()
            self._wake.notify_all()
        for job in waiting:
            self._finish(job, "failed", error=INTERRUPTED)
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            left = list(self._jobs.values())
        for job in left:  # still writing a document: the process is going, say so now
            self._finish(job, "failed", error=INTERRUPTED)
        _BOOTS.discard(self.boot)

    def recover(self) -> None:
        """Mark jobs whose process died as failed, and remove upload folders no live job needs."""
        for status in ACTIVE:
            for record in self.assistant.jobs(10_000, status=status):
                self._settle(record)
        for folder in self.root.iterdir():
            if not folder.is_dir():
                continue
            record = self.assistant.job(folder.name)
            if record is not None:
                record = self._settle(record)
            gone = record is None and time.time() - folder.stat().st_mtime > ORPHAN_SECONDS
            if gone or (record is not None and record["status"] not in ACTIVE):
                shutil.rmtree(folder, ignore_errors=True)

    # -- what the routes call --------------------------------------------------------------

    def new_folder(self) -> tuple[str, Path]:
        """An id and an empty folder for an upload (inline ones too: a restart cleans them all)."""
        job_id = uuid.uuid4().hex
        folder = self.root / job_id
        folder.mkdir(parents=True)
        return job_id, folder

    def check_room(self) -> None:
        with self._lock:
            held = len(self._jobs)
        if held >= self.workers + self.queued or self._closed.is_set():
            retry = max(1, min(3600, math.ceil(self._avg_seconds * max(1, held) / self.workers)))
            raise ApiError(503, "overloaded", f"the upload job queue is full: {held} jobs running or waiting "
                           f"(upload_workers={self.workers}, max_queued_jobs={self.queued}); try again later",
                           headers={"Retry-After": str(retry)})

    def submit(self, job_id: str, folder: Path, collection: str, shown: str, tenant: str | None,
               files: int, size: int, skipped: Sequence[dict[str, str]] = (),
               options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Queue a saved upload; 503 when the queue is full (the caller removes the folder).
        `options`: passed to the ingest (Assistant.ingest_files: groups, access)."""
        now = time.time()
        record = {"id": job_id, "kind": "upload", "status": "queued", "collection": shown, "tenant": tenant, "files": files,
                  "bytes": size, "created": now, "heartbeat": now, "owner": self._owner(),
                  "progress": {"documents_done": 0, "documents_total": files, "chunks_written": 0}}

        def work(stop: threading.Event, progress: Callable[[int, int | None, int], None]) -> dict[str, Any]:
            return ingest_folder(self.assistant, folder, collection, shown, skipped, progress=progress, stop=stop,
                                 **dict(options or {}))

        self._enqueue(_Job(record, collection, work, folder=folder))
        return public(record)

    def submit_sync(self, collection: str, source: str, shown: str, tenant: str | None,
                    work: Work) -> tuple[bool, dict[str, Any]]:
        """Queue a sync of a source: (True, the new job), or (False, the one already queued or
        running here for that source). 503 when the queue is full."""
        with self._lock:
            for job in self._jobs.values():
                if job.record.get("kind") == "sync" and job.collection == collection and job.record["source"] == source:
                    return False, public(job.record)
            now = time.time()
            record = {"id": uuid.uuid4().hex, "kind": "sync", "source": source, "status": "queued", "collection": shown,
                      "tenant": tenant, "created": now, "heartbeat": now, "owner": self._owner(),
                      "progress": {"documents_done": 0, "documents_total": None, "chunks_written": 0}}
            self._enqueue(_Job(record, collection, work))
        return True, public(record)

    def _enqueue(self, job: _Job) -> None:
        with self._lock:
            self.check_room()
            self.assistant.save_job(job.record)
            self._jobs[job.record["id"]] = job
            self._queue.append(job)
            self._wake.notify()

    def get(self, job_id: str, tenant: str | None) -> dict[str, Any]:
        record = self.assistant.job(job_id)
        if not record or record.get("tenant") != tenant:  # exact: another tenant's job is a missing one
            raise ApiError(404, "not_found", f"no job {job_id!r}", field="job_id")
        return self._settle(record)

    def list(self, tenant: str | None, limit: int) -> list[dict[str, Any]]:
        records = [self._settle(r) for r in self.assistant.jobs(limit, tenant=tenant)]
        return sorted(records, key=lambda r: r.get("created", 0), reverse=True)

    def cancel(self, job_id: str, tenant: str | None) -> tuple[int, dict[str, Any]]:
        """(200, the cancelled job) for a waiting job here; (202, the job) for one that stops
        after its current document; 409 for a finished one."""
        record = self.get(job_id, tenant)
        queued = False
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None:
                queued = job in self._queue
                if queued:
                    self._queue.remove(job)
                else:
                    job.record["cancel_requested"] = True
                    self._save(job)
                    job.stop.set()
        if job is not None and queued:
            return 200, public(self._finish(job, "cancelled"))
        if job is not None:
            return 202, {**public(job.record), "message": CANCELLING}
        if record["status"] not in ACTIVE:
            raise ApiError(409, "conflict", f"job {job_id!r} is already {record['status']}; only a queued or "
                           f"running job can be cancelled", field="job_id")
        self.assistant.request_job_cancel(job_id)  # another process runs it: it looks at its next heartbeat
        return 202, {**public(record), "cancel_requested": True, "message": CANCELLING}

    def active(self) -> dict[str, int]:
        with self._lock:
            waiting = len(self._queue)
            return {"queued": waiting, "running": len(self._jobs) - waiting}

    # -- the workers -----------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed.is_set():
                    self._wake.wait(1.0)
                if not self._queue:
                    return
                job = self._queue.popleft()
            self._run(job)

    def _run(self, job: _Job) -> None:
        started = time.monotonic()
        status, fields = "cancelled", {}
        try:
            job.held = self.gate.hold(job.stop)  # waits in line with answers
            if job.held:
                self._update(job, status="running", started=time.time())
                summary = job.work(job.stop, lambda *p: self._progress(job, *p))
                status, fields = "done", {"summary": summary}
                if summary.get("interrupted") or summary.get("status") == "cancelled":
                    status = "cancelled"
                elif summary.get("status") == "failed":  # a source that could not be read
                    status, fields = "failed", {**fields, "error": summary.get("error", "")}
            if status == "cancelled" and job.shutdown:
                status, fields = "failed", {**fields, "error": INTERRUPTED}
        except Exception as e:  # recorded for GET /v1/jobs/{id}; the worker goes on
            log.exception("upload job %s failed", job.record["id"])
            error = f"{type(e).__name__}: {e}"
            if job.folder is not None:
                error = _scrub(error, job.folder, job.collection, job.record["collection"])
            status, fields = "failed", {"error": error.replace(job.collection, job.record["collection"])}
        finally:
            if job.held:
                self.gate.release()
            self._finish(job, status, **fields)
        self._avg_seconds = 0.8 * self._avg_seconds + 0.2 * (time.monotonic() - started)

    def _progress(self, job: _Job, done: int, total: int | None, chunks: int) -> None:
        with self._lock:
            job.record["progress"] = {"documents_done": done, "documents_total": total, "chunks_written": chunks}
            if time.monotonic() - job.saved >= PROGRESS_SECONDS:
                self._update(job)
        if job.held and not self.gate.yield_to(job.stop):  # an answer waits: it goes first
            job.held = False

    def _beat(self) -> None:
        while not self._closed.wait(HEARTBEAT_SECONDS):
            with self._lock:
                jobs = list(self._jobs.values())
            for job in jobs:
                try:
                    if not job.stop.is_set() and self.assistant.job_cancel_requested(job.record["id"]):
                        self.cancel(job.record["id"], job.record["tenant"])
                except Exception:  # the store is down: the next beat looks again
                    log.warning("upload job %s: cancel flag not read", job.record["id"], exc_info=True)
                self._update(job)

    # -- records ---------------------------------------------------------------------------

    def _owner(self) -> dict[str, Any]:
        return {"host": _HOST, "pid": os.getpid(), "boot": self.boot}

    def _update(self, job: _Job, **fields: Any) -> None:
        with self._lock:
            if job.record["id"] in self._jobs:  # a finished job's record is final
                job.record.update(fields, heartbeat=time.time())
                self._save(job)

    def _save(self, job: _Job) -> None:
        """Write the record; a store that is down is logged, not raised (a progress callback
        must not end the ingest): the next write tries again, and a stale heartbeat says the rest."""
        job.saved = time.monotonic()
        try:
            self.assistant.save_job(job.record)
        except Exception:
            log.warning("upload job %s: state not written", job.record["id"], exc_info=True)

    def _finish(self, job: _Job, status: str, **fields: Any) -> dict[str, Any]:
        if job.folder is not None:
            shutil.rmtree(job.folder, ignore_errors=True)
        with self._lock:
            if self._jobs.pop(job.record["id"], None) is None:
                return job.record  # finished already (a shutdown that did not wait for it)
            job.record.update(fields, status=status, finished=time.time())
            self._save(job)  # if the store is down now, the job reads as interrupted once stale
        return job.record

    def _settle(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record, marked failed (and its folder removed) when its process is gone."""
        if record.get("status") not in ACTIVE or record["id"] in self._jobs or not _dead(record):
            return record
        record = {**record, "status": "failed", "error": INTERRUPTED, "finished": time.time()}
        self.assistant.save_job(record)
        if str(record["id"]).isalnum() and record.get("kind", "upload") == "upload":  # our ids are hex
            shutil.rmtree(self.root / record["id"], ignore_errors=True)
        return record


def _dead(record: dict[str, Any]) -> bool:
    """Whether the process that holds a queued or running job is gone."""
    beat = record.get("heartbeat") or record.get("created") or 0
    if time.time() - float(beat) > STALE_SECONDS:
        return True
    owner = record.get("owner") or {}
    if owner.get("host") != _HOST or not isinstance(owner.get("pid"), int):
        return False  # another machine: only its heartbeat tells
    if owner["pid"] == os.getpid():
        return owner.get("boot") not in _BOOTS  # this process, an app that was closed
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False
