"""`rag-rlm eval` end to end on a tiny corpus in a real embedded PostgreSQL, and its errors on
bad input files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_rlm.cli import main
from rag_rlm.eval import metrics
from rag_rlm.eval.data import DataError, check_corpus, read_questions
from rag_rlm.eval.splits import half
from rag_rlm.memory import open_store

DATA = Path(__file__).parent / "data" / "eval"
QUESTIONS, CORPUS = DATA / "questions.jsonl", DATA / "corpus.jsonl"


def _eval(pg_url: str, *args: str) -> int:
    return main(["--store", pg_url, "eval", *args, "--quiet"])


def _figures(report: dict):
    for by_k in report["overall"].values():
        yield from by_k.values()
    for agg in report["by_type"].values():
        for by_k in agg.values():
            yield from by_k.values()


ANSWER_KEYS = ("exact_match", "f1", "containment", "lead_containment")


def test_eval_both_modes_end_to_end(pg_url, collection, tmp_path, capsys):
    out = tmp_path / "out"
    rc = _eval(pg_url, str(QUESTIONS), "--collection", collection, "--corpus", str(CORPUS), "--k", "1,3",
               "--out", str(out))
    first = capsys.readouterr()
    assert rc == 0, first.err
    assert "5 new" in first.err

    report = json.loads((out / "report.json").read_text())
    assert set(report["overall"]) == {"flat", "recursive"}
    assert set(report["overall"]["flat"]) == {"1", "3"}
    assert set(report["by_type"]) == {"bridge", "comparison", "unanswerable"}
    assert len(report["rows"]) == 4 * 2 * 2
    for figures in _figures(report):
        keys = ("recall", "all_supporting", "declined")
        if figures["answerable"]:  # answer figures are over answerable questions only
            keys += ANSWER_KEYS
        else:
            assert all(figures[key] is None for key in ANSWER_KEYS), figures
        for key in keys:
            assert 0.0 <= figures[key] <= 1.0, (key, figures)
        assert figures["latency_p50"] > 0 and figures["latency_p95"] >= figures["latency_p50"]
        assert figures["errors"] == 0
    for figures in (by_k[k] for by_k in report["overall"].values() for k in by_k):
        assert (figures["answerable"], figures["unanswerable"]) == (3, 1)
        assert figures["declined_unanswerable"] in (0.0, 1.0)
    rows = {(r["id"], r["mode"], r["k"]): r for r in report["rows"]}
    assert rows[("q1", "flat", 1)]["extra"] == {"note": "kept in the report"}
    assert rows[("q1", "flat", 1)]["gold_answers"] == ["Tessel", "river Tessel"]
    for row in report["rows"]:  # the answer's own fields, as the Result gave them
        assert isinstance(row["found"], bool) and isinstance(row["confidence"], float)
        assert row["answerable"] == (row["id"] != "q4")
        assert row["words"] == metrics.word_count(row["answer"])
        if row["found"]:
            assert row["lead"] and row["words"] > 0
        if row["answerable"]:  # the lead is the answer's first sentence: gold in it is gold in the answer
            assert row["lead_containment"] <= row["containment"]
        else:
            assert row["exact_match"] is None and row["lead_containment"] is None
        if row["answerable"] and not row["found"]:  # a decline quotes the question, and says nothing
            assert row["containment"] == row["lead_containment"] == row["f1"] == 0.0
    # flat with k=1 reads one span, so at most one of the two gold documents
    assert all(len(rows[(q, "flat", 1)]["documents_read"]) == 1 for q in ("q1", "q2", "q3"))
    assert all(rows[(q, "flat", 1)]["recall"] <= 0.5 for q in ("q1", "q2", "q3"))
    assert report["overall"]["flat"]["1"]["llm_calls"] == 0  # extractive: no generative model
    # the recursive path follows the bridge: the born-in town's document is found from the person's
    assert rows[("q1", "recursive", 1)]["all_supporting"] == 1.0
    assert rows[("q1", "recursive", 1)]["sub_questions"]
    summary = (out / "summary.md").read_text()
    assert summary in first.out
    assert "| recall@3 |" in summary and "| bridge |" in summary
    assert "| lead containment (k=3) |" in summary and "| unanswerable declined (k=3) |" in summary
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # answerability: both kinds of questions, so the threshold curve, its table, plot and CLI lines
    trade_off = report["answerability"]["recursive"]["3"]
    assert (trade_off["answerable"], trade_off["unanswerable"]) == (3, 1)
    assert trade_off["curve"] and trade_off["suggested"]["wrongly_declined"] <= 0.1
    assert "**suggested**" in summary
    assert "answerability recursive k=3: declines" in first.err and "suggested threshold" in first.err
    assert (out / "answerability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    store = open_store(pg_url)
    try:
        version = store.collection_info(collection).version
        rc = _eval(pg_url, str(QUESTIONS), "--collection", collection, "--corpus", str(CORPUS), "--k", "2",
                   "--mode", "flat", "--limit", "1", "--out", str(tmp_path / "again"))
        second = capsys.readouterr()
        assert rc == 0, second.err
        assert "0 new, 0 updated, 5 unchanged, 0 failed" in second.err
        assert store.collection_info(collection).version == version  # nothing was written
    finally:
        store.close()
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    assert list(again["overall"]) == ["flat"] and [r["id"] for r in again["rows"]] == ["q1"]
    # tune and check halves: each row in its half, reported apart, and --split keeps one half
    ids = {r["id"] for r in report["rows"]}
    halves = {h: {i for i in ids if half(i) == h} for h in ("tune", "check")}
    assert halves["tune"] and halves["check"]  # the four questions fall in both halves
    for h, members in halves.items():
        assert report["by_half"][h]["recursive"]["3"]["questions"] == len(members)
    assert "Tune and check halves" in summary
    rc = _eval(pg_url, str(QUESTIONS), "--collection", collection, "--k", "1", "--mode", "flat", "--split", "check",
               "--out", str(tmp_path / "check"))
    assert rc == 0
    checked = json.loads((tmp_path / "check" / "report.json").read_text())
    assert {r["id"] for r in checked["rows"]} == halves["check"]


def test_eval_of_an_unknown_collection_fails(pg_url, collection, tmp_path, capsys):
    assert _eval(pg_url, str(QUESTIONS), "--collection", collection, "--out", str(tmp_path)) == 1
    assert collection in capsys.readouterr().err
    assert not (tmp_path / "report.json").exists()


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD_Q = json.dumps({"id": "a", "question": "Who?", "answer": "x", "supporting_ids": ["d"]})


@pytest.mark.parametrize(("line", "reason"), [
    ('{"id": "b", "question": "Who?", "answer": "x"}', "missing field 'supporting_ids'"),
    ('{"id": "b", "question": "Who?", "answer": "x", "supporting_ids": "d"', "bad JSON"),
    ('["not", "an", "object"]', "expected a JSON object"),
    ('{"id": "b", "question": "Who?", "answer": 3, "supporting_ids": ["d"]}', "'answer' must be a string or a list"),
    ('{"id": "a", "question": "Who?", "answer": "x", "supporting_ids": ["d"]}', "duplicate question id 'a'"),
    ('{"id": "b", "question": "Who?", "answer": "x", "supporting_ids": []}', "'supporting_ids' is empty"),
])
def test_bad_question_file_names_file_and_line(pg_url, tmp_path, capsys, line, reason):
    path = _write(tmp_path / "q.jsonl", [GOOD_Q, "", line])  # a blank line still counts
    assert _eval(pg_url, str(path), "--collection", "unused", "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert f"{path}:3:" in err and reason in err
    with pytest.raises(DataError) as info:
        read_questions(path)
    assert (info.value.path, info.value.line) == (str(path), 3)


@pytest.mark.parametrize(("line", "reason"), [
    ('{"id": "d2", "text": "no title"}', "missing field 'title'"),
    ('{"id": "d2", "title": "T", "text": "t"', "bad JSON"),
    ('{"id": "d2", "title": "T", "text": 5}', "'text' must be a string"),
    ('{"id": "d1", "title": "T", "text": "again"}', "duplicate document id 'd1'"),
])
def test_bad_corpus_file_names_file_and_line(pg_url, collection, tmp_path, capsys, line, reason):
    corpus = _write(tmp_path / "c.jsonl", ['{"id": "d1", "title": "T", "text": "t"}', line])
    rc = _eval(pg_url, str(QUESTIONS), "--collection", collection, "--corpus", str(corpus),
               "--out", str(tmp_path / "o"))
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{corpus}:2:" in err and reason in err
    store = open_store(pg_url)
    try:
        assert collection not in [c.name for c in store.collections()]  # nothing ingested
    finally:
        store.close()


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(DataError, match="no questions"):
        read_questions(_write(tmp_path / "empty.jsonl", [""]))
    with pytest.raises(DataError, match="cannot read"):
        check_corpus(tmp_path / "absent.jsonl")


def test_limit_keeps_file_order_and_aliases():
    qs = read_questions(QUESTIONS, limit=2)
    assert [q.id for q in qs] == ["q1", "q2"]
    assert qs[0].answers == ("Tessel", "river Tessel") and qs[1].answers == ("Brame", "the Brame")
    assert qs[0].type == "bridge" and qs[0].extra == {"note": "kept in the report"}
