"""Where the question log and the answer ratings live, behind two small Protocols.

As the state store does (rag_rlm.memory.state): with a PostgreSQL vector store (`pgserver://`,
`postgresql://`) they are two tables of the same database (`rag_rlm_questions`,
`rag_rlm_feedback`, migration 0004), so every app process writes and reads one log; with any
other store (Qdrant) they are a SQLite file, `insights.sqlite3` under the data folder.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..config import DEFAULT_STATEMENT_TIMEOUT, DEFAULT_STORE_TIMEOUT
from ..errors import StoreError
from .records import AskedQuestion, Rating, Window


@runtime_checkable
class QuestionLog(Protocol):
    def log(self, asked: AskedQuestion) -> None: ...

    def questions(self, window: Window) -> list[AskedQuestion]:
        """The window's questions, newest first; `vector` is read back only for the questions
        not found (the ones a report groups by meaning), None for the others."""
        ...

    def purge(self, before: float) -> int:
        """Remove the questions and the ratings older than `before` (Unix seconds); how many."""
        ...


@runtime_checkable
class RatingLog(Protocol):
    def rate(self, rating: Rating) -> None:
        """Keep `rating`, replacing the rater's earlier rating of the same answer."""
        ...

    def ratings(self, window: Window) -> list[Rating]:
        """The window's ratings (by when they were last given), newest first."""
        ...


class InsightStore(QuestionLog, RatingLog, Protocol):
    """A backend implements both, plus `close`."""

    def close(self) -> None: ...


def open_insight_store(store_url: str, data_dir: str, *, timeout: float = DEFAULT_STORE_TIMEOUT,
                       statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT) -> InsightStore:
    """The insight store that goes with a vector store URL (see the module docstring)."""
    if store_url.partition("://")[0] in ("pgserver", "postgresql", "postgres"):
        from .postgres import PostgresInsights

        return PostgresInsights.from_url(store_url, timeout=timeout, statement_timeout=statement_timeout)
    return SqliteInsights(Path(data_dir) / "insights.sqlite3")


def vector_bytes(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


def vector_of(data: bytes | memoryview | None) -> np.ndarray | None:
    return None if data is None else np.frombuffer(bytes(data), dtype=np.float32)


_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS rag_rlm_questions (
    id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, tenant TEXT NOT NULL, collection TEXT NOT NULL,
    question TEXT NOT NULL, groups TEXT NOT NULL, found INTEGER NOT NULL, cited TEXT NOT NULL,
    embedding BLOB, asked_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS rag_rlm_questions_window ON rag_rlm_questions (collection, asked_at);
CREATE INDEX IF NOT EXISTS rag_rlm_questions_age ON rag_rlm_questions (asked_at);
CREATE TABLE IF NOT EXISTS rag_rlm_feedback (
    trace_id TEXT NOT NULL, rater TEXT NOT NULL, tenant TEXT NOT NULL, collection TEXT NOT NULL,
    rating TEXT NOT NULL, comment TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL,
    citations TEXT NOT NULL, rated_at REAL NOT NULL, PRIMARY KEY (trace_id, rater));
CREATE INDEX IF NOT EXISTS rag_rlm_feedback_window ON rag_rlm_feedback (collection, rated_at);
"""
_QUESTION_COLUMNS = "trace_id, tenant, collection, question, groups, found, cited, embedding, asked_at"
_RATING_COLUMNS = "trace_id, rater, tenant, collection, rating, comment, question, answer, citations, rated_at"


class SqliteInsights:
    """A SQLite file (WAL: a report does not block the writer); one connection behind a lock."""

    def __init__(self, path: Path):
        from ..memory.state import open_sqlite

        self._conn = open_sqlite(path, _SQLITE_SCHEMA, "insights")
        self._lock = threading.Lock()
        self.path = path

    def log(self, asked: AskedQuestion) -> None:
        self._run(f"INSERT INTO rag_rlm_questions ({_QUESTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (asked.trace_id, asked.tenant, asked.collection, asked.question, json.dumps(list(asked.groups)),
                   int(asked.found), json.dumps(list(asked.cited)), vector_bytes(asked.vector), asked.at))

    def questions(self, window: Window) -> list[AskedQuestion]:
        where, params = window_where(window, "asked_at")
        rows = self._run("SELECT trace_id, tenant, collection, question, groups, found, cited,"
                         f" CASE WHEN found THEN NULL ELSE embedding END, asked_at FROM rag_rlm_questions"
                         f" WHERE {where} ORDER BY asked_at DESC, id DESC", params)
        return [AskedQuestion(r[0], r[1], r[2], r[3], bool(r[5]), tuple(json.loads(r[6])), tuple(json.loads(r[4])),
                              vector_of(r[7]), r[8]) for r in rows]

    def purge(self, before: float) -> int:
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                n = self._conn.execute("DELETE FROM rag_rlm_questions WHERE asked_at < ?", (before,)).rowcount
                n += self._conn.execute("DELETE FROM rag_rlm_feedback WHERE rated_at < ?", (before,)).rowcount
                self._conn.execute("COMMIT")
            except sqlite3.Error as e:
                self._conn.execute("ROLLBACK")
                raise StoreError(f"insights file: {e}") from e
        return n

    def rate(self, rating: Rating) -> None:
        self._run(f"INSERT OR REPLACE INTO rag_rlm_feedback ({_RATING_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (rating.trace_id, rating.rater, rating.tenant, rating.collection, rating.rating, rating.comment,
                   rating.question, rating.answer, json.dumps(rating.citations), rating.at))

    def ratings(self, window: Window) -> list[Rating]:
        where, params = window_where(window, "rated_at")
        rows = self._run(f"SELECT {_RATING_COLUMNS} FROM rag_rlm_feedback WHERE {where} ORDER BY rated_at DESC",
                         params)
        return [Rating(*r[:8], citations=json.loads(r[8]), at=r[9]) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _run(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                return self._conn.execute(query, params).fetchall()
        except sqlite3.Error as e:
            raise StoreError(f"insights file: {e}") from e


def window_where(window: Window, column: str, mark: str = "?", moment: str = "?") -> tuple[str, tuple[Any, ...]]:
    """The SQL condition and parameters of a report's window over `column` (its time), with the
    backend's parameter `mark` and its way of reading Unix seconds (`moment`)."""
    where, params = f"collection = {mark} AND {column} >= {moment}", (window.collection, window.since)
    if window.tenant is not None:
        where, params = f"{where} AND tenant = {mark}", (*params, window.tenant)
    return where, params
