"""A real server on loopback for the server tests (no tests here; imported by test_server*.py).

`LiveServer` runs uvicorn with `create_app(...)` in a background thread on a socket bound to a
free port; several servers (open, multi-tenant, tight limits) share one Assistant, one embedded
PostgreSQL and the sample corpus, ingested once per session.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.server import create_app
from rag_rlm.server.app import UVICORN_OPTIONS

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sample"
KEYS = {"key-acme": "acme", "key-beta": "beta"}


class LiveServer:
    def __init__(self, settings: Settings, assistant: Assistant):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings, assistant=assistant), log_config=None, lifespan="on",
                                **UVICORN_OPTIONS)  # as `serve` runs it
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()

    def client(self, key: str | None = None, **kwargs: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)  # type: ignore[arg-type]


def ingest(assistant: Assistant, collection: str, path: Path = SAMPLE) -> dict:
    return assistant.ingest_files([path], collection).to_dict()


COLLECTION = "handbook"
BETA_TEXT = "Project Nightjar launches on 14 February with a budget of 3 million euros."
_SHARED: dict[str, Assistant] = {}


def shared_assistant(pg_url: str, data_dir: Path, embedder: object) -> Assistant:
    """One Assistant (and one ingest of the sample corpus) for every server test module.

    Collections: `handbook` (open servers), `acme__handbook` (tenant acme's handbook) and
    `beta__secrets` (tenant beta's one document, which acme must never reach)."""
    if pg_url not in _SHARED:
        settings = Settings(store=pg_url, data_dir=str(data_dir), collection=COLLECTION)
        assistant = Assistant(settings, embedder=embedder)
        for name in (COLLECTION, "acme__handbook"):
            assert ingest(assistant, name)["documents_failed"] == 0
        secret = data_dir / "beta"
        secret.mkdir(parents=True, exist_ok=True)
        (secret / "nightjar.md").write_text(f"# Nightjar plan\n\n{BETA_TEXT}\n")
        assert ingest(assistant, "beta__secrets", secret)["documents_new"] == 1
        _SHARED[pg_url] = assistant
    return _SHARED[pg_url]


def open_settings(assistant: Assistant, **changes: object) -> Settings:
    """Settings for a server over the shared assistant: no keys, generous limits unless changed."""
    base = assistant.settings.replace(rate_limit_per_minute=100_000)
    return base.replace(**changes)


def sse_events(response: httpx.Response) -> list[tuple[str, str]]:
    """(event, data) pairs of a server-sent event stream."""
    events, event, data = [], None, []
    for line in response.iter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            events.append((event or "message", "\n".join(data)))
            event, data = None, []
    return events
