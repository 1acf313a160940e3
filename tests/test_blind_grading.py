"""bench/blind_grading.py: answers paired blind, grades kept once per answer text, the tally."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import blind_grading as bg  # noqa: E402


def _row(answer: str, found: bool = True) -> dict:
    return {"question": "How do I stop it?", "after": "", "expect": "kill -TERM", "answer": answer, "found": found}


A = {"s/1": _row("Send TERM [1]."), "s/2": _row("Same [1]."), "s/3": _row("It stops [1]."), "t/1": _row("Same.")}
B = {"s/1": _row("Send HUP [1]."), "s/2": _row("Same [1]."), "s/3": _row("no answer", found=False), "t/1": _row("Same.")}


def test_only_differing_answers_are_paired_and_a_declined_one_says_so():
    parts, key = bg.make_pairs(A, B, {}, set(), parts=2, seed=7)
    items = [item for part in parts for item in part]
    assert [item["id"] for item in items] == ["s/1", "s/3"]
    s3 = items[1]
    assert {s3["answer_1"], s3["answer_2"]} == {"It stops [1].", "[declined: found=false] no answer"}
    assert set(key) == {"s/1", "s/3"} and set(key.values()) <= {"a_first", "b_first"}
    # a set read first is graded whole; graded texts are not asked again
    parts, _ = bg.make_pairs(A, B, {}, {"t"}, parts=1, seed=7)
    assert [item["id"] for item in parts[0]] == ["s/1", "s/3", "t/1"]
    graded = {bg.text_key("s/1", "Send TERM [1]."): "right", bg.text_key("s/1", "Send HUP [1]."): "wrong"}
    parts, _ = bg.make_pairs(A, B, graded, set(), parts=1, seed=7)
    assert [item["id"] for item in parts[0]] == ["s/3"]


def test_the_order_is_seeded():
    runs = {f"s/{i}": _row(f"a{i}") for i in range(40)}, {f"s/{i}": _row(f"b{i}") for i in range(40)}
    assert bg.make_pairs(*runs, {}, set(), 1, 7)[1] == bg.make_pairs(*runs, {}, set(), 1, 7)[1]
    assert bg.make_pairs(*runs, {}, set(), 1, 7)[1] != bg.make_pairs(*runs, {}, set(), 1, 8)[1]


def test_grades_are_kept_once_per_text_and_tallied(tmp_path):
    parts, key = bg.make_pairs(A, B, {}, set(), parts=1, seed=7)
    (tmp_path / "part1.json").write_text(json.dumps(parts[0]))
    grade_of = {"Send TERM [1].": "right", "Send HUP [1].": "wrong", "It stops [1].": "partly",
                "[declined: found=false] no answer": "wrongly_declined"}
    grades = {item["id"]: {"answer_1": grade_of[item["answer_1"]], "answer_2": grade_of[item["answer_2"]], "why": ""}
              for item in parts[0]}
    (tmp_path / "part1_grades.json").write_text(json.dumps(grades))
    store = tmp_path / "grades.jsonl"
    graded: dict = {}
    assert bg.add_grades(tmp_path, graded, store) == (4, 0, 0)
    assert bg.load_grades(store) == graded and len(store.read_text().splitlines()) == 4
    assert bg.add_grades(tmp_path, graded, store) == (0, 4, 0)  # the same texts again: agreeing, not added
    assert len(store.read_text().splitlines()) == 4
    t = bg.tally(A, B, graded)
    assert (t["questions"], t["a_good"], t["b_good"], t["a_better"], t["b_better"]) == (2, 1, 0, 1, 0)
    assert t["per_set"] == {"s": [1, 0]}


def test_a_missing_or_unknown_grade_names_the_problem(tmp_path):
    parts, _ = bg.make_pairs(A, B, {}, set(), parts=1, seed=7)
    (tmp_path / "part1.json").write_text(json.dumps(parts[0]))
    with pytest.raises(SystemExit, match="part1_grades.json is missing"):
        bg.add_grades(tmp_path, {}, tmp_path / "g.jsonl")
    bad = {item["id"]: {"answer_1": "good", "answer_2": "right"} for item in parts[0]}
    (tmp_path / "part1_grades.json").write_text(json.dumps(bad))
    with pytest.raises(SystemExit, match="'good' is none of right"):
        bg.add_grades(tmp_path, {}, tmp_path / "g.jsonl")
    assert not (tmp_path / "g.jsonl").exists() or not (tmp_path / "g.jsonl").read_text()
    with pytest.raises(SystemExit, match="ungraded answer"):
        bg.tally(A, B, {})


def test_the_shipped_grades_file_is_well_formed():
    grades = bg.load_grades()
    assert len(grades) > 900 and set(grades.values()) <= set(bg.GRADES)
