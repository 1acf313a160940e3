"""The reader: loading (a missing or broken folder is an error naming the path), what it reads on
hand-made pairs, a training run end to end on a tiny slice of the real training files, and the
memo key changing with the reader."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag_rlm.controller import Options, _key
from rag_rlm.errors import ModelNotFound
from rag_rlm.reader import Reader, load_reader, shipped_judge_path, shipped_reader_path
from rag_rlm.reader.data import Mix, build_pairs, reader_text
from rag_rlm.reader.model import weights_sha256
from rag_rlm.reasoning.base import SubQuestion

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT.parent / "shared" / "data" / "train"


@pytest.fixture(scope="module")
def reader() -> Reader:
    return load_reader(shipped_reader_path())


def test_the_shipped_reader_loads_with_its_card_and_identity(reader):
    ask = f"/ask{reader.card.question_tokens}" if reader.card.question_tokens else ""  # how it reads a long question
    assert reader.identity == weights_sha256(shipped_reader_path()) + ask + "/fp32"  # and the precision it runs at
    assert reader.card.raw["weights_sha256"] == weights_sha256(shipped_reader_path())  # the card names its weights
    assert reader.threshold == reader.card.raw["found_threshold_fp32"] and 0.0 < reader.threshold < 1.0
    size = sum(p.stat().st_size for p in shipped_reader_path().iterdir())
    assert size < 50_000_000


def test_a_missing_or_broken_reader_folder_is_an_error_naming_the_path(tmp_path):
    with pytest.raises(ModelNotFound, match=str(tmp_path / "nowhere")):
        Reader(tmp_path / "nowhere")
    broken = tmp_path / "broken"
    shutil.copytree(shipped_reader_path(), broken)
    (broken / "head.safetensors").write_bytes(b"not weights")
    with pytest.raises(ModelNotFound, match="broken"):
        Reader(broken)
    (broken / "reader.json").unlink()
    with pytest.raises(ModelNotFound, match="reader.json"):
        Reader(broken)


def test_a_sentence_that_answers_scores_above_one_on_the_same_topic_that_does_not(reader):
    cases = [
        ("Who approves expenses over $500?", "Expense policy",
         "Expenses over $500 must be approved by the Finance Director before the purchase is made.",
         "Expenses under $100 can be paid with a company card without approval."),
        ("When was the lighthouse at Cape Varn built?", "Cape Varn",
         "The lighthouse at Cape Varn was built in 1874 by the harbour authority.",
         "The lighthouse at Cape Varn is painted red and white."),
        ("How many vacation days do new hires get?", "Vacation policy",
         "New hires get 22 vacation days per calendar year.",
         "Vacation requests are made in the HR system two weeks in advance."),
    ]
    for question, title, answers, related in cases:
        yes, no = reader.score(question, [reader_text(title, answers), reader_text(title, related)])
        assert yes > no, (question, yes, no)
        assert yes >= reader.threshold, (question, yes)


def test_a_changed_detail_makes_the_same_sentence_no_answer(reader):
    sentence = reader_text("Cape Varn", "The lighthouse at Cape Varn was built in 1874 by the harbour authority.")
    asked, changed = reader.score("When was the lighthouse at Cape Varn built?", [sentence])[0], \
        reader.score("When was the lighthouse at Cape Varn demolished?", [sentence])[0]
    assert asked > changed


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_scores_are_remembered_and_do_not_move_with_the_batch(precision, monkeypatch):
    reader = load_reader(shipped_reader_path(), precision)
    question = "When was Alpha founded?"
    texts = [reader_text("A", "Alpha was founded in 1990."), reader_text("B", "Beta makes bicycles."),
             reader_text("C", "Gamma, a much longer company name, was founded in the spring of 1990 by three "
                              "engineers who had left the harbour authority the year before.")]
    together = reader.score(question, texts)
    # a question gets the same answer whatever else is read beside it: a pair is padded to a
    # width of its own, and bf16 reads a padded pair a little differently from an unpadded one
    alone = [reader.probabilities([(question, t)])[0] for t in texts]
    assert together == pytest.approx(alone, abs=1e-6)
    read = []
    monkeypatch.setattr(reader, "_batched", lambda pairs: read.append(len(pairs)) or reader.probabilities(pairs))
    assert reader.score(question, texts[:1])[0] == together[0] and read == []  # remembered, not recomputed
    reader.forget()  # what a benchmark does between modes: the pair is read again
    assert reader.score(question, texts[:1])[0] == together[0] and read == [1]
    assert reader.identity.endswith(f"/{precision}") and reader.threshold == reader.card.threshold(precision)


def test_bf16_reads_as_fp32_does_and_auto_picks_what_the_cpu_computes_natively():
    import torch

    from rag_rlm.reader.model import native_precision

    pairs = [("When was Alpha founded?", reader_text("A", t)) for t in
             ("Alpha was founded in 1990.", "Alpha makes bicycles.", "It was founded by two engineers.")]
    fp32, bf16 = (load_reader(shipped_reader_path(), p).probabilities(pairs) for p in ("fp32", "bf16"))
    assert abs(fp32 - bf16).max() < 0.03 and fp32.argmax() == bf16.argmax() == 0
    native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert native_precision() == ("bf16" if native else "fp32")
    assert load_reader(shipped_reader_path(), "auto").precision == native_precision()
    assert load_reader(shipped_reader_path(), "auto", backend="numpy").precision == "fp32"  # numpy is fp32 only


def test_a_changed_threshold_changes_the_reasoners_fingerprint_not_its_source():
    from rag_rlm.reasoning.thresholds import Thresholds

    base = Thresholds()
    assert base.fingerprint == Thresholds().with_values("an operator", found=base.found).fingerprint
    assert base.fingerprint != base.with_values("an operator", found=base.found + 0.01).fingerprint


def test_the_memo_key_changes_with_the_reader(tmp_path, embedder):
    from types import SimpleNamespace

    from rag_rlm.access import EVERYTHING

    options = Options(top_k=5, max_depth=2, max_parallel=4, reflect=True, hybrid=False)
    sub = SubQuestion("Who approves expenses?")

    def key(identity: str) -> str:
        ctx = SimpleNamespace(options=options, reasoner=SimpleNamespace(identity=identity), collection="c",
                              version="v1", access=EVERYTHING)
        return _key(ctx, sub, 0)

    assert key("extractive/reader:aaaa") != key("extractive/reader:bbbb")
    assert key("extractive/reader:aaaa") == key("extractive/reader:aaaa")


def test_the_memo_key_changes_with_the_code(tmp_path, monkeypatch):
    """An upgrade with the same reader may answer differently: the key names the code too."""
    from rag_rlm import memo

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("ANSWER = 1\n")
    before = memo.code_digest(tmp_path / "pkg")
    (tmp_path / "pkg" / "a.py").write_text("ANSWER = 2\n")
    memo.code_digest.cache_clear()
    assert memo.code_digest(tmp_path / "pkg") != before
    key = memo.memo_key("Who approves expenses?", "c", "v1", {})
    monkeypatch.setattr(memo, "code_digest", lambda: "another release")
    assert memo.memo_key("Who approves expenses?", "c", "v1", {}) != key


def _slice(tmp_path: Path, rows_per_file: int) -> Path:
    """The first rows of each real training file."""
    out = tmp_path / "train"
    out.mkdir()
    for src in TRAIN.glob("*.jsonl.gz"):
        with gzip.open(src, "rt", encoding="utf-8") as f:
            rows = [next(f) for _ in range(rows_per_file)]
        with gzip.open(out / src.name, "wt", encoding="utf-8") as f:
            f.writelines(rows)
    return out


def test_pairs_are_seeded_and_label_the_sentence_that_holds_the_answer(tmp_path):
    data = _slice(tmp_path, 40)
    mix = Mix(squad1=30, same_article=10)
    first, again = build_pairs(data, mix, 7), build_pairs(data, mix, 7)
    assert first == again and first != build_pairs(data, mix, 8)
    row = json.loads(gzip.open(data / "squad1.0_train_explorer.jsonl.gz", "rt").readline())
    answer = row["answers"][0]["text"]
    positives = [p for p in first if p.question == row["question"] and p.label == 1.0]
    assert positives and all(answer.lower() in p.text.lower() for p in positives)
    assert {p.source for p in first if p.label == 0.0} >= {"squad1.0_train_samearticle_negative"}


def test_a_premised_question_is_answered_by_its_answer_sentence_not_by_its_premise(tmp_path):
    data = _slice(tmp_path, 40)
    pairs = [p for p in build_pairs(data, Mix(squad1=30, same_article=0, premised=1.0), 7)
             if p.source.endswith(":premise")]
    assert pairs
    rows = {r["question"].strip(): r for r in map(json.loads, gzip.open(data / "squad1.0_train_explorer.jsonl.gz", "rt"))}
    for p in pairs:
        row = next(r for q, r in rows.items() if p.question.endswith(q[1:]))
        answer = row["answers"][0]["text"].lower()
        premise = p.question[: len(p.question) - len(row["question"].strip())].rstrip(" ,")
        if p.label == 1.0:  # the answer sentence, alone or after the premise, answers
            assert answer in p.text.lower()
        else:  # the premise sentence, which the question repeats, does not
            assert answer not in p.text.lower() and premise.rstrip(".") in p.text


def test_a_question_told_as_a_story_is_answered_by_its_answer_sentence_not_by_the_scene(tmp_path):
    from rag_rlm.reader.data import STORY_WORDS

    data = _slice(tmp_path, 40)
    mix = Mix(squad1=30, same_article=0, constructed=0.0, storied=1.0)
    pairs = [p for p in build_pairs(data, mix, 7) if p.source.endswith(":story")]
    assert pairs and pairs == [p for p in build_pairs(data, mix, 7) if p.source.endswith(":story")]
    rows = {r["question"].strip(): r for r in map(json.loads, gzip.open(data / "squad1.0_train_explorer.jsonl.gz", "rt"))}
    for question in dict.fromkeys(p.question for p in pairs):
        asked = next(q for q in rows if question.endswith(" " + q))
        scene, answer = question[: -len(asked)].strip(), rows[asked]["answers"][0]["text"].lower()
        told = [p for p in pairs if p.question == question]
        assert [p.label for p in told].count(1.0) == 1 and 2 <= len(told) <= 4
        assert 0 < len(scene.split()) <= STORY_WORDS[2]  # the ask must still fit the reader's tokens
        for p in told:
            sentence = p.text.partition(": ")[2]
            if p.label == 1.0:  # the answer sentence answers
                assert answer in p.text.lower() and sentence not in scene
            else:  # each sentence of the scene, said before the question, does not
                assert answer not in p.text.lower() and sentence in scene


def _articles(tmp_path: Path, articles: int, rows_per_article: int) -> Path:
    """SQuAD v1 rows of the first `articles` articles of the real training file."""
    out = tmp_path / "train"
    out.mkdir()
    by_title: dict[str, list[str]] = {}
    with gzip.open(TRAIN / "squad1.0_train_explorer.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            title = json.loads(line)["title"]
            if title not in by_title and len(by_title) == articles:
                break
            by_title.setdefault(title, []).append(line)
    with gzip.open(out / "squad1.0_train_explorer.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(line for rows in by_title.values() for line in rows[:rows_per_article])
    return out


def test_a_sentence_under_a_neighbouring_articles_title_does_not_answer(tmp_path):
    """The swapped negative: the answer sentence, which does not name the question's subject,
    read under another article's title, in the same group as the pair it contrasts."""
    from rag_rlm.reasoning.english import content_words

    data = _articles(tmp_path, 8, 60)
    pairs = build_pairs(data, Mix(squad1=0, same_article=0, constructed=0.0, swapped=1.0), 7)
    swapped = [p for p in pairs if p.source.endswith(":swapped")]
    assert swapped and all(p.label == 0.0 and p.weight < 1.0 for p in swapped)
    rows = {r["question"]: r for r in map(json.loads, gzip.open(data / "squad1.0_train_explorer.jsonl.gz", "rt"))}
    for p in swapped:
        row = rows[p.question]
        own = row["title"].replace("_", " ")
        title, sentence = p.text.split(": ", 1)
        assert title != own and row["answers"][0]["text"].lower() in sentence.lower()
        assert content_words(own) & content_words(p.question) and not content_words(own) & content_words(sentence)
        positive = next(q for q in pairs if q.question == p.question and q.label == 1.0)
        assert positive.text == reader_text(own, sentence) and positive.group == p.group


