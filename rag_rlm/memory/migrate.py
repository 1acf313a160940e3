"""Schema migrations for the PostgreSQL store: `migrations/NNNN_name.sql`, applied in order, once.

Each applied file is recorded in `rag_rlm_migrations (name, applied_at)`. All pending files run
in one transaction that first takes an advisory lock, so two processes starting at once (two app
workers, or `ingest` beside the server) never apply the same file twice; the second one waits,
then finds nothing left to do.

Also here: `postgres_dsn(url)`, which turns a store URL into a libpq connection string, starting
the embedded server for `pgserver://PATH` when needed (PgVectorStore and the state store share it),
and `release_postgres(url)`, which gives that hold back (see `embedded` for the server's life).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psycopg

from ..config import DEFAULT_STORE_TIMEOUT
from ..errors import ConfigError, StoreError
from . import embedded
from .pgpool import connect_kwargs

MIGRATIONS_DIR = Path(__file__).parents[2] / "migrations"
_LOCK_KEY = 0x5241_4752_4C4D  # "RAGRLM": one advisory lock id for every rag-rlm migrator
_applied_dsns: set[str] = set()
_guard = threading.Lock()


def postgres_dsn(url: str) -> str:
    """A libpq DSN for `pgserver://PATH` (embedded: started or joined, and held by this process
    until `release_postgres(url)`) or `postgresql://...` (as it is)."""
    folder = _embedded_folder(url)
    return url if folder is None else embedded.acquire(folder)


def release_postgres(url: str) -> None:
    """Give back the hold `postgres_dsn(url)` took (nothing to do for an external PostgreSQL)."""
    folder = _embedded_folder(url)
    if folder is not None:
        embedded.release(folder)


T = TypeVar("T")


def open_postgres(url: str, build: Callable[[str, Callable[[], None]], T]) -> T:
    """`build(dsn, release)` on `url`'s database; `release` (the built object's close hook) gives
    back the hold on the embedded server, and is called here if building fails."""
    dsn = postgres_dsn(url)
    try:
        return build(dsn, lambda: release_postgres(url))
    except BaseException:
        release_postgres(url)
        raise


def _embedded_folder(url: str) -> str | None:
    scheme, sep, rest = url.partition("://")
    if scheme in ("postgresql", "postgres") and sep:
        return None
    if scheme != "pgserver" or not sep or not rest:
        raise ConfigError("store", f"not a PostgreSQL store URL: {url!r} (pgserver://PATH or postgresql://DSN)")
    return rest


def pending(applied: set[str]) -> list[Path]:
    if not MIGRATIONS_DIR.is_dir():
        raise StoreError(f"migrations folder not found at {MIGRATIONS_DIR}")
    return [p for p in sorted(MIGRATIONS_DIR.glob("*.sql")) if p.name not in applied]


def apply_migrations(conn: psycopg.Connection) -> list[str]:
    """Apply pending migrations on `conn` (not in autocommit mode); names newly applied."""
    done: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS rag_rlm_migrations ("
            " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        applied = {row[0] for row in conn.execute("SELECT name FROM rag_rlm_migrations")}
        for path in pending(applied):
            try:
                conn.execute(path.read_text(encoding="utf-8").encode())  # no params: many statements
            except psycopg.Error as e:
                raise StoreError(f"migration {path.name} failed: {e}") from e
            conn.execute("INSERT INTO rag_rlm_migrations (name) VALUES (%s)", (path.name,))
            done.append(path.name)
    return done


def migrate(url: str, timeout: float = DEFAULT_STORE_TIMEOUT) -> list[str]:
    """Bring the database behind a store URL up to date; returns the names newly applied."""
    dsn = postgres_dsn(url)
    try:
        with psycopg.connect(dsn, **connect_kwargs(timeout)) as conn:
            done = apply_migrations(conn)
    except psycopg.OperationalError as e:
        raise StoreError(f"cannot connect to PostgreSQL for {url!r}: {e}") from e
    finally:
        release_postgres(url)
    with _guard:
        _applied_dsns.add(dsn)
    return done


def ensure_migrated(dsn: str, timeout: float = DEFAULT_STORE_TIMEOUT) -> None:
    """Apply migrations once per process and database (cheap after the first call)."""
    with _guard:
        if dsn in _applied_dsns:
            return
    migrate(dsn, timeout)

