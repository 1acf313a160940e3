"""`train-reader --calls`: the system's recorded reader calls on manuals as training groups (a
labelled answer among the candidates, or a question the pages leave unanswered: every candidate a
negative), held-out sets left out, and pairs read in training as the card's question_tokens reads
them at answer time."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from rag_rlm.reader import Reader, calls, shipped_reader_path
from rag_rlm.reader.data import Pair
from rag_rlm.reader.model import weights_sha256

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT.parent / "shared" / "data" / "train"
STORY = ("Our nightly export writes every order of the day into one big spreadsheet that the accountants open in "
         "the morning, and lately the job takes hours because the shop has grown a lot since the spring sale and "
         "the file no longer opens on their laptops. Which setting limits how many rows go into one file?")


def _calls_file(tmp_path: Path) -> Path:
    pairs = [[STORY, "Export — Settings: export_max_rows: the most rows written to one file."],
             [STORY, "Export — Overview: The nightly export writes the orders of the day."],
             ["Can the export write Parquet?", "Export — Overview: The nightly export writes the orders of the day."],
             ["Can the export write Parquet?", "Export — Formats: Files are written as CSV."],
             ["How are refunds booked?", "Refunds — Overview: Refunds are booked on the day they are paid."],
             ["Who signs the export?", "Export — Overview: The nightly export writes the orders of the day."]]
    rows = [{"set": "shop", "id": "S1", "kind": "real", "unanswerable": False, "idx": [0, 1], "answers": [True, False]},
            {"set": "shop", "id": "S2", "kind": "real", "unanswerable": True, "idx": [2, 3], "answers": [False, False]},
            {"set": "held", "id": "H1", "kind": "real", "unanswerable": False, "idx": [4], "answers": [True]},
            {"set": "shop", "id": "S3", "kind": "real", "unanswerable": False, "idx": [5], "answers": [False]},
            {"set": "squad2", "id": "D1", "kind": "squad2", "unanswerable": False, "idx": [4], "answers": [True]}]
    return _written(tmp_path / "calls.json.gz", pairs, rows)


def _later_calls_file(tmp_path: Path) -> Path:
    """A file recorded later, for a set written later: it adds its calls after the first file's."""
    pairs = [["Where do refunds go?", "Refunds — Accounts: Refunds are booked to account 4711."],
             ["Where do refunds go?", "Refunds — Overview: Refunds are booked on the day they are paid."]]
    rows = [{"set": "later", "id": "L1", "kind": "real", "unanswerable": False, "idx": [0, 1], "answers": [True, False]}]
    return _written(tmp_path / "later_calls.json.gz", pairs, rows)


def _written(path: Path, pairs: list, rows: list) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump({"pairs": pairs, "calls": rows}, f)
    return path


def test_recorded_calls_train_as_groups_without_held_out_sets_dev_sets_or_unlabelled_questions(tmp_path):
    path = _calls_file(tmp_path)
    got = calls.pairs(path, exclude={"held"}, repeats=2)
    # S1 (its labelled answer and a negative) and S2 (unanswerable: both negatives), twice; H1 is held
    # out, S3 has no labelled answer among its candidates, D1 is a dev set's
    assert [(p.question[-20:], p.label) for p in got[:4]] == [(STORY[-20:], 1.0), (STORY[-20:], 0.0),
                                                              ("the export write Parquet?"[-20:], 0.0),
                                                              ("the export write Parquet?"[-20:], 0.0)]
    assert got[4:] == [Pair(p.question, p.text, p.label, p.weight, p.source, p.group + 2) for p in got[:4]]
    assert len({p.group for p in got}) == 4 and all(p.source == calls.SOURCE for p in got)
    assert not any("Refunds" in p.text or "signs" in p.question for p in got)
    assert len(calls.pairs(path)) == 5  # the held-out set's call too, when nothing is left out
    both = calls.pairs([path, _later_calls_file(tmp_path)], exclude={"held"})
    assert both[:4] == got[:4]  # a later file adds groups after the first file's, renumbering none
    assert [(p.text[-12:], p.label, p.group) for p in both[4:]] == [("ccount 4711.", 1.0, got[3].group + 1),
                                                                   ("ey are paid.", 0.0, got[3].group + 1)]


def test_training_reads_a_pair_as_the_reader_reads_it_at_answer_time(tmp_path):
    """With question_tokens the training ids are the reader's own: a story's ask is what both read."""
    from transformers import AutoTokenizer

    from rag_rlm.reader.train import TrainConfig, _encoded

    folder = shipped_reader_path()
    text = "Export — Settings: export_max_rows: the most rows written to one file."
    config = TrainConfig(data=TRAIN, out=tmp_path, question_tokens=40)
    trained = _encoded([Pair(STORY, text, 1.0, 1.0, "test")], AutoTokenizer.from_pretrained(folder), config)
    reader = Reader(folder)
    assert reader.card.question_tokens == 40
    assert [tuple(trained["input_ids"][0]), tuple(trained["token_type_ids"][0])] == \
        [tuple(x) for x in reader._network.encode([(STORY, text)])[0]]
    plain = _encoded([Pair(STORY, text, 1.0, 1.0, "test")], AutoTokenizer.from_pretrained(folder),
                     TrainConfig(data=TRAIN, out=tmp_path))
    assert plain["input_ids"][0] != trained["input_ids"][0]  # longest_first cuts the ask instead


def test_train_reader_goes_on_with_recorded_calls_and_its_card_says_how(tmp_path):
    path, later = _calls_file(tmp_path), _later_calls_file(tmp_path)
    out, data = tmp_path / "judge", tmp_path / "train"
    data.mkdir()  # the first rows of each training file, no squad2 folder beside them: a quick run
    for src in TRAIN.glob("*.jsonl.gz"):
        with gzip.open(src, "rt", encoding="utf-8") as f:
            rows = [next(f) for _ in range(20)]
        with gzip.open(data / src.name, "wt", encoding="utf-8") as f:
            f.writelines(rows)
    cmd = [sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(data), "--out", str(out),
           "--base", str(shipped_reader_path()), "--squad1", "4", "--same-article", "2", "--calls", str(path),
           "--calls", str(later), "--calls-exclude", "held", "--calls-repeats", "2", "--question-tokens", "40", "--learning-rate", "3e-5",
           "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    card = json.loads((out / "reader.json").read_text())
    assert card["data"]["pairs_by_source"][calls.SOURCE] == {"pairs": 12, "answers": 4}
    assert card["data"]["calls_sha256"] == [calls.file_sha256(path), calls.file_sha256(later)] and card["question_tokens"] == 40
    assert Reader(out).identity.startswith(f"{weights_sha256(out)}/ask40/")  # it reads as it was trained
    rebuild = (out / "README.md").read_text()
    assert f"--calls {path} --calls {later} --calls-exclude held --calls-repeats 2 --question-tokens 40" in rebuild
    for flags, named in ((["--calls", str(tmp_path / "none.json.gz")], "--calls"), (["--question-tokens", "95"], "--question-tokens")):
        bad = [*cmd[:7], str(tmp_path / "bad"), *cmd[8:], *flags]
        done = subprocess.run(bad, capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 2 and named in done.stderr and not (tmp_path / "bad").exists()
