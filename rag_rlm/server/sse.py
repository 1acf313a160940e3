"""Server-sent events out of an async iterator of (event, data) pairs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage


def sse_response(events: AsyncIterator[tuple[str | None, Any]]) -> ServerSentEvent:
    async def messages() -> AsyncIterator[ServerSentEventMessage]:
        try:
            async for event, data in events:
                text = data if isinstance(data, str) else json.dumps(data, default=str)
                yield ServerSentEventMessage(event=event, data=text)
        finally:
            await events.aclose()  # type: ignore[attr-defined]  # runs the producer's cleanup (cancel)

    # proxies such as nginx buffer responses unless told not to; a stream must not be buffered
    return ServerSentEvent(messages(), headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def wants_stream(flag: bool, accept: str | None) -> bool:
    return flag or "text/event-stream" in (accept or "")
