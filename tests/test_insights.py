"""What the knowledge base is missing (GET /v1/insights, `rag-rlm insights`) on a real server over
the sample corpus, with the question log in PostgreSQL (pgvector store) or in the SQLite file
(Qdrant store): not-found questions grouped by meaning, answers rated down, documents most and
never cited, tenants apart, `store_questions=false`, purge by age. Each test reads the window
from its own start, so the questions of the others are not counted."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import STORE_KINDS
from insights_support import TRAVEL_Q, VACATION_Q, live_setup, now_iso
from test_server_support import LiveServer, sse_events

from rag_rlm.access import Access
from rag_rlm.insights import AskedQuestion, Rating, Window, cutoff, readable_by
from rag_rlm.insights.cluster import group
from rag_rlm.insights.report import build
from rag_rlm.types import DocumentRecord

GYM = ["Is there a gym membership discount for employees?", "Do we get a discount on gym memberships?",
       "Does the company pay for a gym or fitness membership?", "Can I get my gym subscription reimbursed?"]
PETS = ["Can I bring my dog to the office?", "Are pets allowed in the office?", "Is the office dog friendly?"]


@pytest.fixture(scope="module", params=STORE_KINDS)
def setup(request, pg_url, embedder, tmp_path_factory):
    with live_setup(request.param, pg_url, tmp_path_factory.mktemp("insights"), embedder, full=True) as s:
        yield s


def ask(setup, key: str, question: str) -> dict:
    with setup.server.client(key) as c:
        r = c.post("/v1/ask", json={"question": question})
    assert r.status_code == 200, r.text
    return r.json()


def report(setup, key: str, since: str, server: LiveServer | None = None) -> dict:
    with (server or setup.server).client(key) as c:
        r = c.get("/v1/insights", params={"collection": "handbook", "since": since})
    assert r.status_code == 200, r.text
    return r.json()


def test_not_found_questions_are_grouped_by_meaning(setup):
    start = now_iso()
    for q in [*GYM[:3], PETS[0], PETS[1], GYM[0]]:  # GYM[0] twice: one wording, asked twice
        assert ask(setup, "key-a1", q)["found"] is False, q
    assert ask(setup, "key-a1", VACATION_Q)["found"] is True
    with setup.server.client("key-a2") as c:  # a stream and a chat are logged as well
        with c.stream("POST", "/v1/ask", json={"question": GYM[3], "stream": True}) as r:
            assert json.loads(sse_events(r)[-1][1])["found"] is False
        chat = c.post("/v1/chat/completions", json={"model": "handbook",
                                                     "messages": [{"role": "user", "content": PETS[2]}]})
        assert chat.status_code == 200 and chat.json()["found"] is False

    body = report(setup, "key-a1", start)
    assert (body["questions"], body["not_found_questions"], body["not_found_groups"]) == (9, 8, 2)
    gym, pets = body["not_found"]  # the most asked first
    assert (gym["count"], gym["wordings"], pets["count"], pets["wordings"]) == (5, 4, 3, 3)
    assert gym["label"] in GYM and pets["label"] in PETS
    assert {q["question"] for q in gym["questions"]} == set(GYM)
    assert {q["question"] for q in pets["questions"]} == set(PETS)
    assert next(q["count"] for q in gym["questions"] if q["question"] == GYM[0]) == 2
    assert gym["last_asked"] >= start[:19] and body["collection"] == "handbook"


def test_answers_rated_down_are_listed_with_citations_and_comments(setup):
    start = now_iso()
    down = ask(setup, "key-a1", VACATION_Q)
    up = ask(setup, "key-a1", TRAVEL_Q)
    with setup.server.client("key-a1") as c:
        assert c.post(f"/v1/answers/{down['trace_id']}/feedback",
                      json={"rating": "down", "comment": "what about part-timers?"}).status_code == 200
        assert c.post(f"/v1/answers/{up['trace_id']}/feedback", json={"rating": "up"}).status_code == 200
    body = report(setup, "key-a1", start)
    [listed] = body["rated_down"]
    assert listed["trace_id"] == down["trace_id"] and listed["question"] == VACATION_Q
    assert listed["answer"] == down["answer"] and listed["comments"] == ["what about part-timers?"]
    assert [c["document_id"] for c in listed["citations"]] == [c["document_id"] for c in down["citations"]]
    assert listed["citations"][0] == {"n": 1, "document_id": "vacation-policy.txt", "title": "Vacation policy"}
    assert body["rated_down_answers"] == 1


def test_documents_most_and_never_cited(setup):
    start = now_iso()
    for q in (VACATION_Q, "How many vacation days carry over to next year?", TRAVEL_Q):
        assert ask(setup, "key-a1", q)["found"] is True
    body = report(setup, "key-a1", start)
    most = {d["document_id"]: d["citations"] for d in body["most_cited"]}
    assert most["vacation-policy.txt"] == 2 and most["travel-policy.html"] >= 1
    assert body["most_cited"][0] == {"document_id": "vacation-policy.txt", "title": "Vacation policy", "citations": 2}
    never = {d["document_id"] for d in body["never_cited"]}
    assert never and not never & set(most)
    assert never | set(most) == {r.id for r in setup.assistant.documents(f"{setup.tenants[0]}__handbook")}
    assert body["documents"] == 11 and body["never_cited_documents"] == len(never)


def test_a_tenant_sees_only_its_own(setup):
    start = now_iso()
    ask(setup, "key-a1", GYM[0])
    ask(setup, "key-b", PETS[0])
    mine, theirs = report(setup, "key-a1", start), report(setup, "key-b", start)
    assert [g["label"] for g in mine["not_found"]] == [GYM[0]]
    assert [g["label"] for g in theirs["not_found"]] == [PETS[0]]
    assert mine["questions"] == theirs["questions"] == 1
    with setup.server.client("key-b") as c:  # b's "handbook" is b's: a's questions are not in it
        assert c.get("/v1/insights", params={"collection": f"{setup.tenants[0]}__handbook"}).status_code == 422


def test_store_questions_false_stores_nothing(setup):
    start = now_iso()
    since = time.time()
    with LiveServer(setup.settings.replace(store_questions=False), setup.assistant) as quiet:
        with quiet.client("key-a1") as c:
            assert c.post("/v1/ask", json={"question": GYM[1]}).status_code == 200
            assert c.post("/v1/ask", json={"question": VACATION_Q}).status_code == 200
        assert report(setup, "key-a1", start, server=quiet)["questions"] == 0
    store = setup.insight_store()
    try:
        assert store.questions(Window(f"{setup.tenants[0]}__handbook", since)) == []
    finally:
        store.close()


def test_since_and_collection_are_checked(setup):
    with setup.server.client("key-a1") as c:
        bad = c.get("/v1/insights", params={"since": "last tuesday"})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "since"
        assert c.get("/v1/insights", params={"collection": "nope"}).status_code == 404
        assert c.get("/v1/insights", params={"since": "2w"}).status_code == 200
    with setup.server.client() as c:
        assert c.get("/v1/insights").status_code == 401


def test_the_cli_reports_and_purges_by_age(pg_url, tmp_path, monkeypatch, capsys):
    from rag_rlm.cli import main
    from rag_rlm.insights.store import open_insight_store

    collection = "purge_" + str(int(time.time() * 1000))
    now = time.time()
    store = open_insight_store(pg_url, str(tmp_path))
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    try:
        for age_days, question in ((100, "old question"), (1, "recent question")):
            at = now - age_days * 86400
            store.log(AskedQuestion("t" + question, "", collection, question, False, vector=vector, at=at))
            store.rate(Rating("t" + question, "r", "", collection, "down", "", question, "", [], at=at))
        monkeypatch.setenv("RAG_RLM_DATA_DIR", str(tmp_path))
        assert main(["--store", pg_url, "insights", "purge"]) == 2  # --older-than is required
        assert main(["--store", pg_url, "insights", "purge", "--older-than", "90d"]) == 0
        assert "removed" in capsys.readouterr().out
        left = store.questions(Window(collection, 0))
        assert [q.question for q in left] == ["recent question"]
        assert [r.question for r in store.ratings(Window(collection, 0))] == ["recent question"]
    finally:
        store.close()
    with pytest.raises(SystemExit) as e:
        main(["insights", "--since", "yesterday-ish"])
    assert e.value.code == 2


# on PostgreSQL only: Qdrant local mode lets one process open its folder, and the server has it
@pytest.mark.parametrize("setup", ["pgvector"], indirect=True)
def test_the_cli_report_matches_the_server(setup, monkeypatch, capsys):
    from rag_rlm.cli import main

    start = now_iso()
    ask(setup, "key-a1", GYM[2])
    served = report(setup, "key-a1", start)
    monkeypatch.setenv("RAG_RLM_DATA_DIR", setup.settings.data_dir)
    stored = f"{setup.tenants[0]}__handbook"
    assert main(["--store", setup.settings.store, "insights", "-c", stored, "--since", start, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["not_found"] == served["not_found"] and body["collection"] == stored
    assert main(["--store", setup.settings.store, "insights", "-c", stored, "--since", start]) == 0
    text = capsys.readouterr().out
    assert "Not found, grouped by meaning (1 groups)" in text and GYM[2] in text
    assert main(["--store", setup.settings.store, "insights", "-c", "nope"]) == 1


def test_a_maintainer_sees_only_what_their_groups_can_read():
    """The one predicate (`readable_by`), with documents and keys that carry access groups."""
    def record(doc_id: str, *groups: str):
        return DocumentRecord(doc_id, doc_id.title(), doc_id, "h", 1, groups=groups)

    documents = {"handbook": record("handbook"), "salaries": record("salaries", "hr")}
    vector = np.ones(4, dtype=np.float32) / 2
    questions = [AskedQuestion("1", "acme", "c", "What is the pay band?", True, ("salaries",)),
                 AskedQuestion("2", "acme", "c", "When is the deploy freeze?", True, ("handbook",)),
                 AskedQuestion("3", "acme", "c", "Is there a gym?", False, (), vector=vector)]
    ratings = [Rating("1", "r", "acme", "c", "down", "", "What is the pay band?", "", [{"document_id": "salaries"}])]
    staff = build(questions, ratings, documents, readable_by(SimpleNamespace(tenant="acme", access=Access.of(()))))
    hr = build(questions, ratings, documents, readable_by(SimpleNamespace(tenant="acme", access=Access.of(["hr"]))))
    assert staff["questions"] == 2 and staff["rated_down"] == [] and staff["documents"] == 1
    assert {d["document_id"] for d in staff["most_cited"]} == {"handbook"}
    assert hr["questions"] == 3 and len(hr["rated_down"]) == 1 and hr["documents"] == 2
    assert staff["not_found"][0]["label"] == hr["not_found"][0]["label"] == "Is there a gym?"
    # a document without groups is everyone's in the tenant; the operator (no caller) reads all
    plain = {"a": DocumentRecord("a", "A", "a", "h", 1)}
    assert readable_by(SimpleNamespace(tenant="acme", access=Access.of(())))(plain["a"])
    assert readable_by(None)(documents["salaries"])


def test_groups_past_the_matrix_cap_join_their_nearest_group():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(3, 64))
    labels = np.repeat([0, 1, 2], 40)
    rng.shuffle(labels)
    vectors = centres[labels] + rng.normal(size=(120, 64)) * 0.05
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for cap in (2000, 25):  # the second clusters 25 at a time
        groups = group(vectors, threshold=0.5, max_items=cap)
        assert sorted(len(g) for g in groups) == [40, 40, 40]
        assert all(len(set(labels[g])) == 1 for g in groups)
    assert group(np.zeros((0, 64))) == []


def test_since_reads_durations_and_dates():
    now = 1_800_000_000.0
    assert cutoff("30d", now) == now - 30 * 86400
    assert cutoff("2w 3d", now) == now - 17 * 86400
    assert cutoff("12h", now) == now - 43200 and cutoff("90m", now) == now - 5400
    assert cutoff("2026-01-31", now) == 1769817600.0
    assert cutoff("2026-01-31T01:00:00+01:00", now) == 1769817600.0
    for bad in ("", "30", "d", "30y", "yesterday"):
        with pytest.raises(ValueError, match="duration"):
            cutoff(bad, now)


@pytest.mark.parametrize("command", [["insights"], ["insights", "purge", "--older-than", "90d"]])
def test_the_insights_commands_take_the_flags_every_command_takes(command):
    from rag_rlm import clikit
    from rag_rlm.cli import _parser

    for flags, quiet, verbose in ((["-q"], True, False), (["--verbose"], False, True), ([], False, False)):
        args = _parser().parse_args([*command, *flags])
        assert (args.quiet, args.verbose) == (quiet, verbose)
    assert clikit.verbosity(_parser().parse_args([*command, "-q", "-v"])) == clikit.VERBOSE
