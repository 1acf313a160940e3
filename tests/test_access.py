"""Access groups over HTTP, with no leak: a real server on loopback with a key that holds the
`hr` group and keys that do not. The same questions go through every route that can show a
document (answer, citations, related documents, sub-questions, trace, memo, chat, SSE streams,
document list and text, delete, PATCH, upload, feedback), and the whole response bodies of the keys
without `hr` are searched for the protected document's id, title and text.

The store-level filter (both stores), ingest and the settings are in test_access_store.py.
"""

from __future__ import annotations

import json
import time

import pytest
from clirun import run
from test_server_support import SAMPLE, LiveServer, open_settings, shared_assistant, sse_events

COLLECTION = "access"  # tenant corp's: stored as corp__access
SECRET_ID = "comp-7f3q.md"
SECRET_TITLE = "Compensation ledger Quasar"
SECRET_FACT = "Level 3 engineers earn a salary between 71,500 and 86,250 euros a year."
# what must never reach a caller without `hr`: the id, the title, the text
SECRETS = ("comp-7f3q", "Quasar", "71,500", "86,250")
SALARY_Q = "What is the salary range for level 3 engineers?"
TWO_PART_Q = "What is the salary range for level 3 engineers, and how many vacation days do new hires get?"
KEYS = {"key-hr": "corp:hr", "key-plain": "corp", "key-odd": "corp:no-such-group", "key-beta": "beta:hr"}


@pytest.fixture(scope="module")
def assistant(pg_url, embedder, tmp_path_factory):
    """The shared one, with tenant corp's `access` collection (a tenant of its own: other modules
    list acme's collections): the sample handbook for everyone, and one document in group `hr`."""
    assistant = shared_assistant(pg_url, tmp_path_factory.mktemp("server_data"), embedder)
    stored = f"corp__{COLLECTION}"
    assert assistant.ingest_files([SAMPLE], stored).documents_failed == 0
    hr = tmp_path_factory.mktemp("hr")
    (hr / SECRET_ID).write_text(f"# {SECRET_TITLE}\n\n{SECRET_FACT}\n")
    summary = assistant.ingest_files([hr], stored, groups=["hr"])
    assert summary.documents_new == 1 or summary.documents_unchanged == 1
    return assistant


@pytest.fixture(scope="module")
def server(assistant):
    with LiveServer(open_settings(assistant, api_keys=KEYS), assistant) as srv:
        yield srv


@pytest.fixture(scope="module")
def hr(server):
    with server.client("key-hr") as c:
        yield c


@pytest.fixture(scope="module", params=["key-plain", "key-odd"])
def plain(server, request):
    """A key without `hr`: none at all, or one no document carries (it matches nothing)."""
    with server.client(request.param) as c:
        yield c


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked: {text[:2000]}"


