"""Search benchmark: top-10 latency and HNSW recall@10 at 100,000 stored chunks.

Random unit vectors (dim 384, the MiniLM size) go into pgvector (embedded pgserver, HNSW) and
into Qdrant local mode through the public store API (`write_document`, 1,000 chunks per
document); pgvector loads inside `PgVectorStore.bulk_load`, which builds the HNSW index once
after the COPYs. Queries are fresh random unit vectors; recall@10 is measured against exact
search (numpy brute force over the same vectors). Targets (issue 2): pgvector p50 <= 5 ms,
recall@10 >= 0.95.

    .venv/bin/python bench/bench_search.py            # 100k chunks
    .venv/bin/python bench/bench_search.py --n 10000  # quicker
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rag_rlm.memory.pgvector import EF_SEARCH, PgVectorStore
from rag_rlm.memory.qdrant import QdrantStore
from rag_rlm.types import Chunk, Document, Span

DIM = 384
PER_DOC = 1000
K = 10
COLLECTION = "bench"


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def load(store: PgVectorStore | QdrantStore, vectors: np.ndarray) -> None:
    """Documents of PER_DOC chunks; chunk j of document d is vector d * PER_DOC + j."""
    for d, first in enumerate(range(0, len(vectors), PER_DOC)):
        block = vectors[first : first + PER_DOC]
        doc = Document(id=f"d{d}", title=f"doc {d}", source=f"bench://{d}", text="", content_hash=str(d))
        chunks = [Chunk(doc.id, j, f"chunk {first + j}", 0, 0) for j in range(len(block))]
        store.write_document(COLLECTION, doc, chunks, block)


def clustered_vectors(rng: np.random.Generator, centers: np.ndarray, n: int) -> np.ndarray:
    """Unit vectors around topic centers (cosine ~0.7 to their center), as real embeddings
    cluster; uniform random vectors in 384-d have no neighbourhood structure at all."""
    noise = rng.standard_normal((n, DIM), dtype=np.float32) / np.sqrt(DIM)
    v = centers[rng.integers(0, len(centers), n)] + noise
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def position(span: Span) -> int:
    return int(span.document_id[1:]) * PER_DOC + span.chunk_index


def measure(search: Callable[[np.ndarray], list[Span]], queries: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    search(queries[0])  # warm up: connections, caches
    latencies, hits = [], 0
    for q, expected in zip(queries, truth, strict=True):
        t0 = time.perf_counter()
        spans = search(q)
        latencies.append(time.perf_counter() - t0)
        hits += len({position(s) for s in spans} & set(expected.tolist()))
    ms = np.array(latencies) * 1000
    return {"p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)),
            "recall": hits / (K * len(queries)), "queries": len(queries)}


def exact_top_k(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    scores = queries @ vectors.T
    top = np.argpartition(-scores, K, axis=1)[:, :K]
    return top


def bench_pgvector(
    url: str, vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray, efs: list[int]
) -> dict[str, dict[str, float]]:
    store = PgVectorStore.from_url(url)
    try:
        store.drop_collection(COLLECTION)
    except Exception:  # noqa: BLE001 - a fresh database has none
        pass
    try:
        t0 = time.perf_counter()
        with store.bulk_load(COLLECTION):
            load(store, vectors)
            t_copy = time.perf_counter() - t0
        t_total = time.perf_counter() - t0
        rows = {}
        for ef in efs:  # one index, several query-time trade-offs
            store.ef_search = ef
            result = measure(lambda q: store.search(COLLECTION, q, K), queries, truth)
            rows[f"pgvector ef={ef}"] = result | {"load_s": t_copy, "index_s": t_total - t_copy, "total_s": t_total}
        store.drop_collection(COLLECTION)
        return rows
    finally:
        store.close()


def bench_qdrant(path: str, vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    store = QdrantStore.from_url("qdrant://" + path)
    try:
        t0 = time.perf_counter()
        load(store, vectors)
        t_total = time.perf_counter() - t0
        result = measure(lambda q: store.search(COLLECTION, q, K), queries, truth)
        return result | {"load_s": t_total, "index_s": 0.0, "total_s": t_total}
    finally:
        store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="chunks to store (default 100000)")
    parser.add_argument("--queries", type=int, default=500, help="queries on pgvector (default 500)")
    parser.add_argument("--qdrant-queries", type=int, default=50, help="queries on Qdrant local (brute force, slower)")
    parser.add_argument("--pg", default="", help="pgserver:// or postgresql:// URL (default: a fresh temporary pgserver)")
    parser.add_argument("--ef", default=f"40,{EF_SEARCH},400,1000",
                        help=f"hnsw.ef_search values to measure (store default {EF_SEARCH})")
    parser.add_argument("--data", choices=("uniform", "clustered"), default="clustered",
                        help="uniform random unit vectors (worst case) or vectors around 1,000 topic centers")
    parser.add_argument("--skip-qdrant", action="store_true")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(42)
    nq = max(args.queries, args.qdrant_queries)
    if args.data == "clustered":
        centers = unit_vectors(rng, 1000)
        vectors, queries = clustered_vectors(rng, centers, args.n), clustered_vectors(rng, centers, nq)
    else:
        vectors, queries = unit_vectors(rng, args.n), unit_vectors(rng, nq)
    truth = exact_top_k(vectors, queries)
    efs = [int(x) for x in args.ef.split(",")]
    # Qdrant local commits every point in its own SQLite transaction: on tmpfs that costs no
    # fsync, so the load finishes in minutes and the figures are about search, not the disk.
    scratch = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="rag_rlm_bench_", dir=scratch) as tmp:
        rows = bench_pgvector(args.pg or f"pgserver://{Path(tmp) / 'pg'}",
                              vectors, queries[: args.queries], truth[: args.queries], efs)
        if not args.skip_qdrant:
            nq = args.qdrant_queries
            rows["qdrant (local)"] = bench_qdrant(str(Path(tmp) / "qdrant"), vectors, queries[:nq], truth[:nq])
    print_table(args.n, args.data, rows)


def print_table(n: int, data: str, rows: dict[str, dict[str, float]]) -> None:
    print(f"\nsearch benchmark: {n:,} chunks, dim {DIM}, top-{K}, {data} random unit vectors")
    print(f"{'store':<20}{'load s':>9}{'index s':>9}{'chunks/s':>10}{'queries':>9}{'p50 ms':>9}{'p95 ms':>9}{'recall@10':>11}")
    for name, r in rows.items():
        print(f"{name:<20}{r['load_s']:>9.1f}{r['index_s']:>9.1f}{n / r['total_s']:>10,.0f}{r['queries']:>9.0f}"
              f"{r['p50']:>9.2f}{r['p95']:>9.2f}{r['recall']:>11.3f}")
    print(f"targets: pgvector p50 <= 5 ms, recall@10 >= 0.95 (store default ef_search={EF_SEARCH});"
          f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
