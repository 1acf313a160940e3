"""A probe, not part of the product: does a span head add a no-answer signal to the shipped reader?

The head is a copy of the reader's last encoder layer plus a start/end linear layer, trained on the
shipped reader's frozen layer-3 states to point at the answer's tokens (or at [CLS] when the
sentence does not answer): SQuAD v1 answer sentences with one same-topic negative and a constructed
one (`perturb`), SQuAD 2.0's partial train slice with its unanswerables. The reader's own score is
untouched. `eval` then reads the SQuAD 2.0 dev sample as `rag_rlm.reader.evaluate` does (the
sentences of the two retrieved paragraphs) and reports, per half, top-1 and the unanswerables
declined at <= 10% answerables wrongly declined (threshold picked on tune) for the reader's logit,
the span margin (best span minus null) and their sums.

    python bench/reader_span_probe.py train --squad1 14000 --epochs 2 --out bench/out/span_probe
    python bench/reader_span_probe.py eval --out bench/out/span_probe
    python bench/reader_span_probe.py joint --pairs 16000 --span-weight 1   # 0: the control

`joint` trains the whole reader on from its shipped weights, with the span layer on its last layer
(nothing is saved), and reads the dev sample the same way.
"""

from __future__ import annotations

import argparse
import copy
import functools
import math
import random
import sys
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
torch.set_num_threads(2)
torch.manual_seed(13)

from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.eval.metrics import containment  # noqa: E402
from rag_rlm.eval.splits import half  # noqa: E402
from rag_rlm.reader import network  # noqa: E402
from rag_rlm.reader.data import (  # noqa: E402
    AMBIGUOUS,
    SQUAD1,
    SQUAD2,
    _article_names,
    _hardest,
    _sentences,
    _title,
    read_rows,
    reader_text,
)
from rag_rlm.reader.evaluate import load_items, pick_threshold  # noqa: E402
from rag_rlm.reader.model import shipped_reader_path  # noqa: E402
from rag_rlm.reader.perturb import perturb  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "train"
SQUAD2_DEV = ROOT.parent / "shared" / "data" / "squad2"
MAXT = 96
rng = random.Random(13)


@functools.cache
def shipped():
    """The shipped reader's tokenizer and network (fp32), loaded once, on first use."""
    folder = shipped_reader_path()
    return AutoTokenizer.from_pretrained(str(folder)), network.load(folder)


def examples(n1: int):
    amb = set((DATA / AMBIGUOUS).read_text().split())
    s1 = [r for r in read_rows(DATA / SQUAD1) if r["id"] not in amb]
    names = _article_names(s1)
    s1 = rng.sample(s1, n1)
    s2 = list(read_rows(DATA / SQUAD2))
    out = []  # (q, text, a0, a1, weight)
    for rows, w in ((s1, 1.0), (s2, 1.0)):
        for r in rows:
            sents = _sentences(r)
            title = _title(r)
            if r.get("is_impossible") or not r["answers"]:
                for t in _hardest(r["question"], [t for _, _, t in sents], 2, None):
                    out.append((r["question"], reader_text(title, t), -1, -1, 2.0))
                continue
            a = r["answers"][0]
            hit = next(((s, e, t) for s, e, t in sents if s <= a["start"] < e), None)
            if hit is None:
                continue
            s, e, t = hit
            text = reader_text(title, t)
            base = len(text) - len(t)
            off = r["context"].find(t, s) if r["context"][s:s + len(t)] != t else s
            a0 = base + (a["start"] - off)
            a1 = a0 + len(a["text"].rstrip(" .,"))
            if text[a0:a1].strip() == "":
                continue
            out.append((r["question"], text, a0, a1, w))
            needle = a["text"].strip().lower()
            others = [x for _, _, x in sents if x != t and needle not in x.lower()]
            for o in _hardest(r["question"], others, 1, rng):
                out.append((r["question"], reader_text(title, o), -1, -1, w))
            if r["source"].startswith("squad1") and rng.random() < 0.8:
                ch = perturb(r["question"], t, r["context"], names.get(r["title"], ()), rng)
                if ch is not None:
                    out.append((ch.question, text, -1, -1, ch.weight))
    return out


