"""POST /v1/ask: a cited answer, or its progress as server-sent events."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, post
from litestar.params import Parameter
from litestar.response import Response, ServerSentEvent

from .answering import AnswerCall, answer, stream
from .auth import Caller
from .context import ServerContext
from .limits import check_history, check_question
from .observe import request_id_of
from .sse import sse_response, wants_stream


class Turn(msgspec.Struct):
    """An earlier turn of the conversation the question belongs to."""

    role: Literal["user", "assistant"]
    content: str


class AskRequest(msgspec.Struct, kw_only=True):
    question: str
    collection: str | None = None
    top_k: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    max_depth: Annotated[int, msgspec.Meta(ge=0, le=6)] | None = None
    token_budget: Annotated[int, msgspec.Meta(ge=1, le=10_000_000)] | None = None
    reflect: bool | None = None
    history: list[Turn] | None = None  # oldest first; lets "and his brother?" refer back
    stream: bool = False


def build_call(ctx: ServerContext, caller: Caller, request: Request[Any, Any, Any], question: str,
               collection: str | None, **options: Any) -> AnswerCall:
    check_question(question, ctx.settings.max_question_chars)
    name = collection or ctx.settings.collection
    return AnswerCall(question=question, collection=caller.stored(name), public_collection=name,
                      request_id=request_id_of(request.scope), access=caller.access, caller=caller,
                      options={k: v for k, v in options.items() if v is not None})


async def ensure_collection(ctx: ServerContext, stored: str) -> None:
    """Streams start with 200; check the collection first so a bad name is still a plain 404."""
    import anyio

    await anyio.to_thread.run_sync(ctx.assistant.collection_info, stored)


@post("/ask", status_code=200, summary="Answer a question with citations (JSON, or SSE when streaming)")
async def ask(
    request: Request[Any, Any, Any], data: AskRequest, ctx: ServerContext, caller: Caller,
    accept: Annotated[str | None, Parameter(header="accept", required=False)] = None,
) -> Response[Any] | ServerSentEvent:
    history = [{"role": t.role, "content": t.content} for t in data.history or ()]
    call = build_call(ctx, caller, request, data.question, data.collection, top_k=data.top_k,
                      max_depth=data.max_depth, token_budget=data.token_budget, reflect=data.reflect,
                      history=check_history(history, ctx.settings.max_question_chars) or None)
    if wants_stream(data.stream, accept):
        ctx.gate.check()  # refuse with a status code while one can still be sent
        await ensure_collection(ctx, call.collection)
        return sse_response(stream(ctx, call))
    return Response(await answer(ctx, call))
