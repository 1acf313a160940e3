"""Sources of collections, as the CLI and the server use them: define, list, remove, sync.

A sync holds the source's lease in the state store while it runs (renewed every LEASE_RENEW
seconds), so one sync per source runs at a time across every process sharing the store; a
second one is refused with SourceBusy. Its outcome (or why it failed) becomes the source's
status.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..access import GroupError, normalise_groups
from ..config import Settings, validate_collection_name
from ..errors import ConfigError, RagRlmError
from ..ingest.pipeline import ProgressFn
from .base import KINDS, SourceError, SourceReader, SourceSpec
from .registry import SourceRegistry, UnknownSource, spec_from_dict
from .sync import SyncSummary, sync

LEASE_SECONDS = 60.0  # a holder that stopped renewing (killed) frees the source after this
LEASE_RENEW = 15.0
MIN_EVERY = 10.0  # seconds; a schedule tighter than this would only ever be syncing
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_BRANCH = re.compile(r"[A-Za-z0-9._/-]{1,200}")


class SourceInvalid(RagRlmError):
    """A source definition that cannot be used; names the field."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


class SourceBusy(RagRlmError):
    """A sync of the source is already running (here or in another process)."""


def parse_every(text: str | float | None) -> float:
    """'10m', '1h', '90s', '2d' or a number of seconds; '' or 0 = no schedule."""
    if text in (None, "", 0, "0"):
        return 0.0
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text))
    if not match:
        raise SourceInvalid("every", f"expected a duration such as 90s, 10m, 1h or 2d, got {text!r}")
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if 0 < seconds < MIN_EVERY:
        raise SourceInvalid("every", f"must be at least {MIN_EVERY:.0f}s (or 0 for no schedule), got {text!r}")
    return seconds


def make_spec(name: str, kind: str, location: str, collection: str, *, branch: str = "",
              every: str | float | None = None, include: Sequence[str] = (), exclude: Sequence[str] = (),
              groups: Sequence[str] = (), **web: Any) -> SourceSpec:
    """A checked SourceSpec; SourceInvalid names the first field that is wrong."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SourceInvalid("name", f"must be 1-63 letters, digits, '_', '-' or '.', starting with a letter or "
                                    f"digit, got {name!r}")
    if kind not in KINDS:
        raise SourceInvalid("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(location, str) or not location.strip() or any(ord(c) < 32 for c in location):
        raise SourceInvalid("location", f"must be a non-empty path or URL without control characters, got {location!r}")
    try:
        validate_collection_name(collection)
    except ConfigError as e:
        raise SourceInvalid("collection", e.reason) from None
    if branch and (kind != "git" or not _BRANCH.fullmatch(branch) or branch.startswith("-") or ".." in branch):
        raise SourceInvalid("branch", f"a branch applies to git sources and is a plain branch name, got {branch!r}")
    if kind == "web":
        _check_url(location)
    elif kind == "folder":
        location = str(Path(location).expanduser().resolve())
    for field, globs in (("include", include), ("exclude", exclude)):
        if isinstance(globs, str) or not all(isinstance(g, str) and g.strip() for g in globs):
            raise SourceInvalid(field, f"expected a list of non-empty strings, got {globs!r}")
    try:
        groups = normalise_groups(groups)  # the documents' access groups: rag_rlm.access
    except GroupError as e:
        raise SourceInvalid("groups", str(e)) from None
    limits = {k: v for k, v in web.items() if v is not None}
    for field, value in limits.items():
        if field not in ("max_pages", "max_depth", "delay") or not isinstance(value, int | float) or value < 0:
            raise SourceInvalid(field, f"expected a number >= 0, got {value!r}")
    return SourceSpec(name, kind, location.strip(), collection, branch=branch, every=parse_every(every),
                      include=tuple(include), exclude=tuple(exclude), groups=groups, **limits)


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SourceInvalid("location", f"a web source starts at an http:// or https:// URL, got {url!r}")


def check_allowed(spec: SourceSpec, roots: Sequence[str], hosts: Sequence[str]) -> None:
    """What a caller of the HTTP API may point the server at: folders (and local repositories)
    under `source_roots`, web and Git hosts in `source_hosts`. The CLI and the config file are
    the operator's and may add any."""
    if spec.kind == "folder" or (spec.kind == "git" and "://" not in spec.location and ":" not in spec.location):
        path = Path(spec.location).expanduser().resolve()
        if not any(path == Path(r).resolve() or Path(r).resolve() in path.parents for r in roots):
            raise SourceInvalid("location", f"{spec.location!r} is not under a folder of source_roots "
                                            f"({', '.join(roots) or 'none configured'})")
        return
    parts = urlsplit(spec.location)
    if parts.scheme not in ("http", "https"):
        raise SourceInvalid("location", f"only http(s) URLs may be added over the API, got {spec.location!r}")
    host = (parts.hostname or "").lower()
    if host not in {h.lower() for h in hosts}:
        raise SourceInvalid("location", f"host {host!r} is not in source_hosts ({', '.join(hosts) or 'none configured'})")