def encode(pairs):
    tok, _ = shipped()
    e = tok([p[0] for p in pairs], [p[1] for p in pairs], truncation="only_second", max_length=MAXT,
            return_offsets_mapping=True, return_token_type_ids=True, padding="max_length")
    starts, ends, keep = [], [], []
    for i, p in enumerate(pairs):
        seq = e.sequence_ids(i)
        if p[2] < 0:  # no answer here: point at [CLS]
            starts.append(0)
            ends.append(0)
            keep.append(True)
            continue
        toks = [j for j, sid in enumerate(seq) if sid == 1 and e["offset_mapping"][i][j][1] > p[2] and e["offset_mapping"][i][j][0] < p[3]]
        keep.append(bool(toks))  # an answer cut off by truncation: dropped
        starts.append(toks[0] if toks else 0)
        ends.append(toks[-1] if toks else 0)
    textmask = [[1 if sid == 1 else 0 for sid in (e.sequence_ids(i))] for i in range(len(pairs))]
    return (torch.tensor(e["input_ids"]), torch.tensor(e["attention_mask"]), torch.tensor(e["token_type_ids"]),
            torch.tensor(starts), torch.tensor(ends), torch.tensor(keep), torch.tensor(textmask))


@torch.inference_mode()
def frozen(ids, mask, types, bs=256):
    _, net = shipped()
    enc = net.encoder
    h3s, logits = [], []
    for i in range(0, len(ids), bs):
        o = enc(input_ids=ids[i:i+bs], attention_mask=mask[i:i+bs], token_type_ids=types[i:i+bs], output_hidden_states=True)
        h3s.append(o.hidden_states[3].half())
        last = o.last_hidden_state
        m = mask[i:i+bs].unsqueeze(-1).float()
        logits.append(net.head((last * m).sum(1) / m.sum(1))[:, 0])
    return torch.cat(h3s), torch.cat(logits)


def pointing(logits, textmask):
    """Start and end logits where an answer may be pointed at: the sentence's tokens, or [CLS] for none."""
    allowed = textmask.bool().clone()
    allowed[:, 0] = True
    logits = logits.masked_fill(~allowed[:, :, None], -1e4)
    return logits[..., 0], logits[..., 1]


class Span(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = copy.deepcopy(shipped()[1].encoder.encoder.layer[3])
        self.out = torch.nn.Linear(384, 2)

    def states(self, h3, mask):
        h = self.layer(h3.float(), attention_mask=(1.0 - mask[:, None, None, :].float()) * -1e4)
        return h[0] if isinstance(h, tuple) else h

    def forward(self, h3, mask, textmask):
        return pointing(self.out(self.states(h3, mask)), textmask)


def span_diff(s, e, textmask, maxlen=20):
    null = s[:, 0] + e[:, 0]
    T = s.shape[1]
    sc = s[:, :, None] + e[:, None, :]
    i = torch.arange(T)
    ok = (i[None, :] >= i[:, None]) & (i[None, :] < i[:, None] + maxlen)
    tm = textmask.bool()
    ok = ok[None] & tm[:, :, None] & tm[:, None, :]
    best = sc.masked_fill(~ok, -1e9).flatten(1).max(1).values
    return best - null


def train(n1: int, epochs: int, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    ex = examples(n1)
    print("examples", len(ex), "pos", sum(x[2] >= 0 for x in ex), f"{time.time()-t0:.0f}s", flush=True)
    ids, mask, types, st, en, keep, tm = encode(ex)
    w = torch.tensor([x[4] for x in ex])
    sel = keep.nonzero()[:, 0]
    ids, mask, types, st, en, tm, w = ids[sel], mask[sel], types[sel], st[sel], en[sel], tm[sel], w[sel]
    print("kept", len(ids), f"{time.time()-t0:.0f}s", flush=True)
    h3, _ = frozen(ids, mask, types)
    # check the copied layer reproduces the frozen last layer
    sp = Span()
    with torch.inference_mode():
        o = shipped()[1].encoder(input_ids=ids[:4], attention_mask=mask[:4], token_type_ids=types[:4])
        h = sp.states(h3[:4], mask[:4])
        m = mask[:4].bool()
        print("layer check maxdiff", float((h - o.last_hidden_state)[m].abs().max()), flush=True)
    print("cached", f"{time.time()-t0:.0f}s", flush=True)
    opt = torch.optim.AdamW(sp.parameters(), lr=1e-4, weight_decay=0.01)
    n, bs = len(ids), 32
    steps = epochs * math.ceil(n / bs)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / 200) * max(0.0, 1 - s / steps))
    ce = torch.nn.CrossEntropyLoss(reduction="none")
    step = 0
    g = torch.Generator().manual_seed(13)
    for ep in range(epochs):
        perm = torch.randperm(n, generator=g)
        run = 0.0
        for b in range(0, n, bs):
            idx = perm[b:b+bs]
            s, e = sp(h3[idx], mask[idx], tm[idx])
            loss = ((ce(s, st[idx]) + ce(e, en[idx])) / 2 * w[idx]).sum() / w[idx].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            run = 0.98 * run + 0.02 * loss.item() if step > 1 else loss.item()
            if step % 200 == 0:
                print(f"ep {ep} step {step}/{steps} loss {run:.3f} {time.time()-t0:.0f}s", flush=True)
    torch.save(sp.state_dict(), out / "span.pt")
    print("trained", f"{time.time()-t0:.0f}s", flush=True)