def test_an_echoed_heading_repeats_the_questions_words_over_the_answer_and_its_neighbours_alike(tmp_path):
    """The echoed pairs: the answer sentence and same-topic negatives, all under one heading made of
    the question's words, so that the heading tells them nothing apart."""
    from rag_rlm.reasoning.english import content_words

    data = _slice(tmp_path, 40)
    pairs = build_pairs(data, Mix(squad1=30, same_article=0, constructed=0.0, echoed=1.0), 7)
    echoed = [p for p in pairs if p.source.endswith(":echoed")]
    assert echoed and {p.label for p in echoed} == {0.0, 1.0}
    rows = {r["question"]: r for r in map(json.loads, gzip.open(data / "squad1.0_train_explorer.jsonl.gz", "rt"))}
    for question in {p.question for p in echoed}:
        mine = [p for p in echoed if p.question == question]
        answer = rows[question]["answers"][0]["text"].lower()
        headings = {p.text.split(": ", 1)[0].split(" — ", 1)[1] for p in mine}
        assert len(headings) == 1 and content_words(headings.pop()) <= content_words(question)
        assert [answer in p.text.lower() for p in mine] == [p.label == 1.0 for p in mine]
        plain = {p.group for p in pairs if p.question == question and not p.source.endswith(":echoed")}
        assert {p.group for p in mine} <= plain  # read beside the plain pairs of its question


