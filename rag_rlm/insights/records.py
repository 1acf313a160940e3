"""What the question log and the ratings hold, the window a report reads, and the `since` /
`--older-than` values people type ("30d", "12h", "2w", or an ISO date)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

RATINGS = ("up", "down")
MAX_COMMENT_CHARS = 2000
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+)\s*([mhdw])")


@dataclass(frozen=True)
class AskedQuestion:
    """One answered question, as the question log keeps it (when `store_questions` allows)."""

    trace_id: str
    tenant: str  # "" with auth off
    collection: str  # the stored name (tenant-prefixed)
    question: str  # as answered: a follow-up resolved into the question it stands for
    found: bool
    cited: tuple[str, ...] = ()  # the cited documents' ids, each once
    groups: tuple[str, ...] = ()  # the asker's access groups
    vector: np.ndarray | None = field(default=None, compare=False)  # the question's embedding
    at: float = field(default_factory=time.time)  # Unix seconds


@dataclass(frozen=True)
class Rating:
    """The last rating one key gave one answer, with what was rated."""

    trace_id: str
    rater: str  # a hash of the rater's API key (never the key)
    tenant: str
    collection: str
    rating: str  # up | down
    comment: str
    question: str
    answer: str
    citations: list[dict[str, Any]] = field(default_factory=list, compare=False)
    at: float = field(default_factory=time.time)

    def cited(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(str(c.get("document_id", "")) for c in self.citations))


@dataclass(frozen=True)
class Window:
    """What one report reads: a collection (stored name), from `since` (Unix seconds) on;
    `tenant` None reads every tenant's entries (the CLI, which runs as the operator)."""

    collection: str
    since: float
    tenant: str | None = None


def cutoff(text: str, now: float | None = None) -> float:
    """Unix seconds for "30d" (that long before `now`), "2w 3d", "12h", "90m", or an ISO date
    or date-time ("2026-01-31", "2026-01-31T12:00:00+00:00"; UTC when no zone is given).
    ValueError naming what is accepted."""
    now = time.time() if now is None else now
    text = text.strip()
    compact = text.replace(" ", "").lower()
    if compact and _DURATION.sub("", compact) == "":
        return now - sum(int(n) * _UNITS[u] for n, u in _DURATION.findall(compact))
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"expected a duration such as 30d, 12h, 2w or an ISO date such as 2026-01-31, "
                         f"got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
