"""Upload jobs on a live server: queued -> running -> done | failed | cancelled with progress, a
bounded queue (503 + Retry-After naming the limit), DELETE /v1/jobs/{id} for waiting and running
jobs (what was written stays whole), exact tenant ownership, jobs of a dead process reported
failed at start and on read, and no upload folder left on any path.

Uploads over 1 KB are jobs here (`background_upload_bytes`), so a corpus of small files makes one.
`PausingAssistant` is the real Assistant whose ingest, when asked, waits after its first document
until the test resumes it or the job is stopped: "a job is running" lasts exactly as long as a
test needs, on any machine.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from test_server_support import LiveServer

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.errors import ConfigError
from rag_rlm.memory.state import SqliteState
from rag_rlm.server.jobs import INTERRUPTED
from rag_rlm.server.limits import AnswerGate

SMALL = 1000  # bytes: above this an upload is a job
# tenants of these tests only: the PostgreSQL store is shared by the run, and other modules count
# acme's and beta's collections
KEYS = {"key-gamma": "gamma", "key-delta": "delta"}
FILES = 12


class PausingAssistant:
    def __init__(self, inner: Assistant):
        self.inner = inner
        self.pause = False  # set by a test: the next job waits after its first document
        self.paused = threading.Event()
        self.resume = threading.Event()
        self.fail: Exception | None = None

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def ingest_files(self, paths, collection, *, progress=False, stop=None, **kwargs):
        if self.fail is not None:
            raise self.fail
        pause, self.pause = self.pause, False

        def report(done, total, chunks):
            if callable(progress):
                progress(done, total, chunks)
            if pause and done == 1:
                self.paused.set()
                while not self.resume.wait(0.05) and not (stop and stop.is_set()):
                    pass

        return self.inner.ingest_files(paths, collection, progress=report, stop=stop, **kwargs)


@pytest.fixture
def assistant(store_url, tmp_path, embedder):
    settings = Settings(store=store_url, data_dir=str(tmp_path / "data"), rate_limit_per_minute=100_000,
                        background_upload_bytes=SMALL)
    inner = Assistant(settings, embedder=embedder)
    yield PausingAssistant(inner)
    inner.close()


def serve(assistant: PausingAssistant, **changes) -> LiveServer:
    return LiveServer(assistant.settings.replace(**changes), assistant)


def corpus(n: int = FILES, tag: str = "") -> list[tuple[str, tuple[str, str]]]:
    return [("files", (f"doc{i:02d}.md", f"# Document {i}\n\n{text(i, tag)}\n")) for i in range(n)]


def text(i: int, tag: str = "") -> str:
    return (f"Document {i}{tag} tells that the locker code of room {i} is {1000 + i}. " * 4
            + f"The last line of document {i} says goodbye.")


def fresh() -> str:
    return "j_" + uuid.uuid4().hex[:10]


def uploads(assistant) -> set[str]:
    root = Path(assistant.settings.data_dir) / "uploads"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def wait_for(c, url: str, *statuses: str, seconds: float = 15) -> dict:
    deadline = time.monotonic() + seconds
    while (job := c.get(url).json()).get("status") not in statuses:
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    return job


def upload_job(c, collection: str, files=None) -> dict:
    r = c.post(f"/v1/collections/{collection}/documents", files=files or corpus())
    assert r.status_code == 202, r.text
    return r.json()


def test_a_large_upload_is_a_job_that_reaches_done_with_progress(assistant, store_url):
    name = fresh()
    with serve(assistant) as srv, srv.client() as c:
        job = upload_job(c, name)
        assert job["status"] == "queued" and job["files"] == FILES and job["bytes"] > SMALL
        assert "tenant" not in job and "owner" not in job
        done = wait_for(c, job["url"], "done", "failed", "cancelled")
        assert done["status"] == "done", done
        assert done["progress"] == {"documents_done": FILES, "documents_total": FILES,
                                    "chunks_written": done["summary"]["chunks_written"]}
        assert done["summary"]["documents_new"] == FILES and done["summary"]["chunks_written"] >= FILES
        assert done["created"] <= done["started"] <= done["finished"]
        assert uploads(assistant) == set()  # the job's folder is gone
        assert len(c.get(f"/v1/collections/{name}/documents").json()["documents"]) == FILES
        listed = c.get("/v1/jobs").json()["jobs"]
        assert listed[0]["id"] == job["id"] and listed[0]["status"] == "done"
        r = c.get("/v1/jobs", params={"limit": 0})
        assert r.status_code == 422 and r.json()["error"]["field"] == "limit"


def test_queue_full_is_503_with_retry_after_and_a_queued_job_cancels_at_once(assistant):
    name = fresh()
    assistant.pause = True
    with serve(assistant, upload_workers=1, max_queued_jobs=1) as srv, srv.client() as c:
        running = upload_job(c, name)
        assert assistant.paused.wait(15)
        queued = upload_job(c, name, corpus(tag="b"))
        assert c.get(queued["url"]).json()["status"] == "queued"
        before = uploads(assistant)
        assert before == {running["id"], queued["id"]}

        r = c.post(f"/v1/collections/{name}/documents", files=corpus(tag="c"))
        assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 1
        error = r.json()["error"]
        assert "max_queued_jobs=1" in error["message"] and "upload_workers=1" in error["message"]
        assert uploads(assistant) == before  # refused: nothing saved

        r = c.delete(queued["url"])
        assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
        assert c.get(queued["url"]).json()["status"] == "cancelled"
        assert queued["id"] not in uploads(assistant)
        r = c.delete(queued["url"])
        assert r.status_code == 409 and "already cancelled" in r.json()["error"]["message"]

        assistant.resume.set()
        assert wait_for(c, running["url"], "done", "failed")["status"] == "done"
        r = c.delete(running["url"])
        assert r.status_code == 409 and "already done" in r.json()["error"]["message"]
        assert r.json()["error"]["field"] == "job_id"
        assert uploads(assistant) == set()


def test_a_running_job_cancels_after_its_document_keeping_what_was_written_whole(assistant):
    name = fresh()
    assistant.pause = True
    with serve(assistant) as srv, srv.client() as c:
        job = upload_job(c, name)
        assert assistant.paused.wait(15)
        running = wait_for(c, job["url"], "running")
        r = c.delete(job["url"])
        assert r.status_code == 202 and r.json()["cancel_requested"] is True, r.text
        assert "document being written" in r.json()["message"]
        ended = wait_for(c, job["url"], "cancelled", "done", "failed")
        assert ended["status"] == "cancelled", ended
        assert ended["summary"]["interrupted"] is True and ended["finished"] >= running["started"]
        assert uploads(assistant) == set()

        docs = c.get(f"/v1/collections/{name}/documents").json()["documents"]
        assert 1 <= len(docs) < FILES
        for d in docs:  # each written document is whole: all its text, its chunks
            i = int(d["id"][3:5])
            stored = c.get(f"/v1/collections/{name}/documents/{d['id']}").json()
            assert stored["text"].rstrip().endswith(f"The last line of document {i} says goodbye.")
            assert d["chunks"] >= 1
        r = c.post("/v1/ask", json={"question": "What is the locker code of room 0?", "collection": name})
        assert r.status_code == 200 and "1000" in r.json()["answer"]  # the server answers on


@pytest.mark.parametrize("store_url", ["pgvector"], indirect=True)
def test_a_job_held_by_another_process_is_cancelled_through_the_state_store(assistant):
    name = fresh()
    assistant.pause = True
    with serve(assistant) as one, serve(assistant) as two, one.client() as c1, two.client() as c2:
        job = upload_job(c1, name)
        assert assistant.paused.wait(15)
        r = c2.delete(job["url"])
        assert r.status_code == 202 and r.json()["cancel_requested"] is True
        assert wait_for(c2, job["url"], "cancelled", "done", "failed")["status"] == "cancelled"


def test_jobs_are_matched_to_their_tenant_exactly(assistant):
    assistant.pause = True
    with serve(assistant, api_keys=KEYS) as srv, srv.client("key-delta") as owner, srv.client("key-gamma") as other:
        job = upload_job(owner, "bigjob")
        assert assistant.paused.wait(15)
        for r in (other.get(job["url"]), other.delete(job["url"])):
            assert r.status_code == 404 and r.json()["error"]["field"] == "job_id"
        assert job["id"] not in [j["id"] for j in other.get("/v1/jobs").json()["jobs"]]
        mine = owner.get("/v1/jobs").json()["jobs"]
        assert mine[0]["id"] == job["id"] and mine[0]["collection"] == "bigjob"  # the caller's name
        assert "delta__" not in str(mine)
        assert owner.delete(job["url"]).status_code == 202
        assert wait_for(owner, job["url"], "cancelled")["collection"] == "bigjob"


def test_a_failed_job_says_why_without_internal_names_and_leaves_no_folder(assistant):
    with serve(assistant, api_keys=KEYS) as srv, srv.client("key-delta") as owner:
        root = Path(assistant.settings.data_dir) / "uploads"
        assistant.fail = RuntimeError(f"the store refused delta__lost under {root}/x")
        job = upload_job(owner, "lost")
        failed = wait_for(owner, job["url"], "failed", "done")
        assert failed["status"] == "failed" and failed["error"].startswith("RuntimeError: the store refused lost")
        assert "delta__" not in failed["error"] and str(root) not in failed["error"]
        assert uploads(assistant) == set()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def left_behind(assistant, status: str, owner: dict, beat: float) -> str:
    """A job as a process that died wrote it, with its upload folder."""
    job_id = uuid.uuid4().hex
    folder = Path(assistant.settings.data_dir) / "uploads" / job_id
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\ntext\n")
    assistant.save_job({"id": job_id, "status": status, "collection": "c", "tenant": None, "files": 1,
                        "bytes": 10, "created": beat - 5, "started": beat - 4, "heartbeat": beat, "owner": owner})
    return job_id


def test_jobs_of_a_dead_process_are_failed_at_start_and_their_folders_removed(assistant):
    now = time.time()
    stale = left_behind(assistant, "running", {"host": "elsewhere", "pid": 1, "boot": "x"}, now - 3600)
    queued = left_behind(assistant, "queued", {"host": "elsewhere", "pid": 1, "boot": "x"}, now - 3600)
    dead = left_behind(assistant, "running", {"host": socket.gethostname(), "pid": dead_pid(), "boot": "y"}, now)
    alive = left_behind(assistant, "running", {"host": "elsewhere", "pid": 1, "boot": "z"}, now + 60)
    root = Path(assistant.settings.data_dir) / "uploads"
    (root / "old").mkdir()  # no job names it, two hours old: a crash's
    os.utime(root / "old", (now - 7200, now - 7200))
    (root / "new").mkdir()  # no job names it, just made: an inline upload being ingested
    with serve(assistant) as srv, srv.client() as c:
        assert uploads(assistant) == {alive, "new"}  # removed at start, before anyone asks
        for job_id in (stale, queued, dead):
            job = c.get(f"/v1/jobs/{job_id}").json()
            assert job["status"] == "failed" and job["error"] == INTERRUPTED, job
            assert c.delete(f"/v1/jobs/{job_id}").status_code == 409
        assert c.get(f"/v1/jobs/{alive}").json()["status"] == "running"  # its heartbeat is fresh

        later = left_behind(assistant, "running", {"host": "elsewhere", "pid": 1, "boot": "w"}, time.time() - 3600)
        job = c.get(f"/v1/jobs/{later}").json()  # found stale when read
        assert job["status"] == "failed" and job["error"] == INTERRUPTED
        assert later not in uploads(assistant)


def test_a_server_that_stops_fails_its_jobs_as_interrupted_and_removes_their_folders(assistant):
    name = fresh()
    assistant.pause = True
    with serve(assistant, upload_workers=1) as srv, srv.client() as c:
        running = upload_job(c, name)
        assert assistant.paused.wait(15)
        queued = upload_job(c, name, corpus(tag="b"))
    for job_id in (running["id"], queued["id"]):
        job = assistant.job(job_id)
        assert job["status"] == "failed" and job["error"] == INTERRUPTED, job
    assert uploads(assistant) == set()


def backdate(assistant, kind: str, key: str, days: float) -> None:
    """Make a state record look written `days` ago (behind the state store's back)."""
    state = assistant.inner.state
    if isinstance(state, SqliteState):
        with sqlite3.connect(state.path) as conn:
            conn.execute("UPDATE rag_rlm_state SET updated_at = updated_at - ? WHERE kind = ? AND key = ?",
                         (days * 86400, kind, key))
        return
    import psycopg

    from rag_rlm.memory.migrate import postgres_dsn, release_postgres

    url = assistant.settings.store
    with psycopg.connect(postgres_dsn(url), autocommit=True) as conn:
        conn.execute("UPDATE rag_rlm_state SET updated_at = updated_at - make_interval(days => %s)"
                     " WHERE kind = %s AND key = %s", (int(days), kind, key))
    release_postgres(url)


def test_old_traces_and_finished_jobs_are_pruned_at_start_and_active_jobs_kept(assistant):
    from rag_rlm.assistant import JOB_CANCEL_KIND, JOB_KIND, TRACE_KIND

    inner, tag = assistant.inner, uuid.uuid4().hex[:8]
    alive = {"host": "elsewhere", "pid": 1, "boot": "x"}  # another machine, heartbeat fresh: still at work
    jobs = {f"{age}-{status}-{tag}": (age, status) for age in ("old", "new") for status in ("done", "failed",
                                                                                          "cancelled", "queued", "running")}
    records = [(TRACE_KIND, f"old-{tag}"), (TRACE_KIND, f"new-{tag}"), (JOB_CANCEL_KIND, f"old-{tag}"),
               *((JOB_KIND, job_id) for job_id in jobs)]
    try:
        for job_id, (_, status) in jobs.items():
            now = time.time()
            inner.save_job({"id": job_id, "status": status, "collection": "c", "tenant": None, "files": 1,
                            "created": now, "heartbeat": now, "owner": alive})
        for kind, key in records[:3]:
            inner.state.put(kind, key, {"question": "q"})
        for kind, key in records:
            if key.startswith("old-"):
                backdate(assistant, kind, key, days=31)  # the default retention is 30 days
        with serve(assistant):
            deadline = time.monotonic() + 15
            while inner.trace(f"old-{tag}") is not None:  # pruned by the server's thread, at start
                assert time.monotonic() < deadline
                time.sleep(0.05)
        kept = {key for kind, key in records if inner.state.get(kind, key) is not None}
        assert kept == {f"new-{tag}", *(j for j, (age, status) in jobs.items() if age == "new" or status in
                                        ("queued", "running"))}
        assert inner.job(f"old-running-{tag}")["status"] == "running"
    finally:
        for kind, key in records:  # the PostgreSQL state is shared by the run
            inner.state.delete(kind, key)


def test_state_retention_zero_keeps_everything():
    from rag_rlm.server.retention import Retention

    retention = Retention(None, days=0)
    retention.start()  # starts nothing
    retention.close()
    assert retention._thread is None
    with pytest.raises(ConfigError, match="state_retention_days"):
        Settings(state_retention_days=-1)


# -- the capacity jobs share with answers, and their settings ---------------------------------

def test_a_job_holds_an_answer_slot_and_hands_it_to_a_waiting_answer_between_documents():
    gate, stop, order = AnswerGate(1, 4), threading.Event(), []
    assert gate.hold(stop)  # a job runs, holding the only slot

    async def main() -> None:
        async def answer() -> None:
            async with gate.slot():
                order.append("answer")

        waiting = asyncio.create_task(answer())
        while not gate._slots.waiting():
            await asyncio.sleep(0.01)
        assert order == []  # the job holds the slot: the answer waits in line

        def next_document() -> None:  # what the job does after each document
            assert gate.yield_to(stop)
            order.append("job")
            gate.release()

        job = threading.Thread(target=next_document)
        job.start()
        await waiting
        await asyncio.to_thread(job.join)

    asyncio.run(main())
    assert order == ["answer", "job"]  # the answer went first, the job took the slot back after it

    stop.set()  # a job cancelled while it waits for a slot gives up its place in line
    assert gate.hold(threading.Event())
    assert gate.hold(stop) is False
    gate.release()
    assert gate.hold(threading.Event())  # the slot is free again, not lost to the cancelled waiter
    gate.release()


@pytest.mark.parametrize(("changes", "setting"), [
    ({"upload_workers": 0}, "upload_workers"),
    ({"max_queued_jobs": -1}, "max_queued_jobs"),
    ({"background_upload_bytes": 0}, "background_upload_bytes"),
    ({"upload_workers": 3, "max_concurrent_answers": 2}, "upload_workers"),
])
def test_job_settings_are_checked(changes, setting):
    with pytest.raises(ConfigError, match=setting):
        Settings(**changes)
