"""A collection's sources over HTTP (tenant-scoped like everything else), and their syncs as
background jobs.

    GET    /v1/collections/{name}/sources                 the sources, each with its last sync
    POST   /v1/collections/{name}/sources                 add one (201; then a first sync is queued)
    GET    /v1/collections/{name}/sources/{source}        one source
    DELETE /v1/collections/{name}/sources/{source}        remove it, and its documents unless ?keep_documents=true
    POST   /v1/collections/{name}/sources/{source}/sync   queue a sync (202 + the job, GET /v1/jobs/{id})

A caller may only point the server at folders under `source_roots` and hosts in `source_hosts`
(rag_rlm.sources.service.check_allowed); everything else is the operator's, from the CLI.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated, Any

import anyio
import msgspec
from litestar import delete, get, post
from litestar.params import Parameter
from litestar.response import Response

from ..sources.registry import SourceExists, UnknownSource
from ..sources.service import SourceBusy, SourceInvalid, check_allowed, check_exists, make_spec
from .auth import Caller
from .context import ServerContext
from .errors import ApiError


class SourceRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    kind: str
    location: str
    branch: str = ""
    every: str | None = None  # "10m", "1h"; none: syncs only when asked (folders are also watched)
    include: list[str] = []
    exclude: list[str] = []
    groups: list[str] = []
    max_pages: Annotated[int, msgspec.Meta(ge=1, le=100_000)] | None = None
    max_depth: Annotated[int, msgspec.Meta(ge=0, le=50)] | None = None
    delay: Annotated[float, msgspec.Meta(ge=0, le=60)] | None = None
    sync: bool = True  # queue a first sync at once


def public(record: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """A source as its caller named it: the stored (tenant-prefixed) collection name never leaves."""
    shown = caller.public(record["collection"])
    spec = {k: v for k, v in record["spec"].items() if k != "collection"}
    last = record.get("last_sync")
    if last:
        last = {**last, "collection": shown, "error": str(last.get("error", "")).replace(record["collection"], shown)}
    return {"name": record["name"], "collection": shown, **spec, "created": record.get("created"),
            "last_sync": last, "next_run": record.get("next_run"),
            "url": f"/v1/collections/{shown}/sources/{record['name']}"}


def _invalid(e: SourceInvalid) -> ApiError:
    return ApiError(422, "validation_error", str(e), field=e.field)


def _missing(e: UnknownSource, collection: str) -> ApiError:
    return ApiError(404, "not_found", f"no source {e.name!r} in collection {collection!r}", field="source")


def queue_sync(ctx: ServerContext, collection: str, source: str, shown: str, tenant: str | None) -> tuple[bool, dict]:
    """A sync of the source as a job on the server's runner (one per source queued or running)."""
    spec = ctx.assistant.sources.spec(collection, source)

    def work(stop: threading.Event, progress: Callable[[int, int | None, int], None]) -> dict[str, Any]:
        try:
            summary = ctx.assistant.sources.sync(spec, stop=stop, progress=progress).to_dict()
        except SourceBusy as e:  # another process runs it: this one was not needed
            return {"status": "cancelled", "error": str(e), "source": source}
        summary["collection"] = shown
        summary["error"] = summary["error"].replace(collection, shown)
        return summary

    return ctx.jobs.submit_sync(collection, source, shown, tenant, work)


def _add(ctx: ServerContext, caller: Caller, collection: str, shown: str, data: SourceRequest) -> dict[str, Any]:
    try:
        spec = make_spec(data.name, data.kind, data.location, collection, branch=data.branch, every=data.every,
                         include=data.include, exclude=data.exclude, groups=data.groups, max_pages=data.max_pages,
                         max_depth=data.max_depth, delay=data.delay)
        check_allowed(spec, ctx.settings.source_roots, ctx.settings.source_hosts)
        check_exists(spec)
        record = ctx.assistant.sources.add(spec)
    except SourceInvalid as e:
        raise _invalid(e) from None
    except SourceExists:
        raise ApiError(409, "conflict", f"collection {shown!r} already has a source named {data.name!r}",
                       field="name") from None
    out = public(record, caller)
    if data.sync:
        out["job"] = queue_sync(ctx, collection, spec.name, shown, caller.tenant)[1]
    return out


@get("/collections/{name:str}/sources", summary="A collection's sources, each with the status of its last sync")
async def list_sources(name: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    records = await anyio.to_thread.run_sync(ctx.assistant.sources.list, caller.stored(name))
    return {"collection": name, "sources": [public(r, caller) for r in records]}


@post("/collections/{name:str}/sources", status_code=201,
      summary="Add a folder, git or web source; a first sync is queued unless sync is false")
async def add_source(name: str, data: SourceRequest, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    return await anyio.to_thread.run_sync(_add, ctx, caller, caller.stored(name), name, data)


def _get(ctx: ServerContext, caller: Caller, collection: str, shown: str, source: str) -> dict[str, Any]:
    try:
        return public(ctx.assistant.sources.get(collection, source), caller)
    except UnknownSource as e:
        raise _missing(e, shown) from None


@get("/collections/{name:str}/sources/{source:str}", summary="One source and its last sync")
async def get_source(name: str, source: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    return await anyio.to_thread.run_sync(_get, ctx, caller, caller.stored(name), name, source)


def _remove(ctx: ServerContext, collection: str, shown: str, source: str, keep: bool) -> dict[str, Any]:
    try:
        deleted = ctx.assistant.sources.remove(collection, source, keep_documents=keep)
    except UnknownSource as e:
        raise _missing(e, shown) from None
    return {"collection": shown, "removed": source, "documents_deleted": deleted}


@delete("/collections/{name:str}/sources/{source:str}", status_code=200,
        summary="Remove a source, and its documents unless keep_documents=true")
async def remove_source(name: str, source: str, ctx: ServerContext, caller: Caller,
                        keep_documents: Annotated[bool, Parameter(query="keep_documents")] = False) -> dict[str, Any]:
    return await anyio.to_thread.run_sync(_remove, ctx, caller.stored(name), name, source, keep_documents)


def _sync(ctx: ServerContext, caller: Caller, collection: str, shown: str, source: str) -> tuple[bool, dict]:
    try:
        return queue_sync(ctx, collection, source, shown, caller.tenant)
    except UnknownSource as e:
        raise _missing(e, shown) from None


@post("/collections/{name:str}/sources/{source:str}/sync", status_code=202,
      summary="Queue a sync of the source (the job already queued or running for it, if any)")
async def sync_source(name: str, source: str, ctx: ServerContext, caller: Caller) -> Response[Any]:
    created, job = await anyio.to_thread.run_sync(_sync, ctx, caller, caller.stored(name), name, source)
    return Response({**job, "queued_now": created}, status_code=202)
