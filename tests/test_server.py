"""The HTTP server on loopback, driven with httpx and the official openai client: cited answers,
SSE order, OpenAI-compatible chat, upload -> ask -> delete, traces, health, metrics, schema."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from openai import OpenAI
from test_server_support import COLLECTION, LiveServer, open_settings, shared_assistant, sse_events

VACATION_Q = "How many vacation days do new hires get per year?"


@pytest.fixture(scope="module")
def server(pg_url, embedder, tmp_path_factory):
    assistant = shared_assistant(pg_url, tmp_path_factory.mktemp("server_data"), embedder)
    with LiveServer(open_settings(assistant), assistant) as srv:
        yield srv


@pytest.fixture
def http(server):
    with server.client() as c:
        yield c


@pytest.fixture
def openai_client(server):
    return OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)


def cited_documents(body: dict) -> set[str]:
    return {c["document_id"] for c in body["citations"]}


def test_ask_returns_a_cited_answer_naming_the_right_document(http):
    r = http.post("/v1/ask", json={"question": VACATION_Q})
    assert r.status_code == 200, r.text
    body = r.json()
    assert "22" in body["answer"]
    assert "vacation-policy.txt" in cited_documents(body)
    assert body["collection"] == COLLECTION and body["status"] in ("ok", "partial", "degraded")
    assert {"llm_calls", "tokens_in", "tokens_out", "cache_hits", "seconds"} <= set(body["usage"])
    assert r.headers["X-Request-ID"]


def test_request_id_goes_in_the_header_and_the_trace(http):
    r = http.post("/v1/ask", json={"question": VACATION_Q, "top_k": 3}, headers={"X-Request-ID": "req-abc.123"})
    assert r.status_code == 200 and r.headers["X-Request-ID"] == "req-abc.123"
    trace = http.get(f"/v1/traces/{r.json()['trace_id']}")
    assert trace.status_code == 200
    assert trace.json()["request_id"] == "req-abc.123" and trace.json()["nodes"]
    assert http.get("/v1/traces/does-not-exist").status_code == 404


def test_sse_stream_events_arrive_in_order_and_end_with_done(http):
    question = "How many vacation days do new hires get, and how fast must the on-call primary acknowledge a page?"
    with http.stream("POST", "/v1/ask", json={"question": question, "stream": True}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r)
    kinds = [k for k, _ in events]
    assert kinds[0] == "plan" and kinds[-1] == "done"
    order = {"plan": 0, "sub_answer": 1, "delta": 2, "citations": 3, "done": 4}
    ranks = [order[k] for k in kinds]
    assert ranks == sorted(ranks), kinds  # plan < sub_answer < delta < citations < done
    assert "delta" in kinds and kinds.count("citations") == 1
    done = json.loads(events[-1][1])
    text = "".join(json.loads(d)["text"] for k, d in events if k == "delta")
    assert text == done["answer"] and "22" in text
    assert done["usage"]["seconds"] >= 0 and done["trace_id"]


def test_accept_header_alone_asks_for_a_stream(http):
    with http.stream("POST", "/v1/ask", json={"question": VACATION_Q},
                     headers={"Accept": "text/event-stream"}) as r:
        kinds = [k for k, _ in sse_events(r)]
    assert kinds[0] == "plan" and kinds[-1] == "done"


def test_chat_completions_with_the_openai_client(openai_client):
    reply = openai_client.chat.completions.create(
        model="rag-rlm", messages=[{"role": "user", "content": VACATION_Q}], temperature=0.2)
    content = reply.choices[0].message.content
    assert "22" in content and "Sources:" in content and "vacation-policy.txt" in content
    assert reply.choices[0].finish_reason == "stop" and reply.model == COLLECTION
    assert any(c["document_id"] == "vacation-policy.txt" for c in reply.model_extra["citations"])
    assert reply.model_extra["found"] is True and reply.model_extra["parts"][0]["found"] is True
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens > 0


def test_chat_completions_streaming_with_the_openai_client(openai_client):
    chunks = list(openai_client.chat.completions.create(
        model=COLLECTION, stream=True,
        messages=[{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "Where is the Lisbon office?"},
                  {"role": "assistant", "content": "In Lisbon."},
                  {"role": "user", "content": VACATION_Q}]))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "22" in text and "vacation-policy.txt" in text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["citations"]
    assert chunks[-1].model_extra["found"] is True and "22" in chunks[-1].model_extra["parts"][0]["answer"]


def test_models_lists_collections(openai_client):
    assert COLLECTION in {m.id for m in openai_client.models.list()}


def test_upload_then_ask_finds_it_and_delete_then_ask_does_not(http):
    name = "up_" + uuid.uuid4().hex[:8]
    fact = "The Zephyr lab door code is 4417 and it changes every Tuesday."
    files = [("files", ("notes/zephyr.md", f"# Zephyr lab\n\n{fact}\n", "text/markdown")),
             ("files", ("canteen.txt", "The canteen serves lunch from noon to two.\n", "text/plain"))]
    r = http.post(f"/v1/collections/{name}/documents", files=files)
    assert r.status_code == 200, r.text
    assert r.json()["documents_new"] == 2 and r.json()["chunks_written"] >= 2
    again = http.post(f"/v1/collections/{name}/documents", files=files)  # same files: idempotent
    assert again.json()["documents_unchanged"] == 2 and again.json()["chunks_written"] == 0
    listed = http.get(f"/v1/collections/{name}/documents").json()["documents"]
    assert {d["id"] for d in listed} == {"notes/zephyr.md", "canteen.txt"}

    ask = {"question": "What is the Zephyr lab door code?", "collection": name}
    found = http.post("/v1/ask", json=ask).json()
    assert "notes/zephyr.md" in cited_documents(found) and "4417" in found["answer"]

    assert http.delete(f"/v1/collections/{name}/documents/notes/zephyr.md").status_code == 200
    assert http.delete(f"/v1/collections/{name}/documents/notes/zephyr.md").status_code == 404
    after = http.post("/v1/ask", json=ask).json()
    assert "notes/zephyr.md" not in cited_documents(after) and "4417" not in after["answer"]


def test_ask_with_history_resolves_a_follow_up(http):
    history = [{"role": "user", "content": "Tell me about vacation days for new hires."},
               {"role": "assistant", "content": "New hires get paid vacation."}]
    r = http.post("/v1/ask", json={"question": "How many per year?", "history": history})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["question"] == "How many per year?" and "22" in body["answer"]
    assert "vacation-policy.txt" in cited_documents(body)


def test_a_document_comes_back_with_its_text_at_the_offsets_of_its_citations(http):
    name = "doc_" + uuid.uuid4().hex[:8]
    text = "# Heron project\n\nThe Heron project ships its first prototype in March.\n\nIts lead is Ana Silva.\n"
    files = [("files", ("specs/heron.md", text, "text/markdown"))]
    assert http.post(f"/v1/collections/{name}/documents", files=files).status_code == 200
    r = http.get(f"/v1/collections/{name}/documents/specs/heron.md")
    assert r.status_code == 200, r.text
    doc = r.json()
    assert (doc["collection"], doc["id"], doc["chunks"]) == (name, "specs/heron.md", 1) and doc["title"]
    assert "first prototype in March" in doc["text"] and "Ana Silva" in doc["text"]
    listed = http.get(f"/v1/collections/{name}/documents").json()["documents"]  # the listing route still answers
    assert [d["id"] for d in listed] == ["specs/heron.md"]

    ask = http.post("/v1/ask", json={"question": "When does the Heron prototype ship?", "collection": name}).json()
    assert ask["citations"]
    for c in ask["citations"]:  # a citation's offsets index into its document's text
        assert doc["text"][c["start"]:c["end"]] == c["text"]
        assert all(0 <= a < b <= len(doc["text"]) for a, b in c["quotes"])


def test_a_missing_document_or_collection_is_404_naming_it(http):
    name = "doc_" + uuid.uuid4().hex[:8]
    files = [("files", ("a/b.md", "# B\n\nSome words.\n", "text/markdown"))]
    assert http.post(f"/v1/collections/{name}/documents", files=files).status_code == 200
    r = http.get(f"/v1/collections/{name}/documents/a/nope.md")
    assert r.status_code == 404 and r.json()["error"]["field"] == "document_id"
    assert "a/nope.md" in r.json()["error"]["message"] and name in r.json()["error"]["message"]
    r = http.get("/v1/collections/no_such_thing/documents/a/b.md")
    assert r.status_code == 404 and r.json()["error"]["field"] == "collection"
    assert "no_such_thing" in r.json()["error"]["message"]
    assert http.delete(f"/v1/collections/{name}/documents/a/b.md").status_code == 200  # DELETE shares the path
    assert http.get(f"/v1/collections/{name}/documents/a/b.md").status_code == 404


def test_large_upload_runs_as_a_background_job(http):
    name = "big_" + uuid.uuid4().hex[:8]
    big = "The big file marker sentence.\n" + " " * 2_100_000
    r = http.post(f"/v1/collections/{name}/documents", files=[("files", ("big.txt", big, "text/plain"))])
    assert r.status_code == 202, r.text
    job_url = r.json()["url"]
    deadline = time.monotonic() + 120
    while (job := http.get(job_url).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    assert job["status"] == "done", job
    assert job["summary"]["documents_new"] + job["summary"]["documents_failed"] == 1
    assert http.get("/v1/jobs/nope").status_code == 404


def test_unknown_collection_is_404_naming_it(http):
    r = http.post("/v1/ask", json={"question": VACATION_Q, "collection": "no_such_thing"})
    assert r.status_code == 404
    assert r.json()["error"]["field"] == "collection" and "no_such_thing" in r.json()["error"]["message"]
    assert http.get("/v1/collections/no_such_thing/documents").status_code == 404
    assert http.delete("/v1/collections/no_such_thing/documents/a/b.md").status_code == 404
    streamed = http.post("/v1/ask", json={"question": VACATION_Q, "collection": "no_such_thing", "stream": True})
    assert streamed.status_code == 404


def test_collections_health_metrics_and_schema(http):
    cols = {c["name"]: c for c in http.get("/v1/collections").json()["collections"]}
    assert cols[COLLECTION]["documents"] == 11 and cols[COLLECTION]["chunks"] > 0
    health = http.get("/health").json()
    assert health["status"] == "ok" and health["version"] and health["store"]["reachable"]
    assert health["backend"] == {"kind": "extractive", "reachable": True}
    http.post("/v1/ask", json={"question": VACATION_Q})
    metrics = http.get("/metrics").text
    assert 'rag_rlm_http_requests_total{method="POST",route="/v1/ask",status="200"}' in metrics
    assert 'rag_rlm_http_request_duration_seconds_bucket{route="/v1/ask",le="+Inf"}' in metrics
    assert "rag_rlm_answers_total{status=" in metrics and "rag_rlm_tokens_total{direction=" in metrics
    schema = http.get("/schema/openapi.json").json()
    assert {"/v1/ask", "/v1/chat/completions", "/v1/models", "/health"} <= set(schema["paths"])
    doc_path = "/v1/collections/{name}/documents/{document_id}"
    assert {"get", "delete"} <= set(schema["paths"][doc_path])
    assert http.get("/schema/swagger").status_code == 200


def test_errors_are_json_and_never_a_stack_trace(http):
    r = http.get("/v1/nowhere")
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found"
    r = http.post("/v1/ask", json={"question": VACATION_Q, "collection": "bad name!"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "collection"
    assert "Traceback" not in r.text
