"""Answer feedback over HTTP on a real server (POST /v1/answers/{trace_id}/feedback), on both
places the ratings live: PostgreSQL (pgvector store) and the SQLite file (Qdrant store)."""

from __future__ import annotations

import re

import pytest
from conftest import STORE_KINDS
from insights_support import VACATION_Q, live_setup, now_iso

from rag_rlm.insights import Window
from rag_rlm.insights.records import MAX_COMMENT_CHARS


@pytest.fixture(scope="module", params=STORE_KINDS)
def setup(request, pg_url, embedder, tmp_path_factory):
    with live_setup(request.param, pg_url, tmp_path_factory.mktemp("feedback"), embedder) as s:
        yield s


def ask(setup, key: str, question: str = VACATION_Q) -> dict:
    with setup.server.client(key) as c:
        r = c.post("/v1/ask", json={"question": question})
    assert r.status_code == 200, r.text
    return r.json()


def rate(setup, key: str, trace_id: str, **body):
    with setup.server.client(key) as c:
        return c.post(f"/v1/answers/{trace_id}/feedback", json=body)


def stored_ratings(setup, trace_id: str) -> list:
    store = setup.insight_store()
    try:
        window = Window(f"{setup.tenants[0]}__handbook", since=0)
        return [r for r in store.ratings(window) if r.trace_id == trace_id]
    finally:
        store.close()


def rated_down(setup, key: str, since: str) -> list[dict]:
    with setup.server.client(key) as c:
        r = c.get("/v1/insights", params={"since": since})
    assert r.status_code == 200, r.text
    return r.json()["rated_down"]


def test_a_rating_is_stored_with_the_answer_and_the_last_one_counts(setup):
    start = now_iso()
    answer = ask(setup, "key-a1")
    trace = answer["trace_id"]
    first = rate(setup, "key-a1", trace, rating="up")
    assert first.status_code == 200, first.text
    assert first.json()["rating"] == "up" and first.json()["trace_id"] == trace
    assert rate(setup, "key-a1", trace, rating="down", comment="  says nothing about part-timers ").status_code == 200

    [kept] = stored_ratings(setup, trace)  # one rating per answer per key: the last one
    assert kept.rating == "down" and kept.comment == "says nothing about part-timers"
    assert kept.question == VACATION_Q and kept.answer == answer["answer"] and "22" in kept.answer
    assert kept.tenant == setup.tenants[0] and kept.collection == f"{setup.tenants[0]}__handbook"
    assert [c["document_id"] for c in kept.citations] == [c["document_id"] for c in answer["citations"]]
    assert re.fullmatch(r"[0-9a-f]{64}", kept.rater) and "key-a1" not in kept.rater  # a hash, never the key

    assert rate(setup, "key-a2", trace, rating="down").status_code == 200  # another key of the tenant
    [listed] = rated_down(setup, "key-a1", start)
    assert (listed["trace_id"], listed["down"], listed["up"]) == (trace, 2, 0)
    assert listed["comments"] == ["says nothing about part-timers"]
    assert listed["citations"][0]["document_id"] == "vacation-policy.txt"

    assert rate(setup, "key-a1", trace, rating="up").status_code == 200  # changed their mind
    [listed] = rated_down(setup, "key-a1", start)
    assert (listed["down"], listed["up"], listed["comments"]) == (1, 1, [])
    assert rate(setup, "key-a2", trace, rating="up").status_code == 200
    assert rated_down(setup, "key-a1", start) == []
    assert len(stored_ratings(setup, trace)) == 2


def test_the_key_itself_is_never_stored(setup):
    trace = ask(setup, "key-a1")["trace_id"]
    assert rate(setup, "key-a1", trace, rating="down", comment="stale").status_code == 200
    if setup.settings.store.startswith("qdrant"):
        from pathlib import Path

        data = Path(setup.settings.data_dir)
        files = b"".join(p.read_bytes() for p in data.glob("insights.sqlite3*"))
        assert b"stale" in files and b"key-a1" not in files
    assert all("key-a" not in r.rater for r in stored_ratings(setup, trace))


def test_an_unknown_answer_or_another_tenants_is_404(setup):
    trace = ask(setup, "key-a1")["trace_id"]
    for key, trace_id in (("key-a1", "no-such-trace"), ("key-b", trace), ("key-b", "no-such-trace")):
        r = rate(setup, key, trace_id, rating="down")
        assert r.status_code == 404, r.text
        assert r.json()["error"]["field"] == "trace_id"
        assert r.json()["error"]["message"] == f"no answer {trace_id!r}"  # the same either way
    assert stored_ratings(setup, trace) == []
    with setup.server.client() as c:  # and no key at all
        assert c.post(f"/v1/answers/{trace}/feedback", json={"rating": "up"}).status_code == 401


@pytest.mark.parametrize(("body", "field"), [
    ({"rating": "meh"}, "rating"),
    ({"rating": "UP"}, "rating"),
    ({"rating": ""}, "rating"),
    ({}, "rating"),
    ({"rating": 1}, "rating"),
    ({"rating": "down", "comment": "x" * (MAX_COMMENT_CHARS + 1)}, "comment"),
    ({"rating": "down", "comment": 7}, "comment"),
])
def test_a_bad_rating_or_comment_is_422_naming_the_field(setup, body, field):
    trace = ask(setup, "key-a1")["trace_id"]
    r = rate(setup, "key-a1", trace, **body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == field
    assert stored_ratings(setup, trace) == []


def test_a_comment_at_the_limit_is_kept_whole(setup):
    trace = ask(setup, "key-a1")["trace_id"]
    comment = "y" * MAX_COMMENT_CHARS
    assert rate(setup, "key-a1", trace, rating="down", comment=comment).status_code == 200
    assert stored_ratings(setup, trace)[0].comment == comment
