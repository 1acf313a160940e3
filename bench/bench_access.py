"""Retrieval under an access filter (issue 18): recall@5 and search time on the HotpotQA dev set.

Every document of the corpus goes into one collection with one of ten access groups (g0..g9, by
a hash of its id). A caller holding g0..g4 reads half of it, one holding g0 a tenth. For each
caller the same questions are searched two ways:

- filtered: the whole collection, `search(groups=caller's)`: the filter inside the store's
  query (pgvector: HNSW widened by the allowed fraction, doubled while short, exact past ef 1000);
- subset: a collection holding only the documents that caller reads, searched with no filter:
  what a deployment per group would get.

recall@5 is over each question's gold documents that the caller reads (questions with none are
skipped), counting the distinct documents of the top 5 spans. Target: filtered within 0.01 of
subset. Times are one store.search each (the question already embedded), interleaved across the
variants so a busy machine slows them alike; p50 and p95 over every question and repeat.

    .venv/bin/python bench/bench_access.py                         # pgserver under /tmp
    .venv/bin/python bench/bench_access.py --store qdrant:///tmp/q  # any store URL
"""

from __future__ import annotations

import argparse
import hashlib
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rag_rlm.config import Settings
from rag_rlm.embed import load_embedder
from rag_rlm.eval.data import read_questions
from rag_rlm.ingest.parsers import parse_file
from rag_rlm.ingest.pipeline import ingest_documents
from rag_rlm.memory import open_store

K = 5
GROUPS = 10
CALLERS = {"half": tuple(f"g{i}" for i in range(5)), "tenth": ("g0",)}


def group_of(doc_id: str) -> str:
    return f"g{int(hashlib.sha256(doc_id.encode()).hexdigest(), 16) % GROUPS}"


def load(store, settings: Settings, embedder, corpus: Path) -> dict[str, str]:
    """The corpus into `full` (each document in its group) and each caller's subset into
    `only_<caller>` (idempotent: a second run finds the hashes and writes nothing)."""
    docs = parse_file(corpus, corpus.name, corpus.read_bytes()).documents
    grouped = [replace(d, groups=(group_of(d.id),)) for d in docs]
    started = time.perf_counter()
    summary = ingest_documents(grouped, collection="full", store=store, embedder=embedder, settings=settings)
    for name, groups in CALLERS.items():
        mine = [d for d in grouped if d.groups[0] in groups]
        ingest_documents(mine, collection=f"only_{name}", store=store, embedder=embedder, settings=settings)
    print(f"corpus: {len(docs)} documents ({summary.documents_new} new) in {time.perf_counter() - started:.0f} s")
    return {d.id: d.groups[0] for d in grouped}


def recall(spans, gold: set[str]) -> float:
    found = list(dict.fromkeys(s.document_id for s in spans))[:K]
    return len(gold & set(found)) / len(gold)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="/work/shared/data/hotpotqa", help="folder with questions.jsonl, corpus.jsonl")
    p.add_argument("--store", default="pgserver:///tmp/rag_rlm_bench_access/pgdata")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    data = Path(args.data)
    settings = Settings(store=args.store, data_dir="/tmp/rag_rlm_bench_access")
    embedder = load_embedder()
    store = open_store(args.store)
    try:
        groups = load(store, settings, embedder, data / "corpus.jsonl")
        questions = [q for q in read_questions(data / "questions.jsonl") if q.supporting_ids]
        vectors = embedder.embed([q.question for q in questions])
        print(f"store: {args.store}; {len(questions)} questions; k={K}")
        variants = {"unfiltered (whole collection)": ("full", None)}
        for name, caller in CALLERS.items():
            variants[f"{name}: filtered"] = ("full", caller)
            variants[f"{name}: subset"] = (f"only_{name}", None)
        times: dict[str, list[float]] = {v: [] for v in variants}
        scores: dict[str, list[float]] = {v: [] for v in variants}
        for repeat in range(args.repeats):
            for q, vector in zip(questions, vectors, strict=True):
                for label, (collection, caller) in variants.items():
                    started = time.perf_counter()
                    spans = store.search(collection, vector, K, groups=caller)
                    times[label].append(time.perf_counter() - started)
                    if repeat:
                        continue
                    allowed = CALLERS[label.split(":")[0]] if ":" in label else None
                    gold = {g for g in q.supporting_ids if allowed is None or groups.get(g) in allowed}
                    if caller is not None:
                        assert all(groups[s.document_id] in caller for s in spans), "a filtered search leaked"
                    if gold:
                        scores[label].append(recall(spans, gold))
        print(f"{'variant':32} {'questions':>9} {'recall@5':>9} {'p50 ms':>8} {'p95 ms':>8}")
        for label in variants:
            t = np.asarray(times[label]) * 1000
            print(f"{label:32} {len(scores[label]):>9} {np.mean(scores[label]):>9.3f} "
                  f"{np.percentile(t, 50):>8.2f} {np.percentile(t, 95):>8.2f}")
        for name in CALLERS:
            gap = np.mean(scores[f"{name}: filtered"]) - np.mean(scores[f"{name}: subset"])
            share = sum(g in CALLERS[name] for g in groups.values()) / len(groups)
            print(f"{name} ({share:.1%} of documents readable): filtered - subset recall@5 = {gap:+.3f}"
                  f" ({'within' if abs(gap) <= 0.01 else 'NOT within'} 0.01)")
    finally:
        store.close()


if __name__ == "__main__":
    main()