def dev_rows(score) -> list:
    """The dev sample's items, each with its candidates' reader logits and span margins: `score(ids,
    mask, types, textmask)` gives both for a batch."""
    items = load_items(SQUAD2_DEV, load_embedder().embed)
    pairs = [(it.question, c, -1, -1, 1.0) for it in items for c in it.candidates]
    ids, mask, types, *_, tm = encode(pairs)
    logits, margins = [], []
    with torch.inference_mode():
        for i in range(0, len(ids), 256):
            logit, margin = score(ids[i:i + 256], mask[i:i + 256], types[i:i + 256], tm[i:i + 256])
            logits.append(logit)
            margins.append(margin)
    logit, margin = torch.cat(logits).numpy(), torch.cat(margins).numpy()
    rows, r = [], 0
    for it in items:
        n = len(it.candidates)
        rows.append((it, logit[r:r + n], margin[r:r + n]))
        r += n
    return rows


def report(rows, name, score_of, pick_of) -> None:
    """Top-1 by `pick_of` and unanswerables declined by `score_of`, at the threshold picked on tune."""
    out = {}
    tune = [(it, score_of(g, d)) for it, g, d in rows if half(it.id) == "tune"]
    th = pick_threshold([s for it, s in tune if it.answerable], [s for it, s in tune if not it.answerable])
    for h in ("tune", "check"):
        sel = [row for row in rows if half(row[0].id) == h]
        ans = [x for x in sel if x[0].answerable]
        un = [x for x in sel if not x[0].answerable]
        top1 = sum(containment(it.sentences[int(pick_of(g, d))], it.answers) for it, g, d in ans) / len(ans)
        dec = sum(score_of(g, d) < th for _, g, d in un) / len(un)
        wr = sum(score_of(g, d) < th for _, g, d in ans) / len(ans)
        out[h] = f"top1 {top1:.3f} declined {dec:.3f} @ {wr:.3f}"
    print(f"{name:42s} tune: {out['tune']}   check: {out['check']}", flush=True)


def report_all(rows, margins: bool = True) -> None:
    report(rows, "reader logit (max)", lambda g, d: g.max(), lambda g, d: g.argmax())
    if not margins:
        return
    report(rows, "span margin at reader's top", lambda g, d: d[g.argmax()], lambda g, d: g.argmax())
    report(rows, "span margin (max)", lambda g, d: d.max(), lambda g, d: d.argmax())
    for lam in (0.25, 0.5, 1.0, 2.0):
        report(rows, f"logit + {lam}*margin at top", lambda g, d, lam=lam: g.max() + lam * d[g.argmax()],
               lambda g, d: g.argmax())
        report(rows, f"max(logit + {lam}*margin)", lambda g, d, lam=lam: (g + lam * d).max(),
               lambda g, d, lam=lam: (g + lam * d).argmax())
    report(rows, "min(logit, margin) at top", lambda g, d: min(g.max(), d[g.argmax()]), lambda g, d: g.argmax())