def check_exists(spec: SourceSpec) -> None:
    """A folder source must name a folder when it is added (a typo would otherwise only show as
    a failed sync); one that goes away later fails its syncs and leaves the collection as it was."""
    if spec.kind == "folder" and not Path(spec.location).is_dir():
        raise SourceInvalid("location", f"folder {spec.location!r} does not exist or is not a folder")


def open_reader(spec: SourceSpec, settings: Settings) -> SourceReader:
    if spec.kind == "folder":
        from .folder import FolderReader

        return FolderReader(spec, max_bytes=settings.max_document_bytes, skip=(Path(settings.data_dir),))
    if spec.kind == "git":
        from .git import GitReader

        return GitReader(spec, data_dir=settings.data_dir, max_bytes=settings.max_document_bytes)
    from .web import WebReader

    return WebReader(spec, settings)


class Sources:
    def __init__(self, store: Any, state: Any, settings: Settings, embedder: Callable[[], Any]):
        self.store, self.settings = store, settings
        self.registry = SourceRegistry(state)
        self._embedder = embedder  # loaded on the first sync that writes: listing needs no model

    def add(self, spec: SourceSpec) -> dict[str, Any]:
        return self.registry.add(spec)

    def get(self, collection: str, name: str) -> dict[str, Any]:
        return self.registry.record(collection, name)

    def list(self, collection: str | None = None) -> list[dict[str, Any]]:
        return self.registry.records(collection)

    def spec(self, collection: str, name: str) -> SourceSpec:
        return self.registry.spec(collection, name)

    def remove(self, collection: str, name: str, *, keep_documents: bool = False) -> int:
        """Forget the source; its documents are deleted too unless kept. Returns how many went."""
        spec = self.registry.spec(collection, name)
        deleted = 0
        if not keep_documents:
            for entry in self.registry.entries(spec).values():
                for doc_id in entry.documents:
                    deleted += bool(self.store.delete_document(collection, doc_id))
        self.registry.remove(collection, name)
        return deleted

    def due(self, now: float | None = None) -> list[SourceSpec]:
        """Sources whose schedule says they should sync now."""
        now = time.time() if now is None else now
        return [spec_from_dict(r["spec"]) for r in self.registry.records()
                if r.get("next_run") is not None and r["next_run"] <= now]

    def sync(self, spec: SourceSpec, *, stop: threading.Event | None = None,
             progress: bool | ProgressFn = False) -> SyncSummary:
        """One sync under the source's lease. SourceBusy when another runs; a source that cannot
        be read comes back as a failed summary (and status), the collection unchanged."""
        holder = f"{os.getpid()}:{uuid.uuid4().hex}"
        if not self.registry.claim(spec, holder, LEASE_SECONDS):
            raise SourceBusy(f"a sync of source {spec.name!r} is already running")
        renewing = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(spec, holder, renewing), daemon=True,
                                   name=f"lease-{spec.name}")
        renewer.start()
        try:
            summary = self._sync(spec, stop, progress)
            try:
                self.registry.finish(spec, _status(summary))
            except UnknownSource:  # removed while it synced: nothing left to report on
                pass
            return summary
        finally:
            renewing.set()
            renewer.join()
            self.registry.release(spec, holder)

    def _sync(self, spec: SourceSpec, stop: threading.Event | None, progress: bool | ProgressFn) -> SyncSummary:
        try:
            reader = open_reader(spec, self.settings)
            return sync(spec, reader, store=self.store, embedder=self._embedder(), settings=self.settings,
                        registry=self.registry, stop=stop, progress=progress)
        except SourceError as e:
            summary = SyncSummary(spec.name, spec.collection, status="failed", error=str(e))
            summary.finished = time.time()
            return summary

    def _renew(self, spec: SourceSpec, holder: str, done: threading.Event) -> None:
        while not done.wait(LEASE_RENEW):
            try:
                self.registry.claim(spec, holder, LEASE_SECONDS)
            except Exception:  # the store is down: the sync will find out; the lease may lapse
                pass


def _status(summary: SyncSummary) -> dict[str, Any]:
    data = summary.to_dict()
    data["failures"] = data["failures"][:100]  # a status stays small; the count says how many
    return data
