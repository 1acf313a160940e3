"""Collections, documents and upload jobs.

Uploads go through the same pipeline as the `ingest` CLI (same parsers, same idempotency): the
files are written to a folder under `{data_dir}/uploads/` by their uploaded names, so a
document's id is its filename. Uploads up to `background_upload_bytes` are ingested inline
(holding a slot of the answer gate, as answers do); larger ones become jobs (jobs.py) whose
state is kept in the state store, so any app process can answer GET /v1/jobs/{id}.

Access groups (rag_rlm.access): an upload's form field `groups` ("hr,finance") gives its documents
groups (absent: a replaced document keeps its own), PATCH changes a document's groups without
embedding it again, and a document outside the caller's groups is a 404 on every route here, as
if it did not exist (the collection's counts leave it out too).
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

import anyio
import msgspec
from litestar import delete, get, patch, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.params import Body, Parameter
from litestar.response import Response

from ..access import GroupError, normalise_groups, parse_groups
from ..ingest.parsers import PARSERS
from .auth import Caller
from .context import ServerContext
from .errors import ApiError
from .jobs import ingest_folder, public

MAX_JOBS_LISTED = 200
MAX_NAME_BYTES = 255  # a file name on every common filesystem; also a document id's length


def _refuse(message: str) -> ApiError:
    return ApiError(422, "validation_error", message, field="files")


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else name[:77] + "...")


def _safe_name(filename: str) -> PurePosixPath:
    if any(ord(c) < 32 for c in filename):
        raise _refuse(f"file name {_shown(filename)} contains control characters")
    path = PurePosixPath(filename.replace("\\", "/").lstrip("/"))
    if not path.parts or any(p in ("", ".", "..") for p in path.parts):
        raise _refuse(f"unusable file name {_shown(filename)}")
    size = len(str(path).encode())
    longest = max(len(p.encode()) for p in path.parts)
    if longest > MAX_NAME_BYTES:
        raise _refuse(f"a path component of file name {_shown(filename)} is {longest} bytes; "
                      f"the limit is {MAX_NAME_BYTES}")
    if size > MAX_NAME_BYTES:
        raise _refuse(f"file name {_shown(filename)} is {size} bytes; the limit is {MAX_NAME_BYTES}")
    return path


def _groups(form: dict[str, Any]) -> tuple[str, ...] | None:
    """The upload's `groups` field ("hr,finance", or repeated), or None when it has none."""
    value = form.get("groups")
    if value is None:
        return None
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) for v in values):
        raise ApiError(422, "validation_error", "groups: expected text such as 'hr,finance'", field="groups")
    try:
        return normalise_groups(g for v in values for g in parse_groups(v))
    except GroupError as e:
        raise ApiError(422, "validation_error", f"groups: {e}", field="groups") from None


def _files(form: dict[str, Any]) -> list[UploadFile]:
    values = [v for value in form.values() for v in (value if isinstance(value, list) else [value])]
    return [v for v in values if isinstance(v, UploadFile)]


def _names(files: list[UploadFile]) -> list[PurePosixPath]:
    """Every part's name, checked before anything is written: a bad or colliding name refuses
    the whole upload (one part silently replacing another would lose a document)."""
    if not files:
        raise _refuse("no files in the upload (multipart/form-data, field 'files')")
    names = [_safe_name(upload.filename or "") for upload in files]
    seen: set[PurePosixPath] = set()
    for name in names:
        if name in seen:
            raise _refuse(f"file name {str(name)!r} appears twice in the upload")
        seen.add(name)
    for name in names:
        for folder in name.parents:
            if folder in seen:
                raise _refuse(f"{str(folder)!r} is both a file and the folder of {str(name)!r} in the upload")
    return names


def _skip_reason(name: PurePosixPath) -> str | None:
    """Why a part will not be ingested: the ingest walk skips such files in a folder, and an
    upload must say so rather than drop them."""
    if any(part.startswith(".") for part in name.parts):
        return "hidden file (its name starts with '.'): not ingested"
    if name.suffix.lower() not in PARSERS:
        return (f"unsupported file type {name.suffix or '(no suffix)'}: "
                f"supported are {', '.join(sorted(PARSERS))}")
    return None