def evaluate_probe(probe: Path) -> None:
    sp = Span()
    sp.load_state_dict(torch.load(probe / "span.pt"))
    sp.eval()

    def score(ids, mask, types, tm):
        h3, logit = frozen(ids, mask, types)
        return logit, span_diff(*sp(h3, mask, tm), tm)

    report_all(dev_rows(score))


def joint(n_pairs: int, span_weight: float) -> None:
    """The whole reader trained on from its shipped weights for one pass over `n_pairs` of the same pairs,
    pointwise (its label) plus `span_weight` x the span loss of a start/end layer on its last layer; 0 is
    the control. Then read like `eval`."""
    t0 = time.time()
    _, net = shipped()  # loaded before seeding: its loading draws random numbers
    torch.manual_seed(13)
    ex = examples(14000)
    random.Random(13).shuffle(ex)
    ex = ex[:n_pairs]
    ids, mask, types, st, en, keep, tm = encode(ex)
    w = torch.tensor([x[4] for x in ex])
    y = torch.tensor([1.0 if x[2] >= 0 else 0.0 for x in ex])
    sel = keep.nonzero()[:, 0]
    ids, mask, types, st, en, tm, w, y = (t[sel] for t in (ids, mask, types, st, en, tm, w, y))
    head = torch.nn.Linear(384, 2)

    def forward(ids, mask, types, tm):
        h = net.encoder(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        m = mask.unsqueeze(-1).float()
        return net.head((h * m).sum(1) / m.sum(1))[:, 0], *pointing(head(h), tm)

    net.train()
    opt = torch.optim.AdamW([{"params": net.parameters(), "lr": 2e-5}, {"params": head.parameters(), "lr": 1e-4}],
                            weight_decay=0.01)
    n, bs = len(ids), 32
    steps = math.ceil(n / bs)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / 100) * max(0.0, 1 - s / steps))
    ce = torch.nn.CrossEntropyLoss(reduction="none")
    bce = torch.nn.BCEWithLogitsLoss(reduction="none")
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(13))
    run = None
    for step, b in enumerate(range(0, n, bs), 1):
        idx = perm[b:b + bs]
        width = int(mask[idx].sum(1).max())  # the batch's longest pair: padding past it is no work
        logit, s, e = forward(ids[idx, :width], mask[idx, :width], types[idx, :width], tm[idx, :width])
        loss = ((bce(logit, y[idx]) + span_weight * (ce(s, st[idx]) + ce(e, en[idx])) / 2) * w[idx]).sum() / w[idx].sum()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([*net.parameters(), *head.parameters()], 1.0)
        opt.step()
        sched.step()
        run = loss.item() if run is None else 0.98 * run + 0.02 * loss.item()
        if step % 100 == 0:
            print(f"step {step}/{steps} loss {run:.3f} {time.time() - t0:.0f}s", flush=True)
    print("trained", n, f"{time.time() - t0:.0f}s", flush=True)
    net.eval()

    def score(ids, mask, types, tm):
        logit, s, e = forward(ids, mask, types, tm)
        return logit, span_diff(s, e, tm)

    report_all(dev_rows(score), margins=span_weight > 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("train", "eval", "joint"))
    p.add_argument("--squad1", type=int, default=14000, help="SQuAD v1 questions sampled (seed 13)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "span_probe")
    p.add_argument("--pairs", type=int, default=16000, help="joint: pairs trained on")
    p.add_argument("--span-weight", type=float, default=1.0, help="joint: the span loss's weight (0: the control)")
    a = p.parse_args()
    if a.what == "train":
        train(a.squad1, a.epochs, a.out)
    elif a.what == "eval":
        evaluate_probe(a.out)
    else:
        joint(a.pairs, a.span_weight)


if __name__ == "__main__":
    main()
