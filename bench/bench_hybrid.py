"""Hybrid search (vector + keyword, fused by reciprocal rank) against dense search alone, on a real
collection: the latency of one search and the share of each question's supporting documents that
one search finds in its top k (recall@k, no recursion, no reader).

    .venv/bin/python bench/bench_hybrid.py --store pgserver://bench/out/controller2/pg \\
        --collection hotpot16k --questions ../shared/data/hotpotqa/questions.jsonl

Dense search is the raw pgvector (or Qdrant) query underneath, so the latency ratio is what the
keyword side costs. Each mode runs the questions twice, after a warm-up of ten.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.eval.data import read_questions  # noqa: E402
from rag_rlm.memory import open_store  # noqa: E402


def measure(store, collection: str, questions, vectors, k: int, hybrid: bool) -> tuple[float, float, float]:
    """p50 and mean milliseconds of one search, and recall@k of the supporting documents."""
    def search(q, v):
        return store.search(collection, v, k, text=q.question if hybrid else None)

    for q, v in list(zip(questions, vectors, strict=True))[:10]:
        search(q, v)
    times, recalls = [], []
    for _ in range(2):
        for q, v in zip(questions, vectors, strict=True):
            started = time.perf_counter()
            spans = search(q, v)
            times.append((time.perf_counter() - started) * 1000)
            found = {s.document_id for s in spans}
            recalls.append(len(found & set(q.supporting_ids)) / len(q.supporting_ids))
    return statistics.median(times), statistics.fmean(times), statistics.fmean(recalls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True, help="pgserver://, postgresql:// or qdrant URL")
    parser.add_argument("--collection", required=True)
    parser.add_argument("--questions", required=True, help="questions.jsonl with supporting_ids")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--n", type=int, default=100, help="questions asked (default 100)")
    args = parser.parse_args()
    questions = [q for q in read_questions(args.questions) if q.supporting_ids][: args.n]
    vectors = load_embedder().embed([q.question for q in questions])
    store = open_store(args.store)
    info = store.collection_info(args.collection)
    print(f"{args.collection}: {info.chunks} chunks, {len(questions)} questions, k={args.k}")
    dense = measure(store, args.collection, questions, vectors, args.k, hybrid=False)
    hybrid = measure(store, args.collection, questions, vectors, args.k, hybrid=True)
    for name, (p50, mean, recall) in (("dense", dense), ("hybrid", hybrid)):
        print(f"  {name:6}  p50 {p50:6.1f} ms  mean {mean:6.1f} ms  recall@{args.k} {recall:.3f}")
    print(f"  hybrid / dense latency (p50): {hybrid[0] / dense[0]:.1f}x")


if __name__ == "__main__":
    main()
