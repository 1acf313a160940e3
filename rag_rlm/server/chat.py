"""OpenAI-compatible chat: POST /v1/chat/completions and GET /v1/models.

The last user message is the question and earlier turns are passed as history; `model` names a
collection, and anything that is not one of the caller's collections ("rag-rlm", "gpt-4o", ...)
means the default collection, so unmodified chat clients work. Chat clients resend the whole
conversation, so the history is cut to its last MAX_HISTORY_TURNS turns, each clipped to the
question cap, instead of being refused. Sources are appended to the message text as a numbered
list; the full citations, `found` and the answer's `parts` ride in extra top-level fields.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
from litestar import Request, get, post
from litestar.response import Response, ServerSentEvent

from .answering import AnswerCall, answer, split_words, stream
from .ask import build_call, ensure_collection
from .auth import Caller
from .context import ServerContext
from .errors import ApiError
from .limits import MAX_HISTORY_TURNS
from .sse import sse_response


class ChatMessage(msgspec.Struct):
    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(msgspec.Struct, kw_only=True):  # unknown fields (temperature, tools, ...) are ignored
    messages: list[ChatMessage]
    model: str = "rag-rlm"
    stream: bool = False


def _text(message: ChatMessage) -> str:
    if isinstance(message.content, list):  # content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in message.content if p.get("type") == "text")
    return message.content or ""


def _question_and_history(messages: list[ChatMessage], max_chars: int) -> tuple[str, list[dict[str, str]]]:
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last is None:
        raise ApiError(422, "validation_error", "messages must contain a user message", field="messages")
    # earlier turns are cut to fit, as chat clients resend them all; NUL (which the store cannot
    # hold) is dropped from them too, while the question itself is checked
    turns = [m for m in messages[:last] if m.role in ("user", "assistant")][-MAX_HISTORY_TURNS:]
    return _text(messages[last]), [{"role": m.role, "content": _text(m)[:max_chars].replace("\x00", "")} for m in turns]


def _stored_names(ctx: ServerContext, caller: Caller) -> list[str]:
    return [c.name for c in ctx.assistant.collections() if caller.owns(c.name)]


async def _collection_for(ctx: ServerContext, caller: Caller, model: str) -> str:
    names = {caller.public(n) for n in await anyio.to_thread.run_sync(_stored_names, ctx, caller)}
    return model if model in names else ctx.settings.collection


def sources_text(citations: list[dict[str, Any]]) -> str:
    if not citations:
        return ""
    lines = [f"[{c.get('n')}] {c.get('title') or c.get('document_id')} ({c.get('document_id')})" for c in citations]
    return "\n\nSources:\n" + "\n".join(lines)


def _usage(question: str, result: dict[str, Any]) -> dict[str, int]:
    usage = result.get("usage") or {}
    # the extractive reasoner calls no model (0 tokens); count words so clients see a size
    prompt = int(usage.get("tokens_in") or len(question.split()))
    completion = int(usage.get("tokens_out") or len(result.get("answer", "").split()))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@post("/chat/completions", status_code=200, summary="OpenAI-compatible chat completion over a collection")
async def chat_completions(request: Request[Any, Any, Any], data: ChatRequest, ctx: ServerContext,
                           caller: Caller) -> Response[Any] | ServerSentEvent:
    question, history = _question_and_history(data.messages, ctx.settings.max_question_chars)
    collection = await _collection_for(ctx, caller, data.model)
    call = build_call(ctx, caller, request, question, collection, history=history or None)
    meta = {"id": "chatcmpl-" + uuid.uuid4().hex, "created": int(time.time()), "model": collection}
    if data.stream:
        ctx.gate.check()
        await ensure_collection(ctx, call.collection)
        return sse_response(_chunks(ctx, call, meta))
    result = await answer(ctx, call)
    message = {"role": "assistant", "content": result["answer"] + sources_text(result["citations"])}
    return Response({**meta, "object": "chat.completion",
                     "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
                     "usage": _usage(question, result), **_extras(result)})


def _extras(result: dict[str, Any]) -> dict[str, Any]:
    """What an OpenAI response lacks: the citations, whether the collection answers the question
    at all (`found`), the answer per part of the question, and where to find its trace."""
    return {"citations": result.get("citations", []), "found": bool(result.get("found")),
            "parts": result.get("parts", []), "trace_id": result.get("trace_id"), "status": result.get("status")}


def _chunk(meta: dict[str, Any], delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {**meta, "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra}


async def _chunks(ctx: ServerContext, call: AnswerCall, meta: dict[str, Any]) -> AsyncIterator[tuple[None, Any]]:
    yield None, _chunk(meta, {"role": "assistant", "content": ""})
    events = stream(ctx, call)
    try:
        async for kind, data in events:
            if kind == "delta":
                yield None, _chunk(meta, {"content": data["text"]})
            elif kind == "citations":
                for word in split_words(sources_text(data["citations"])):
                    yield None, _chunk(meta, {"content": word})
            elif kind == "done":
                yield None, _chunk(meta, {}, "stop", usage=_usage(call.question, data), **_extras(data))
            elif kind == "error":
                yield None, data  # OpenAI streams report errors as a data line with an "error" object
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    yield None, "[DONE]"


@get("/models", summary="The caller's collections, listed as models")
async def models(ctx: ServerContext, caller: Caller) -> dict[str, Any]:
    names = await anyio.to_thread.run_sync(_stored_names, ctx, caller)
    owner = caller.tenant or "rag-rlm"
    data = [{"id": caller.public(n), "object": "model", "created": 0, "owned_by": owner} for n in sorted(names)]
    return {"object": "list", "data": data}
