"""Readers averaged weight by weight (`rag-rlm average-readers`): the mean of two tiny readers trained here
with two seeds is a loadable reader whose every tensor is the mean of theirs, its card names both and says how
to rebuild it, and readers that cannot be averaged are refused with the reason, leaving nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_reader import ROOT, _slice

from rag_rlm.reader import Reader
from rag_rlm.reader.data import Mix
from rag_rlm.reader.model import weights_sha256
from rag_rlm.reader.train import TrainConfig, card_markdown, train

SQUAD2 = ROOT.parent / "shared" / "data" / "squad2"


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> list[Path]:
    """Two tiny readers of one recipe, seeds 1 and 2."""
    tmp = tmp_path_factory.mktemp("seeds")
    data = _slice(tmp, 30)
    for seed in (1, 2):
        train(TrainConfig(data=data, out=tmp / f"seed{seed}", layers=1, limit=48, mix=Mix(squad1=20), seed=seed))
    return [tmp / "seed1", tmp / "seed2"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_rlm.cli", "average-readers", *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)


def test_the_mean_of_two_seeds_is_a_reader_whose_every_weight_is_their_mean(seeds, tmp_path):
    from safetensors.torch import load_file

    out = tmp_path / "mean"
    done = _run(*map(str, seeds), "--out", str(out), "--dev", str(SQUAD2))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the mean of 2 readers" in done.stdout and "squad2 check" in done.stdout
    for name in ("model.safetensors", "head.safetensors"):
        one, two, mean = (load_file(str(folder / name)) for folder in (*seeds, out))
        assert mean.keys() == one.keys()
        for key in mean:
            expected = ((one[key].float() + two[key].float()) / 2).half()
            assert (mean[key] == expected).all(), key
    card = json.loads((out / "reader.json").read_text())
    assert [i["weights_sha256"] for i in card["ingredients"]] == [weights_sha256(s) for s in seeds]
    assert [i["settings"]["seed"] for i in card["ingredients"]] == [1, 2]
    assert set(card["figures"]["squad2_dev"]) >= {"tune", "check", "threshold"}
    assert card["found_threshold_bf16"] == card["figures"]["squad2_dev"]["bf16"]["threshold"]
    said = (out / "README.md").read_text()
    assert said == card_markdown(card)
    rebuild = [line for line in said.splitlines() if line.startswith("rag-rlm train-reader ")]
    assert len(rebuild) == 2 and "--seed 1" in rebuild[0] and "--seed 2" in rebuild[1]
    assert "--dev None" not in said  # the seeds were trained without dev figures: no --dev to rebuild them
    assert f"rag-rlm average-readers {seeds[0]} {seeds[1]} --out models/reader" in said
    reader = Reader(out)
    assert reader.identity == card["weights_sha256"] + "/fp32"
    scores = reader.score("When did the war end?", ["The war ended in 1945.", "Bread is baked."])
    assert scores.shape == (2,) and ((scores > 0) & (scores < 1)).all()
    assert weights_sha256(out) not in {weights_sha256(s) for s in seeds}


def test_readers_that_cannot_be_averaged_are_refused_with_the_reason_and_nothing_written(seeds, tmp_path):
    out = tmp_path / "mean"
    done = _run(str(seeds[0]), "--out", str(out), "--dev", "none")
    assert done.returncode == 2 and "two readers or more" in done.stderr
    done = _run(str(seeds[0]), str(seeds[0]), "--out", str(out), "--dev", "none")
    assert done.returncode == 2 and "named twice" in done.stderr
    done = _run(*map(str, seeds), "--out", str(seeds[0]), "--dev", "none")
    assert done.returncode == 2 and "one of the readers averaged" in done.stderr
    wider = tmp_path / "wider"  # a reader of another depth: its tensors do not line up
    shutil.copytree(seeds[1], wider)
    config = json.loads((wider / "config.json").read_text())
    (wider / "config.json").write_text(json.dumps(dict(config, num_hidden_layers=2)))
    done = _run(str(seeds[0]), str(wider), "--out", str(out), "--dev", "none")
    assert done.returncode == 2 and str(wider) in done.stderr and "num_hidden_layers" in done.stderr
    bare = tmp_path / "bare"
    bare.mkdir()
    done = _run(str(seeds[0]), str(bare), "--out", str(out), "--dev", "none")
    assert done.returncode == 2 and f"{bare} has no config.json" in done.stderr
    done = _run(*map(str, seeds), "--out", str(out), "--dev", str(tmp_path))
    assert done.returncode == 2 and "no questions.jsonl" in done.stderr
    assert not out.exists()  # refused before anything was written


def test_an_average_is_not_averaged_again(seeds, tmp_path):
    first = tmp_path / "first"
    assert _run(*map(str, seeds), "--out", str(first), "--dev", "none").returncode == 0
    card = json.loads((first / "reader.json").read_text())
    assert card["threshold_from"].startswith("default 0.5") and "squad2_dev" not in card["figures"]
    done = _run(str(seeds[0]), str(first), "--out", str(tmp_path / "second"), "--dev", "none")
    assert done.returncode == 2 and "average the trained readers themselves" in done.stderr
