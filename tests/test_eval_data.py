"""Reading eval question files: null optional fields, unanswerable (SQuAD 2.0 style) questions,
and errors that still name the file and line. No store needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_rlm.eval.data import DataError, read_questions

SQUAD2 = Path("/work/shared/data/squad2/questions.jsonl")


def _write(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_null_optional_fields_are_accepted(tmp_path):
    path = _write(tmp_path / "q.jsonl", [
        {"id": "a", "question": "Who?", "answer": "x", "supporting_ids": ["d"], "type": None,
         "answer_aliases": None, "supporting_titles": None, "decomposition": None},
    ])
    (q,) = read_questions(path)
    assert q.type == "" and q.answers == ("x",) and q.answerable
    assert q.extra == {"supporting_titles": None, "decomposition": None}


def test_empty_answer_is_an_unanswerable_question(tmp_path):
    path = _write(tmp_path / "q.jsonl", [
        {"id": "u1", "question": "How much?", "answer": "", "answer_aliases": [], "supporting_ids": ["p"],
         "type": "unanswerable"},
        {"id": "u2", "question": "Who?", "answer": None, "supporting_ids": None},  # no related paragraph either
        {"id": "u3", "question": "When?", "answer": [], "supporting_ids": []},
        {"id": "a1", "question": "What?", "answer": "", "answer_aliases": ["y"], "supporting_ids": ["d"]},
    ])
    u1, u2, u3, a1 = read_questions(path)
    assert not u1.answerable and u1.answers == () and u1.supporting_ids == ("p",)  # the same-topic paragraph
    assert not u2.answerable and u2.supporting_ids == () and u2.type == ""
    assert not u3.answerable
    assert a1.answerable and a1.answers == ("y",)  # an alias alone answers it


@pytest.mark.parametrize(("row", "reason"), [
    ({"id": "b", "question": "Who?", "answer": "x", "supporting_ids": None}, "'supporting_ids' is empty"),
    ({"id": "b", "question": "Who?", "answer": "x", "supporting_ids": ["d"], "type": 3}, "'type' must be a string"),
    ({"id": "b", "question": "Who?", "answer": "x", "answer_aliases": "y", "supporting_ids": ["d"]},
     "'answer_aliases' must be a list"),
    ({"id": None, "question": "Who?", "answer": "x", "supporting_ids": ["d"]}, "'id' must be a string"),
    ({"id": "b", "question": None, "answer": "x", "supporting_ids": ["d"]}, "'question' must be a non-empty"),
    ({"id": "b", "question": "Who?", "supporting_ids": ["d"]}, "missing field 'answer'"),
    ({"id": "b", "question": "Who?", "answer": "", "supporting_ids": "p"}, "'supporting_ids' must be a list"),
])
def test_real_problems_still_name_file_and_line(tmp_path, row, reason):
    path = _write(tmp_path / "q.jsonl", [{"id": "a", "question": "Q?", "answer": "x", "supporting_ids": ["d"]}, row])
    with pytest.raises(DataError, match=reason) as info:
        read_questions(path)
    assert (info.value.path, info.value.line) == (str(path), 2)
    assert str(info.value).startswith(f"{path}:2: ")


def test_squad2_dev_set_reads_with_both_kinds():
    qs = read_questions(SQUAD2)
    assert len(qs) == 252
    assert sum(not q.answerable for q in qs) == 134
    assert {q.type for q in qs} == {"single-hop", "unanswerable"}
    assert all(q.answerable == (q.type == "single-hop") for q in qs)
    assert all(q.supporting_ids for q in qs)
