"""How should sentence vectors be made at ingest? Ranking quality and encode cost of each design.

    .venv/bin/python bench/bench_sentence_vectors.py [--per-set 100]

Designs:
  alone     encode every sentence on its own (an extra encode pass at ingest)
  context   the same, each sentence prefixed with its context: "Title — Heading: sentence"
  pooled    mean of the chunk pass's token vectors over the sentence's tokens, normalised
            (one forward pass for chunks and sentences: nearly free)

For each question (squad2 answerable, hotpotqa; /work/shared/data), the sentences of its gold
paragraph(s) are ranked by cosine with the question's vector: p@1 = the top sentence contains a
gold answer (SQuAD-normalised), MRR of the first answer-bearing sentence; questions none of whose
gold sentences holds the answer (yes/no comparisons, paraphrased answers) are left out. Cost:
encode seconds per 1000 chunks, the chunk pass itself and each design's extra on top of it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.eval.metrics import normalize_answer  # noqa: E402
from rag_rlm.ingest.chunker import chunk_text  # noqa: E402
from rag_rlm.ingest.sentences import split_sentences  # noqa: E402
from rag_rlm.ingest.sentvec import context_text, pool_sentences  # noqa: E402

DATA = Path("/work/shared/data")


def load(name: str, per_set: int, rng: random.Random) -> tuple[list[dict], dict[str, dict]]:
    questions = [json.loads(x) for x in (DATA / name / "questions.jsonl").open()]
    questions = [q for q in questions if q["answer"] and normalize_answer(q["answer"]) not in ("yes", "no")]
    questions = rng.sample(questions, min(per_set, len(questions)))
    wanted = {i for q in questions for i in q["supporting_ids"]}
    corpus = {r["id"]: r for r in map(json.loads, (DATA / name / "corpus.jsonl").open()) if r["id"] in wanted}
    return questions, corpus


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-set", type=int, default=100)
    args = ap.parse_args()
    settings = Settings()
    embedder = load_embedder()
    embedder.embed_with_tokens(["A warm-up pass, so the first timing is not the model's start."] * 8)
    rng = random.Random(13)
    rows = []
    cost: dict[str, float] = {"chunks": 0.0, "alone": 0.0, "context": 0.0, "pooled": 0.0, "n_chunks": 0}
    for name in ("squad2", "hotpotqa"):
        questions, corpus = load(name, args.per_set, rng)
        docs = {}  # id -> (chunks, sentences)
        for rid, r in corpus.items():
            chunks = chunk_text(rid, r["text"], embedder, chunk_tokens=settings.chunk_tokens,
                                overlap=settings.chunk_overlap)
            docs[rid] = (chunks, split_sentences(r["text"], rid))
        chunk_texts = [c.text for chunks, _ in docs.values() for c in chunks]
        sents = [s for _, ss in docs.values() for s in ss]

        t = time.perf_counter()
        embedder.embed(chunk_texts)
        cost["chunks"] += time.perf_counter() - t
        t = time.perf_counter()
        alone = embedder.embed([s.text for s in sents])
        cost["alone"] += time.perf_counter() - t
        t = time.perf_counter()
        context = embedder.embed([context_text(corpus[s.document_id]["title"], s) for s in sents])
        cost["context"] += time.perf_counter() - t
        t = time.perf_counter()
        pooled_parts = []
        _, token_sets = embedder.embed_with_tokens(chunk_texts)
        row = 0
        for chunks, ss in docs.values():
            pooled_parts.append(pool_sentences(chunks, token_sets[row:row + len(chunks)], ss))
            row += len(chunks)
        pooled = np.concatenate(pooled_parts)
        cost["pooled"] += time.perf_counter() - t
        cost["n_chunks"] += len(chunk_texts)

        index = {(s.document_id, s.index): i for i, s in enumerate(sents)}
        qv = embedder.embed([q["question"] for q in questions])
        for design, vectors in (("alone", alone), ("context", context), ("pooled", pooled)):
            p1, rr, n = 0.0, 0.0, 0
            for q, v in zip(questions, qv, strict=True):
                cand = [index[(s.document_id, s.index)] for rid in q["supporting_ids"] if rid in docs
                        for s in docs[rid][1]]
                golds = [normalize_answer(a) for a in [q["answer"], *q.get("answer_aliases", [])] if a]
                bearing = [any(g and g in normalize_answer(sents[i].text) for g in golds) for i in cand]
                if not any(bearing):
                    continue
                n += 1
                order = np.argsort(-(vectors[cand] @ v), kind="stable")
                ranks = [r for r, j in enumerate(order) if bearing[j]]
                p1 += ranks[0] == 0
                rr += 1.0 / (ranks[0] + 1)
            rows.append((name, design, n, p1 / n, rr / n))

    per_k = 1000.0 / cost["n_chunks"]
    print(f"{'set':10} {'design':8} {'questions':>9} {'p@1':>6} {'MRR':>6}")
    for name, design, n, p1, mrr in rows:
        print(f"{name:10} {design:8} {n:>9} {p1:>6.3f} {mrr:>6.3f}")
    print(f"\nencode cost per 1000 chunks ({int(cost['n_chunks'])} chunks measured, "
          f"{embedder.model.device}, torch threads={_threads()}):")
    print(f"  chunk pass alone            {cost['chunks'] * per_k:6.2f} s")
    for design in ("alone", "context"):
        print(f"  {design:8} extra encode pass   +{cost[design] * per_k:6.2f} s")
    extra = cost["pooled"] - cost["chunks"]
    print(f"  pooled   chunk pass + pool  {cost['pooled'] * per_k:6.2f} s ({extra * per_k:+.2f} s over the chunk pass)")


def _threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    main()
