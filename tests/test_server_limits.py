"""Tenants, limits and bad input on a live server: isolation across every endpoint, 401/413/422/
429/503 with JSON bodies naming the field, and a schemathesis fuzz pass that finds no 5xx."""

from __future__ import annotations

import threading
import time

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openai import OpenAI
from test_server_support import BETA_TEXT, KEYS, LiveServer, open_settings, shared_assistant, sse_events

VACATION_Q = "How many vacation days do new hires get per year?"
NIGHTJAR_Q = "When does Project Nightjar launch and what is its budget?"


class GatedAssistant:
    """The real Assistant, except that `ask` first waits until the test opens `gate`: it makes
    "an answer is running" last exactly as long as the overload test needs."""

    def __init__(self, inner):
        self.inner = inner
        self.gate = threading.Event()
        self.entered = threading.Event()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def ask(self, *args, **kwargs):
        self.entered.set()
        self.gate.wait(60)
        return self.inner.ask(*args, **kwargs)


@pytest.fixture(scope="module")
def assistant(pg_url, embedder, tmp_path_factory):
    return shared_assistant(pg_url, tmp_path_factory.mktemp("server_data"), embedder)


@pytest.fixture(scope="module")
def tenants(assistant):
    with LiveServer(open_settings(assistant, api_keys=KEYS), assistant) as srv:
        yield srv


@pytest.fixture(scope="module")
def limited(assistant):
    s = open_settings(assistant, max_body_bytes=2000, max_upload_bytes=5000, max_question_chars=100)
    with LiveServer(s, assistant) as srv:
        yield srv


def error(r):
    assert r.headers["content-type"].startswith("application/json"), r.text
    return r.json()["error"]


def leaks(body_text: str) -> bool:
    """Beta's facts (the question's own words may be echoed back: they are acme's)."""
    return "3 million" in body_text or "14 february" in body_text.lower() or "nightjar.md" in body_text


def test_keys_are_required_and_checked(tenants):
    with tenants.client() as anon, tenants.client("wrong") as bad:
        for c in (anon, bad):
            r = c.get("/v1/collections")
            assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"
            assert error(r)["field"] == "Authorization"
        assert anon.get("/health").status_code == 200  # health and metrics stay open for probes


def test_a_tenant_cannot_reach_another_tenants_text_by_any_endpoint(tenants):
    with tenants.client("key-acme") as acme, tenants.client("key-beta") as beta:
        # beta's own view works: its collection, its document, its answer and trace
        assert [c["name"] for c in beta.get("/v1/collections").json()["collections"]] == ["secrets"]
        own = beta.post("/v1/ask", json={"question": NIGHTJAR_Q, "collection": "secrets"})
        assert own.status_code == 200 and "3 million" in own.json()["answer"]
        beta_trace = own.json()["trace_id"]
        assert beta.get(f"/v1/traces/{beta_trace}").status_code == 200

        # acme, by every route, with every spelling of beta's collection
        assert "secrets" not in {c["name"] for c in acme.get("/v1/collections").json()["collections"]}
        assert "secrets" not in {m["id"] for m in acme.get("/v1/models").json()["data"]}
        for name in ("secrets", "beta__secrets"):
            r = acme.post("/v1/ask", json={"question": NIGHTJAR_Q, "collection": name})
            assert r.status_code in (404, 422) and not leaks(r.text)
            r = acme.post("/v1/ask", json={"question": NIGHTJAR_Q, "collection": name, "stream": True})
            assert r.status_code in (404, 422) and not leaks(r.text)
            assert acme.get(f"/v1/collections/{name}/documents").status_code in (404, 422)
            assert acme.delete(f"/v1/collections/{name}/documents/nightjar.md").status_code in (404, 422)
            r = acme.post("/v1/chat/completions",
                          json={"model": name, "messages": [{"role": "user", "content": NIGHTJAR_Q}]})
            assert r.status_code == 200 and not leaks(r.text)  # answered from acme's own default
            assert all(c["document_id"] != "nightjar.md" for c in r.json()["citations"])
        r = acme.get(f"/v1/traces/{beta_trace}")
        assert r.status_code == 404 and not leaks(r.text)

        # acme uploading under the same name lands in acme's namespace, not in beta's collection
        up = acme.post("/v1/collections/secrets/documents", files=[("files", ("acme-notes.md", "acme notes\n"))])
        assert up.status_code == 200 and up.json()["documents_new"] == 1
        docs = beta.get("/v1/collections/secrets/documents").json()["documents"]
        assert [d["id"] for d in docs] == ["nightjar.md"] and docs[0]["chunks"] >= 1
        again = beta.post("/v1/ask", json={"question": NIGHTJAR_Q, "collection": "secrets"}).json()
        assert "3 million" in again["answer"]


