"""Any OpenAI-compatible `/v1/chat/completions` server (vLLM, llama.cpp, Ollama, TGI) over httpx.

Prompts of a batch run concurrently, at most `max_parallel` requests in flight. Timeouts,
connection errors, 429 and 5xx are retried with exponential backoff and jitter (a `Retry-After`
header is honoured, capped); other 4xx are the request's fault and never retried.

Token budget: a remote model's tokenizer is not available here, so `count_tokens` is an estimate
(about 4 characters a token plus a per-message overhead). The budget is enforced with that
estimate before a request and with `max_tokens` sent to the server, which bounds the completion
exactly; reported counts come from the server's `usage` when it sends one.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple

import httpx

from ..config import Settings
from ..errors import BackendError
from .base import Generation, Prompt

CHARS_PER_TOKEN = 4  # a common rule of thumb for English BPE vocabularies
MESSAGE_OVERHEAD = 4  # role and separators per chat message
REPLY_OVERHEAD = 3  # the assistant turn header the server adds


class _Retry(NamedTuple):
    error: BackendError
    after: float | None  # the server's Retry-After, in seconds


class OpenAILLM:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        timeout: float = 60.0,
        retries: int = 3,
        max_parallel: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        retry_after_max: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.retries = retries
        self.max_parallel = max(1, max_parallel)
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        limits = httpx.Limits(max_connections=self.max_parallel, max_keepalive_connections=self.max_parallel)
        # httpx.Client is thread-safe; one client keeps connections alive across batches
        self._client = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, limits=limits, transport=transport
        )

    @classmethod
    def from_url(cls, url: str, settings: Settings) -> OpenAILLM:
        """`openai+http://host:port/v1` → `http://host:port/v1` (likewise https)."""
        base_url = url.removeprefix("openai+")
        return cls(
            base_url,
            settings.llm_model or "default",
            api_key=settings.llm_api_key,
            timeout=settings.llm_timeout,
            retries=settings.llm_retries,
            max_parallel=settings.max_parallel,
        )

    def close(self) -> None:
        self._client.close()

    def count_tokens(self, prompt: Prompt) -> int:
        """An estimate (see the module docstring): no tokenizer for a remote model."""
        return sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD for m in prompt) + REPLY_OVERHEAD

    def generate(self, prompts: Sequence[Prompt], max_new_tokens: int) -> list[Generation]:
        if not prompts:
            return []
        workers = min(self.max_parallel, len(prompts))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="openai-llm") as pool:
            return list(pool.map(lambda p: self._complete(p, max_new_tokens), prompts))

    # -- one prompt, with retries -------------------------------------------------------------

    def _complete(self, prompt: Prompt, max_new_tokens: int) -> Generation:
        body = {
            "model": self.model,
            "messages": [dict(m) for m in prompt],
            "max_tokens": max_new_tokens,
            "temperature": 0,
        }
        retry = _Retry(BackendError("no attempt made", transient=True), None)
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, retry.after))
            outcome = self._attempt(body, prompt)
            if isinstance(outcome, Generation):
                return outcome
            retry = outcome
        last = retry.error
        msg = f"{last} (gave up after {self.retries + 1} attempts)"
        return Generation(error=BackendError(msg, transient=True, status=last.status))

    def _attempt(self, body: dict[str, Any], prompt: Prompt) -> Generation | _Retry:
        """A result (a completion, or an error not worth retrying) or what to retry after."""
        try:
            response = self._client.post("/chat/completions", json=body)
        except httpx.TimeoutException as e:
            return _Retry(BackendError(f"timed out: {e}", transient=True), None)
        except httpx.TransportError as e:  # connection refused/reset, protocol errors
            return _Retry(BackendError(f"{type(e).__name__}: {e}", transient=True), None)
        status = response.status_code
        if status == 429 or status >= 500:
            return _Retry(_http_error(response, transient=True), _retry_after(response.headers.get("Retry-After")))
        if status >= 400:  # the request itself is wrong: sending it again cannot help
            return Generation(error=_http_error(response, transient=False))
        return self._parse(response, prompt)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        # exponential, with jitter so that parallel requests do not retry in lockstep
        delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.retry_after_max))
        return delay

    def _parse(self, response: httpx.Response, prompt: Prompt) -> Generation:
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as e:
            msg = f"malformed chat completion from the server ({type(e).__name__}: {e})"
            return Generation(error=BackendError(msg, status=response.status_code))
        usage = data.get("usage") or {}
        # servers that omit `usage` get the same estimate count_tokens uses
        tokens_in = _int(usage.get("prompt_tokens")) or self.count_tokens(prompt)
        tokens_out = _int(usage.get("completion_tokens")) or estimate_tokens(text)
        return Generation(text=text, tokens_in=tokens_in, tokens_out=tokens_out)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _http_error(response: httpx.Response, *, transient: bool) -> BackendError:
    detail = response.text[:200].strip()
    msg = f"HTTP {response.status_code} from {response.request.url}: {detail}"
    return BackendError(msg, transient=transient, status=response.status_code)


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait, from `Retry-After: 2` or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
