"""Collections, documents and upload jobs.

Uploads go through the same pipeline as the `ingest` CLI (same parsers, same idempotency): the
files are written to a temporary folder under their uploaded names, so a document's id is its
filename. Small uploads are ingested inline; large ones in a background thread whose progress
is kept in the state store, so any app process can answer GET /v1/jobs/{id}.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

import anyio
from litestar import delete, get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.params import Body
from litestar.response import Response

from .auth import Caller
from .context import ServerContext
from .errors import ApiError

BACKGROUND_BYTES = 2_000_000  # above this an upload is a job: ingest takes seconds per MB
JOB_KIND = "upload_job"


def _safe_name(filename: str) -> PurePosixPath:
    path = PurePosixPath(filename.replace("\\", "/").lstrip("/"))
    if not path.parts or any(p in ("", ".", "..") for p in path.parts):
        raise ApiError(422, "validation_error", f"unusable file name {filename!r}", field="files")
    return path


def _files(form: dict[str, Any]) -> list[UploadFile]:
    values = [v for value in form.values() for v in (value if isinstance(value, list) else [value])]
    return [v for v in values if isinstance(v, UploadFile)]


async def _save_uploads(files: list[UploadFile]) -> tuple[Path, int, int]:
    if not files:
        raise ApiError(422, "validation_error", "no files in the upload (multipart/form-data, field 'files')",
                       field="files")
    folder = Path(tempfile.mkdtemp(prefix="rag_rlm_upload_"))
    total = 0
    for upload in files:
        target = folder / _safe_name(upload.filename or "")
        target.parent.mkdir(parents=True, exist_ok=True)
        content = await upload.read()
        total += len(content)
        target.write_bytes(content)
    return folder, len(files), total


def _ingest(ctx: ServerContext, folder: Path, collection: str) -> dict[str, Any]:
    from rag_rlm.ingest.pipeline import ingest_paths

    a = ctx.assistant
    summary = ingest_paths([str(folder)], collection=collection, store=a.store, embedder=a.embedder,
                           settings=ctx.settings, progress=False)
    out = summary.to_dict()
    for failure in out.get("failed", []):  # the temp folder means nothing to the client
        failure["path"] = str(failure.get("path", "")).removeprefix(str(folder)).lstrip("/")
    return out


def _ingest_inline(ctx: ServerContext, folder: Path, collection: str) -> dict[str, Any]:
    try:
        return _ingest(ctx, folder, collection)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run_job(ctx: ServerContext, job: dict[str, Any], folder: Path, collection: str) -> None:
    state = ctx.assistant.state
    state.put(JOB_KIND, job["id"], {**job, "status": "running"})
    try:
        job = {**job, "status": "done", "summary": _ingest_inline(ctx, folder, collection)}
    except Exception as e:  # recorded for GET /v1/jobs/{id}; the server goes on
        job = {**job, "status": "failed", "error": f"{type(e).__name__}: {e}"}
    state.put(JOB_KIND, job["id"], {**job, "finished": time.time()})


@post("/collections/{name:str}/documents", status_code=200,
      summary="Upload files (multipart) into a collection; large uploads become a background job")
async def upload_documents(
    name: str, ctx: ServerContext, caller: Caller,
    # a dict, not list[UploadFile]: Litestar 2.25 raises IndexError on an empty form for lists
    data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART,
                                         description="files, any field name (e.g. repeated 'files')")],
) -> Response[Any]:
    collection = caller.stored(name)
    folder, count, total = await _save_uploads(_files(data))
    if total > BACKGROUND_BYTES:
        job = {"id": uuid.uuid4().hex, "status": "queued", "collection": name, "tenant": caller.tenant,
               "files": count, "bytes": total, "created": time.time()}
        await anyio.to_thread.run_sync(ctx.assistant.state.put, JOB_KIND, job["id"], job)
        threading.Thread(target=_run_job, args=(ctx, job, folder, collection), daemon=True,
                         name=f"upload-{job['id'][:8]}").start()
        return Response({"job_id": job["id"], "status": "queued", "url": f"/v1/jobs/{job['id']}"},
                        status_code=202)
    summary = await anyio.to_thread.run_sync(_ingest_inline, ctx, folder, collection)
    if summary.get("documents_failed") and summary["documents_failed"] == count:
        reasons = "; ".join(f"{f['path']}: {f['reason']}" for f in summary.get("failed", []))
        raise ApiError(422, "unreadable_files", f"no file could be ingested: {reasons}", field="files")
    return Response({"collection": name, **summary})


@get("/jobs/{job_id:str}", summary="Status of a background upload")
async def get_job(job_id: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    job = await anyio.to_thread.run_sync(ctx.assistant.state.get, JOB_KIND, job_id)
    if not job or job.get("tenant") != caller.tenant:
        raise ApiError(404, "not_found", f"no job {job_id!r}", field="job_id")
    return {k: v for k, v in job.items() if k != "tenant"}


def _collections(ctx: ServerContext, caller: Caller) -> list[dict[str, Any]]:
    return [{"name": caller.public(c.name), "documents": c.documents, "chunks": c.chunks, "version": c.version}
            for c in ctx.assistant.store.collections() if caller.owns(c.name)]


@get("/collections", summary="The caller's collections")
async def list_collections(ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    items = await anyio.to_thread.run_sync(_collections, ctx, caller)
    return {"collections": sorted(items, key=lambda c: c["name"])}


def _documents(ctx: ServerContext, collection: str) -> list[dict[str, Any]]:
    store = ctx.assistant.store
    store.collection_info(collection)  # UnknownCollection -> 404
    return [{"id": r.id, "title": r.title, "source": r.source, "content_hash": r.content_hash,
             "chunks": r.chunk_count, "metadata": r.metadata} for r in store.documents(collection).values()]


@get("/collections/{name:str}/documents", summary="Documents of a collection")
async def list_documents(name: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    items = await anyio.to_thread.run_sync(_documents, ctx, caller.stored(name))
    return {"collection": name, "documents": sorted(items, key=lambda d: d["id"])}


def _delete(ctx: ServerContext, collection: str, document_id: str) -> bool:
    ctx.assistant.store.collection_info(collection)
    return ctx.assistant.store.delete_document(collection, document_id)


@delete("/collections/{name:str}/documents/{document_id:path}", status_code=200,
        summary="Delete a document (its id may contain '/')")
async def delete_document(name: str, document_id: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    document_id = document_id.lstrip("/")  # path params keep their leading slash
    if not await anyio.to_thread.run_sync(_delete, ctx, caller.stored(name), document_id):
        raise ApiError(404, "not_found", f"no document {document_id!r} in collection {name!r}", field="document_id")
    return {"collection": name, "deleted": document_id}
