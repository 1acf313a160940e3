"""The embedded PostgreSQL behind `pgserver://PATH`: started on first use, stopped when the last
process of ours that uses it lets go.

pgserver starts the server (initdb on first use, a unix socket, detached from the process that
started it) and keeps the pids of the processes using it in `PATH/.handle_pids.json`, under an
inter-process file lock. Its own clean-up runs only at interpreter exit, which a server stopped by
SIGTERM never reaches (uvicorn re-raises the signal after its graceful shutdown, and the default
action ends the process), and the pid a crashed process leaves in that list keeps the server up
for ever. So the life is managed here, on pgserver's list and lock (processes of older versions
still count), with pgserver's own clean-up switched off:

- `acquire(path)` starts the server or joins it, and counts this process's holds;
- `release(path)` gives one back; the process's last hold removes its pid, forgets the pids of
  processes that no longer exist, and stops the server when no pid is left;
- at interpreter exit, whatever the process still holds is released.

Stores hold the server from open to `close()`: `serve` (its shutdown closes them, SIGTERM
included), `ingest` and `rag-rlm ask` let go of it as they end, and a server and an ingest that
share it keep it up until the second one ends. `rag-rlm db status` / `db stop` inspect and stop it
by hand (a `kill -9` leaves it behind: no code of ours runs then).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreError

_holds: dict[Path, int] = {}  # data folder -> holds of this process
_guard = threading.Lock()  # one acquire/release at a time in this process (the file lock is per process)
PIDS_FILE = ".handle_pids.json"  # pgserver's list of the processes using a server


def data_folder(path: str | os.PathLike[str]) -> Path:
    """The absolute data folder of `pgserver://PATH` (relative paths are from the current folder)."""
    folder = Path(path).expanduser()
    return (folder if folder.is_absolute() else Path.cwd() / folder).resolve()


def acquire(path: str | os.PathLike[str], attempts: int = 3) -> str:
    """Start (or join) the embedded server in `path`; a libpq DSN. Give it back with `release`."""
    folder = data_folder(path)
    with _guard:
        dsn = _start(folder, attempts)
        _holds[folder] = _holds.get(folder, 0) + 1
        return dsn


def release(path: str | os.PathLike[str]) -> None:
    """Give back one hold; the last one of the last process stops the server."""
    folder = data_folder(path)
    with _guard:
        held = _holds.get(folder, 0)
        if held > 1:
            _holds[folder] = held - 1
            return
        if held == 1:
            del _holds[folder]
            _let_go(folder)


@dataclass(frozen=True)
class Status:
    folder: Path
    running: bool
    pid: int | None  # the postmaster's
    dsn: str | None
    users: list[int]  # live processes registered as using it
    stale: list[int]  # registered pids whose process is gone


def status(path: str | os.PathLike[str]) -> Status:
    """What runs in a data folder, without starting anything."""
    from pgserver.utils import DiskList

    folder = data_folder(path)
    info = _postmaster(folder)
    pids = DiskList(folder / PIDS_FILE).get() if folder.is_dir() else []
    users = [p for p in pids if _alive(p)]
    return Status(folder, info is not None, info.pid if info else None, info.get_uri() if info else None,
                  users, [p for p in pids if p not in users])


def stop(path: str | os.PathLike[str], *, force: bool = False) -> Status:
    """Stop the server in `path` unless live processes of ours still use it (then, only with
    `force`); returns the status it found. Stale pids are forgotten either way."""
    from pgserver import PostgresServer
    from pgserver.utils import DiskList

    folder = data_folder(path)
    with _guard, PostgresServer._lock:
        found = status(folder)
        if not folder.is_dir():
            return found
        if found.users and not force:
            DiskList(folder / PIDS_FILE).put(found.users)
            return found
        DiskList(folder / PIDS_FILE).put([])
        _holds.pop(folder, None)
        if found.running:
            _stop_server(folder)
        return found


def _start(folder: Path, attempts: int) -> str:
    import pgserver

    error: Exception | None = None
    for attempt in range(attempts):
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            server = pgserver.get_server(folder, cleanup_mode=None)  # registers our pid in its list
            # Its life is ours (module docstring): no cached handle (a later get_server must check
            # the server again, it may have been stopped), no exit hook of its own.
            pgserver.PostgresServer._instances.pop(folder, None)
            atexit.unregister(server._cleanup)
            return server.get_uri()
        except Exception as e:  # pgserver raises bare subprocess/OS/assertion errors
            error = e
            # a start that failed (pg_ctl gives up after 10 s on a busy machine) stays cached
            pgserver.PostgresServer._instances.pop(folder, None)
            time.sleep(1 + attempt)
    raise StoreError(f"could not start the embedded PostgreSQL in {folder}: {error!r}") from error


def _let_go(folder: Path) -> None:
    """Unregister this process; stop the server if no live process of ours is registered."""
    from pgserver import PostgresServer
    from pgserver.utils import DiskList

    if not folder.is_dir():  # removed under us: nothing left to stop
        return
    with PostgresServer._lock:  # the same inter-process lock pgserver takes to start or join
        pids = DiskList(folder / PIDS_FILE)
        users = [p for p in pids.get() if p != os.getpid() and _alive(p)]
        pids.put(users)
        if not users and _postmaster(folder) is not None:
            _stop_server(folder)


def _stop_server(folder: Path) -> None:
    from pgserver._commands import pg_ctl

    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=folder, user=_system_user(), timeout=60)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        info = _postmaster(folder)
        if info is not None and info.process is not None:  # pg_ctl could not: end it ourselves
            info.process.terminate()
            info.process.wait(10)


def _postmaster(folder: Path):  # noqa: ANN202 - pgserver's PostmasterInfo, when one runs
    from pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(folder)
    except (OSError, ValueError, AssertionError):  # a half-written postmaster.pid
        return None
    return info if info is not None and info.is_running() else None


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _system_user() -> str | None:
    # pgserver runs the server as an unprivileged user when started as root (postgres refuses root)
    return "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


@atexit.register
def _release_all() -> None:
    """A process that ends still holding a server (a script that never closed its store)."""
    with _guard:
        held = list(_holds)
        _holds.clear()
    for folder in held:
        try:
            _let_go(folder)
        except Exception:  # noqa: BLE001 - at exit there is no one left to tell
            pass
