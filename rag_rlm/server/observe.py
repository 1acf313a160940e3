"""Request ids, one structured (JSON) log line per request, and request metrics.

The request id comes from the client's `X-Request-ID` when it is sane, else is made here; it is
echoed in the response header, written in every log line and passed to the controller so it is
stored in the answer's trace.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any

from litestar.datastructures import MutableScopeHeaders
from litestar.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("rag_rlm.server")

_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_STD_ATTRS = set(vars(logging.makeLogRecord({})))


def request_id_of(scope: Any) -> str:
    """The request id for this connection, created on first use."""
    state = scope.setdefault("state", {})
    rid = state.get("request_id")
    if rid is None:
        incoming = dict(scope.get("headers") or ()).get(b"x-request-id", b"").decode("latin-1")
        rid = incoming if _SANE_ID.match(incoming) else uuid.uuid4().hex
        state["request_id"] = rid
    return rid


def timing_middleware(app: ASGIApp) -> ASGIApp:
    """Stamps the start time (unmatched routes never reach route middleware; they time as 0)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        scope.setdefault("state", {})["t0"] = time.perf_counter()  # type: ignore[typeddict-item]
        request_id_of(scope)
        await app(scope, receive, send)

    return middleware


async def before_send(message: Message, scope: Scope) -> None:
    """Adds X-Request-ID to every response and, when the body is complete, logs and counts it."""
    if scope["type"] != "http":
        return
    state: dict[str, Any] = scope.setdefault("state", {})  # type: ignore[assignment]
    if message["type"] == "http.response.start":
        MutableScopeHeaders.from_message(message)["X-Request-ID"] = request_id_of(scope)
        state["status"] = message["status"]
    elif message["type"] == "http.response.body" and not message.get("more_body", False):
        _finish(scope, state)


def _finish(scope: Scope, state: dict[str, Any]) -> None:
    route = scope.get("path_template") or "unmatched"  # templates, not raw paths: bounded cardinality
    status = int(state.get("status", 0))
    seconds = time.perf_counter() - state.get("t0", time.perf_counter())
    metrics = scope["app"].state.get("server").metrics
    metrics.inc("rag_rlm_http_requests_total", route=route, method=scope["method"], status=str(status))
    metrics.observe("rag_rlm_http_request_duration_seconds", seconds, route=route)
    if status >= 400:
        metrics.inc("rag_rlm_errors_total", type=state.get("error_type", f"http_{status}"))
    caller = state.get("caller")
    log.info("request", extra={
        "request_id": request_id_of(scope), "method": scope["method"], "path": scope["path"],
        "route": route, "status": status, "ms": round(seconds * 1000, 1),
        "tenant": getattr(caller, "tenant", None),
    })


class JsonFormatter(logging.Formatter):
    """One JSON object per line: easy to grep, easy for a log shipper."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 3), "level": record.levelname.lower(),
            "logger": record.name, "msg": record.getMessage(),
        }
        out.update({k: v for k, v in vars(record).items() if k not in _STD_ATTRS and not k.startswith("_")})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("rag_rlm")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