def test_train_reader_runs_end_to_end_and_writes_a_loadable_folder_with_its_card(tmp_path):
    data = _slice(tmp_path, 30)
    out = tmp_path / "reader"
    cmd = [sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(data), "--out", str(out),
           "--layers", "1", "--limit", "48", "--squad1", "20", "--dev", str(ROOT.parent / "shared" / "data" / "squad2")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "reader written to" in done.stdout and "squad2 check" in done.stdout
    card = json.loads((out / "reader.json").read_text())
    assert card["steps"] == 2 and card["data"]["pairs"] == 48 and card["settings"]["seed"] == 13
    assert set(card["data"]["files_sha256"]) >= {"squad1.0_train_explorer.jsonl.gz"}
    assert card["weights_sha256"] == weights_sha256(out)
    assert set(card["figures"]["squad2_dev"]) >= {"tune", "check", "threshold"}
    assert "rag-rlm train-reader" in (out / "README.md").read_text()
    trained = Reader(out)
    assert trained.identity == card["weights_sha256"] + "/fp32" and len(trained.score("q?", ["a", "b"])) == 2
    # the same data and seed train the same weights
    again = tmp_path / "again"
    cmd[cmd.index(str(out))] = str(again)
    assert subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT).returncode == 0
    assert weights_sha256(again) == card["weights_sha256"]


