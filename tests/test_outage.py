"""A store outage on a live server (issue 9): PostgreSQL stopped under a running server, then
started again. Requests fail fast with 503 + Retry-After, and the first request once it is back
succeeds (no dead pooled connection is handed out).

Runs on its own embedded PostgreSQL (never the session's, which other tests use): this test
stops and starts it with pg_ctl.
"""

from __future__ import annotations

import os
import threading
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


def test_a_statement_over_store_statement_timeout_is_a_store_error_in_time(pg_url, embedder, collection):
    """A query the server does not finish (here: a sleep, and a read blocked by a lock nobody
    releases) is cancelled after `store_statement_timeout` on every pooled connection of both
    stores, and is a StoreError (503) saying so, not a request hung for as long as the lock lasts."""
    import psycopg

    from rag_rlm.errors import StoreError
    from rag_rlm.memory import open_store
    from rag_rlm.memory.migrate import postgres_dsn, release_postgres
    from rag_rlm.memory.state import open_state
    from rag_rlm.types import Chunk, Document

    limit = 0.5
    store = open_store(pg_url, statement_timeout=limit)
    state = open_state(pg_url, "unused", statement_timeout=limit)
    dsn = postgres_dsn(pg_url)
    release_postgres(pg_url)
    try:
        doc = Document("a.md", "A", "a.md", "The office opens at nine.", "h")
        store.write_document(collection, doc, [Chunk(doc.id, 0, doc.text, 0, len(doc.text))], embedder.embed([doc.text]))
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled), store._pool.connection() as conn:  # the pool's own connections
            conn.execute("SELECT pg_sleep(30)")
        assert time.monotonic() - started < limit + SLACK
        with psycopg.connect(dsn) as blocker:  # holds the tables until the test ends its transaction
            blocker.execute("LOCK TABLE rag_rlm_collections, rag_rlm_state IN ACCESS EXCLUSIVE MODE")
            for name, call in (("store", lambda: store.collections()), ("state", lambda: state.get("memo", "k"))):
                started = time.monotonic()
                with pytest.raises(StoreError, match="did not finish in time") as e:
                    call()
                seconds = time.monotonic() - started
                print(f"{name}: {e.value} in {seconds:.2f} s")
                assert seconds < limit + SLACK
            blocker.rollback()
        assert [c.name for c in store.collections() if c.name == collection] == [collection]  # recovered
    finally:
        store.close()
        state.close()


def test_a_writer_waits_for_another_writer_of_its_document_beyond_the_statement_timeout(pg_url, embedder, collection):
    """The per-document lock is held for a whole (possibly minutes long) write: waiting for it is
    not a stuck statement."""
    import psycopg

    from rag_rlm.memory import open_store
    from rag_rlm.memory.migrate import postgres_dsn, release_postgres
    from rag_rlm.types import Chunk, Document

    store = open_store(pg_url, statement_timeout=0.3)
    dsn = postgres_dsn(pg_url)
    release_postgres(pg_url)
    try:
        doc = Document("a.md", "A", "a.md", "The office opens at nine.", "h")
        write = lambda: store.write_document(  # noqa: E731
            collection, doc, [Chunk(doc.id, 0, doc.text, 0, len(doc.text))], embedder.embed([doc.text]))
        write()
        cid = int(store.version(collection).split(".")[0])
        with psycopg.connect(dsn) as other:  # another writer of a.md, in its transaction
            other.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (cid, doc.id))
            timer = threading.Timer(1.0, other.rollback)
            timer.start()
            started = time.monotonic()
            write()
            assert time.monotonic() - started >= 0.9  # it waited, past the 0.3 s limit, and then wrote
            timer.join()
        assert store.documents(collection)["a.md"].chunk_count == 1
    finally:
        store.close()


class FreezingProxy:
    """TCP on loopback in front of the embedded PostgreSQL's unix socket, which can freeze: the
    sockets stay open and nothing more is forwarded, as a hung server or a network that drops
    packets looks to the client (a real partition cannot be made here without root's firewall)."""

    def __init__(self, unix_socket: str):
        import socket

        self.frozen = threading.Event()
        self._target = unix_socket
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket

        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX)
            server.connect(self._target)
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, a, b) -> None:
        try:
            while data := a.recv(65536):
                while self.frozen.is_set():
                    time.sleep(0.02)
                b.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self._listener.close()


def test_a_server_that_goes_silent_while_the_pool_is_idle_is_a_store_error_in_time(pg_url, embedder, collection):
    """A pooled connection's check would wait for ever on a server that stopped answering
    (statement_timeout cannot help: the server never sees the query); it is cut after
    store_timeout, and the direct connection tried next gives up after libpq's connect_timeout."""
    import psycopg

    from rag_rlm.errors import StoreError
    from rag_rlm.memory import open_store
    from rag_rlm.memory.migrate import postgres_dsn, release_postgres
    from rag_rlm.types import Chunk, Document

    info = psycopg.conninfo.conninfo_to_dict(postgres_dsn(pg_url))
    release_postgres(pg_url)
    proxy = FreezingProxy(os.path.join(info["host"], f".s.PGSQL.{info.get('port') or 5432}"))
    store = open_store(f"postgresql://{info['user']}@127.0.0.1:{proxy.port}/{info['dbname']}", timeout=1.0)
    try:
        doc = Document("a.md", "A", "a.md", "The office opens at nine.", "h")
        store.write_document(collection, doc, [Chunk(doc.id, 0, doc.text, 0, len(doc.text))], embedder.embed([doc.text]))
        assert store.version(collection)
        proxy.frozen.set()
        for _ in range(2):  # the first finds its pooled connection silent, the next one is refused as down
            started = time.monotonic()
            with pytest.raises(StoreError, match="unreachable"):
                store.version(collection)
            seconds = time.monotonic() - started
            print(f"silent server: StoreError in {seconds:.2f} s")
            assert seconds < 1.0 + 2 + SLACK  # store_timeout, then connect_timeout (libpq's minimum, 2 s)
        proxy.frozen.clear()
        assert store.version(collection)  # and once it answers again, the next request succeeds
    finally:
        store.close()
        proxy.close()