def _ingestible(files: list[UploadFile], names: list[PurePosixPath]) -> tuple[list[UploadFile], list[PurePosixPath],
                                                                            list[dict[str, str]]]:
    """The parts to save, and the others as failures (path, reason); 422 when none is left."""
    reasons = [_skip_reason(n) for n in names]
    skipped = [{"path": str(n), "reason": r} for n, r in zip(names, reasons, strict=True) if r is not None]
    if len(skipped) == len(names):
        listed = "; ".join(f"{f['path']}: {f['reason']}" for f in skipped)
        raise ApiError(422, "unreadable_files", f"no file could be ingested: {listed}", field="files")
    kept = [(f, n) for f, n, r in zip(files, names, reasons, strict=True) if r is None]
    return [f for f, _ in kept], [n for _, n in kept], skipped


def _size(upload: UploadFile) -> int:
    end = upload.file.seek(0, 2)  # a spooled file: in memory, or a local temp file
    upload.file.seek(0)
    return end


async def _save_uploads(files: list[UploadFile], names: list[PurePosixPath], folder: Path) -> None:
    for upload, name in zip(files, names, strict=True):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(await upload.read())


def _ingest_inline(ctx: ServerContext, folder: Path, collection: str, shown: str,
                   skipped: list[dict[str, str]], options: dict[str, Any]) -> dict[str, Any]:
    try:
        ctx.gate.hold(threading.Event())  # in line with answers: ingest shares their capacity
        try:
            return ingest_folder(ctx.assistant, folder, collection, shown, skipped, **options)
        finally:
            ctx.gate.release()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@post("/collections/{name:str}/documents", status_code=200,
      summary="Upload files (multipart) into a collection; large uploads become a background job")
async def upload_documents(
    name: str, ctx: ServerContext, caller: Caller,
    # a dict, not list[UploadFile]: Litestar 2.25 raises IndexError on an empty form for lists
    data: Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART,
                                         description="files, any field name (e.g. repeated 'files'); "
                                                     "optional text field 'groups': access groups, 'hr,finance'")],
) -> Response[Any]:
    collection = caller.stored(name)
    options = {"groups": _groups(data), "access": caller.access}
    files = _files(data)
    names = _names(files)  # a bad name refuses the upload before anything is written
    files, names, skipped = _ingestible(files, names)
    total = sum(_size(upload) for upload in files)
    background = total > ctx.settings.background_upload_bytes
    if background:
        ctx.jobs.check_room()  # refused before writing megabytes that would have to be removed
    job_id, folder = ctx.jobs.new_folder()
    try:
        await _save_uploads(files, names, folder)
        if background:
            job = await anyio.to_thread.run_sync(ctx.jobs.submit, job_id, folder, collection, name,
                                                 caller.tenant, len(files), total, skipped, options)
            return Response({"job_id": job_id, **job}, status_code=202)
    except BaseException:  # refused, failed or cancelled before the job took the folder: leave nothing
        shutil.rmtree(folder, ignore_errors=True)
        raise
    summary = await anyio.to_thread.run_sync(_ingest_inline, ctx, folder, collection, name, skipped, options)
    stored = sum(summary.get(k, 0) for k in ("documents_new", "documents_updated", "documents_unchanged"))
    if summary.get("documents_failed") and not stored:
        reasons = "; ".join(f"{f['path']}: {f['reason']}" for f in summary.get("failed", []))
        raise ApiError(422, "unreadable_files", f"no file could be ingested: {reasons}", field="files")
    return Response({"collection": name, **summary})


@get("/jobs", summary="The caller's upload jobs, newest first")
async def list_jobs(ctx: ServerContext, caller: Caller,
                    limit: Annotated[int, Parameter(ge=1, le=MAX_JOBS_LISTED)] = 50) -> dict[str, Any]:
    records = await anyio.to_thread.run_sync(ctx.jobs.list, caller.tenant, limit)
    return {"jobs": [public(r) for r in records]}


