"""How `rag-rlm ask` and `chat` find a running `serve` of the same data: `DATA_DIR/server.json`.

`serve` writes `{"url", "pid", "store"}` there as it starts, and removes it when it stops
(Ctrl-C and SIGTERM included; the record of another live server it replaced is put back). A
`kill -9` leaves the file behind: its pid is then dead, and `find` ignores it. `store` is a
digest of the store URL (a PostgreSQL URL may hold a password), so a command aimed at another
store (`--store`) never uses a server of this one. The reader still asks the server's /health
before using it (rag_rlm.answerers): a server still starting, or a pid taken by another
process, does not answer there.

No litestar, no torch here: `ask` reads this before deciding whether it needs either.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .config import Settings

FILE = "server.json"


@dataclass(frozen=True)
class ServerRecord:
    url: str
    pid: int
    store: str  # store_id() of the server's store

    def is_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # a process of another user holds the pid: it exists
            return True
        return True


def path(settings: Settings) -> Path:
    return Path(settings.data_dir) / FILE


def store_id(store_url: str) -> str:
    """A stable, secret-free identity of a store URL (an embedded store's folder made absolute,
    so `pgserver://.rag_rlm/pgdata` from the same folder is the same store)."""
    scheme, sep, rest = store_url.partition("://")
    if scheme in ("pgserver", "qdrant") and sep and rest and rest != ":memory:":
        rest = str(Path(rest).expanduser().resolve())
    return hashlib.sha256(f"{scheme}{sep}{rest}".encode()).hexdigest()[:16]


def connect_url(host: str, port: int) -> str:
    """The URL a client on this machine reaches a server listening on `host` at: a wildcard
    address is reached on loopback."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"http://{host}:{port}"
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    return f"http://[{address}]:{port}" if address.version == 6 else f"http://{address}:{port}"


def record(settings: Settings, url: str) -> ServerRecord | None:
    """Say that this process serves `settings`' store at `url`. Returns the live record it
    replaced (another server of the same data), which `forget` puts back."""
    replaced = find(settings)
    _write(settings, ServerRecord(url, os.getpid(), store_id(settings.store)))
    return replaced


def forget(settings: Settings, replaced: ServerRecord | None = None) -> None:
    """Remove this process's record (not a later server's), or put back the one it replaced
    while that server still runs (this one may not even have started: its port was taken)."""
    found = read(settings)
    if found is None or found.pid != os.getpid():
        return
    if replaced is not None and replaced.is_alive():
        _write(settings, replaced)
    else:
        path(settings).unlink(missing_ok=True)


def _write(settings: Settings, record: ServerRecord) -> None:
    """Written whole: a reader never sees half a file."""
    target = path(settings)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{FILE}.{os.getpid()}")
    partial.write_text(json.dumps({"url": record.url, "pid": record.pid, "store": record.store}))
    partial.replace(target)


def read(settings: Settings) -> ServerRecord | None:
    try:
        data = json.loads(path(settings).read_text(encoding="utf-8"))
        return ServerRecord(str(data["url"]), int(data["pid"]), str(data["store"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def find(settings: Settings) -> ServerRecord | None:
    """The live server recorded for `settings`' data folder and store, or None."""
    found = read(settings)
    if found is None or found.store != store_id(settings.store) or not found.is_alive():
        return None
    return found