def test_jobs_are_per_tenant(tenants):
    with tenants.client("key-acme") as acme, tenants.client("key-beta") as beta:
        big = BETA_TEXT + "\n" + " " * 2_100_000
        r = beta.post("/v1/collections/bigjob/documents", files=[("files", ("big.txt", big))])
        assert r.status_code == 202
        url = r.json()["url"]
        assert beta.get(url).status_code == 200
        r = acme.get(url)
        assert r.status_code == 404 and not leaks(r.text)


def test_openai_client_sees_only_its_tenants_models(tenants):
    acme = OpenAI(base_url=f"{tenants.url}/v1", api_key="key-acme", max_retries=0)
    models = {m.id for m in acme.models.list()}
    with tenants.client("key-acme") as c:
        assert models == {col["name"] for col in c.get("/v1/collections").json()["collections"]}
    assert "handbook" in models and not any("__" in m for m in models)  # no stored names
    for model in ("secrets", "beta__secrets"):
        reply = acme.chat.completions.create(model=model, messages=[{"role": "user", "content": NIGHTJAR_Q}])
        assert not leaks(reply.choices[0].message.content) and not leaks(str(reply.model_extra))


def test_rate_limit_gives_429_with_retry_after(assistant):
    with LiveServer(open_settings(assistant, rate_limit_per_minute=3), assistant) as srv, srv.client() as c:
        codes = [c.get("/v1/collections").status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        r = c.get("/v1/collections")
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        assert error(r)["type"] == "rate_limited"
        assert c.get("/health").status_code == 200  # probes are not rate limited


def forged(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


def test_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy(assistant):
    # one budget, the peer's, whatever address each request claims to come from
    with LiveServer(open_settings(assistant, rate_limit_per_minute=2), assistant) as srv, srv.client() as c:
        codes = [c.get("/v1/collections", headers=forged(f"203.0.113.{i}")).status_code for i in range(3)]
        assert codes == [200, 200, 429]
    s = open_settings(assistant, api_keys=KEYS, auth_failures_per_minute=2)
    with LiveServer(s, assistant) as srv, srv.client("wrong") as c:
        codes = [c.get("/v1/collections", headers=forged(f"203.0.113.{i}")).status_code for i in range(3)]
        assert codes == [401, 401, 429]  # guessing keys under new forged addresses gains nothing


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_budget(assistant):
    s = open_settings(assistant, rate_limit_per_minute=2, trusted_proxies=["127.0.0.1", "10.0.0.0/8"])
    with LiveServer(s, assistant) as srv, srv.client() as c:
        assert [c.get("/v1/collections", headers=forged("203.0.113.1")).status_code for _ in range(3)] == [200, 200, 429]
        assert c.get("/v1/collections", headers=forged("203.0.113.2")).status_code == 200  # another client
        # the right-most untrusted address counts: what a client wrote to the left of it does not,
        # and a trusted proxy on the way (10.x) is skipped
        assert c.get("/v1/collections", headers=forged("198.51.100.9, 203.0.113.1")).status_code == 429
        assert c.get("/v1/collections", headers=forged("203.0.113.1, 10.1.2.3")).status_code == 429
        assert c.get("/v1/collections").status_code == 200  # no header: the proxy itself
    s = open_settings(assistant, api_keys=KEYS, auth_failures_per_minute=2, trusted_proxies=["127.0.0.1"])
    with LiveServer(s, assistant) as srv, srv.client("wrong") as bad, srv.client("key-acme") as good:
        assert [bad.get("/v1/collections", headers=forged("203.0.113.1")).status_code for _ in range(3)] == [
            401, 401, 429]
        assert good.get("/v1/collections", headers=forged("203.0.113.2")).status_code == 200  # not locked out


def test_client_address_walks_forwarded_for_from_the_right():
    from rag_rlm.server.proxies import client_address, trusted_networks

    trusted = trusted_networks(["127.0.0.1", "10.0.0.0/8", "fd00::/8"])
    assert client_address("192.0.2.1", ["203.0.113.5"], trusted) == "192.0.2.1"  # peer not trusted
    assert client_address("127.0.0.1", ["203.0.113.5"], ()) == "127.0.0.1"  # nothing trusted
    assert client_address("127.0.0.1", ["1.1.1.1, 203.0.113.5", "10.0.0.2"], trusted) == "203.0.113.5"
    assert client_address("::ffff:127.0.0.1", ["2001:db8::7"], trusted) == "2001:db8::7"  # dual-stack peer
    assert client_address("fd00::1", ["[2001:db8::7]:4711"], trusted) == "2001:db8::7"
    assert client_address("127.0.0.1", ["203.0.113.5:8080"], trusted) == "203.0.113.5"
    assert client_address("127.0.0.1", ["10.0.0.3, 10.0.0.2"], trusted) == "10.0.0.3"  # all trusted: left-most
    assert client_address("127.0.0.1", ["203.0.113.5, unknown"], trusted) == "127.0.0.1"  # not an address: stop
    assert client_address("127.0.0.1", ["unknown, 203.0.113.5"], trusted) == "203.0.113.5"


def test_oversize_bodies_give_413(limited):
    with limited.client() as c:
        r = c.post("/v1/ask", json={"question": "x", "padding": "y" * 5000})
        assert r.status_code == 413 and error(r)["field"] == "body"
        r = c.post("/v1/collections/up/documents", files=[("files", ("a.txt", "z" * 6000))])
        assert r.status_code == 413 and error(r)["type"] == "too_large"


@pytest.mark.parametrize(("body", "field"), [
    (b'{"question": "unterminated', "body"),
    (b'{"question": 5}', "question"),
    (b'{"question": "ok?", "top_k": "many"}', "top_k"),
    (b'{"question": "ok?", "top_k": 0}', "top_k"),
    (b'{"question": "ok?", "stream": "yes"}', "stream"),
    (b'{"collection": "handbook"}', "question"),
    (b'[1, 2]', "body"),
    (b'{"question": "ok?", "history": "earlier"}', "history"),
    (b'{"question": "ok?", "history": [{"role": "system", "content": "x"}]}', "history"),
    (b'{"question": "ok?", "history": [{"role": "user"}]}', "history"),
    (b'{"question": "ok?", "history": [{"role": "user", "content": 5}]}', "history"),
])
def test_malformed_json_and_wrong_types_give_422_naming_the_field(limited, body, field):
    with limited.client() as c:
        r = c.post("/v1/ask", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert error(r)["field"] == field and field in error(r)["message"]


def test_chat_wrong_types_give_422(limited):
    with limited.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "m", "messages": "hello"})
        assert r.status_code == 422 and error(r)["field"] == "messages"
        r = c.post("/v1/chat/completions", json={"model": "m", "messages": [{"role": "system", "content": "x"}]})
        assert r.status_code == 422 and error(r)["field"] == "messages"


def test_uploads_without_usable_files_give_422_naming_files(limited):
    with limited.client() as c:
        bad = c.post("/v1/collections/up/documents", content=b"zzz",
                     headers={"content-type": "multipart/form-data; boundary=x"})
        no_files = c.post("/v1/collections/up/documents", data={"note": "no file here"},
                          files=[("x", ("", b""))])
        escape = c.post("/v1/collections/up/documents", files=[("files", ("../../etc/passwd", b"x"))])
    for r in (bad, no_files, escape):
        assert r.status_code == 422, r.text
        assert error(r)["field"] == "files"


def test_question_over_the_length_cap_gives_422_naming_it(limited):
    with limited.client() as c:
        r = c.post("/v1/ask", json={"question": "why? " * 30})
        assert r.status_code == 422 and error(r)["field"] == "question" and "100" in error(r)["message"]
        r = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "q" * 150}]})
        assert r.status_code == 422 and error(r)["field"] == "question"
        r = c.post("/v1/ask", json={"question": "   "})
        assert r.status_code == 422 and error(r)["field"] == "question"