@get("/jobs/{job_id:str}", summary="Status and progress of an upload job")
async def get_job(job_id: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    return public(await anyio.to_thread.run_sync(ctx.jobs.get, job_id, caller.tenant))


@delete("/jobs/{job_id:str}", status_code=200,
        summary="Cancel an upload job: a queued one at once (200); a running one after the document "
                "being written (202), keeping the documents already written, each whole")
async def cancel_job(job_id: str, ctx: ServerContext, caller: Caller) -> Response[Any]:
    status, body = await anyio.to_thread.run_sync(ctx.jobs.cancel, job_id, caller.tenant)
    return Response(body, status_code=status)


def _collections(ctx: ServerContext, caller: Caller) -> list[dict[str, Any]]:
    out = []
    for c in ctx.assistant.collections():
        if not caller.owns(c.name):
            continue
        documents, chunks = c.documents, c.chunks
        if not caller.access.everything:  # counted over what the caller reads
            readable = ctx.assistant.documents(c.name, caller.access)
            documents, chunks = len(readable), sum(r.chunk_count for r in readable)
        out.append({"name": caller.public(c.name), "documents": documents, "chunks": chunks, "version": c.version})
    return out


@get("/collections", summary="The caller's collections")
async def list_collections(ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    items = await anyio.to_thread.run_sync(_collections, ctx, caller)
    return {"collections": sorted(items, key=lambda c: c["name"])}


def _listed(r: Any) -> dict[str, Any]:
    return {"id": r.id, "title": r.title, "source": r.source, "content_hash": r.content_hash,
            "chunks": r.chunk_count, "metadata": r.metadata, "groups": list(r.groups)}


def _documents(ctx: ServerContext, collection: str, caller: Caller) -> list[dict[str, Any]]:
    return [_listed(r) for r in ctx.assistant.documents(collection, caller.access)]


@get("/collections/{name:str}/documents", summary="Documents of a collection (those the caller's groups read)")
async def list_documents(name: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    items = await anyio.to_thread.run_sync(_documents, ctx, caller.stored(name), caller)
    return {"collection": name, "documents": sorted(items, key=lambda d: d["id"])}


@delete("/collections/{name:str}/documents/{document_id:path}", status_code=200,
        summary="Delete a document (its id may contain '/')")
async def delete_document(name: str, document_id: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    document_id = document_id.lstrip("/")  # path params keep their leading slash
    if not await anyio.to_thread.run_sync(ctx.assistant.delete_document, caller.stored(name), document_id,
                                          caller.access):
        raise _no_document(document_id, name)
    return {"collection": name, "deleted": document_id}


def _no_document(document_id: str, name: str) -> ApiError:
    """A missing document, or one outside the caller's groups: the same answer for both."""
    return ApiError(404, "not_found", f"no document {document_id!r} in collection {name!r}", field="document_id")


def _document(ctx: ServerContext, collection: str, document_id: str, name: str, caller: Caller) -> dict[str, Any]:
    try:
        doc = ctx.assistant.document(collection, document_id, caller.access)
    except KeyError:
        raise _no_document(document_id, name) from None
    return {"collection": name, "id": doc["id"], "title": doc["title"], "source": doc["source"],
            "chunks": doc["chunks"], "groups": doc["groups"], "text": doc["text"]}


@get("/collections/{name:str}/documents/{document_id:path}",
     summary="A document's text, whose offsets are those of its citations (its id may contain '/')")
async def get_document(name: str, document_id: str, ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    document_id = document_id.lstrip("/")  # path params keep their leading slash
    return await anyio.to_thread.run_sync(_document, ctx, caller.stored(name), document_id, name, caller)


class DocumentChange(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What PATCH changes of a document: its access groups (`[]`: everyone in the tenant)."""

    groups: list[str]


def _regroup(ctx: ServerContext, collection: str, document_id: str, groups: list[str], name: str,
             caller: Caller) -> dict[str, Any]:
    try:
        record = ctx.assistant.set_groups(collection, document_id, groups, caller.access)
    except GroupError as e:
        raise ApiError(422, "validation_error", f"groups: {e}", field="groups") from None
    except KeyError:
        raise _no_document(document_id, name) from None
    return {"collection": name, **_listed(record)}


@patch("/collections/{name:str}/documents/{document_id:path}", status_code=200,
       summary="Change a document's access groups (no re-embedding; answers cached before are not served again)")
async def update_document(name: str, document_id: str, data: DocumentChange, ctx: ServerContext,
                          caller: Caller) -> dict[str, Any]:
    document_id = document_id.lstrip("/")  # path params keep their leading slash
    return await anyio.to_thread.run_sync(_regroup, ctx, caller.stored(name), document_id, data.groups, name, caller)
