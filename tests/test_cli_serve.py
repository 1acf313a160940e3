"""`rag-rlm serve` as a person runs it, and `ask` through it (issue 16): a real server on
loopback over the default embedded store of a folder, found by `ask` through
DATA_DIR/server.json, and stopped by SIGTERM with nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time

import httpx
import pytest
from clirun import PY, TIMEOUT, Serve, env, free_port, imported_modules, ingested_sample, run, run_ingest

from rag_rlm.memory import embedded

QUESTION = "How many vacation days do new hires get?"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    yield from ingested_sample(tmp_path_factory.mktemp("served"))


def _record(folder) -> dict:
    return json.loads((folder / ".rag_rlm" / "server.json").read_text())


def _assert_stopped(pgdata) -> None:
    deadline = time.monotonic() + 10  # the postmaster takes a moment to go
    while embedded.status(pgdata).running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not embedded.status(pgdata).running


def test_serve_answers_ask_then_stops_on_sigterm(folder):
    local = run("ask", QUESTION, "-c", "handbook", "--json", cwd=folder)
    assert local.returncode == 0, local.stderr
    server = Serve(folder)
    with server:
        assert _record(folder) == {"url": server.url, "pid": server.proc.pid, "store": _store_id(folder)}

        text = run("ask", QUESTION, "-c", "handbook", "-v", cwd=folder)
        assert text.returncode == 0, text.stderr
        assert f"rag-rlm: answering in the server at {server.url}" in text.stderr
        assert "Sources:\n  [1] Vacation policy — vacation-policy.txt, chars " in text.stdout

        remote = run("ask", QUESTION, "-c", "handbook", "--json", cwd=folder)
        ours, theirs = json.loads(local.stdout), json.loads(remote.stdout)
        assert set(ours) == set(theirs)  # one shape, whichever answered
        assert (ours["answer"], ours["citations"], ours["found"]) == (theirs["answer"], theirs["citations"], theirs["found"])

        forced = run("ask", QUESTION, "-c", "handbook", "--local", "-v", cwd=folder)
        assert forced.returncode == 0 and "answering in this process" in forced.stderr
        other_store = run("--store", f"pgserver://{folder}/other", "ask", QUESTION, "-c", "handbook", "-v", cwd=folder)
        assert "answering in this process" in other_store.stderr and other_store.returncode == 1  # nothing there

        unknown = run("ask", QUESTION, "-c", "nope", cwd=folder)
        assert unknown.returncode == 1 and "unknown collection 'nope'" in unknown.stderr

        status = run("db", "status", cwd=folder)
        assert "running" in status.stdout and str(server.proc.pid) in status.stdout
        refused = run("db", "stop", cwd=folder)
        assert refused.returncode == 1 and str(server.proc.pid) in refused.stderr
        _assert_light(folder, server.url)
    # SIGTERM: a graceful shutdown, the record removed, the embedded PostgreSQL stopped
    assert server.exit_code == 0, server.stderr
    assert not (folder / ".rag_rlm" / "server.json").exists()
    assert "rag-rlm: serving http://127.0.0.1:" in server.stderr
    assert "Warning" not in server.stderr and "Loading weights" not in server.stderr
    _assert_stopped(folder / ".rag_rlm" / "pgdata")


def _assert_light(folder, url: str) -> None:
    """A server-backed ask imports neither torch nor the server nor the store's driver."""
    done = subprocess.run([PY, "-X", "importtime", "-m", "rag_rlm.cli", "ask", QUESTION, "-c", "handbook",
                           "--server", url], cwd=folder, env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "22 vacation days" in done.stdout
    loaded = {m.split(".")[0] for m in imported_modules(done.stderr)}
    assert not {"torch", "transformers", "sentence_transformers", "litestar", "psycopg", "pgserver"} & loaded


def test_a_stale_record_is_not_used(folder):
    """A server killed with -9 leaves its record: a dead pid, or a live one that no longer serves."""
    gone = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    for pid in (int(gone.stdout), os.getpid()):
        record = {"url": "http://127.0.0.1:9", "pid": pid, "store": _store_id(folder)}
        (folder / ".rag_rlm" / "server.json").write_text(json.dumps(record))
        done = run("ask", QUESTION, "-c", "handbook", "-v", cwd=folder)
        assert done.returncode == 0 and "answering in this process" in done.stderr
        assert (pid == os.getpid()) == ("does not answer at http://127.0.0.1:9" in done.stderr)
    (folder / ".rag_rlm" / "server.json").unlink()


def _store_id(folder) -> str:
    from rag_rlm import serverfile

    return serverfile.store_id(f"pgserver://{folder}/.rag_rlm/pgdata")


def test_a_server_with_keys_wants_RAG_RLM_API_KEY(folder):
    tenant = run_ingest("handbook", "--collection", "teamA__handbook", cwd=folder)
    assert tenant.returncode == 0, tenant.stderr
    with Serve(folder, extra_env={"RAG_RLM_API_KEYS": "k1=teamA"}) as server:
        ask = ["ask", QUESTION, "-c", "handbook", "--server", server.url]
        keyless = run(*ask, cwd=folder)
        assert keyless.returncode == 2
        assert f"the server at {server.url} wants an API key" in keyless.stderr and "RAG_RLM_API_KEY" in keyless.stderr
        wrong = run(*ask, cwd=folder, extra_env={"RAG_RLM_API_KEY": "k2"})
        assert wrong.returncode == 2 and "refused the key" in wrong.stderr
        right = run(*ask, "--json", cwd=folder, extra_env={"RAG_RLM_API_KEY": "k1"})
        assert right.returncode == 0, right.stderr
        assert json.loads(right.stdout)["collection"] == "handbook"  # the tenant's own name for it


def test_ctrl_c_stops_serve_as_sigterm_does(folder):
    server = Serve(folder)
    with server:
        server.stop(signal.SIGINT)
    assert server.exit_code == 0, server.stderr
    assert not (folder / ".rag_rlm" / "server.json").exists()
    _assert_stopped(folder / ".rag_rlm" / "pgdata")


def test_serving_is_said_once_the_server_listens(folder):
    port = free_port()
    proc = subprocess.Popen([PY, "-m", "rag_rlm.cli", "serve", "--port", str(port)], cwd=folder, env=env(),
                            text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    watchdog = threading.Timer(TIMEOUT, proc.kill)
    watchdog.start()
    try:
        said = []
        for line in proc.stderr:  # until the line comes (or the server ends)
            said.append(line)
            if line.startswith("rag-rlm: serving"):
                break
        assert said and said[-1].startswith("rag-rlm: serving"), "".join(said)
        # at once, no retry: whoever waits for the line (a script, a person) can ask now
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=30).status_code == 200
    finally:
        watchdog.cancel()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_serve_errors(folder):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = run("serve", "--port", str(port), cwd=folder)
    assert busy.returncode == 1 and "address already in use" in busy.stderr
    assert "rag-rlm: the server did not start" in busy.stderr and "rag-rlm: serving" not in busy.stderr
    assert not (folder / ".rag_rlm" / "server.json").exists()
    assert run("serve", "--port", "0", cwd=folder).returncode == 2
    bad_setting = run("serve", cwd=folder, extra_env={"RAG_RLM_PORT": "70000"})
    assert bad_setting.returncode == 2 and "configuration error: port" in bad_setting.stderr
