"""Every 4xx/5xx leaves the server as JSON: `{"error": {"type", "message", "field"?}}`.

Library errors are mapped to statuses here (404 unknown collection, 422 bad setting or field,
503 backend or store down); anything unexpected is logged with its traceback and answered with
a bare 500 that carries only the request id, never the stack.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException, SerializationException, ValidationException

from ..errors import (
    BackendError,
    BudgetExceeded,
    Cancelled,
    ConfigError,
    ModelNotFound,
    RagRlmError,
    StoreError,
    UnknownCollection,
)
from .observe import request_id_of

log = logging.getLogger("rag_rlm.server")

_MISSING_FIELD = re.compile(r"missing required field `([^`]+)`")
_TOP_FIELD = re.compile(r"[^.\[]*")


class ApiError(HTTPException):
    """An error the server raises on purpose, with the field it is about and extra headers."""

    def __init__(self, status: int, kind: str, message: str, *, field: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(detail=message, status_code=status, headers=headers)
        self.kind = kind
        self.field = field


def error_body(kind: str, message: str, field: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"type": kind, "message": message}
    if field:
        error["field"] = field
    return {"error": error}


def _response(request: Request[Any, Any, Any], status: int, kind: str, message: str, field: str | None = None,
              headers: dict[str, str] | None = None) -> Response[Any]:
    request.scope["state"]["error_type"] = kind  # for the errors_total metric
    return Response(error_body(kind, message, field), status_code=status, headers=headers)


def _validation_field(exc: ValidationException) -> tuple[str | None, str, str | None]:
    """(field, message, path). Litestar reports `[{"key", "message", "source"}]`; a missing field
    is reported on the object that lacks it ("data": the whole body), so dig its name out of
    msgspec's message. `field` is the request's top-level field; `path` the place inside it
    (`history[0].role`)."""
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if not isinstance(item, dict):
            continue
        message = str(item.get("message", exc.detail))
        key = item.get("key")
        missing = _MISSING_FIELD.search(message)
        if missing:
            key = missing.group(1) if key in (None, "data") else f"{key}.{missing.group(1)}"
        if key in (None, "data"):
            return "body", message, "body"
        return _TOP_FIELD.match(str(key)).group(0), message, str(key)  # type: ignore[union-attr]
    return None, str(exc.detail), None


def handle_http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    headers = dict(exc.headers or {})
    if isinstance(exc, ApiError):
        return _response(request, exc.status_code, exc.kind, exc.detail, exc.field, headers)
    if isinstance(exc, ValidationException):
        field, message, path = _validation_field(exc)
        if field == "body" and request.headers.get("content-type", "").startswith("multipart/"):
            field = path = "files"  # an upload's body is its files
        return _response(request, 422, "validation_error", f"{path}: {message}" if path else message, field)
    detail = str(exc.detail)
    if exc.status_code == 400 and isinstance(exc.__cause__, SerializationException):  # body did not decode
        if "UTF-8" in detail:  # msgspec >= 0.23 reports bad UTF-8 as a decode error, without its offset
            return _response(request, 400, "invalid_json", "request body is not valid UTF-8", "body")
        return _response(request, 422, "invalid_json", f"request body is not valid JSON: {detail}", "body")
    if exc.status_code == 400 and detail == "Request Entity Too Large":  # Litestar's part limit, kept 400 until 3.0
        limit = request.app.multipart_form_part_limit
        return _response(request, 413, "too_large", f"an upload holds at most {limit} parts (files)", "files")
    if exc.status_code == 400 and "multipart" in detail.lower():
        return _response(request, 422, "validation_error", f"files: {detail}", "files")
    if exc.status_code == 413:
        return _response(request, 413, "too_large", _too_large(request), "body")
    kind = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return _response(request, exc.status_code, kind, detail, headers=headers)


def _too_large(request: Request[Any, Any, Any]) -> str:
    try:  # the route's own cap: uploads have a larger one than JSON bodies
        limit = request.route_handler.resolve_request_max_body_size()
    except Exception:  # no route resolved: say what is known
        limit = None
    if limit is None:
        return "request body is larger than this server accepts"
    return f"request body is larger than the limit of {limit} bytes"


def _decoding_body(exc: BaseException) -> bool:
    """Whether `exc` came out of decoding the request's JSON body (Litestar lets msgspec's
    UnicodeDecodeError and RecursionError through as they are)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "decode_json" and "litestar" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


def handle_library(request: Request[Any, Any, Any], exc: RagRlmError) -> Response[Any]:
    if isinstance(exc, UnknownCollection):
        caller = request.scope["state"].get("caller")
        name = caller.public(exc.name) if caller else exc.name
        return _response(request, 404, "unknown_collection", f"unknown collection {name!r}", "collection")
    if isinstance(exc, ConfigError):
        return _response(request, 422, "invalid_value", exc.reason, exc.setting)
    if isinstance(exc, BackendError):
        log.warning("backend error", extra={"request_id": request_id_of(request.scope), "error": str(exc)})
        return _response(request, 503, "backend_unavailable", f"generation backend failed: {exc}",
                         headers={"Retry-After": "5"})
    if isinstance(exc, StoreError):
        log.warning("store error", extra={"request_id": request_id_of(request.scope), "error": str(exc)})
        return _response(request, 503, "store_unavailable", f"vector store failed: {exc}", headers={"Retry-After": "5"})
    if isinstance(exc, BudgetExceeded):
        return _response(request, 504, "timeout", str(exc))
    if isinstance(exc, Cancelled):
        return _response(request, 499, "cancelled", str(exc))
    if isinstance(exc, ModelNotFound):
        return _response(request, 503, "model_not_found", str(exc))
    return handle_unexpected(request, exc)


def handle_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    if isinstance(exc, UnicodeDecodeError) and _decoding_body(exc):
        return _response(request, 400, "invalid_json", f"request body is not valid UTF-8 (byte {exc.start})", "body")
    if isinstance(exc, RecursionError) and _decoding_body(exc):
        return _response(request, 400, "invalid_json", "request body is nested too deeply", "body")
    rid = request_id_of(request.scope)
    log.error("unhandled error", exc_info=exc, extra={"request_id": rid})
    return _response(request, 500, "internal_error", f"internal error; quote request id {rid} when reporting it")


EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: handle_http,
    RagRlmError: handle_library,
    Exception: handle_unexpected,
}
