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

from ingest.pipeline import ingest_paths
from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.server import create_app

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sample"
KEYS = {"key-acme": "acme", "key-beta": "beta"}


class LiveServer:
    def __init__(self, settings: Settings, assistant: Assistant):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings, assistant=assistant), log_config=None, lifespan="on")
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
    summary = ingest_paths([path], collection=collection, store=assistant.store, embedder=assistant.embedder,
                           settings=assistant.settings, progress=False)
    return summary.to_dict()
