"""Vector memory: one Protocol, two backends, opened by URL.

    pgserver://PATH          embedded PostgreSQL + pgvector in a data folder (default: .rag_rlm/pgdata)
    postgresql://DSN         any PostgreSQL with the pgvector extension (postgres:// works too)
    qdrant://PATH            Qdrant local mode, on disk at PATH (qdrant://:memory: in memory)
    qdrant+http://HOST:PORT  a Qdrant server or cluster (qdrant+https:// with TLS)
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import DEFAULT_STATEMENT_TIMEOUT, DEFAULT_STORE_TIMEOUT
from ..errors import ConfigError
from .base import Catalog, DocumentPart, SentenceMemory, Store, VectorStore

__all__ = ["Catalog", "DocumentPart", "SentenceMemory", "Store", "VectorStore", "open_store", "SCHEMES"]


def _open_pgserver(url: str, timeout: float, statement_timeout: float) -> Store:
    from .pgvector import PgVectorStore

    return PgVectorStore.from_url(url, timeout=timeout, statement_timeout=statement_timeout)


def _open_qdrant(url: str, timeout: float, statement_timeout: float) -> Store:
    from .qdrant import QdrantStore

    return QdrantStore.from_url(url, timeout=timeout)  # each request is bounded by `timeout` already


SCHEMES: dict[str, Callable[[str, float, float], Store]] = {
    "pgserver": _open_pgserver,
    "postgresql": _open_pgserver,
    "postgres": _open_pgserver,
    "qdrant": _open_qdrant,
    "qdrant+http": _open_qdrant,
    "qdrant+https": _open_qdrant,
}


def open_store(url: str, *, timeout: float = DEFAULT_STORE_TIMEOUT,
               statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT) -> Store:
    """The store behind `url`; `timeout`: seconds to reach a store server before a StoreError;
    `statement_timeout`: seconds a PostgreSQL statement may run (0: no limit)."""
    scheme, sep, _ = url.partition("://")
    opener = SCHEMES.get(scheme) if sep else None
    if opener is None:
        raise ConfigError("store", f"unknown store URL {url!r}; known schemes: {', '.join(s + '://' for s in SCHEMES)}")
    return opener(url, timeout, statement_timeout)
