"""Where sources and what their last sync saw are kept: the app's shared state store (so every
app process and the CLI see the same sources), three kinds of entries per source:

    source        its spec, and the status of its last sync (shown by `source list`, the API)
    source_items  what the last sync recorded of each item: signal, content hash, the documents
                  it became (read back by the next sync to apply only the difference)
    source_lock   a lease held while a sync runs: one sync per source at a time, across processes
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import RagRlmError
from .base import Known, SourceSpec

SOURCE_KIND = "source"
ITEMS_KIND = "source_items"
LOCK_KIND = "source_lock"
MAX_SOURCES_LISTED = 1000


class SourceExists(RagRlmError):
    pass


class UnknownSource(RagRlmError):
    def __init__(self, collection: str, name: str):
        super().__init__(f"no source {name!r} in collection {collection!r}")
        self.name = name


@dataclass(frozen=True)
class Entry:
    """One item as the last sync recorded it: its change signal, the hash of its bytes, where
    it was (for citations) and the documents it became, each with its content hash."""

    signal: str
    content_hash: str
    location: str
    documents: dict[str, str] = field(default_factory=dict)  # document id -> content hash
    extra: dict[str, Any] = field(default_factory=dict)

    def known(self) -> Known:
        return Known(self.signal, self.content_hash, self.extra)

    def intact(self, stored: dict[str, str]) -> bool:
        """Whether the collection still holds every document of the item as recorded (a
        document deleted by hand, or a write cut short, makes the next sync read it again)."""
        return bool(self.documents) and all(stored.get(d) == h for d, h in self.documents.items())


def spec_to_dict(spec: SourceSpec) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()}


def spec_from_dict(data: dict[str, Any]) -> SourceSpec:
    return SourceSpec(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def _key(collection: str, name: str) -> str:
    return f"{collection}/{name}"


class SourceRegistry:
    def __init__(self, state: Any):
        self.state = state  # rag_rlm.memory.state.StateStore

    def add(self, spec: SourceSpec) -> dict[str, Any]:
        if self.state.get(SOURCE_KIND, _key(spec.collection, spec.name)) is not None:
            raise SourceExists(f"collection {spec.collection!r} already has a source named {spec.name!r}")
        record = {"collection": spec.collection, "name": spec.name, "spec": spec_to_dict(spec),
                  "created": time.time(), "last_sync": None, "next_run": time.time() if spec.every else None}
        self.state.put(SOURCE_KIND, _key(spec.collection, spec.name), record)
        return record

    def record(self, collection: str, name: str) -> dict[str, Any]:
        record = self.state.get(SOURCE_KIND, _key(collection, name))
        if record is None:
            raise UnknownSource(collection, name)
        return record

    def spec(self, collection: str, name: str) -> SourceSpec:
        return spec_from_dict(self.record(collection, name)["spec"])

    def records(self, collection: str | None = None) -> list[dict[str, Any]]:
        match = {"collection": collection} if collection is not None else {}
        found = self.state.items(SOURCE_KIND, match, MAX_SOURCES_LISTED)
        return sorted(found, key=lambda r: (r["collection"], r["name"]))

    def remove(self, collection: str, name: str) -> None:
        self.record(collection, name)  # UnknownSource when absent
        for kind in (SOURCE_KIND, ITEMS_KIND, LOCK_KIND):
            self.state.delete(kind, _key(collection, name))

    def entries(self, spec: SourceSpec) -> dict[str, Entry]:
        data = self.state.get(ITEMS_KIND, _key(spec.collection, spec.name)) or {}
        return {k: Entry(**v) for k, v in data.get("items", {}).items()}

    def save_entries(self, spec: SourceSpec, entries: dict[str, Entry]) -> None:
        self.state.put(ITEMS_KIND, _key(spec.collection, spec.name),
                       {"collection": spec.collection, "items": {k: asdict(e) for k, e in entries.items()}})

    def finish(self, spec: SourceSpec, last_sync: dict[str, Any]) -> dict[str, Any]:
        """Record a sync's outcome and when the schedule runs it next."""
        record = self.record(spec.collection, spec.name)
        now = time.time()
        record.update(last_sync=last_sync, next_run=now + spec.every if spec.every else None)
        self.state.put(SOURCE_KIND, _key(spec.collection, spec.name), record)
        return record

    def claim(self, spec: SourceSpec, holder: str, ttl: float) -> bool:
        return self.state.claim(LOCK_KIND, _key(spec.collection, spec.name), holder, ttl)

    def release(self, spec: SourceSpec, holder: str) -> None:
        self.state.release(LOCK_KIND, _key(spec.collection, spec.name), holder)