def test_training_in_bf16_autocasts_reproducibly_and_the_card_says_so(tmp_path):
    from rag_rlm.reader.train import TrainConfig, card_markdown, train

    data = _slice(tmp_path, 30)
    runs = {}
    for name, precision in (("bf16", "bf16"), ("bf16-again", "bf16"), ("fp32", "fp32")):
        config = TrainConfig(data=data, out=tmp_path / name, layers=1, limit=48, mix=Mix(squad1=20), precision=precision)
        train(config)
        runs[name] = weights_sha256(config.out)
    assert runs["bf16"] == runs["bf16-again"]  # seeded: the same weights again
    assert runs["bf16"] != runs["fp32"]  # the forward pass did run in bf16
    card = json.loads((tmp_path / "bf16" / "reader.json").read_text())
    assert card["settings"]["precision"] == "bf16"
    assert "--precision bf16" in card_markdown(card) and "bf16 arithmetic" in card_markdown(card)
    fp32_card = json.loads((tmp_path / "fp32" / "reader.json").read_text())
    assert "--precision" not in card_markdown(fp32_card)
    done = subprocess.run([sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(data), "--precision", "fp16"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and "--precision" in done.stderr


def test_a_second_pass_reads_the_pairs_again_in_its_own_order_and_the_card_says_how_to_rebuild(tmp_path):
    import torch

    from rag_rlm.reader.train import TrainConfig, card_markdown, train

    data = _slice(tmp_path, 30)
    one = train(TrainConfig(data=data, out=tmp_path / "one", layers=1, limit=48, mix=Mix(squad1=20)))
    two = train(TrainConfig(data=data, out=tmp_path / "two", layers=1, limit=48, mix=Mix(squad1=20), passes=2))
    assert (one.steps, two.steps) == (2, 4)
    assert weights_sha256(tmp_path / "one") != weights_sha256(tmp_path / "two")
    card = json.loads((tmp_path / "two" / "reader.json").read_text())
    said = card_markdown(card)
    assert "--passes 2" in said and "2 passes" in said and "--device" not in said
    assert card["trained_on"] == f"{torch.get_num_threads()} CPU threads"
    if not torch.cuda.is_available():  # where torch sees no GPU, asking for one is bad input, not a CPU run
        done = subprocess.run([sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(data),
                               "--out", str(tmp_path / "gpu"), "--device", "cuda"],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 2 and "--device cuda" in done.stderr and not (tmp_path / "gpu").exists()


def test_the_listwise_loss_is_each_groups_cross_entropy_laid_out_without_a_loop():
    """The listwise loss reads rows laid out when the batch is made (no loop, no read-back on a GPU):
    it equals each question's cross-entropy over its candidates, averaged over the questions with
    two or more candidates of which exactly one answers."""
    import torch

    from rag_rlm.reader.train import _listwise, _listwise_rows

    groups = [4, 4, 4, 9, 9, 7, 2, 2, 2, 2]
    labels = [0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0]  # 9: two answers, 7: alone; neither counts
    rows, target = _listwise_rows(groups, labels)
    assert rows == [[6, 7, 8, 9], [0, 1, 2, -1]] and target == [9, 1]  # groups in id order, padded
    logits = torch.randn(len(groups), generator=torch.Generator().manual_seed(3))
    batch = {"listwise_rows": torch.tensor(rows), "listwise_target": torch.tensor(target)}
    expected = torch.stack([torch.nn.functional.cross_entropy(logits[[6, 7, 8, 9]].unsqueeze(0), torch.tensor([3])),
                            torch.nn.functional.cross_entropy(logits[[0, 1, 2]].unsqueeze(0), torch.tensor([1]))]).mean()
    assert torch.allclose(_listwise(logits, batch), expected)
    none = _listwise_rows([1, 1, 2], [1.0, 1.0, 0.0])
    empty = {"listwise_rows": torch.zeros((0, 1), dtype=torch.long), "listwise_target": torch.zeros(0, dtype=torch.long)}
    assert none == ([], []) and float(_listwise(logits[:3], empty)) == 0.0


def test_train_reader_refuses_a_folder_without_training_files(tmp_path):
    done = subprocess.run([sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and str(tmp_path) in done.stderr
    data = _slice(tmp_path, 5)
    for share in ("--premised", "--swapped", "--echoed"):
        done = subprocess.run([sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(data), share, "1.5"],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 2 and share in done.stderr


def test_the_numpy_path_reads_like_the_torch_fp32_one_without_importing_torch():
    probe = ("import sys; from rag_rlm.reader import Reader, shipped_reader_path; "
             "r = Reader(shipped_reader_path(), backend='numpy'); "
             "print(r.score('When was the tower built?', ['Tower: It was built in 1874.', 'Tower: It is red.']).tolist()); "
             "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    numpy_scores, torch_loaded = done.stdout.strip().splitlines()
    assert torch_loaded == "False"
    exact = Reader(shipped_reader_path(), precision="fp32")
    expected = exact.score("When was the tower built?", ["Tower: It was built in 1874.", "Tower: It is red."])
    assert json.loads(numpy_scores) == pytest.approx(expected.tolist(), abs=1e-4)
    assert exact.identity.endswith("/fp32") and exact.threshold == exact.card.raw["found_threshold_fp32"]


def test_the_found_threshold_keeps_a_margin_and_the_card_rounds_it_down():
    from rag_rlm.reader.evaluate import MARGIN, card_threshold, pick_threshold

    answerable = [0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3, 0.2]  # at most 10%: one may be declined
    unanswerable = [0.1, 0.25, 0.28, 0.95]
    threshold = pick_threshold(answerable, unanswerable)
    assert threshold == pytest.approx(0.3 - MARGIN)  # just under the score it is picked at
    assert sum(s < threshold for s in answerable) == 1 and sum(s < threshold for s in unanswerable) == 3
    assert pick_threshold(answerable, [0.2995]) == pytest.approx((0.3 + 0.2995) / 2)  # never past the next score
    assert card_threshold(0.30249) == 0.3024 and card_threshold(0.3) == 0.3


def test_a_long_question_told_as_a_story_is_also_read_by_its_asking_sentence(reader):
    """rule long_question: the story's asking sentence, read alone, lifts the sentence that answers
    it above what the scene alone draws the reader to."""
    from rag_rlm.reasoning.scoring import CoreQuestionScorer, ReaderScorer

    scorer = CoreQuestionScorer(ReaderScorer(reader))
    texts = [reader_text("Worker settings", "worker_max_memory_per_child: Maximum amount of resident memory, in "
                         "kilobytes, that may be consumed by a worker before it is replaced by a new worker."),
             reader_text("Worker settings", "This is useful if you have memory leaks you have no control over, for "
                         "example from closed source C extensions.")]
    asked = "Which setting replaces a worker process after its resident memory grows past a limit?"
    story = f"Our workers keep growing until the machine swaps and everything slows down. {asked}"
    whole, alone = reader.score(story, texts), reader.score(asked, texts)
    assert list(scorer.score_texts(story, texts)) == [max(a, b) for a, b in zip(whole, alone, strict=True)]
    assert whole[0] < reader.threshold <= alone[0] and alone[0] > alone[1]


def test_a_card_calibrated_with_a_cosine_blend_moves_the_readers_logit_by_the_bi_encoders_cosine(tmp_path, embedder):
    """A card that names a cosine weight makes the reasoner read logit + weight x (cosine - centre),
    with the threshold the card was calibrated at; a card without one reads the reader alone."""
    from rag_rlm.config import Settings
    from rag_rlm.reader.train import card_markdown
    from rag_rlm.reasoning.build import build_reasoner
    from rag_rlm.reasoning.scoring import CosineBlend

    folder = tmp_path / "blended"
    shutil.copytree(shipped_reader_path(), folder)
    card = json.loads((folder / "reader.json").read_text())
    card.update(cosine_weight=8.0, cosine_centre=0.58, hop_unless=0.97, cosine_from="a test", found_threshold_fp32=0.2)
    (folder / "reader.json").write_text(json.dumps(card))
    assert "logit + 8 x (the bi-encoder's cosine - 0.58)" in card_markdown(card)  # the card a person reads says it
    blended = build_reasoner(Settings(reader=str(folder), reader_precision="fp32"), embedder)
    alone = build_reasoner(Settings(reader=str(shipped_reader_path()), reader_precision="fp32"), embedder)
    t = blended.thresholds
    assert (t.cosine_weight, t.cosine_centre, t.hop_unless, t.found) == (8.0, 0.58, 0.97, 0.2)
    assert "a test" in t.source("cosine_weight") and "a test" in t.source("hop_unless")
    assert alone.thresholds.cosine_weight == 0.0 and "+cosine" not in alone.identity
    assert "+cosine*8@0.58" in blended.identity and blended.identity != alone.identity  # no shared memo entries

    question = "When was the tower built?"
    texts = [reader_text("Tower", "It was built in 1874."), reader_text("Tower", "The tower is painted red.")]
    scorer = CosineBlend(alone.scorer, embedder, 8.0, 0.58)
    p, q = alone.scorer.score_texts(question, texts), scorer.score_texts(question, texts)
    vectors = embedder.embed([question, *texts])
    logit_p, logit_q = (np.log(x / (1 - x)) for x in (p.astype(np.float64), q.astype(np.float64)))
    assert logit_q == pytest.approx(logit_p + 8.0 * (vectors[1:] @ vectors[0] - 0.58), abs=1e-3)
    assert CosineBlend(alone.scorer, embedder, 0.0, 0.58).score_texts(question, texts) == pytest.approx(p, abs=1e-6)


def test_the_fused_order_lays_the_readers_scores_onto_the_sum_of_reader_and_cosine_ranks(reader, embedder):
    """`sentence_order = "fused"`: of the candidates the reader scores at the floor or
    above, the one with the smallest sum of its rank by the reader and by the bi-encoder's cosine
    (ties to the reader) gets the reader's best score, and so on down, the others after them in the
    reader's order; the scores themselves, and so `found`, stay the reader's."""
    from rag_rlm.reasoning.scoring import RankFused, ReaderScorer

    question = "How many days of paid leave do employees get?"
    texts = [reader_text("Expenses", "Expenses submitted more than 90 days after the purchase are not reimbursed."),
             reader_text("Time off", "New hires get 22 vacation days per calendar year."),
             reader_text("Time off", "Unused vacation days carry over to the next year."),
             reader_text("Expenses", "Receipts must be attached to every claim."),
             reader_text("Holidays", "The office is closed on public holidays.")]
    alone = np.asarray(reader.score(question, texts))
    vectors = embedder.embed([question, *texts])
    cosine = vectors[1:] @ vectors[0]
    by_reader, by_cosine = (list(np.argsort(np.argsort(-x, kind="stable"), kind="stable")) for x in (alone, cosine))
    for floor in (0.0, 0.15, 0.5):
        order = sorted(range(len(texts)), key=lambda i, f=floor: (alone[i] < f, 0 if alone[i] < f else by_reader[i] + by_cosine[i], by_reader[i]))
        fused = RankFused(ReaderScorer(reader), embedder, floor).score_texts(question, texts)
        assert list(fused[order]) == sorted(alone, reverse=True)  # the i-th of the fused order holds the i-th best
        assert sorted(fused) == sorted(alone) and fused.max() == alone.max()
    # the reader alone puts the 90-day expense rule first; the cosine's ranks bring the vacation days up,
    # unless the floor leaves the expense rule the only sentence the reader supports
    assert int(np.argmax(alone)) == 0 and alone[1] >= 0.15
    assert int(np.argmax(RankFused(ReaderScorer(reader), embedder, 0.15).score_texts(question, texts))) == 1
    assert int(np.argmax(RankFused(ReaderScorer(reader), embedder, 0.5).score_texts(question, texts))) == 0
    # a reader sure of its best sentence keeps its order: fused only under `below`
    best = float(alone.max())
    assert int(np.argmax(RankFused(ReaderScorer(reader), embedder, 0.15, below=best).score_texts(question, texts))) == 0
    assert int(np.argmax(RankFused(ReaderScorer(reader), embedder, 0.15, below=best + 1e-3).score_texts(question, texts))) == 1
    # the first place needs a sentence the reader scores at `lead` by itself (reflection reads it alone)
    assert int(np.argmax(RankFused(ReaderScorer(reader), embedder, 0.15, lead=float(alone[1])).score_texts(question, texts))) == 1
    led = RankFused(ReaderScorer(reader), embedder, 0.15, lead=float(alone[1]) + 1e-3).score_texts(question, texts)
    assert int(np.argmax(led)) == 0 and sorted(led) == sorted(alone)


def test_the_sentence_order_is_a_setting_the_memo_key_names(embedder):
    from rag_rlm.config import Settings
    from rag_rlm.errors import ConfigError
    from rag_rlm.reasoning.build import build_reasoner

    plain = build_reasoner(Settings(reader_precision="fp32", sentence_order="reader"), embedder)
    fused = build_reasoner(Settings(reader_precision="fp32"), embedder)  # the fused order by default
    assert "+rank-fused@" in fused.identity and "<0.7^" in fused.identity  # under 0.7, led by a found sentence
    assert "+rank-fused" not in plain.identity  # no shared memo entries
    assert fused.thresholds.found == plain.thresholds.found  # found is the reader's either way
    with pytest.raises(ConfigError, match="sentence_order.*fused, reader.*'cosine'"):
        Settings(sentence_order="cosine")


def _asking_last(tmp_path: Path, question_tokens: int | None) -> Path:
    """The shipped reader with its card's question_tokens set (None: removed, the longest_first reading)."""
    folder = tmp_path / f"ask{question_tokens}"
    shutil.copytree(shipped_reader_path(), folder)
    card = json.loads((folder / "reader.json").read_text())
    card.pop("question_tokens", None)
    if question_tokens is not None:
        card["question_tokens"] = question_tokens
    (folder / "reader.json").write_text(json.dumps(card))
    return folder


def test_a_long_question_keeps_its_ask_when_the_pair_is_cut_to_the_readers_length(tmp_path):
    """A card's question_tokens cuts a long question from its start, at a word, so the ask that ends
    a story is read; longest_first (no question_tokens) cut its end. Both backends read the same
    ids, the identity says how pairs are read, and an impossible value is an error naming it."""
    scene = ("We run a small online shop and our nightly export job writes every order of the day into one big "
             "spreadsheet that the accountants open in the morning, and lately the job has started to take hours "
             "because the number of orders has grown a lot since the spring sale.")
    question = f"{scene} Which setting limits how many rows the export writes per file?"
    texts = [reader_text("Export settings", "export_max_rows: the largest number of rows the export writes to one "
                         "file before it starts the next file, so that each file stays small enough to open "
                         "quickly in a spreadsheet program."),
             reader_text("Export settings", "The nightly export job writes the orders of the day for the "
                         "accountants, and large shops may see it take longer after busy sales.")]
    asking, reader = Reader(_asking_last(tmp_path, 40)), Reader(_asking_last(tmp_path, None))
    ids, kinds = asking._network.encode([(question, texts[0])])[0]
    read = asking._network.tokenizer.decode(ids)
    assert len(ids) <= asking.max_tokens and len(kinds) == len(ids) and kinds.count(0) <= 40 + 2
    assert "how many rows the export writes per file?" in read and "online shop" not in read
    assert not asking._network.tokenizer.convert_ids_to_tokens(ids[1]).startswith("##")  # from a word's start
    legacy = reader._network.tokenizer.decode(reader._network.encode([(question, texts[0])])[0][0])
    assert "per file?" not in legacy  # longest_first lost the ask: what question_tokens is for

    other_ask = f"{scene} How do I make the export write several smaller files instead?"
    assert reader.score(question, texts[:1]) == reader.score(other_ask, texts[:1])  # beside a long text, its ask is not read
    assert reader.score(question, texts)[1] > max(reader.threshold, reader.score(question, texts)[0])  # the scene wins
    assert asking.score(question, texts[:1]) != asking.score(other_ask, texts[:1])  # now it is
    answer, scene_echo = asking.score(question, texts)
    assert scene_echo < reader.score(question, texts)[1] - 0.3  # the scene draws the reader less
    numpy_reader = Reader(_asking_last(tmp_path / "n", 40), backend="numpy")
    assert numpy_reader._network.encode([(question, texts[0])]) == [(ids, kinds)]
    assert numpy_reader.score(question, texts) == pytest.approx([answer, scene_echo], abs=1e-4)
    assert asking.identity == reader.identity.replace("/fp32", "/ask40/fp32")  # no memo entry shared with the plain reading
    with pytest.raises(ModelNotFound, match="question_tokens must be 1 to 92"):
        Reader(_asking_last(tmp_path / "bad", 95))


def test_a_judge_says_whether_the_best_sentence_answers_while_the_reader_orders_them(tmp_path, embedder):
    """With RAG_RLM_JUDGE the reader's scores keep their order and ratios and are scaled so their
    best is the judge's best: found and the support level read the judge's card; a claim checked
    alone is read by the judge alone; the judge reads the reader's best few. The memo key names both; a missing judge is an error naming it."""
    from rag_rlm.config import Settings
    from rag_rlm.reasoning.build import build_reasoner
    from rag_rlm.reasoning.scoring import JudgedScorer, ReaderScorer

    judge_folder = _asking_last(tmp_path, None)  # the same weights read another way: other scores
    card = json.loads((judge_folder / "reader.json").read_text())
    card.update(found_threshold_fp32=0.12, threshold_from="a test's held-out pages")
    (judge_folder / "reader.json").write_text(json.dumps(card))
    judged = build_reasoner(Settings(reader_precision="fp32", judge=str(judge_folder)), embedder)
    alone = build_reasoner(Settings(reader_precision="fp32", judge="none"), embedder)
    assert isinstance(judged.scorer.inner.inner, JudgedScorer)  # under the long_question rule's core reading, fused
    assert judged.thresholds.found == 0.12 and "a test's held-out pages" in judged.thresholds.source("found")
    assert judged.support == pytest.approx(0.06) and alone.thresholds.found != 0.12
    assert "+judge3:" in judged.identity and judged.identity != alone.identity  # no shared memo entries

    reader, judge = ReaderScorer(load_reader(shipped_reader_path())), ReaderScorer(load_reader(judge_folder))
    scorer = JudgedScorer(reader, judge)
    scene = ("We run a small online shop and our nightly export job writes every order of the day into one big "
             "spreadsheet that the accountants open in the morning, and lately the job has started to take hours "
             "because the number of orders has grown a lot since the spring sale.")
    question = f"{scene} Which setting limits how many rows the export writes per file?"
    texts = [reader_text("Export settings", "export_max_rows: the largest number of rows the export writes to one file."),
             reader_text("Export settings", "The nightly export job writes the orders of the day for the accountants."),
             reader_text("Shipping", "Parcels leave the warehouse every afternoon.")]
    r, j, s = (x.score_texts(question, texts) for x in (reader, judge, scorer))
    assert not np.allclose(r, j)  # the two read differently, so the test can tell whose is whose
    assert list(np.argsort(-s)) == list(np.argsort(-r))  # the reader's order
    assert s.max() == pytest.approx(j.max(), rel=1e-5) and s / s.max() == pytest.approx(r / r.max(), rel=1e-4)
    assert scorer.score_texts(question, texts[1:2])[0] == pytest.approx(j[1], rel=1e-5)  # alone: the judge's
    first = JudgedScorer(reader, judge, reads=1).score_texts(question, texts)  # the judge reads the reader's best only
    assert first.max() == pytest.approx(j[int(np.argmax(r))], rel=1e-5) and list(np.argsort(-first)) == list(np.argsort(-r))

    from rag_rlm.reasoning.build import judge_path

    assert judge_path(Settings(judge="")) == str(shipped_judge_path())  # the shipped judge goes with the shipped reader
    assert judge_path(Settings(judge="", reader=str(judge_folder))) is None  # a reader of one's own judges itself
    assert judge_path(Settings()) is None  # off by default (bench/eval_results.md, twenty-seventh round)
    with pytest.raises(ModelNotFound, match="no-such-judge"):
        build_reasoner(Settings(reader_precision="fp32", judge=str(tmp_path / "no-such-judge")), embedder)
