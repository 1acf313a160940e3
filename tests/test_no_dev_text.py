"""No dev-set question is written into the code, its docstrings or the tests: rules tuned on the
very questions they are measured on do not generalise (the dev sets' check halves must stay unseen).
A question counts as quoted when six of its words in a row appear in a source file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT.parent / "shared" / "data"
N = 6


def grams(text: str) -> set[str]:
    words = re.findall(r"\w+", text.lower())
    return {" ".join(words[i:i + N]) for i in range(len(words) - N + 1)}


@pytest.fixture(scope="module")
def dev_grams() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in ("hotpotqa", "musique", "squad2"):
        for line in (DEV / name / "questions.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                question = json.loads(line)["question"]
                out.update(dict.fromkeys(grams(question), f"{name}: {question}"))
    return out


@pytest.mark.parametrize("folder", ["rag_rlm", "tests", "ingest"])
def test_no_dev_question_is_quoted_in_the_code_or_tests(folder, dev_grams):
    assert len(dev_grams) > 1000  # the dev sets were read
    quoted = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        for gram in grams(path.read_text(encoding="utf-8")) & dev_grams.keys():
            quoted.setdefault(str(path.relative_to(ROOT)), dev_grams[gram])
    assert not quoted, quoted
