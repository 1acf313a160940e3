"""The HTTP side of a crawl: one client that names us, waits its turn and caps every body; and
the change signal, made of the validators (ETag, Last-Modified) a server sent.

httpx rather than urllib.request: redirects are not followed by the client
(`follow_redirects=False`), so the crawl sees every hop and checks its host and robots.txt
before requesting it; a body is streamed, so an oversized one is cut off at the cap instead of
read whole; one keep-alive connection serves a crawl of hundreds of pages; and its timeouts
and errors are one small exception tree. It is already a dependency (the OpenAI backend).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from .. import __version__
from .base import Known

USER_AGENT = f"rag-rlm/{__version__} (source sync)"
REDIRECTS = (301, 302, 303, 307, 308)


class FetchFailed(Exception):
    """One request could not be answered usefully; `reason` says why in a few words."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Stopped(Exception):
    """The read's stop event was set: the crawl ends where it is, without an error."""


@dataclass(frozen=True)
class Answer:
    url: str  # the URL that answered
    status: int
    headers: httpx.Headers
    body: bytes  # read for 200 only


class Http:
    """The crawl's client: `get` waits until `delay` seconds have passed since the last answer
    (politeness), sends our user agent, and refuses bodies over `max_bytes`."""

    def __init__(self, *, delay: float, timeout: float, max_bytes: int, stop: threading.Event):
        self.delay = delay
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.requests = 0
        self._stop = stop
        self._last_answer: float | None = None
        # trust_env=False: a crawl goes where its URL says, not through a proxy set for pip
        self._client = httpx.Client(headers={"User-Agent": USER_AGENT}, timeout=timeout,
                                    follow_redirects=False, trust_env=False)

    def __enter__(self) -> Http:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._client.close()

    def get(self, url: str, headers: dict[str, str] | None = None) -> Answer:
        self._wait_turn()
        if self._stop.is_set():
            raise Stopped
        self.requests += 1
        try:
            with self._client.stream("GET", url, headers=headers) as response:
                body = self._body(response) if response.status_code == 200 else b""
                return Answer(url, response.status_code, response.headers, body)
        except httpx.TimeoutException:
            raise FetchFailed(f"timed out after {self.timeout:g} s") from None
        except httpx.ConnectError as e:
            raise FetchFailed(f"cannot connect: {e}") from None
        except (httpx.HTTPError, httpx.InvalidURL) as e:
            raise FetchFailed(f"{type(e).__name__}: {e}") from None
        finally:
            self._last_answer = time.monotonic()

    def _wait_turn(self) -> None:
        if self._last_answer is None or self.delay <= 0:
            return
        left = self._last_answer + self.delay - time.monotonic()
        if left > 0:
            self._stop.wait(left)  # a stop cuts the wait short

    def _body(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise FetchFailed(f"{declared} bytes, over the limit of {self.max_bytes} (max_document_bytes)")
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():  # decoded: a gzip bomb meets the cap too
            size += len(chunk)
            if size > self.max_bytes:
                raise FetchFailed(f"over the limit of {self.max_bytes} bytes (max_document_bytes)")
            if self._stop.is_set():
                raise Stopped
            chunks.append(chunk)
        return b"".join(chunks)


# --- the change signal: the validators a server sent, kept to ask "changed since?" next time ---

def make_signal(headers: Mapping[str, str], suffix: str) -> str:
    fields = {"etag": headers.get("etag"), "last_modified": headers.get("last-modified"), "suffix": suffix}
    return json.dumps({name: value for name, value in fields.items() if value}, sort_keys=True)


def _signal_fields(signal: str) -> dict[str, Any]:
    try:
        fields = json.loads(signal)
    except ValueError:  # a signal from another reader: no validators
        return {}
    return fields if isinstance(fields, dict) else {}


def signal_suffix(signal: str) -> str:
    suffix = _signal_fields(signal).get("suffix")
    return suffix if isinstance(suffix, str) and suffix else ".html"


def conditional_headers(known: Known | None) -> dict[str, str]:
    fields = _signal_fields(known.signal) if known is not None else {}
    headers = {}
    if isinstance(fields.get("etag"), str):
        headers["If-None-Match"] = fields["etag"]
    if isinstance(fields.get("last_modified"), str):
        headers["If-Modified-Since"] = fields["last_modified"]
    return headers