def test_history_over_its_caps_gives_422_naming_it(limited):
    turn = {"role": "user", "content": "an earlier question"}
    with limited.client() as c:
        r = c.post("/v1/ask", json={"question": "ok?", "history": [turn] * 21})
        assert r.status_code == 422 and error(r)["field"] == "history" and "20" in error(r)["message"]
        long_turn = {"role": "assistant", "content": "words " * 30}
        r = c.post("/v1/ask", json={"question": "ok?", "history": [turn, long_turn]})
        assert r.status_code == 422 and error(r)["field"] == "history"
        assert "history[1].content" in error(r)["message"] and "100" in error(r)["message"]
        r = c.post("/v1/ask", json={"question": "ok?", "history": [{"role": "robot", "content": "x"}]})
        assert r.status_code == 422 and "history[0].role" in error(r)["message"]


def test_chat_cuts_a_long_conversation_instead_of_refusing_it(limited):
    """Chat clients resend every turn: 24 turns (over the cap of 20), the last 110 characters
    (over this server's question cap of 100), still answer."""
    turns = [{"role": ("user", "assistant")[i % 2], "content": "vacation days"} for i in range(23)]
    turns.append({"role": "assistant", "content": "vacation days " * 8})
    with limited.client() as c:
        r = c.post("/v1/chat/completions", json={"messages": [*turns, {"role": "user", "content": VACATION_Q}]})
    assert r.status_code == 200, r.text
    assert "22" in r.json()["choices"][0]["message"]["content"]


