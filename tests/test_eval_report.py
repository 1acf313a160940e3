"""The eval report on hand-made rows: which rows each figure is over, the answerability
figures at the default, and the threshold curve (report.json, summary.md, answerability.png)."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from rag_rlm.eval import answerability
from rag_rlm.eval.report import build_report, figures, summary_markdown, write_report
from rag_rlm.eval.runner import Row

# 10 answerable questions: one outlier the system is unsure of (0.05), the rest 0.45..0.9;
# 10 unanswerable ones, 8 of them below 0.45. Declining below 0.45 wrongly declines exactly 10%
# of the answerable (the outlier) and declines 80% of the unanswerable; 0.5 would wrongly decline 20%.
ANSWERABLE = [0.05, 0.45, 0.5, 0.55, 0.6, 0.65, 0.75, 0.8, 0.85, 0.9]
UNANSWERABLE = [0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.62, 0.7]
DEFAULT = 0.58  # what the system's own `found` used on these rows: found when confidence >= 0.58


def _row(id: str, *, answerable: bool = True, confidence: float = 1.0, found: bool | None = None,
         mode: str = "flat", k: int = 5, type: str = "", status: str = "ok", words: int = 10,
         supporting: tuple[str, ...] = ("d",), em: float = 0.0, lead: float = 0.0) -> Row:
    nan = math.nan
    return Row(id=id, mode=mode, k=k, type=type, question=f"{id}?", answer="a", gold_answers=["a"] if answerable else [],
               supporting_ids=list(supporting), documents_read=["d"], recall=1.0 if supporting else nan,
               all_supporting=1.0 if supporting else nan, exact_match=em if answerable else nan,
               f1=em if answerable else nan, containment=em if answerable else nan,
               lead_containment=lead if answerable else nan, answerable=answerable,
               found=confidence >= DEFAULT if found is None else found, confidence=confidence, lead="a",
               words=words, seconds=0.1, llm_calls=0, tokens_in=0, tokens_out=0, cache_hits=0, retrievals=1,
               sub_questions=[], status=status)


def _rows(mode: str = "flat", k: int = 5) -> list[Row]:
    return ([_row(f"a{i}", confidence=c, mode=mode, k=k, type="single-hop", words=10 + i, em=1.0, lead=float(i < 5))
             for i, c in enumerate(ANSWERABLE)]
            + [_row(f"u{i}", answerable=False, confidence=c, mode=mode, k=k, type="unanswerable", words=3)
               for i, c in enumerate(UNANSWERABLE)])


def test_figures_are_over_the_rows_they_apply_to():
    rows = [_row("a1", em=1.0, lead=1.0, words=4), _row("a2", em=0.0, lead=0.0, words=8, confidence=0.1),
            _row("a3", em=1.0, lead=0.0, words=6, supporting=()),
            _row("u1", answerable=False, confidence=0.1, words=99), _row("u2", answerable=False, words=20),
            _row("e1", status="error", em=0.0, found=False)]
    f = figures(rows)
    assert (f["questions"], f["answerable"], f["unanswerable"], f["errors"]) == (6, 4, 2, 1)
    assert f["exact_match"] == pytest.approx(2 / 4)  # a1 a3 of a1 a2 a3 e1: unanswerables left out, errors count 0
    assert f["lead_containment"] == pytest.approx(1 / 4)
    assert f["recall"] == 1.0  # a3 has no supporting ids: left out
    assert f["words_p50"] == 6 and f["words_p90"] == pytest.approx(17.2)  # found, not failed: 4 6 20
    assert f["declined_unanswerable"] == 0.5  # u1 declined, u2 answered
    assert f["wrongly_declined"] == pytest.approx(1 / 3)  # a2 of a1 a2 a3; the failed e1 is no verdict
    assert f["declined"] == pytest.approx(2 / 5)


def test_curve_is_monotone_and_the_suggested_threshold_is_the_best_within_10_percent():
    t = answerability.trade_off(_rows())
    curve = t["curve"]
    assert len(curve) == len(ANSWERABLE) + len(UNANSWERABLE) + 1
    for a, b in itertools.pairwise(curve):
        assert a["threshold"] < b["threshold"]
        assert a["declined_unanswerable"] <= b["declined_unanswerable"]
        assert a["wrongly_declined"] <= b["wrongly_declined"]
    assert (curve[0]["declined_unanswerable"], curve[0]["wrongly_declined"]) == (0.0, 0.0)
    assert (curve[-1]["declined_unanswerable"], curve[-1]["wrongly_declined"]) == (1.0, 1.0)
    assert t["suggested"] == {"threshold": 0.45, "declined_unanswerable": 0.8, "wrongly_declined": 0.1}
    assert t["at_default"] == {"declined_unanswerable": 0.8, "wrongly_declined": 0.4}  # below 0.58
    assert (t["answerable"], t["unanswerable"]) == (10, 10)


def test_report_summary_plot_and_cli_lines(tmp_path):
    rows = _rows("flat", 2) + _rows("flat", 5) + _rows("recursive", 5)
    report = build_report(rows, {"title": "squad2-like", "questions": 20})
    section = report["answerability"]
    assert section["max_wrongly_declined"] == 0.1
    assert set(section) == {"max_wrongly_declined", "flat", "recursive"} and set(section["flat"]) == {"2", "5"}
    assert section["recursive"]["5"]["suggested"]["threshold"] == 0.45
    assert report["overall"]["flat"]["5"]["declined_unanswerable"] == 0.8

    summary = summary_markdown(report)
    assert "| unanswerable declined (k=5) | 0.800 | 0.800 | +0.000 |" in summary
    assert "| answerable wrongly declined (k=5) | 0.400 | 0.400 | +0.000 |" in summary
    assert "| lead containment (k=5) | 0.500 | 0.500 | +0.000 |" in summary
    assert "| 0.45 **suggested** | 80.0% | 10.0% |" in summary
    assert "| default (found) | 80.0% | 40.0% |" in summary
    table = summary.split("flat (10 unanswerable, 10 answerable):")[1].split("\n\n")[1].splitlines()
    assert 10 <= len(table) - 2 <= 15  # header and rule, then the rows
    assert table[-1] == "| > 0.9 | 100.0% | 100.0% |"
    # per type: no answer figures for unanswerable questions, their declined share instead
    unans = next(line for line in summary.splitlines() if line.startswith("| unanswerable | 10 |"))
    assert unans == "| unanswerable | 10 | 1.000 | 1.000 | 1.000 | 1.000 | - | - | 0.800 | 0.800 |"

    lines = answerability.cli_lines(report, "5")
    assert len(lines) == 2 and lines[0].startswith("answerability flat k=5: declines 80.0% of 10 unanswerable")
    assert "suggested threshold 0.45" in lines[0]

    paths = write_report(report, tmp_path)
    assert paths["answerability"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    back = json.loads(paths["report"].read_text())  # strict JSON: NaN figures became null
    assert back["by_type"]["unanswerable"]["flat"]["5"]["exact_match"] is None
    assert back["answerability"]["flat"]["5"]["suggested"]["threshold"] == 0.45
    assert summary_markdown(back) == summary  # the summary reads the same from report.json


def test_no_answerability_section_without_both_kinds(tmp_path):
    rows = [r for r in _rows() if r.answerable]
    report = build_report(rows, {"title": "answerable only"})
    assert report["answerability"] == {}
    summary = summary_markdown(report)
    assert "Answerability" not in summary and "unanswerable declined" not in summary
    assert answerability.cli_lines(report, "5") == []
    paths = write_report(report, tmp_path)
    assert "answerability" not in paths and not (tmp_path / "answerability.png").exists()
    assert report["overall"]["flat"]["5"]["wrongly_declined"] == pytest.approx(0.4)  # still shown per row set


def test_failed_rows_are_no_verdict_on_answerability():
    rows = _rows() + [_row("e1", answerable=False, status="error", found=False, confidence=math.nan),
                      _row("e2", status="error", found=False, confidence=math.nan)]
    t = answerability.trade_off(rows)
    assert (t["answerable"], t["unanswerable"]) == (10, 10)
    assert t["suggested"]["threshold"] == 0.45


class _ScriptedAssistant:
    """A fake Assistant (the real one needs the controller): `ask` returns the Result scripted for
    the question, or raises the scripted error."""

    def __init__(self, script: dict):
        self.script = script

    def ask(self, question: str, collection: str, **options):
        outcome = self.script[question]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def _result(question: str, answer: str, lead: str, *, found: bool, confidence: float, docs: tuple[str, ...]):
    from rag_rlm.result import Result, Usage
    from rag_rlm.types import Span

    evidence = [Span(d, 0, d, d, "text", 0, 4, 0.5) for d in docs]
    return Result(question, "c", answer, [], [], Usage(seconds=0.2, retrievals=1), "t", evidence=evidence,
                  found=found, confidence=confidence, lead=lead)


def test_ask_one_scores_the_result_fields():
    from rag_rlm.errors import RagRlmError
    from rag_rlm.eval.data import Question
    from rag_rlm.eval.runner import ask_one

    answerable = Question("a", "Which river?", ("Tessel",), ("d1", "d2"), "bridge")
    unanswerable = Question("u", "Which year?", (), ("d3",), "unanswerable")
    failed = Question("f", "Who?", (), (), "")
    assistant = _ScriptedAssistant({
        "Which river?": _result("Which river?", "It is near the sea [1]. The river Tessel flows there [2].",
                                "It is near the sea.", found=True, confidence=0.8, docs=("d1", "x")),
        "Which year?": _result("Which year?", "Not found in the collection.", "Not found in the collection.",
                               found=False, confidence=0.2, docs=("d3",)),
        "Who?": RagRlmError("backend down"),
    })
    a = ask_one(assistant, answerable, "c", "flat", 5)
    assert (a.found, a.confidence, a.answerable, a.words) == (True, 0.8, True, 10)
    assert (a.containment, a.lead_containment, a.recall) == (1.0, 0.0, 0.5)  # Tessel is said, but not first
    u = ask_one(assistant, unanswerable, "c", "recursive", 5)
    assert (u.found, u.confidence, u.answerable, u.recall) == (False, 0.2, False, 1.0)
    assert all(math.isnan(getattr(u, key)) for key in ("exact_match", "f1", "containment", "lead_containment"))
    f = ask_one(assistant, failed, "c", "flat", 5)
    assert (f.status, f.error, f.found, f.words) == ("error", "backend down", False, 0)
    assert math.isnan(f.confidence) and math.isnan(f.recall) and math.isnan(f.exact_match)
