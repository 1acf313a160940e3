"""Shared fixtures: the real embedder, a real embedded PostgreSQL+pgvector, Qdrant local mode.

`store_url` is parametrized over both backends so one test runs on each (congruence tests);
every test gets a fresh collection name.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from rag_rlm.config import Settings
from rag_rlm.embed import load_embedder

STORE_KINDS = ("pgvector", "qdrant")


@pytest.fixture(scope="session")
def embedder():
    return load_embedder()


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory):
    """One embedded PostgreSQL for the whole run (it takes a second to start); tests isolate
    themselves by collection name. The session holds it, so it is not stopped each time the last
    store on it closes (rag_rlm.memory.embedded), and stopped at the end."""
    from rag_rlm.memory.migrate import postgres_dsn, release_postgres

    url = "pgserver://" + str(tmp_path_factory.mktemp("pg") / "pgdata")
    postgres_dsn(url)
    yield url
    release_postgres(url)


@pytest.fixture(params=STORE_KINDS)
def store_url(request, pg_url, tmp_path) -> str:
    if request.param == "pgvector":
        return pg_url
    return "qdrant://" + str(tmp_path / "qdrant")


@pytest.fixture
def collection() -> str:
    return "t_" + uuid.uuid4().hex[:12]


@pytest.fixture
def settings(store_url, tmp_path: Path) -> Settings:
    return Settings(store=store_url, data_dir=str(tmp_path / "data"))
