"""Which of a source's items a sync takes: supported suffixes, not hidden, and the source's
include / exclude globs."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from ..ingest.parsers import PARSERS


def wanted(path: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """`path` is relative, '/'-separated. Globs are fnmatch patterns on the whole path, where
    `*` also crosses '/': `*.md` takes Markdown files at any depth, `drafts/*` leaves out a
    folder. No include = everything supported; an exclude wins over an include."""
    parts = PurePosixPath(path).parts
    if not parts or any(p.startswith(".") for p in parts):  # .git, .venv, editor files
        return False
    if PurePosixPath(path).suffix.lower() not in PARSERS:
        return False
    if include and not any(fnmatchcase(path, g) for g in include):
        return False
    return not any(fnmatchcase(path, g) for g in exclude)
