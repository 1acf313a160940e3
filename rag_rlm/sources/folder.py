"""A folder on the server as a source: its files, by relative path, with mtime and size as the
cheap change signal (a file whose signal did not change is not read)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .base import Item, ItemFailure, Known, SourceError, SourceSpec
from .select import wanted


class FolderReader:
    def __init__(self, spec: SourceSpec, *, max_bytes: int, skip: tuple[Path, ...] = ()):
        self.spec = spec
        self.max_bytes = max_bytes
        self.root = Path(spec.location).expanduser()
        self.skip = {p.resolve() for p in skip}  # the data folder, when the source contains it
        self.files = 0

    def read(self, known: Mapping[str, Known], stop: threading.Event) -> Iterator[Item | ItemFailure]:
        if not self.root.is_dir():  # checked first: a folder gone must not read as "every file deleted"
            raise SourceError(f"folder {str(self.root)!r} does not exist or is not a folder")
        for rel, path in self._walk():
            if stop.is_set():
                return
            self.files += 1
            yield self._item(rel, path, known.get(rel))

    def describe(self) -> dict[str, Any]:
        return {"files": self.files}

    def _walk(self) -> Iterator[tuple[str, Path]]:
        for dirpath, dirnames, filenames in os.walk(self.root, onerror=self._unreadable):
            here = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and (here / d).resolve() not in self.skip)
            for name in sorted(filenames):
                rel = (here / name).relative_to(self.root).as_posix()
                if wanted(rel, self.spec.include, self.spec.exclude):
                    yield rel, here / name

    def _unreadable(self, error: OSError) -> None:
        if Path(error.filename or "") == self.root:
            raise SourceError(f"folder {str(self.root)!r} cannot be read: {error.strerror or error}")
        # a sub-folder we may not read: its files are simply not part of the source

    def _item(self, rel: str, path: Path, known: Known | None) -> Item | ItemFailure:
        try:
            st = path.stat()
            signal = f"{st.st_mtime_ns}:{st.st_size}"
            if known is not None and known.signal == signal:
                return Item(rel, rel, signal, None, path.suffix.lower())
            if st.st_size > self.max_bytes:  # refused before reading, as ingest does
                return ItemFailure(rel, f"the file is {st.st_size} bytes, over the limit of {self.max_bytes} "
                                        f"(max_document_bytes)")
            return Item(rel, rel, signal, path.read_bytes(), path.suffix.lower())
        except OSError as e:  # vanished between the walk and the read, or unreadable
            return ItemFailure(rel, f"unreadable: {e.strerror or e}")
