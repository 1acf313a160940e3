"""A Git repository as a source, read with Debian's `git` (no Python Git library: the real
command is what users debug with, and it speaks every transport their remotes use).

The repository is cloned once, bare, into `{data_dir}/sources/git/{hash of the location}`, then
fetched at each sync. Only files tracked at the branch head are read, straight from the object
store (`git ls-tree`, `git cat-file --batch`): no working tree. A file's blob id is its change
signal, so an unchanged file is never read, and a renamed one is recognised by its content.
An item's location is `path@commit`, the commit at which its current content was synced.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .base import Item, ItemFailure, Known, SourceError, SourceSpec
from .select import wanted

CLONE_SECONDS = 1800  # a first clone of a large repository
FETCH_SECONDS = 600
# transports a location may use; `ext::` and friends would run commands named in the URL
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"


class GitReader:
    def __init__(self, spec: SourceSpec, *, data_dir: str, max_bytes: int):
        self.spec = spec
        self.max_bytes = max_bytes
        digest = hashlib.sha256(spec.location.encode()).hexdigest()[:20]
        self.mirror = Path(data_dir) / "sources" / "git" / digest
        self.commit = ""
        self.files = 0

    def read(self, known: Mapping[str, Known], stop: threading.Event) -> Iterator[Item | ItemFailure]:
        self._update_mirror()
        self.commit = self._head()
        tree = [(path, blob, size) for path, blob, size in self._tree(self.commit)
                if wanted(path, self.spec.include, self.spec.exclude)]
        with _Blobs(self.mirror) as blobs:
            for path, blob, size in tree:
                if stop.is_set():
                    return
                self.files += 1
                yield self._item(path, blob, size, known.get(path), blobs)

    def describe(self) -> dict[str, Any]:
        return {"commit": self.commit, "branch": self.spec.branch or "(default)", "files": self.files}

    def _item(self, path: str, blob: str, size: int, known: Known | None, blobs: _Blobs) -> Item | ItemFailure:
        suffix = Path(path).suffix.lower()
        if known is not None and known.signal == blob:
            return Item(path, f"{path}@{self.commit[:12]}", blob, None, suffix)
        if size > self.max_bytes:
            return ItemFailure(path, f"the file is {size} bytes, over the limit of {self.max_bytes} (max_document_bytes)")
        try:
            return Item(path, f"{path}@{self.commit[:12]}", blob, blobs.read(blob), suffix)
        except SourceError as e:
            return ItemFailure(path, str(e))

    # -- the mirror ------------------------------------------------------------------------

    def _update_mirror(self) -> None:
        if (self.mirror / "HEAD").exists():
            _git(["-C", str(self.mirror), "fetch", "--quiet", "--prune", "--force", "origin",
                  "+refs/heads/*:refs/heads/*"], FETCH_SECONDS, f"git fetch from {self.spec.location!r}")
            return
        partial = self.mirror.with_name(self.mirror.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        _git(["clone", "--bare", "--quiet", "--", self.spec.location, str(partial)], CLONE_SECONDS,
             f"git clone of {self.spec.location!r}")
        partial.rename(self.mirror)  # a clone cut short is never taken for a mirror

    def _head(self) -> str:
        ref = f"refs/heads/{self.spec.branch}" if self.spec.branch else "HEAD"
        out = _git(["-C", str(self.mirror), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], 60,
                   f"branch {self.spec.branch or '(default)'!r} of {self.spec.location!r}", missing_ok=True)
        if not out.strip():
            raise SourceError(f"repository {self.spec.location!r} has no branch {self.spec.branch or '(default)'!r}")
        return out.strip()

    def _tree(self, commit: str) -> Iterator[tuple[str, str, int]]:
        out = _git(["-C", str(self.mirror), "ls-tree", "-r", "-z", "--long", "--full-tree", commit], 300,
                   f"listing {commit[:12]} of {self.spec.location!r}")
        for entry in filter(None, out.split("\0")):
            meta, _, path = entry.partition("\t")
            mode, kind, blob, size = meta.split()
            if kind == "blob" and mode != "120000":  # symlinks and submodules are not documents
                yield path, blob, int(size)


class _Blobs:
    """One `git cat-file --batch` process for a sync's reads (one process per file would
    dominate a large first sync)."""

    def __init__(self, mirror: Path):
        self.mirror = mirror
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Blobs:
        self.proc = subprocess.Popen(["git", "-C", str(self.mirror), "cat-file", "--batch"], env=_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self

    def read(self, blob: str) -> bytes:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(blob.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3:
            raise SourceError(f"git cat-file could not read blob {blob}: {b' '.join(header).decode(errors='replace')}")
        data = self.proc.stdout.read(int(header[2]))
        self.proc.stdout.read(1)  # the newline after each object
        return data

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def _env() -> dict[str, str]:
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
            "GIT_ASKPASS": "true", "SSH_ASKPASS": "true", "LC_ALL": "C"}


def _git(args: list[str], timeout: float, what: str, missing_ok: bool = False) -> str:
    """Run git; a failure is a SourceError naming what was being done and git's own reason."""
    if shutil.which("git") is None:
        raise SourceError("git is not installed (apt-get install git)")
    try:
        done = subprocess.run(["git", *args], capture_output=True, timeout=timeout, env=_env(), check=False)
    except subprocess.TimeoutExpired:
        raise SourceError(f"{what}: no answer within {timeout:.0f} s") from None
    if done.returncode != 0 and not (missing_ok and not done.stderr.strip()):
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        raise SourceError(f"{what} failed: {reason[-1] if reason else f'exit status {done.returncode}'}")
    return done.stdout.decode(errors="replace")
