"""A store outage on a live server (issue 9): PostgreSQL stopped under a running server, then
started again. Requests fail fast with 503 + Retry-After, and the first request once it is back
succeeds (no dead pooled connection is handed out).

Runs on its own embedded PostgreSQL (never the session's, which other tests use): this test
stops and starts it with pg_ctl.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from pgserver._commands import pg_ctl
from pgserver.utils import PostmasterInfo
from test_server_support import LiveServer

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.memory import embedded

STORE_TIMEOUT = 2.0
SLACK = 2.0  # seconds over store_timeout a failing request may take (the brief: fail fast)
QUESTION = {"question": "How many vacation days do new hires get?"}
PG_USER = "pgserver" if os.geteuid() == 0 else None  # pgserver runs postgres unprivileged under root


def _pg_stop(pgdata: Path) -> None:
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=PG_USER, timeout=60)


def _pg_start(pgdata: Path, socket_dir: Path) -> None:
    """Start it as pgserver does (unix socket only, in the same folder: the DSN stays valid)."""
    pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(pgdata / "log"), "start"],
           pgdata=pgdata, user=PG_USER, timeout=60)


@pytest.fixture
def outage(tmp_path, embedder):
    pgdata = tmp_path / "pgdata"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "vacation.md").write_text("# Vacation\n\nNew hires get 22 vacation days per year.\n")
    (corpus / "travel.md").write_text("# Travel\n\nBook flights through the travel desk.\n")
    settings = Settings(store=f"pgserver://{pgdata}", data_dir=str(tmp_path / "data"), collection="s",
                        store_timeout=STORE_TIMEOUT, rate_limit_per_minute=100_000)
    assistant = Assistant(settings, embedder=embedder)
    try:
        assert assistant.ingest_files([corpus], "s").documents_failed == 0
        socket_dir = PostmasterInfo.read_from_pgdata(pgdata).socket_dir
        with LiveServer(settings, assistant) as server, server.client() as http:
            yield http, pgdata, socket_dir
    finally:
        assistant.close()  # the last hold: stops the server (started again by the test or not)
        if embedded.status(pgdata).running:
            _pg_stop(pgdata)


def _timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_requests_fail_fast_during_an_outage_and_the_first_one_after_it_succeeds(outage):
    http, pgdata, socket_dir = outage
    assert http.post("/v1/ask", json=QUESTION).status_code == 200
    _pg_stop(pgdata)

    calls = {
        "ask": lambda: http.post("/v1/ask", json=QUESTION),
        "collections": lambda: http.get("/v1/collections"),
        "upload": lambda: http.post("/v1/collections/s/documents",
                                    files=[("files", ("new.txt", b"Parking is free on Fridays.", "text/plain"))]),
    }
    for name, call in calls.items():
        r, seconds = _timed(call)
        print(f"outage: {name} -> {r.status_code} in {seconds:.2f} s")
        assert r.status_code == 503, (name, r.text)
        assert r.headers["Retry-After"] == "5", name
        error = r.json()["error"]
        assert error["type"] == "store_unavailable", name
        assert "rag_rlm_" not in error["message"] and "SELECT" not in error["message"].upper(), error
        assert seconds < STORE_TIMEOUT + SLACK, (name, seconds)
    health, seconds = _timed(lambda: http.get("/health"))
    assert health.status_code == 503 and health.json()["store"]["reachable"] is False
    assert health.headers["Retry-After"] and seconds < STORE_TIMEOUT + SLACK

    _pg_start(pgdata, socket_dir)
    r, seconds = _timed(lambda: http.post("/v1/ask", json=QUESTION))  # the very first request
    print(f"back: first ask -> {r.status_code} in {seconds:.2f} s")
    assert r.status_code == 200, r.text
    assert "22" in r.json()["answer"]
    assert http.get("/v1/collections").status_code == 200
    assert http.get("/health").status_code == 200


def test_a_restart_between_two_requests_hands_out_no_dead_connection(outage):
    """Nobody asked while it was down: the pool still holds connections to the old server."""
    http, pgdata, socket_dir = outage
    for _ in range(3):  # a few pooled connections in use before
        assert http.post("/v1/ask", json=QUESTION).status_code == 200
    _pg_stop(pgdata)
    _pg_start(pgdata, socket_dir)
    r = http.post("/v1/ask", json=QUESTION)
    assert r.status_code == 200, r.text
    assert http.get("/v1/collections").status_code == 200


def test_a_database_error_names_no_sql_and_no_table(pg_url, embedder, collection):
    """Store errors reach HTTP clients: what failed and the SQLSTATE, never psycopg's text."""
    import psycopg

    from rag_rlm.errors import StoreError
    from rag_rlm.memory import open_store
    from rag_rlm.memory.migrate import postgres_dsn, release_postgres
    from rag_rlm.types import Chunk, Document

    store = open_store(pg_url)
    try:
        doc = Document("a.md", "A", "a.md", "The office opens at nine.", "h")
        store.write_document(collection, doc, [Chunk(doc.id, 0, doc.text, 0, len(doc.text))], embedder.embed([doc.text]))
        cid = store.collection_info(collection).version.split(".")[0]
        with psycopg.connect(postgres_dsn(pg_url), autocommit=True) as conn:  # break it behind the store's back
            conn.execute(f"DROP TABLE rag_rlm_chunks_{cid}")
        release_postgres(pg_url)
        with pytest.raises(StoreError) as e:
            store.search(collection, embedder.embed(["office"])[0], 3)
        message = str(e.value)
        assert "SQLSTATE 42P01" in message and collection in message
        assert "rag_rlm_" not in message and "SELECT" not in message.upper() and "LINE" not in message
    finally:
        store.close()
