"""Answer feedback and what the knowledge base is missing:

- POST /v1/answers/{trace_id}/feedback `{"rating": "up"|"down", "comment"?}`: one rating per
  answer per API key, the last one counting; kept with the answer's question, text, citations,
  collection and tenant. An answer of another tenant (or one citing a document the key cannot
  read) is reported exactly like a missing one: 404.
- GET /v1/insights?collection=&since=: the report of rag_rlm.insights.report over the window.
"""

from __future__ import annotations

import hashlib
from typing import Any

import anyio
import msgspec
from litestar import Request, get, post

from ..insights import Rating, Window, cutoff, readable_by
from ..insights.access import sees
from ..insights.records import MAX_COMMENT_CHARS, RATINGS, iso
from .auth import Caller
from .context import ServerContext
from .errors import ApiError

DEFAULT_SINCE = "30d"


class FeedbackRequest(msgspec.Struct, kw_only=True):
    rating: str
    comment: str | None = None


def rater_of(request: Request[Any, Any, Any], caller: Caller) -> str:
    """A hash of the caller's API key (never the key itself); with auth off, of its address."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    who = key.strip() if scheme.lower() == "bearer" and key.strip() else caller.rate_key
    return hashlib.sha256(b"rag-rlm rater\0" + who.encode()).hexdigest()


def _check(data: FeedbackRequest) -> str:
    if data.rating not in RATINGS:
        raise ApiError(422, "validation_error", f"rating must be \"up\" or \"down\", got {data.rating!r}",
                       field="rating")
    comment = (data.comment or "").strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise ApiError(422, "validation_error",
                       f"comment is {len(comment)} characters; the limit is {MAX_COMMENT_CHARS}", field="comment")
    if "\x00" in comment:
        raise ApiError(422, "validation_error", "comment must not contain NUL characters", field="comment")
    return comment


def _rate(ctx: ServerContext, caller: Caller, trace_id: str, rating: Rating) -> Rating:
    # an answer made for access groups this caller lacks is missing to it, as GET /traces has it,
    # even one that cites nothing: its question is the group's business
    trace = ctx.assistant.trace(trace_id, caller.access)
    collection = str((trace or {}).get("collection", ""))
    missing = ApiError(404, "not_found", f"no answer {trace_id!r}", field="trace_id")
    if not trace or not caller.owns(collection):
        raise missing
    citations = list(trace.get("citations") or [])
    if citations:  # and one citing a document since moved out of the caller's groups
        documents = {r.id: r for r in ctx.assistant.documents(collection)}
        cited = tuple(dict.fromkeys(str(c.get("document_id", "")) for c in citations))
        if not sees(cited, documents, readable_by(caller)):
            raise missing
    kept = Rating(trace_id=trace_id, rater=rating.rater, tenant=caller.tenant or "", collection=collection,
                  rating=rating.rating, comment=rating.comment, question=str(trace.get("question", "")),
                  answer=str(trace.get("answer", "")), citations=citations)
    ctx.insights.rate(kept)
    return kept


@post("/answers/{trace_id:str}/feedback", status_code=200, summary="Rate an answer up or down, with a comment")
async def give_feedback(trace_id: str, data: FeedbackRequest, request: Request[Any, Any, Any], ctx: ServerContext,
                        caller: Caller) -> dict[str, Any]:
    comment = _check(data)
    wanted = Rating(trace_id, rater_of(request, caller), "", "", data.rating, comment, "", "")
    kept = await anyio.to_thread.run_sync(_rate, ctx, caller, trace_id, wanted)
    return {"trace_id": trace_id, "rating": kept.rating, "comment": kept.comment, "rated_at": iso(kept.at)}


def _report(ctx: ServerContext, caller: Caller, window: Window) -> dict[str, Any]:
    documents = {r.id: r for r in ctx.assistant.documents(window.collection)}  # UnknownCollection: 404
    return ctx.insights.report(window, documents, readable_by(caller))


@get("/insights", summary="What the knowledge base is missing: unanswered questions by meaning, "
                          "answers rated down, documents most and never cited")
async def insights(ctx: ServerContext, caller: Caller, collection: str | None = None,
                   since: str | None = None) -> dict[str, Any]:
    name = collection or ctx.settings.collection
    try:
        start = cutoff(since or DEFAULT_SINCE)
    except ValueError as e:
        raise ApiError(422, "validation_error", f"since: {e}", field="since") from None
    window = Window(collection=caller.stored(name), since=start, tenant=caller.tenant)
    report = await anyio.to_thread.run_sync(_report, ctx, caller, window)
    return {"collection": name, "since": iso(start), **report}