def ask(client, question: str = SALARY_Q, **extra) -> dict:
    r = client.post("/v1/ask", json={"question": question, "collection": COLLECTION, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def cited(body: dict) -> set[str]:
    return {c["document_id"] for c in body["citations"]}


def test_the_key_with_the_group_reads_the_protected_document(hr):
    body = ask(hr)
    assert SECRET_ID in cited(body) and "86,250" in body["answer"]
    trace = hr.get(f"/v1/traces/{body['trace_id']}")
    assert trace.status_code == 200 and SECRET_ID in trace.text and "access" not in trace.json()
    assert hr.get(f"/v1/collections/{COLLECTION}/documents/{SECRET_ID}").json()["text"].strip().endswith(SECRET_FACT)


@pytest.mark.parametrize("question", [SALARY_Q, TWO_PART_Q])
def test_answers_memo_and_traces_never_leak(hr, plain, question):
    """The privileged key asks first (its answer is memoised), then the other one asks the same."""
    first = ask(hr, question)
    assert SECRET_ID in cited(first)
    r = plain.post("/v1/ask", json={"question": question, "collection": COLLECTION})
    assert r.status_code == 200
    assert_no_secret(r.text)  # answer, citations, related documents, sub-questions, parts
    body = r.json()
    assert body["usage"]["cache_hits"] == 0 or SECRET_ID not in cited(body)
    own = plain.get(f"/v1/traces/{body['trace_id']}")
    assert own.status_code == 200
    assert_no_secret(own.text)
    other = plain.get(f"/v1/traces/{first['trace_id']}")
    assert other.status_code == 404 and other.json()["error"]["field"] == "trace_id"
    assert_no_secret(other.text)
    if question == TWO_PART_Q:  # the other part is still answered from the public documents
        assert "22" in body["answer"]


def test_an_answer_made_for_the_group_cannot_be_rated_by_a_key_without_it(hr, plain):
    """Not even one that cites nothing: the rating would keep the group's question for insights."""
    declined = ask(hr, "Which river does the Orvelle flow into?")
    assert declined["citations"] == []
    r = plain.post(f"/v1/answers/{declined['trace_id']}/feedback", json={"rating": "down"})
    assert r.status_code == 404 and r.json()["error"]["message"] == f"no answer {declined['trace_id']!r}"
    assert hr.post(f"/v1/answers/{declined['trace_id']}/feedback", json={"rating": "down"}).status_code == 200
    own = ask(plain, "How many vacation days do new hires get?")
    assert plain.post(f"/v1/answers/{own['trace_id']}/feedback", json={"rating": "up"}).status_code == 200
    # another key rates an answer exactly when it may read its trace (hr holds none of key-odd's groups)
    seen = hr.get(f"/v1/traces/{own['trace_id']}").status_code
    assert hr.post(f"/v1/answers/{own['trace_id']}/feedback", json={"rating": "up"}).status_code == seen


def test_streams_and_chat_never_leak(hr, plain):
    ask(hr)  # memoised for hr first
    with plain.stream("POST", "/v1/ask", json={"question": SALARY_Q, "collection": COLLECTION, "stream": True}) as r:
        events = sse_events(r)
    assert events[-1][0] == "done"
    assert_no_secret(json.dumps(events))
    messages = [{"role": "user", "content": SALARY_Q}]
    r = plain.post("/v1/chat/completions", json={"model": COLLECTION, "messages": messages})
    assert r.status_code == 200 and r.json()["model"] == COLLECTION
    assert_no_secret(r.text)
    with plain.stream("POST", "/v1/chat/completions",
                      json={"model": COLLECTION, "messages": messages, "stream": True}) as r:
        streamed = "\n".join(r.iter_lines())
    assert "[DONE]" in streamed
    assert_no_secret(streamed)
    # the same chat for hr names the document: the routes above were given something to leak
    r = hr.post("/v1/chat/completions", json={"model": COLLECTION, "messages": messages})
    assert SECRET_ID in r.text


def test_document_list_text_delete_and_patch_treat_it_as_missing(hr, plain):
    base = f"/v1/collections/{COLLECTION}/documents"
    listed = plain.get(base)
    assert listed.status_code == 200 and "vacation-policy.txt" in listed.text
    assert_no_secret(listed.text)
    assert SECRET_ID in hr.get(base).text
    counts = {c["name"]: c["documents"] for c in plain.get("/v1/collections").json()["collections"]}
    hr_counts = {c["name"]: c["documents"] for c in hr.get("/v1/collections").json()["collections"]}
    assert counts[COLLECTION] == hr_counts[COLLECTION] - 1
    missing = plain.get(f"{base}/no-such-doc.md").json()["error"]  # what a missing document gets
    for r in (plain.get(f"{base}/{SECRET_ID}"), plain.delete(f"{base}/{SECRET_ID}"),
              plain.patch(f"{base}/{SECRET_ID}", json={"groups": []})):
        assert r.status_code == 404
        assert r.json()["error"] == {**missing, "message": missing["message"].replace("no-such-doc.md", SECRET_ID)}
    assert hr.get(f"{base}/{SECRET_ID}").status_code == 200  # the delete did nothing


def test_an_upload_cannot_replace_a_document_outside_the_callers_groups(hr, plain):
    base = f"/v1/collections/{COLLECTION}/documents"
    r = plain.post(base, files=[("files", (SECRET_ID, "# Overwritten\n\nNothing here.\n", "text/markdown"))])
    assert r.status_code == 422  # its only file failed
    assert hr.get(f"{base}/{SECRET_ID}").json()["text"].strip().endswith(SECRET_FACT)


def test_patch_changes_groups_without_reembedding_and_memo_entries_die(server):
    base = f"/v1/collections/{COLLECTION}/documents"
    with server.client("key-hr") as hr, server.client("key-plain") as plain:
        chunks = hr.get(f"{base}/{SECRET_ID}").json()["chunks"]
        try:
            r = hr.patch(f"{base}/{SECRET_ID}", json={"groups": []})
            assert r.status_code == 200 and r.json()["groups"] == [] and r.json()["chunks"] == chunks
            assert SECRET_ID in cited(ask(plain))  # everyone's now: memoised for plain
            r = hr.patch(f"{base}/{SECRET_ID}", json={"groups": ["hr", "finance"]})
            assert r.status_code == 200 and r.json()["groups"] == ["finance", "hr"]
            again = plain.post("/v1/ask", json={"question": SALARY_Q, "collection": COLLECTION})
            assert_no_secret(again.text)  # the version changed: the memo entry is not served
        finally:
            assert hr.patch(f"{base}/{SECRET_ID}", json={"groups": ["hr"]}).status_code == 200


def test_an_upload_with_groups_is_protected(server):
    with server.client("key-hr") as hr, server.client("key-plain") as plain:
        base = "/v1/collections/uploads/documents"
        fact = "The Osprey bonus pool is 412,000 euros this year."
        r = hr.post(base, data={"groups": "hr"}, files=[("files", ("osprey.md", f"# Osprey\n\n{fact}\n", "text/markdown"))])
        assert r.status_code == 200, r.text
        assert hr.get(f"{base}/osprey.md").json()["groups"] == ["hr"]
        assert plain.get(f"{base}/osprey.md").status_code == 404
        r = plain.post("/v1/ask", json={"question": "How big is the Osprey bonus pool?", "collection": "uploads"})
        assert "412,000" not in r.text and "osprey.md" not in r.text


def test_a_background_upload_job_gives_its_documents_the_groups(assistant):
    settings = open_settings(assistant, api_keys=KEYS, background_upload_bytes=10)
    fact = "The Heron retention bonus is 9,100 euros."
    with LiveServer(settings, assistant) as jobs, jobs.client("key-hr") as hr, jobs.client("key-plain") as plain:
        r = hr.post("/v1/collections/jobbed/documents", data={"groups": "hr"},
                    files=[("files", ("heron.md", f"# Heron\n\n{fact}\n", "text/markdown"))])
        assert r.status_code == 202, r.text
        deadline = time.monotonic() + 60
        while (job := hr.get(r.json()["url"]).json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.1)
        assert job["status"] == "done" and job["summary"]["documents_failed"] == 0, job
        assert hr.get("/v1/collections/jobbed/documents/heron.md").json()["groups"] == ["hr"]
        assert plain.get("/v1/collections/jobbed/documents/heron.md").status_code == 404


def test_another_tenant_with_the_same_group_reads_nothing_of_corp(server):
    with server.client("key-beta") as beta:
        r = beta.get(f"/v1/collections/{COLLECTION}/documents/{SECRET_ID}")
        assert r.status_code == 404 and r.json()["error"]["field"] == "collection"


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [{"groups": ["bad name"]}, {"groups": ["a" * 64]}, {"groups": "hr"}, {},
                                  {"groups": ["hr"], "title": "x"}])
def test_a_bad_patch_is_422_naming_the_field(hr, body):
    r = hr.patch(f"/v1/collections/{COLLECTION}/documents/{SECRET_ID}", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] in ("groups", "title", "body")
    if body.get("groups") == ["bad name"]:
        assert r.json()["error"]["field"] == "groups" and "'bad name'" in r.json()["error"]["message"]


def test_a_bad_upload_groups_field_is_422(hr):
    r = hr.post(f"/v1/collections/{COLLECTION}/documents", data={"groups": "hr,,x"},
                files=[("files", ("x.md", "# X\n\nx\n", "text/markdown"))])
    assert r.status_code == 422 and r.json()["error"]["field"] == "groups"


def test_a_malformed_key_spec_stops_the_server_at_start_naming_the_setting(tmp_path):
    done = run("serve", "--port", "1", cwd=tmp_path, extra_env={"RAG_RLM_API_KEYS": "k1=acme:hr||finance,k2=acme"})
    assert done.returncode == 2, done
    assert "api_keys" in done.stderr and "'acme:hr||finance'" in done.stderr and "k1" not in done.stderr
