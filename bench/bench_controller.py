"""Controller benchmark: `ask` latency p50/p95 on a ~10,000-chunk collection with the extractive
reasoner, and the controller's own overhead (time not spent embedding, searching or reasoning)
for depth-2 questions.

    .venv/bin/python bench/bench_controller.py [--corpus PATH] [--questions PATH] [--n 100]

The collection is the HotpotQA dev corpus from ../shared/data chunked at 64 tokens (about 11k
chunks), ingested once into an embedded PostgreSQL under bench/out/ (re-runs skip it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.embed import load_embedder
from rag_rlm.ingest.pipeline import ingest_paths
from rag_rlm.memory import open_store
from rag_rlm.memory.state import SqliteState
from rag_rlm.reasoning.extractive import ExtractiveReasoner

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "hotpotqa"


class Clock:
    """Seconds spent in each part; embedding done inside the reasoner counts as reasoning."""

    def __init__(self):
        self.seconds = {"embed": 0.0, "search": 0.0, "reason": 0.0}
        self.inside = threading.local()

    def timed(self, part, fn):
        def wrapper(*args, **kwargs):
            nested = getattr(self.inside, "reasoning", False)
            if part == "reason":
                self.inside.reasoning = True
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if not (part == "embed" and nested):
                    self.seconds[part] += time.perf_counter() - t0
                if part == "reason":
                    self.inside.reasoning = nested
        return wrapper


class Timed:
    """A proxy that times the named methods of the object it wraps."""

    def __init__(self, inner, clock, part, methods):
        self._inner = inner
        for name in methods:
            setattr(self, name, clock.timed(part, getattr(inner, name)))

    def __getattr__(self, name):
        return getattr(self._inner, name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(DATA / "corpus.jsonl"))
    ap.add_argument("--questions", default=str(DATA / "questions.jsonl"))
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--store", default="pgserver://" + str(ROOT / "bench" / "out" / "pg"))
    args = ap.parse_args()

    settings = Settings(store=args.store, chunk_tokens=64, chunk_overlap=8, data_dir=str(ROOT / "bench" / "out"))
    embedder = load_embedder()
    store = open_store(settings.store)
    summary = ingest_paths([args.corpus], collection="bench10k", store=store, embedder=embedder,
                           settings=settings, progress=True)
    chunks = store.collection_info("bench10k").chunks
    print(f"collection: {chunks} chunks ({summary.documents_new} new documents this run)")

    questions = [json.loads(line)["question"] for line in open(args.questions)][: args.n]
    with tempfile.TemporaryDirectory() as tmp:
        # A fresh memo: every question is answered, none replayed from an earlier run.
        assistant = Assistant(settings, store=store, embedder=embedder, state=SqliteState(Path(tmp) / "s.db"))
        assistant.ask("warm up: who founded the company?", "bench10k")
        latencies = []
        for q in questions:
            t0 = time.perf_counter()
            assistant.ask(q, "bench10k")
            latencies.append(time.perf_counter() - t0)
        overhead = measure_overhead(settings, store, embedder, questions[:20], Path(tmp))
    q = statistics.quantiles(latencies, n=100)
    print(f"ask latency over {len(latencies)} questions (extractive, max_depth=2, reflect on): "
          f"p50 {q[49] * 1000:.0f} ms, p95 {q[94] * 1000:.0f} ms, mean {statistics.mean(latencies) * 1000:.0f} ms")
    print(overhead)


def measure_overhead(settings, store, embedder, questions, tmp: Path) -> str:
    """Sequential (max_parallel=1) so that the parts' times add up to the wall time."""
    clock = Clock()
    t_embedder = Timed(embedder, clock, "embed", ["embed"])
    t_store = Timed(store, clock, "search", ["search"])
    reasoner = Timed(ExtractiveReasoner(t_embedder), clock, "reason", ["plan", "answer", "merge", "reflect"])
    assistant = Assistant(settings.replace(max_parallel=1), store=t_store, embedder=t_embedder, reasoner=reasoner,
                          state=SqliteState(tmp / "overhead.db"))
    total, depth2 = 0.0, 0
    for q in questions:
        t0 = time.perf_counter()
        result = assistant.ask(q, "bench10k", max_depth=2)
        total += time.perf_counter() - t0
        depth2 += bool(result.sub_questions)
    parts = sum(clock.seconds.values())
    share = (total - parts) / total
    detail = ", ".join(f"{k} {v:.2f}s" for k, v in clock.seconds.items())
    return (f"controller overhead on {len(questions)} questions ({depth2} decomposed): {share:.1%} of "
            f"{total:.2f}s wall (the rest: {detail})")


if __name__ == "__main__":
    main()
