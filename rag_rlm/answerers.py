"""Where `rag-rlm ask` and `chat` get their answers: a running server, or this process.

    --local, --model, --openai-url      this process (LocalAnswerer)
    --server URL                        that server, and no other (RemoteAnswerer)
    DATA_DIR/server.json, live, healthy the server `serve` recorded for this store (serverfile)
    otherwise                           this process

A server has the store open, the embedder loaded and its memo cache warm, so asking it costs one
HTTP round trip; this process must start the embedded PostgreSQL (when no one else has) and
load the embedder first. Both answer with the /v1/ask response (`Result.to_dict()`, collection
named as asked) and raise the library's errors (rag_rlm.errors), so the caller prints, and
exits, the same whichever answered. The key for a server with API keys is `RAG_RLM_API_KEY`.
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Protocol

from . import clikit, serverfile
from .config import Settings
from .errors import (
    BackendError,
    BudgetExceeded,
    ConfigError,
    RagRlmError,
    StoreError,
    UnknownCollection,
)

log = logging.getLogger("rag_rlm.answerers")
API_KEY_ENV = "RAG_RLM_API_KEY"
HEALTH_SECONDS = 2.0  # a recorded server that does not answer /health by then is not used
_GRACE_SECONDS = 10.0  # beyond the server's own request_timeout, for the round trip
# refused, reset, timed out, or something that does not speak HTTP on that port
_UNREACHABLE = (OSError, http.client.HTTPException)


class Answerer(Protocol):
    where: str  # said with --verbose: "the server at URL" or "this process"

    def ask(self, question: str, collection: str, **options: Any) -> dict[str, Any]:
        """The /v1/ask response for `question`; options: history, top_k, max_depth,
        token_budget, reflect (None: the answerer's setting)."""
        ...

    def close(self) -> None: ...


def for_command(args: argparse.Namespace, settings: Settings) -> Answerer:
    """The answerer for `ask` and `chat`, from their flags (rag_rlm.cli's answer options)."""
    llm = args.model and f"local:{args.model}" or args.openai_url and f"openai+{args.openai_url}"
    if llm:
        settings = settings.replace(llm=llm)
    started = time.perf_counter()
    answerer = open_answerer(settings, server=args.server, local=args.local or bool(llm))
    clikit.detail(args, f"rag-rlm: answering in {answerer.where} (ready in {time.perf_counter() - started:.2f} s)")
    return answerer


def options_from(args: argparse.Namespace) -> dict[str, Any]:
    """The per-request options the flags give (None: the answerer's own setting)."""
    return {"top_k": args.top_k, "max_depth": args.max_depth, "token_budget": args.budget,
            "reflect": False if args.no_reflect else None}


def open_answerer(settings: Settings, *, server: str | None = None, local: bool = False) -> Answerer:
    """The answerer the module docstring's table picks (`local` covers the model flags)."""
    if server:
        return RemoteAnswerer(server, settings.request_timeout)
    if not local:
        found = serverfile.find(settings)
        if found is not None:
            remote = RemoteAnswerer(found.url, settings.request_timeout)
            if remote.is_ours():
                return remote
            log.info("the server recorded in %s (pid %d) does not answer at %s; answering here",
                     serverfile.path(settings), found.pid, found.url)
    return LocalAnswerer(settings)


class LocalAnswerer:
    """The Assistant in this process, with the embedder that loads fastest for answering."""

    where = "this process"

    def __init__(self, settings: Settings):
        from .assistant import Assistant
        from .embed_numpy import load_answer_embedder

        # numpy for the embedder and the reader: a short-lived command need not import torch
        self.assistant = Assistant(settings.replace(reader_backend="numpy"),
                                   embedder=load_answer_embedder(settings.embed_model))

    def ask(self, question: str, collection: str, **options: Any) -> dict[str, Any]:
        try:
            result = self.assistant.ask(question, collection, **options)
        except BudgetExceeded as e:
            if e.partial_answer is None:
                raise
            result = e.partial_answer  # as the server does: what was done is still an answer
        return result.to_dict()

    def close(self) -> None:
        self.assistant.close()


class RemoteAnswerer:
    """A rag-rlm server over HTTP (standard library only: this is the fast path)."""

    def __init__(self, url: str, request_timeout: float):
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError("--server", f"expected an http(s)://HOST:PORT URL, got {url!r}")
        self.url = url.rstrip("/")
        self.where = f"the server at {self.url}"
        self.timeout = request_timeout + _GRACE_SECONDS
        key = os.environ.get(API_KEY_ENV, "").strip()
        self.headers = {"content-type": "application/json", "accept": "application/json"}
        if key:
            self.headers["authorization"] = f"Bearer {key}"
        # a proxy set for the internet must not carry requests to this machine
        handlers = [urllib.request.ProxyHandler({})] if _loopback(parsed.hostname) else []
        self.opener = urllib.request.build_opener(*handlers)

    def is_ours(self) -> bool:
        """Whether a rag-rlm server answers /health here (healthy or not: it then reports why)."""
        try:
            status, body = self._request("GET", "/health", None, HEALTH_SECONDS)
        except _UNREACHABLE:
            return False
        return status in (200, 503) and isinstance(body, dict) and "version" in body and "store" in body

    def ask(self, question: str, collection: str, **options: Any) -> dict[str, Any]:
        payload = {"question": question, "collection": collection,
                   **{k: v for k, v in options.items() if v is not None}}
        try:
            status, body = self._request("POST", "/v1/ask", payload, self.timeout)
        except _UNREACHABLE as e:
            raise RagRlmError(f"cannot reach the server at {self.url}: {_reason(e)}") from None
        if status != 200 or not isinstance(body, dict):
            raise self._error(status, body, collection)
        return body

    def close(self) -> None:
        """Nothing held between requests."""

    def _request(self, method: str, path: str, payload: Any, timeout: float) -> tuple[int, Any]:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=self.headers)
        try:
            with self.opener.open(request, timeout=timeout) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as e:  # a status the server chose: its JSON says why
            with e:
                return e.code, _json(e.read())

    def _error(self, status: int, body: Any, collection: str) -> RagRlmError:
        """The library error a /v1 error response stands for (rag_rlm.server.errors maps them)."""
        error = body.get("error", {}) if isinstance(body, dict) else {}
        kind, message = error.get("type", ""), error.get("message") or f"HTTP {status}"
        if kind == "unknown_collection":
            return UnknownCollection(collection)
        if status == 401:
            why = "wants an API key" if API_KEY_ENV not in os.environ else "refused the key"
            return ConfigError(API_KEY_ENV, f"the server at {self.url} {why} ({message}); "
                                            f"set {API_KEY_ENV}, or answer here with --local")
        if status in (400, 413, 422):
            return ConfigError(error.get("field") or "request", message)
        if kind == "timeout":
            return BudgetExceeded(message)
        if kind == "backend_unavailable":
            return BackendError(message)
        if kind == "store_unavailable":
            return StoreError(message)
        return RagRlmError(f"the server at {self.url} answered {status}: {message}")


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _reason(error: Exception) -> str:
    reason = getattr(error, "reason", error)  # URLError wraps the socket's error
    return str(getattr(reason, "strerror", None) or reason)
