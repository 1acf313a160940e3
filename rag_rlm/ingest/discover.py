"""Find the files an ingest run reads: recursively under folders, or files given directly."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest. `doc_id` is its path relative to the root it was found under, so the
    id stays the same wherever the folder is checked out (and across runs)."""

    path: Path  # absolute
    root: Path  # the folder given on the command line (the file's parent for a direct file)
    doc_id: str
    direct: bool  # named on the command line rather than found in a folder


def discover(
    paths: Iterable[str | Path],
    *,
    glob: str | None = None,
    suffixes: Iterable[str] | None = None,
    exclude: Iterable[str | Path] = (),
) -> list[SourceFile]:
    """Files under `paths`, in a deterministic order (roots in the order given, then sorted).

    Inside folders: hidden files and folders and the `exclude` folders (the data dir) are
    skipped, and only files matching `glob` (by relative path, `PurePath.match` rules) and with
    a known suffix are taken. A file named directly is always taken: the caller asked for it,
    so an unsupported type is reported rather than silently ignored.
    Raises FileNotFoundError naming the first path that does not exist, ValueError for one that
    is neither a regular file nor a folder.
    """
    wanted = {s.lower() for s in suffixes} if suffixes is not None else None
    skip = {Path(p).resolve() for p in exclude}
    seen: set[Path] = set()
    found: list[SourceFile] = []
    for given in paths:
        root = Path(given).resolve()
        if not root.exists():
            raise FileNotFoundError(str(given))
        if not (root.is_file() or root.is_dir()):  # a FIFO or device: reading would block or never end
            raise ValueError(f"not a regular file or folder: {given}")
        if root.is_file():
            candidates: Iterator[SourceFile] = iter([SourceFile(root, root.parent, root.name, True)])
        else:
            candidates = _walk(root, glob, wanted, skip)
        for source in candidates:
            if source.path not in seen:  # overlapping roots must not ingest a file twice
                seen.add(source.path)
                found.append(source)
    return found


def _walk(root: Path, glob: str | None, wanted: set[str] | None, skip: set[Path]) -> Iterator[SourceFile]:
    # os.walk so that hidden and excluded folders (.git, .venv, the data dir) are never entered
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and (here / d).resolve() not in skip)
        for name in sorted(filenames):
            path = here / name
            if name.startswith(".") or not path.is_file():
                continue
            if wanted is not None and path.suffix.lower() not in wanted:
                continue
            rel = path.relative_to(root).as_posix()
            if glob and not PurePosixPath(rel).match(glob):
                continue
            yield SourceFile(path, root, rel, False)
