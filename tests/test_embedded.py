"""The embedded PostgreSQL's life (issue 9): stopped when the last process of ours that uses it
ends; no orphan after `ingest` or a SIGTERM'd `serve`; `rag-rlm db status|stop` for the rest.

Real processes on their own data folders (never the session's server).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from rag_rlm.memory import embedded

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
# A process of ours that holds the server until its stdin closes (what a store does from open to close).
HOLDER = ("import sys; from rag_rlm.memory import embedded; embedded.acquire(sys.argv[1]); "
          "print('ready', flush=True); sys.stdin.read()")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_RLM_")}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's rag_rlm, not an installed one
    return env


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, *args], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)


def _postgres_processes(pgdata: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and str(pgdata) in cmdline:
            found.append(proc)
    return found


def _assert_stopped(pgdata: Path) -> None:
    deadline = time.monotonic() + 10  # the postmaster's children take a moment to go
    while _postgres_processes(pgdata) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (pgdata / "postmaster.pid").exists()
    assert not _postgres_processes(pgdata)
    assert not embedded.status(pgdata).running


@pytest.fixture
def pgdata(tmp_path):
    folder = tmp_path / "pgdata"
    yield folder
    if embedded.status(folder).running:  # a failed test must not leave it behind
        embedded.stop(folder, force=True)


class Holder:
    def __init__(self, pgdata: Path):
        self.proc = subprocess.Popen([PY, "-c", HOLDER, str(pgdata)], cwd=ROOT, env=_env(), text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout.readline().strip() == "ready"

    def exit(self) -> None:
        self.proc.stdin.close()
        assert self.proc.wait(30) == 0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


def test_ingest_leaves_no_server_behind(pgdata, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nThe office opens at nine.\n")
    done = _run("-m", "ingest", str(corpus), "--collection", "s", "--store", f"pgserver://{pgdata}", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "1 new" in done.stdout
    _assert_stopped(pgdata)


def test_serve_stopped_by_sigterm_leaves_no_server_behind(pgdata):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve = subprocess.Popen([PY, "-m", "rag_rlm.cli", "--store", f"pgserver://{pgdata}", "serve", "--port", str(port)],
                             cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert serve.poll() is None, serve.stderr.read()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.2)
        assert embedded.status(pgdata).users == [serve.pid]
        serve.send_signal(signal.SIGTERM)
        serve.wait(30)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    _assert_stopped(pgdata)


def test_a_second_process_keeps_it_up_until_the_last_one_ends(pgdata):
    holder = Holder(pgdata)
    try:
        joined = _run("-m", "rag_rlm.cli", "--store", f"pgserver://{pgdata}", "migrate")  # joins, then ends
        assert joined.returncode == 0, joined.stderr
        st = embedded.status(pgdata)
        assert st.running and st.users == [holder.proc.pid]

        status = _run("-m", "rag_rlm.cli", "--store", f"pgserver://{pgdata}", "db", "status")
        assert status.returncode == 0 and "running" in status.stdout and str(holder.proc.pid) in status.stdout
        refused = _run("-m", "rag_rlm.cli", "--store", f"pgserver://{pgdata}", "db", "stop")
        assert refused.returncode == 1 and str(holder.proc.pid) in refused.stderr
        assert embedded.status(pgdata).running
    finally:
        holder.exit()
    _assert_stopped(pgdata)


def test_a_killed_user_is_forgotten_by_the_next_one(pgdata):
    """kill -9 runs no code of ours: the server stays, and the dead pid must not keep it up."""
    Holder(pgdata).kill()
    st = embedded.status(pgdata)
    assert st.running and st.users == [] and len(st.stale) == 1
    assert _run("-m", "rag_rlm.cli", "--store", f"pgserver://{pgdata}", "migrate").returncode == 0
    _assert_stopped(pgdata)


def test_db_stop_stops_a_server_left_behind_and_says_so(pgdata):
    Holder(pgdata).kill()
    status = _run("-m", "rag_rlm.cli", "--store", f"pgserver://{pgdata}", "db", "status")
    assert status.returncode == 0 and "running" in status.stdout and "used by pids: none" in status.stdout
    stopped = _run("-m", "rag_rlm.cli", "--store", f"pgserver://{pgdata}", "db", "stop")
    assert stopped.returncode == 0 and "stopped the embedded PostgreSQL" in stopped.stdout
    _assert_stopped(pgdata)
    again = _run("-m", "rag_rlm.cli", "--store", f"pgserver://{pgdata}", "db", "status")
    assert again.returncode == 0 and "not running" in again.stdout


def test_db_commands_refuse_a_store_they_do_not_manage(tmp_path):
    done = _run("-m", "rag_rlm.cli", "--store", f"qdrant://{tmp_path}/q", "db", "stop")
    assert done.returncode == 2 and "not an embedded PostgreSQL" in done.stderr
