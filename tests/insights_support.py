"""What the feedback and insights tests share (no tests here): a real server on loopback over a
real store, pgvector (the question log then lives in PostgreSQL) or Qdrant local mode (then in
a SQLite file), with two fresh tenants of their own so no other test's questions are counted."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from test_server_support import SAMPLE, LiveServer

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.insights.store import InsightStore, open_insight_store

VACATION_Q = "How many vacation days do new hires get per year?"
TRAVEL_Q = "Who approves expenses over $500?"
SUBSET = ("vacation-policy.txt", "travel-policy.html", "on-call-policy.md", "about-halcyon.md")


@dataclass
class Setup:
    server: LiveServer
    settings: Settings
    assistant: Assistant
    tenants: tuple[str, str]  # (a, b): keys "key-a1", "key-a2" are a's, "key-b" is b's

    def insight_store(self) -> InsightStore:
        """A store of its own on the same database or file, to read what the server wrote."""
        return open_insight_store(self.settings.store, self.settings.data_dir)


def fresh_tenant() -> str:
    return "t" + uuid.uuid4().hex[:10]


def now_iso() -> str:
    """A `since` that leaves out everything logged before this moment."""
    return datetime.now(UTC).isoformat()


def subset_folder(tmp: Path) -> Path:
    folder = tmp / "subset"
    folder.mkdir(exist_ok=True)
    for name in SUBSET:
        shutil.copy(SAMPLE / name, folder / name)
    return folder


@contextmanager
def live_setup(kind: str, pg_url: str, tmp: Path, embedder: object, *, full: bool = False,
               **changes: object) -> Iterator[Setup]:
    """Tenant a's and b's `handbook` (the whole sample with `full`, else four of its documents)."""
    url = pg_url if kind == "pgvector" else "qdrant://" + str(tmp / "qdrant")
    a, b = fresh_tenant(), fresh_tenant()
    keys = {"key-a1": a, "key-a2": a, "key-b": b}
    settings = Settings(store=url, data_dir=str(tmp / "data"), collection="handbook", api_keys=keys,
                        rate_limit_per_minute=100_000).replace(**changes)
    assistant = Assistant(settings, embedder=embedder)
    folder = SAMPLE if full else subset_folder(tmp)
    try:
        for tenant in (a, b):
            assert assistant.ingest_files([folder], f"{tenant}__handbook").documents_failed == 0
        with LiveServer(settings, assistant) as server:
            yield Setup(server, settings, assistant, (a, b))
    finally:
        assistant.close()