def test_a_document_is_readable_only_by_its_tenant(tenants):
    with tenants.client("key-acme") as acme, tenants.client("key-beta") as beta:
        own = beta.get("/v1/collections/secrets/documents/nightjar.md")
        assert own.status_code == 200 and BETA_TEXT in own.json()["text"]
        assert own.json()["collection"] == "secrets"
        for name in ("secrets", "beta__secrets"):
            r = acme.get(f"/v1/collections/{name}/documents/nightjar.md")
            # the 404 may echo the id acme itself sent, never beta's text
            assert r.status_code in (404, 422) and not leaks(r.text.replace("'nightjar.md'", ""))


def test_a_burst_beyond_the_queue_is_refused_with_503(assistant):
    gated = GatedAssistant(assistant)
    s = open_settings(assistant, max_concurrent_answers=1, max_queued_answers=0)
    with LiveServer(s, gated) as srv, srv.client() as c:
        first: dict = {}
        worker = threading.Thread(target=lambda: first.update(r=c.post("/v1/ask", json={"question": VACATION_Q})))
        worker.start()
        assert gated.entered.wait(30)
        r = c.post("/v1/ask", json={"question": VACATION_Q})
        assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 1 and error(r)["type"] == "overloaded"
        r = c.post("/v1/ask", json={"question": VACATION_Q, "stream": True})
        assert r.status_code == 503
        gated.gate.set()
        worker.join(60)
        assert first["r"].status_code == 200 and "22" in first["r"].json()["answer"]
        # the slot is free again
        with c.stream("POST", "/v1/ask", json={"question": VACATION_Q, "stream": True}) as r:
            assert [k for k, _ in sse_events(r)][-1] == "done"


class CancelWatchingAssistant:
    """The real Assistant, except that `ask` first holds until the request is withdrawn (its
    cancel event set) or 30 s pass, and records which: the disconnect test watches that event."""

    def __init__(self, inner):
        self.inner = inner
        self.entered = threading.Event()
        self.cancelled = threading.Event()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def ask(self, *args, cancel=None, **kwargs):
        self.entered.set()
        if cancel is not None and cancel.wait(30):
            self.cancelled.set()
        return self.inner.ask(*args, cancel=cancel, **kwargs)


def test_a_client_that_disconnects_cancels_the_work(assistant):
    watching = CancelWatchingAssistant(assistant)
    with LiveServer(open_settings(assistant), watching) as srv, srv.client() as c:
        with c.stream("POST", "/v1/ask", json={"question": VACATION_Q, "stream": True}) as r:
            assert r.status_code == 200
            assert watching.entered.wait(30)
            assert not watching.cancelled.is_set()
        # leaving the block closed the connection mid-stream
        assert watching.cancelled.wait(15)


def test_fuzzing_the_openapi_schema_finds_no_5xx(limited):
    schema = schemathesis.openapi.from_url(f"{limited.url}/schema/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    failures: list[str] = []
    started = time.monotonic()
    for operation in operations:
        heavy = operation.path in ("/v1/ask", "/v1/chat/completions")

        @settings(max_examples=6 if heavy else 15, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def check(case):
            response = case.call(base_url=limited.url, timeout=60)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:200]}")
            assert "Traceback" not in response.text

        check()
    assert not failures, failures
    assert time.monotonic() - started < 240
