"""What the reader costs and buys: ms per (question, sentence) pair at each precision (fp32, bf16,
int8), batched as answering batches them, against the bi-encoder's own encode of the same texts; how
far a score moves with the batch it is read in (int8 quantises a batch's activations on one scale); and on the SQuAD 2.0
dev sample (candidates = the sentences of the 2 retrieved paragraphs, as `rag_rlm.reader.evaluate`),
the top-1 sentence and the answerability figures per half, for each precision and for the number of
candidates the reader re-scores (the best N by the bi-encoder).

    python bench/bench_reader.py [--reader models/reader] [--n 4,8,12,16,24]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.reader import Reader, shipped_reader_path  # noqa: E402
from rag_rlm.reader.evaluate import Item, evaluate, load_items  # noqa: E402
from rag_rlm.reader.model import PRECISIONS  # noqa: E402

SQUAD2 = ROOT.parent / "shared" / "data" / "squad2"


def per_pair_ms(reader: Reader, pairs: list[tuple[str, str]], repeat: int = 3) -> float:
    reader.probabilities(pairs[:8])  # warm
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        reader.probabilities(pairs)
        best = min(best, time.perf_counter() - t)
    return 1000 * best / len(pairs)


def batch_drift(reader: Reader, pairs: list[tuple[str, str]], batch: int = 12) -> float:
    """The largest change of a pair's score between being read in a batch of `batch` pairs and
    being read alone: what a concurrent request beside it could do to an answer."""
    worst = 0.0
    for at in range(0, min(len(pairs), 96), batch):
        chunk = pairs[at:at + batch]
        together = reader.probabilities(chunk)
        alone = np.array([reader.probabilities([p])[0] for p in chunk])
        worst = max(worst, float(np.abs(np.asarray(together) - alone).max()))
    return worst


def encode_ms(embedder, texts: list[str], repeat: int = 3) -> float:
    embedder.model.encode(texts[:8])
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        embedder.model.encode(texts, batch_size=64)
        best = min(best, time.perf_counter() - t)
    return 1000 * best / len(texts)


def top_n(items: list[Item], embed, n: int) -> list[Item]:
    """Each item with only its best `n` candidates by the bi-encoder (what answering re-scores)."""
    out = []
    for it in items:
        if not it.candidates:
            out.append(it)
            continue
        q = embed([it.question])[0]
        keep = np.argsort(-(embed(list(it.candidates)) @ q), kind="stable")[:n]
        out.append(Item(it.id, it.question, it.answers, tuple(it.candidates[i] for i in keep),
                        tuple(it.sentences[i] for i in keep)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reader", default=str(shipped_reader_path()))
    parser.add_argument("--n", default="4,8,12,16,24", help="candidates re-scored, comma-separated")
    args = parser.parse_args()
    embedder = load_embedder()
    items = load_items(SQUAD2, embedder.embed)
    pairs = [(it.question, c) for it in items for c in it.candidates][:512]
    print(f"reader {args.reader}; {len(pairs)} pairs timed, batch 64")
    enc = encode_ms(embedder, [c for _, c in pairs])
    print(f"bi-encoder encode of the candidate texts: {enc:.2f} ms/text")
    results = {}

    def cosine(batch: list[tuple[str, str]]) -> np.ndarray:  # the sentence scorer before the reader
        return (embedder.embed([q for q, _ in batch]) * embedder.embed([t for _, t in batch])).sum(1)

    figures = evaluate(items, cosine)
    results["bi-encoder cosine"] = figures
    t, c = figures["tune"], figures["check"]
    print(f"bi-encoder cosine (no reader): top-1 tune {t['top1_contains_answer']:.3f} check "
          f"{c['top1_contains_answer']:.3f}; declined tune {t['unanswerable_declined']:.3f}/"
          f"{t['answerable_wrongly_declined']:.3f} check {c['unanswerable_declined']:.3f}/{c['answerable_wrongly_declined']:.3f}")
    for name in PRECISIONS:
        reader = Reader(args.reader, precision=name)
        ms = per_pair_ms(reader, pairs)
        drift = batch_drift(reader, pairs)
        print(f"reader {name}: {ms:.2f} ms/pair ({ms / enc:.2f}x the bi-encoder's encode of one text); "
              f"a score read in a batch of 12 vs alone differs by up to {drift:.4f}")
        for n in [int(v) for v in args.n.split(",")] + [0]:
            subset = top_n(items, embedder.embed, n) if n else items
            figures = evaluate(subset, reader.probabilities)
            results[f"{name} N={n or 'all'}"] = figures
            t, c = figures["tune"], figures["check"]
            print(f"  N={n or 'all':>3}: top-1 tune {t['top1_contains_answer']:.3f} check {c['top1_contains_answer']:.3f}; "
                  f"declined at <=10% wrongly (threshold {figures['threshold']:.3f} from tune): "
                  f"tune {t['unanswerable_declined']:.3f}/{t['answerable_wrongly_declined']:.3f} "
                  f"check {c['unanswerable_declined']:.3f}/{c['answerable_wrongly_declined']:.3f}")
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_reader.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
