"""Folder sources watched while the server runs: watchfiles (inotify on Linux, a well-kept
Rust-backed library) reports changes, which are debounced, then handed on as "sync this source".
Nothing is read here; the sync decides what changed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("rag_rlm.sources")

DEBOUNCE_MS = 300  # a burst of writes (an editor's save, a `git pull`) becomes one sync
STEP_MS = 50


class FolderWatcher:
    """One watching thread per folder; `watch` makes the set of folders what it is given."""

    def __init__(self, on_change: Callable[[str], None], *, ignore: tuple[Path, ...] = ()):
        self.on_change = on_change
        self.ignore = tuple(p.resolve() for p in ignore)  # the data folder: writing it is not a change
        self._threads: dict[str, tuple[Path, threading.Event, threading.Thread]] = {}

    def watch(self, folders: dict[str, Path]) -> None:
        """`folders`: source key -> folder. Starts the new ones, stops those no longer given."""
        for key in [k for k, (root, _, _) in self._threads.items() if folders.get(k) != root]:
            self._stop(key)
        for key, root in folders.items():
            if key not in self._threads and root.is_dir():
                stop = threading.Event()
                thread = threading.Thread(target=self._run, args=(key, root, stop), daemon=True, name=f"watch-{key}")
                self._threads[key] = (root, stop, thread)
                thread.start()

    def watching(self) -> list[str]:
        return sorted(self._threads)

    def close(self) -> None:
        for key in list(self._threads):
            self._stop(key)

    def _stop(self, key: str) -> None:
        _, stop, thread = self._threads.pop(key)
        stop.set()
        thread.join(timeout=2)

    def _run(self, key: str, root: Path, stop: threading.Event) -> None:
        from watchfiles import DefaultFilter, watch

        ignored = self.ignore

        class _Filter(DefaultFilter):  # editors' swap files, .git, __pycache__ ... and our data folder
            def __call__(self, change: object, path: str) -> bool:
                return super().__call__(change, path) and not any(Path(path).is_relative_to(p) for p in ignored)

        # a change made before the watch began (between a source's first sync and now) is caught
        # by one comparison as the watch starts; a sync of an unchanged folder reads nothing
        self.on_change(key)
        try:
            for _changes in watch(root, watch_filter=_Filter(), stop_event=stop, debounce=DEBOUNCE_MS, step=STEP_MS,
                                  raise_interrupt=False, yield_on_timeout=False):
                self.on_change(key)
        except Exception:  # the folder vanished, or too many inotify watches: the periodic sync still runs
            log.warning("stopped watching %s", root, exc_info=True)
