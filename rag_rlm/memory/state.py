"""Small key-value state the app shares across processes: memo cache entries, answer traces,
background jobs. Values are JSON-serialisable dicts, grouped by `kind`; `items` finds the values
of a kind whose top-level fields equal given values (jobs by tenant or status), most recently
written first. `claim` is a lease (one holder at a time across processes, e.g. one sync of a
source), one atomic upsert in either backend; `prune` drops a kind's entries by age.

With a PostgreSQL store (`pgserver://`, `postgresql://`) the state lives in the same database
(table `rag_rlm_state`, created by a migration), so several app processes see one state. With
any other store (Qdrant) it is a SQLite file, `state.sqlite3` under the data folder (WAL mode:
readers do not block the writer, and other processes on the same machine share it).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..config import DEFAULT_STATEMENT_TIMEOUT, DEFAULT_STORE_TIMEOUT
from ..errors import StoreError
from .tables import MigratedTables

_SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS rag_rlm_state (kind TEXT NOT NULL, key TEXT NOT NULL,"
    " value TEXT NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (kind, key))"
)


@runtime_checkable
class StateStore(Protocol):
    def get(self, kind: str, key: str) -> dict[str, Any] | None: ...

    def put(self, kind: str, key: str, value: dict[str, Any]) -> None: ...

    def items(self, kind: str, match: dict[str, Any], limit: int) -> list[dict[str, Any]]: ...

    def delete(self, kind: str, key: str) -> bool:
        """Remove an entry; False when there was none."""
        ...

    def claim(self, kind: str, key: str, holder: str, ttl: float) -> bool:
        """Take the lease `kind`/`key` for `holder` when it is free, expired (not renewed for
        `ttl` seconds) or already `holder`'s (which renews it); False while another holds it.
        Atomic across threads and processes: of claims racing for a free lease, one wins."""
        ...

    def release(self, kind: str, key: str, holder: str) -> bool:
        """Free the lease if `holder` holds it (False otherwise: it expired and was taken)."""
        ...

    def prune(self, kind: str, older_than_seconds: float, *, keep: Sequence[dict[str, Any]] = ()) -> int:
        """Delete the entries of `kind` not written for `older_than_seconds`, except those
        whose fields equal one of the `keep` matches (as `items` matches); how many went."""
        ...


def open_state(store_url: str, data_dir: str, *, timeout: float = DEFAULT_STORE_TIMEOUT,
               statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT) -> StateStore:
    """The state store that goes with a vector store URL (see the module docstring)."""
    scheme = store_url.partition("://")[0]
    if scheme in ("pgserver", "postgresql", "postgres"):
        return PostgresState.from_url(store_url, timeout=timeout, statement_timeout=statement_timeout)
    return SqliteState(Path(data_dir) / "state.sqlite3")


def _encode(value: dict[str, Any]) -> str:
    if not isinstance(value, dict):
        raise StoreError(f"state values must be dicts, got {type(value).__name__}")
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise StoreError(f"state value is not JSON-serialisable: {e}") from e


def _field(name: str) -> str:
    if not name.isidentifier():  # it goes into a JSON path
        raise StoreError(f"state fields are identifiers, got {name!r}")
    return name


def open_sqlite(path: Path, schema: str, what: str) -> sqlite3.Connection:
    """A SQLite file shared by threads (behind the caller's lock) and by other processes on the
    machine: autocommit, WAL (readers do not block the writer), `schema` applied."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(schema)
    except (OSError, sqlite3.Error) as e:
        raise StoreError(f"cannot open the {what} file {path}: {e}") from e
    return conn


class SqliteState:
    """A SQLite file; one connection shared by threads behind a lock (writes are tiny)."""

    def __init__(self, path: Path):
        self._conn = open_sqlite(path, _SQLITE_SCHEMA, "state")
        self._lock = threading.Lock()
        self.path = path

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM rag_rlm_state WHERE kind = ? AND key = ?", (kind, key)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, kind: str, key: str, value: dict[str, Any]) -> None:
        data = _encode(value)
        with self._lock:
            self._conn.execute(
                "INSERT INTO rag_rlm_state (kind, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (kind, key, data, time.time()))

    def items(self, kind: str, match: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        # `IS` so that a None in `match` finds JSON null (an open server's jobs have no tenant)
        where = " AND json_extract(value, ?) IS ?" * len(match)
        params: list[Any] = [kind]
        for name, wanted in match.items():
            params += [f'$."{_field(name)}"', wanted]
        with self._lock:
            rows = self._conn.execute(f"SELECT value FROM rag_rlm_state WHERE kind = ?{where}"
                                      " ORDER BY updated_at DESC LIMIT ?", (*params, limit)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def delete(self, kind: str, key: str) -> bool:
        return bool(self._write("DELETE FROM rag_rlm_state WHERE kind = ? AND key = ? RETURNING 1", (kind, key)))

    def claim(self, kind: str, key: str, holder: str, ttl: float) -> bool:
        now = time.time()
        return bool(self._write(
            "INSERT INTO rag_rlm_state (kind, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key)"
            " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
            " WHERE rag_rlm_state.updated_at < ? OR json_extract(rag_rlm_state.value, '$.holder') IS ?"
            " RETURNING 1", (kind, key, _encode({"holder": holder}), now, now - ttl, holder)))

    def release(self, kind: str, key: str, holder: str) -> bool:
        return bool(self._write("DELETE FROM rag_rlm_state WHERE kind = ? AND key = ?"
                                " AND json_extract(value, '$.holder') IS ? RETURNING 1", (kind, key, holder)))

    def prune(self, kind: str, older_than_seconds: float, *, keep: Sequence[dict[str, Any]] = ()) -> int:
        params: list[Any] = [kind, time.time() - older_than_seconds]
        kept = []
        for match in keep:
            kept.append(" AND ".join(["json_extract(value, ?) IS ?"] * len(match)) or "TRUE")
            for name, wanted in match.items():
                params += [f'$."{_field(name)}"', wanted]
        unless = f" AND NOT ({' OR '.join(kept)})" if kept else ""
        return len(self._write(f"DELETE FROM rag_rlm_state WHERE kind = ? AND updated_at < ?{unless} RETURNING 1",
                               tuple(params)))

    def _write(self, query: str, params: tuple[Any, ...]) -> list[Any]:
        """A statement's returned rows, all of them: the statement (and so its implicit
        transaction and the file's write lock) ends only when they are read."""
        with self._lock:
            try:
                return self._conn.execute(query, params).fetchall()
            except sqlite3.Error as e:
                raise StoreError(f"state store: {e}") from e

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class PostgresState(MigratedTables):
    """The `rag_rlm_state` table; a small connection pool, so threads do not queue on one socket
    (with the vector store's outage behaviour: `pgpool.StorePool`)."""

    POOL_NAME, POOL_SIZE, WHAT = "rag_rlm.state", 4, "state store"

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        row = self._run("SELECT value FROM rag_rlm_state WHERE kind = %s AND key = %s", (kind, key))
        return row[0] if row else None

    def put(self, kind: str, key: str, value: dict[str, Any]) -> None:
        # the text SQLite stores (same validation and errors), cast: serialised once, not twice
        self._run(
            "INSERT INTO rag_rlm_state (kind, key, value) VALUES (%s, %s, %s::jsonb) ON CONFLICT (kind, key)"
            " DO UPDATE SET value = excluded.value, updated_at = now()", (kind, key, _encode(value)))

    def items(self, kind: str, match: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        from psycopg.types.json import Jsonb

        for name in match:
            _field(name)  # the same names as SQLite takes
        # containment: {"tenant": null} finds JSON null, as `IS` does in SQLite
        rows = self._run("SELECT value FROM rag_rlm_state WHERE kind = %s AND value @> %s"
                         " ORDER BY updated_at DESC LIMIT %s", (kind, Jsonb(match), limit), many=True)
        return [r[0] for r in rows]

    def delete(self, kind: str, key: str) -> bool:
        return self._run("DELETE FROM rag_rlm_state WHERE kind = %s AND key = %s RETURNING 1", (kind, key)) is not None

    def claim(self, kind: str, key: str, holder: str, ttl: float) -> bool:
        # ON CONFLICT locks the row and evaluates the WHERE on its latest version: racing
        # claims queue on the row, and the first one's write makes the others' WHERE false
        row = self._run(
            "INSERT INTO rag_rlm_state AS s (kind, key, value) VALUES (%s, %s, %s::jsonb) ON CONFLICT (kind, key)"
            " DO UPDATE SET value = excluded.value, updated_at = now()"
            " WHERE s.updated_at < now() - make_interval(secs => %s) OR s.value ->> 'holder' = %s"
            " RETURNING 1", (kind, key, _encode({"holder": holder}), float(ttl), holder))
        return row is not None

    def release(self, kind: str, key: str, holder: str) -> bool:
        return self._run("DELETE FROM rag_rlm_state WHERE kind = %s AND key = %s AND value ->> 'holder' = %s"
                         " RETURNING 1", (kind, key, holder)) is not None

    def prune(self, kind: str, older_than_seconds: float, *, keep: Sequence[dict[str, Any]] = ()) -> int:
        from psycopg.types.json import Jsonb

        for match in keep:
            for name in match:
                _field(name)
        row = self._run(
            "WITH gone AS (DELETE FROM rag_rlm_state WHERE kind = %s AND updated_at < now() - make_interval(secs => %s)"
            " AND NOT value @> ANY(%s::jsonb[]) RETURNING 1) SELECT count(*) FROM gone",
            (kind, float(older_than_seconds), [Jsonb(m) for m in keep]))
        return int(row[0])

