"""Reference-shaped training questions (`rag_rlm.reader.apidocs`) from an API manual page written
here in the Node.js JSON schema (an invented `ledger` module), and `train-reader` going on from a
trained reader with them."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

from rag_rlm.reader import apidocs
from rag_rlm.reader.data import Mix, build_pairs
from rag_rlm.reader.model import weights_sha256

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT.parent / "shared" / "data" / "train"


def _method(text_raw: str, *paragraphs: str, params: tuple[dict, ...] = (), returns: str = "") -> dict:
    signature = {"params": list(params), **({"return": {"textRaw": returns}} if returns else {})}
    return {"textRaw": f"`{text_raw}`", "type": "method", "signatures": [signature],
            "desc": "".join(f"<p>{p}</p>" for p in paragraphs)}


PAGE = {"type": "module", "source": "doc/api/ledger.md", "modules": [{
    "textRaw": "Ledger", "type": "module", "desc": "<p>The ledger module keeps accounts.</p>",
    "methods": [
        _method("ledger.open(path[, options])", "Opens the ledger file at <code>path</code> and returns a handle.",
                params=({"textRaw": "`path` {string}", "name": "path"},
                        {"textRaw": "`mode` {string} How the file is opened. **Default:** `'r'`.", "name": "mode"},
                        {"textRaw": "`lock` {boolean} Whether others may write. **Default:** `true`.", "name": "lock"})),
        _method("ledger.close(handle)", "Releases the handle and flushes pending entries to disk.",
                "A handle that <code>ledger.open()</code> returned must be closed exactly once."),
        _method("ledger.balance(account)", "Looks the account up in the open ledger.",
                params=({"textRaw": "`account` {string} The account's name.", "name": "account"},),
                returns="Returns: {integer} The balance in cents."),
        _method("ledger.export(path)", "Writes every entry to a CSV file at <code>path</code>, one entry a line."),
        _method("handle.open()", "Reopens a closed handle on the same file."),
    ]}]}


def _manual(tmp_path: Path) -> Path:
    folder = tmp_path / "api"
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "ledger.json.gz", "wt", encoding="utf-8") as f:
        json.dump(PAGE, f)
    (folder / "all.json").write_text("{}")  # the whole-manual file is skipped: its entries repeat the pages'
    return folder


def _answer(row: dict) -> str:
    start = row["answers"][0]["start"]
    return row["context"][start:].split("\n\n")[0]


def test_an_entry_answers_and_mentions_and_neighbours_do_not(tmp_path):
    rows = apidocs.rows(_manual(tmp_path), seed=5)
    assert rows == apidocs.rows(_manual(tmp_path / "again"), seed=5)  # seeded
    asked = [r for r in rows if r["question"].startswith(("What does ledger.open", "What is ledger.open for"))]
    answerable = next(r for r in asked if not r["is_impossible"])
    # the entry reads as ingest renders a manual's term and description
    assert _answer(answerable) == "ledger.open(path[, options]): Opens the ledger file at path and returns a handle."
    # another entry's sentence that names ledger.open() is in the context as something that does not answer
    assert "A handle that ledger.open() returned must be closed exactly once." in answerable["context"]
    # handle.open() would answer "what does open do" too: it never stands beside ledger.open as a wrong one
    assert "Reopens a closed handle" not in answerable["context"]
    for absent in (r for r in rows if r["is_impossible"]):
        assert absent["answers"] == [] and absent["source"].endswith(":absent")
        twin = next(r for r in rows if r["id"] == absent["id"].removesuffix("-absent"))
        assert _answer(twin) not in absent["context"]


def test_a_default_question_is_answered_by_its_parameter_line(tmp_path):
    manual = _manual(tmp_path)
    rows = [r for seed in range(6) for r in apidocs.rows(manual, seed)]  # half the entries with defaults are asked
    defaults = [r for r in rows if r["source"] == "apidocs:default"]
    assert defaults
    for row in defaults:
        param = re.search(r"default (?:value of )?(\w+)", row["question"]).group(1)
        line = _answer(row)
        assert line.startswith(f"{param} <") and "Default:" in line
        others = [b for b in row["context"].split("\n\n") if b != line]
        assert any(b.startswith(("mode <", "lock <")) for b in others)  # the other parameter: a near miss


def test_a_returns_question_is_answered_by_the_returns_line_among_the_parameters(tmp_path):
    rows = apidocs.rows(_manual(tmp_path), seed=2)
    asked = [r for r in rows if r["source"] == "apidocs:returns"]
    assert [r["question"] for r in asked] in (["What does ledger.balance return?"], ["What is returned by ledger.balance?"])
    assert _answer(asked[0]) == "Returns: <integer> The balance in cents."
    assert "account <string> The account's name." in asked[0]["context"]  # a line under the same entry that does not


def test_pairs_from_a_manual_are_seeded_and_label_the_entry(tmp_path):
    manual = _manual(tmp_path)
    mix = Mix(squad1=1, same_article=1, selqa=1, squad2=1)
    pairs = [p for p in build_pairs(TRAIN, mix, 3, manual) if p.source.startswith("apidocs")]
    assert pairs == [p for p in build_pairs(TRAIN, mix, 3, manual) if p.source.startswith("apidocs")]
    answers = [p for p in pairs if p.label == 1.0 and "ledger.open" in p.question and "default" not in p.question]
    assert answers and all("Opens the ledger file" in p.text for p in answers)
    assert all(p.text.startswith("Ledger: ") for p in pairs)  # the page's title leads, as at answer time
    assert {p.source for p in pairs if p.label == 0.0} >= {"apidocs", "apidocs:absent"}


def test_train_reader_goes_on_from_a_trained_reader_with_a_manual(tmp_path):
    manual = _manual(tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    base = [sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(TRAIN),
            "--limit", "32", "--squad1", "20", "--same-article", "10", "--dev", str(ROOT.parent / "shared" / "data" / "squad2")]
    done = subprocess.run(base + ["--out", str(first), "--layers", "1"], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    more = ["--out", str(second), "--base", str(first), "--api-docs", str(manual), "--learning-rate", "5e-5"]
    done = subprocess.run(base + more, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    card = json.loads((second / "reader.json").read_text())
    assert card["settings"]["base"] == str(first) and card["data"]["api_docs_sha256"] == apidocs.files_sha256(manual)
    assert weights_sha256(second) != weights_sha256(first)  # it did train on from there
    rebuild = (second / "README.md").read_text().split("```sh\n")[1].split("```")[0].splitlines()
    assert len(rebuild) == 2 and f"--out {first}" in rebuild[0] and f"--base {first}" in rebuild[1]
    assert f"--api-docs {manual}" in rebuild[1] and "--learning-rate 5e-05" in rebuild[1]
    assert card["settings"]["layers"] == 1  # a trained base goes on with its own layers
    for flags, named in ((["--api-docs", str(tmp_path / "first")], "--api-docs"),
                         (["--base", str(first), "--layers", "2"], "--layers 2"),
                         (["--base", str(tmp_path / "nowhere")], "--base"), (["--learning-rate", "2"], "--learning-rate")):
        done = subprocess.run(base + ["--out", str(tmp_path / "bad")] + flags, capture_output=True, text=True,
                              timeout=120, cwd=ROOT)
        assert done.returncode == 2 and named in done.stderr and not (tmp_path / "bad").exists()
