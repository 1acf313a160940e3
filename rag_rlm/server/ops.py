"""Operations: GET /health, GET /metrics (no auth: load balancers and Prometheus call them), and
GET /v1/traces/{id} (tenant- and access-checked: a trace holds question and evidence text)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
from litestar import get
from litestar.response import Response

from .. import __version__
from .auth import Caller
from .context import ServerContext
from .errors import ApiError

_PROBE_SECONDS = 3.0


async def _backend_health(ctx: ServerContext) -> dict[str, Any]:
    url = ctx.settings.llm
    if not url:
        return {"kind": "extractive", "reachable": True}  # no model: nothing to reach
    if not url.startswith("openai+"):
        return {"kind": "local", "reachable": True}  # in-process: loaded at startup or failed then
    base = url.removeprefix("openai+").rstrip("/")
    headers = {"Authorization": f"Bearer {ctx.settings.llm_api_key}"} if ctx.settings.llm_api_key else {}
    try:
        async with httpx.AsyncClient(timeout=_PROBE_SECONDS) as client:
            r = await client.get(f"{base}/models", headers=headers)
        return {"kind": "openai", "reachable": r.status_code < 500, "status": r.status_code}
    except httpx.HTTPError as e:
        return {"kind": "openai", "reachable": False, "error": f"{type(e).__name__}: {e}"}


@get("/health", summary="Version, and whether the store and the generation backend are reachable")
async def health(ctx: ServerContext) -> Response[dict[str, Any]]:
    with anyio.move_on_after(_PROBE_SECONDS) as scope:
        store = await anyio.to_thread.run_sync(ctx.assistant.health, abandon_on_cancel=True)
    if scope.cancelled_caught:
        store = {"reachable": False, "error": f"no answer within {_PROBE_SECONDS:g} s"}
    backend = await _backend_health(ctx)
    ok = store["reachable"] and backend["reachable"]
    body = {"status": "ok" if ok else "degraded", "version": __version__, "store": store, "backend": backend}
    if ok:
        return Response(body)
    return Response(body, status_code=503, headers={"Retry-After": "5"})  # as the other 503s


@get("/metrics", media_type="text/plain; version=0.0.4", summary="Prometheus metrics")
async def metrics(ctx: ServerContext) -> str:
    ctx.metrics.set("rag_rlm_answers_in_flight", ctx.gate.admitted)
    for status, count in ctx.jobs.active().items():
        ctx.metrics.set("rag_rlm_upload_jobs", count, status=status)
    return ctx.metrics.render()


@get("/traces/{trace_id:str}", summary="The call tree of an answer")
async def get_trace(trace_id: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    trace = await anyio.to_thread.run_sync(ctx.assistant.trace, trace_id, caller.access)
    # a trace of another tenant's collection, or answered for access groups this caller lacks,
    # is reported exactly like a missing one
    if not trace or not caller.owns(str(trace.get("collection", ""))):
        raise ApiError(404, "not_found", f"no trace {trace_id!r}", field="trace_id")
    return {**trace, "collection": caller.public(str(trace.get("collection", "")))}
