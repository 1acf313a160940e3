"""The OpenAI-compatible backend against a real HTTP server on loopback.

`ScriptedChatServer` is a scripted stand-in for vLLM/llama.cpp/Ollama: a real
http.server on 127.0.0.1 that answers /v1/chat/completions per a script keyed by the user
message, counts attempts per prompt and the requests in flight.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_rlm.config import Settings
from rag_rlm.llm import open_llm
from rag_rlm.llm.openai import OpenAILLM


@dataclass
class Reply:
    status: int = 200
    text: str | None = None  # None: echo the user message
    delay: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    usage: bool = True
    raw: bytes | None = None  # sent as the body instead of a chat completion


class ScriptedChatServer:
    """Replies per prompt (keyed by the last user message): the n-th attempt gets script[n],
    the last entry repeating; prompts without a script get an echo."""

    def __init__(self) -> None:
        self.script: dict[str, list[Reply]] = {}
        self.attempts: dict[str, int] = defaultdict(int)
        self.bodies: list[dict] = []
        self.auth: list[str | None] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_reply(self, key: str) -> Reply:
        with self._lock:
            n = self.attempts[key]
            self.attempts[key] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        replies = self.script.get(key, [Reply()])
        return replies[min(n, len(replies) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = body["messages"][-1]["content"]
                with server._lock:
                    server.bodies.append(body)
                    server.auth.append(self.headers.get("Authorization"))
                reply = server._next_reply(key)
                try:
                    time.sleep(reply.delay)
                    self._send(reply, key, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _send(self, reply: Reply, key: str, body: dict) -> None:
                if reply.status == 200:
                    text = key.upper() if reply.text is None else reply.text
                    payload: dict = {"choices": [{"message": {"role": "assistant", "content": text}}]}
                    if reply.usage:
                        payload["usage"] = {"prompt_tokens": 11, "completion_tokens": min(7, body["max_tokens"])}
                else:
                    payload = {"error": {"message": f"scripted {reply.status}"}}
                data = json.dumps(payload).encode() if reply.raw is None else reply.raw
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers:
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        return Handler


@pytest.fixture
def server():
    with ScriptedChatServer() as s:
        yield s


def prompt(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "answer briefly"}, {"role": "user", "content": text}]


def make(server: ScriptedChatServer, **kw) -> OpenAILLM:
    kw.setdefault("backoff_base", 0.05)
    kw.setdefault("timeout", 5.0)
    return OpenAILLM(server.base_url, "scripted-model", **kw)


def test_concurrency_never_exceeds_max_parallel(server):
    for i in range(10):
        server.script[f"q{i}"] = [Reply(delay=0.15)]
    llm = make(server, max_parallel=3)
    results = llm.generate([prompt(f"q{i}") for i in range(10)], max_new_tokens=16)
    assert [r.text for r in results] == [f"Q{i}" for i in range(10)]  # in prompt order
    assert server.max_in_flight == 3  # capped, and the cap was actually used
    assert all(b["max_tokens"] == 16 and b["model"] == "scripted-model" for b in server.bodies)


def test_429_with_retry_after_is_honoured_then_succeeds(server):
    server.script["busy"] = [Reply(429, headers=(("Retry-After", "1"),)), Reply(text="fine")]
    started = time.monotonic()
    (result,) = make(server, retries=3).generate([prompt("busy")], 8)
    assert result.ok and result.text == "fine"
    assert server.attempts["busy"] == 2
    assert time.monotonic() - started >= 1.0  # waited as the server asked, not the 0.05s backoff


def test_503_is_retried_with_backoff_then_succeeds(server):
    server.script["flaky"] = [Reply(503), Reply(503), Reply(text="finally")]
    started = time.monotonic()
    (result,) = make(server, retries=3, backoff_base=0.1).generate([prompt("flaky")], 8)
    assert result.ok and result.text == "finally"
    assert server.attempts["flaky"] == 3
    assert time.monotonic() - started >= 0.05 + 0.1  # two backoffs: >= half of 0.1 and of 0.2


def test_persistent_500_is_reported_after_the_retries(server):
    server.script["broken"] = [Reply(500)]
    (result,) = make(server, retries=2).generate([prompt("broken")], 8)
    assert not result.ok and result.text == ""
    assert result.error.transient and result.error.status == 500
    assert server.attempts["broken"] == 3  # the first try and two retries
    assert "3 attempts" in str(result.error)


def test_400_is_not_retried(server):
    server.script["bad"] = [Reply(400)]
    (result,) = make(server, retries=3).generate([prompt("bad")], 8)
    assert not result.ok and result.error.status == 400 and not result.error.transient
    assert server.attempts["bad"] == 1


def test_one_failure_leaves_the_rest_of_the_batch_intact(server):
    server.script["bad"] = [Reply(422)]
    server.script["down"] = [Reply(502)]
    results = make(server, retries=1).generate([prompt("a"), prompt("bad"), prompt("down"), prompt("b")], 8)
    assert [r.ok for r in results] == [True, False, False, True]
    assert results[0].text == "A" and results[3].text == "B"
    assert results[1].error.status == 422 and results[2].error.status == 502
    assert server.attempts["bad"] == 1 and server.attempts["down"] == 2


def test_timeouts_are_retried(server):
    server.script["slow"] = [Reply(delay=1.0, text="late"), Reply(text="on time")]
    (result,) = make(server, retries=2, timeout=0.3).generate([prompt("slow")], 8)
    assert result.ok and result.text == "on time"
    assert server.attempts["slow"] == 2


def test_connection_refused_is_reported_as_transient():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the request: nothing listens there
    llm = OpenAILLM(f"http://127.0.0.1:{port}/v1", "m", retries=1, backoff_base=0.01, timeout=2)
    (result,) = llm.generate([prompt("anyone?")], 8)
    assert not result.ok and result.error.transient and result.error.status is None


def test_token_counts_from_usage_or_estimated(server):
    server.script["no usage"] = [Reply(text="x" * 40, usage=False)]
    llm = make(server)
    with_usage, without = llm.generate([prompt("with usage"), prompt("no usage")], 8)
    assert (with_usage.tokens_in, with_usage.tokens_out) == (11, 7)
    assert without.tokens_in == llm.count_tokens(prompt("no usage"))
    assert without.tokens_out == 10  # 40 characters at ~4 per token


def test_count_tokens_estimate_grows_with_the_prompt():
    llm = OpenAILLM("http://127.0.0.1:9/v1", "m")
    short, long = llm.count_tokens(prompt("hi")), llm.count_tokens(prompt("hi " * 100))
    assert 0 < short < long
    assert long >= 300 / 4


def test_malformed_response_is_an_error_not_a_crash(server):
    server.script["odd"] = [Reply(raw=b"<html>not a completion</html>")]
    server.script["shape"] = [Reply(raw=b'{"choices": []}')]
    odd, shape, fine = make(server, retries=2).generate([prompt("odd"), prompt("shape"), prompt("ok")], 8)
    assert not odd.ok and "malformed" in str(odd.error) and odd.error.status == 200
    assert not shape.ok and "malformed" in str(shape.error)
    assert server.attempts["odd"] == 1  # a server that answers nonsense will not improve
    assert fine.ok and fine.text == "OK"


def test_open_llm_with_an_openai_url_sends_model_and_key(server):
    url = "openai+" + server.base_url
    settings = Settings(llm=url, llm_model="qwen", llm_api_key="secret", max_parallel=2, llm_retries=0)
    llm = open_llm(url, settings)
    assert isinstance(llm, OpenAILLM) and llm.base_url == server.base_url
    (result,) = llm.generate([prompt("hello")], 4)
    assert result.text == "HELLO"
    assert server.bodies[-1]["model"] == "qwen" and server.auth[-1] == "Bearer secret"
