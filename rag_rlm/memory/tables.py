"""The base of the stores that are a few tables of the vector store's PostgreSQL database (the
state store, the insight store). Light to import: psycopg and the migrations load only when one is
opened, so a command that never opens one (a server-backed `ask`) does not load them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..config import DEFAULT_STATEMENT_TIMEOUT, DEFAULT_STORE_TIMEOUT


class MigratedTables:
    """A few tables of a migrated database on a small pool of their own, with the vector store's
    outage behaviour (`pgpool.StorePool`): the base of the state store and of the insight store.
    A subclass names its pool (`POOL_NAME`, `POOL_SIZE`) and what its errors say (`WHAT`)."""

    POOL_NAME = "rag_rlm.tables"
    POOL_SIZE = 2
    WHAT = "store"

    def __init__(self, dsn: str, *, timeout: float = DEFAULT_STORE_TIMEOUT,
                 statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT, on_close: Callable[[], None] | None = None):
        from .migrate import ensure_migrated
        from .pgpool import StorePool

        ensure_migrated(dsn, timeout)
        self._pool = StorePool(dsn, timeout=timeout, statement_timeout=statement_timeout, max_size=self.POOL_SIZE,
                               autocommit=True, name=self.POOL_NAME)
        self._on_close = on_close

    @classmethod
    def from_url(cls: type[M], url: str, *, timeout: float = DEFAULT_STORE_TIMEOUT,
                 statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT) -> M:
        """`on_close` gives back the hold on the embedded server (pgserver://), if any."""
        from .migrate import open_postgres

        return open_postgres(url, lambda dsn, release: cls(dsn, timeout=timeout, statement_timeout=statement_timeout,
                                                           on_close=release))

    def _run(self, query: str, params: tuple[Any, ...], many: bool = False) -> Any:
        return self._pool.execute(query, params, what=self.WHAT, many=many)

    def close(self) -> None:
        self._pool.close()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


M = TypeVar("M", bound=MigratedTables)
