"""Memo cache of answered (sub-)questions.

Keyed by the normalised question, the collection, the settings that shape an answer, the
collection's content version and the code's, so a new ingest invalidates every entry of that
collection and an upgrade every entry.
An in-process LRU in front of an optional shared StateStore (PostgreSQL table or SQLite file)
that several app processes can use.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from .memory.state import StateStore


def normalise_question(question: str) -> str:
    return " ".join(re.sub(r"[^\w\s#]", " ", question.lower()).split())


def memo_key(question: str, collection: str, version: str, shape: dict[str, Any]) -> str:
    raw = json.dumps([normalise_question(question), collection, version, shape, code_digest()], sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()


PACKAGE = Path(__file__).resolve().parent


@functools.cache
def code_digest(package: Path = PACKAGE) -> str:
    """sha256 of the package's source: an upgrade that answers differently with the same reader
    never serves what the code before it cached in a shared memo store."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


class MemoCache:
    KIND = "memo"

    def __init__(self, size: int, shared: StateStore | None = None):
        self.size = size
        self.shared = shared
        self._items: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> dict | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
                return value
        if self.shared is not None:
            value = self.shared.get(self.KIND, key)
            if value is not None:
                self._remember(key, value)
        return value

    def put(self, key: str, value: dict) -> None:
        self._remember(key, value)
        if self.shared is not None:
            self.shared.put(self.KIND, key, value)

    def _remember(self, key: str, value: dict) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
