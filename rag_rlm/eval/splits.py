"""Tune and check halves of the dev sets, fixed by question id: a question is in the tune half when
the first byte of sha256(id) is even. Rules and thresholds are iterated on the tune half only;
the check half says whether a gain generalises. `bench/dev_splits.json` writes the ids down."""

from __future__ import annotations

import hashlib

HALVES = ("tune", "check")


def half(question_id: str) -> str:
    return "tune" if hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0 else "check"


def in_half(question_id: str, which: str | None) -> bool:
    """Whether the question belongs to `which` half (every question when `which` is None or "all")."""
    return which in (None, "all") or half(question_id) == which
