"""Small key-value state the app shares across processes: memo cache entries, answer traces,
background jobs. Values are JSON-serialisable dicts, grouped by `kind`; `items` finds the values
of a kind whose top-level fields equal given values (jobs by tenant or status), most recently
written first.

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
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..config import DEFAULT_STORE_TIMEOUT
from ..errors import StoreError

_SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS rag_rlm_state (kind TEXT NOT NULL, key TEXT NOT NULL,"
    " value TEXT NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (kind, key))"
)


@runtime_checkable
class StateStore(Protocol):
    def get(self, kind: str, key: str) -> dict[str, Any] | None: ...

    def put(self, kind: str, key: str, value: dict[str, Any]) -> None: ...

    def items(self, kind: str, match: dict[str, Any], limit: int) -> list[dict[str, Any]]: ...


def open_state(store_url: str, data_dir: str, *, timeout: float = DEFAULT_STORE_TIMEOUT) -> StateStore:
    """The state store that goes with a vector store URL (see the module docstring)."""
    scheme = store_url.partition("://")[0]
    if scheme in ("pgserver", "postgresql", "postgres"):
        return PostgresState.from_url(store_url, timeout=timeout)
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


class SqliteState:
    """A SQLite file; one connection shared by threads behind a lock (writes are tiny)."""

    def __init__(self, path: Path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SQLITE_SCHEMA)
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open the state file {path}: {e}") from e
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

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class PostgresState:
    """The `rag_rlm_state` table; a small connection pool, so threads do not queue on one socket
    (with the vector store's outage behaviour: `pgpool.StorePool`)."""

    def __init__(self, dsn: str, *, timeout: float = DEFAULT_STORE_TIMEOUT, on_close: Any = None):
        import psycopg

        from .migrate import ensure_migrated
        from .pgpool import StorePool

        ensure_migrated(dsn, timeout)
        self._psycopg = psycopg
        self._pool = StorePool(dsn, timeout=timeout, max_size=4, autocommit=True, name="rag_rlm.state")
        self._on_close = on_close

    @classmethod
    def from_url(cls, url: str, *, timeout: float = DEFAULT_STORE_TIMEOUT) -> PostgresState:
        """`on_close` gives back the hold on the embedded server (pgserver://), if any."""
        from .migrate import open_postgres

        return open_postgres(url, lambda dsn, release: cls(dsn, timeout=timeout, on_close=release))

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

    def _run(self, query: str, params: tuple[Any, ...], many: bool = False) -> Any:
        try:
            with self._pool.connection() as conn:
                cur = conn.execute(query, params)
                if not cur.description:
                    return None
                return cur.fetchall() if many else cur.fetchone()
        except self._psycopg.Error as e:
            from .pgpool import store_error

            raise store_error("state store", e) from e

    def close(self) -> None:
        self._pool.close()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()
