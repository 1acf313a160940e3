"""Controller benchmark: `ask` latency p50/p95/mean on the ~16k-chunk HotpotQA collection with the
extractive reasoner, without the reader, with it (in its fused order, the default, and in its own),
and with it and its judge, in one run, and the
controller's own overhead (time not spent embedding, searching or reasoning) for depth-2 questions.

    .venv/bin/python bench/bench_controller.py [--n 80] [--overhead 20] [--corpus PATH] [--data DIR]

The collection is the HotpotQA dev corpus from /work/shared/data chunked at 64 tokens with 8 of
overlap (16,158 chunks, 23,485 sentences), ingested once into an embedded PostgreSQL under
bench/out/controller2 (re-runs skip it; an older bench/out/pg has no sentence memory).
"before" is Settings(reader="none"): sentences are chosen and judged by the bi-encoder's similarity.
"after" is the shipped reader: the bi-encoder preranks, the reader re-scores the best candidates, and
where the reader is unsure its scores are laid onto the order of reader and cosine ranks (the default
`sentence_order`); "reader order" is the same in the reader's own order.
"judged" is the shipped reader with the shipped judge (`RAG_RLM_JUDGE=`, an option) deciding found.
Both read the sentence vectors stored at ingest (sentence memory). Each mode gets a fresh Assistant
with its own empty memo, and asks each question once: every answer is computed, none replayed.
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
from rag_rlm.reader import load_reader, shipped_judge_path, shipped_reader_path
from rag_rlm.reasoning.build import build_reasoner

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data/hotpotqa")
# (name, reader, judge, sentence order): without the reader, the shipped one in its default (fused)
# order, the same in the reader's own order, and the shipped one with its judge (RAG_RLM_JUDGE=, an
# option: the judge reads the reader's best three candidates of each call)
MODES = (("before", "none", "none", "fused"), ("after", "", "none", "fused"), ("reader order", "", "none", "reader"),
         ("judged", "", "", "fused"))
# Not among the measured questions: they load the model's and the database's caches per mode.
WARM_UP = ("warm up: who founded the company?", "warm up: which city is the capital?",
           "warm up: when was the band formed and who was its singer?")


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
    ap.add_argument("--n", type=int, default=80, help="questions asked in each mode (the next --overhead are kept fresh)")
    ap.add_argument("--overhead", type=int, default=20, help="questions for the overhead figure (0: skip)")
    ap.add_argument("--data", default=str(ROOT / "bench" / "out" / "controller2"), help="store and data folder")
    ap.add_argument("--collection", default="hotpot16k")
    ap.add_argument("--k", type=int, default=Settings.top_k, help="spans retrieved per question (default: %(default)s)")
    args = ap.parse_args()

    settings = Settings(store=f"pgserver://{args.data}/pg", chunk_tokens=64, chunk_overlap=8, data_dir=args.data,
                        top_k=args.k)
    embedder = load_embedder()
    store = open_store(settings.store)
    summary = ingest_paths([args.corpus], collection=args.collection, store=store, embedder=embedder,
                           settings=settings, progress=True)
    chunks = store.collection_info(args.collection).chunks
    print(f"collection {args.collection!r}: {chunks} chunks ({summary.documents_new} new documents, "
          f"ingest {summary.seconds:.0f} s this run)")

    every = [json.loads(line)["question"] for line in open(args.questions) if line.strip()]
    questions = every[: args.n]
    # the overhead questions are ones neither mode asked: no embedding or reader score is cached yet
    fresh = every[args.n: args.n + args.overhead] or questions[: args.overhead]
    rows, answers = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, memory, judge, order in MODES:
            # A fresh Assistant and memo per mode: no answer of one mode is served to the other.
            s = settings.replace(reader=memory, judge=judge, sentence_order=order)
            forget_pair_scores(s)
            assistant = Assistant(s, store=store, embedder=embedder, state=SqliteState(Path(tmp) / f"{name}.db"))
            for q in WARM_UP:
                assistant.ask(q, args.collection)
            latencies, answers[name] = [], []
            for q in questions:
                t0 = time.perf_counter()
                result = assistant.ask(q, args.collection)
                latencies.append(time.perf_counter() - t0)
                answers[name].append(result.answer)
            rows[name] = latencies
        overhead = measure_overhead(settings, store, embedder, fresh, args.collection,
                                    Path(tmp)) if args.overhead else ""
    report(rows, answers, settings.top_k)
    if overhead:
        print(overhead)


def forget_pair_scores(settings: Settings) -> None:
    """The shipped reader and judge are process-wide and remember the pairs they scored: without
    this, the mode after another reader mode reads the same questions' pairs from memory (p50 71 ms
    where the same mode measured second took 259 ms; twenty-eighth round)."""
    for folder in (shipped_reader_path(), shipped_judge_path()):
        load_reader(folder, settings.reader_precision, settings.reader_backend).forget()


def report(rows: dict[str, list[float]], answers: dict[str, list[str]], k: int) -> None:
    n = len(rows["before"])
    print(f"\nask latency, {n} questions per mode (extractive, k={k}, max_depth=2, reflect on, no memo hits)")
    print(f"{'mode':<40} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    stats = {}
    for name, memory, judge, order in MODES:
        lat = rows[name]
        q = statistics.quantiles(lat, n=100) if len(lat) > 1 else [lat[0]] * 99
        stats[name] = (q[49], q[94], statistics.mean(lat))
        label = f"{name} (reader={memory or 'shipped'}{', judge' if judge != 'none' else ''}{', ' + order if memory != 'none' else ''})"
        print(f"{label:<40} " + " ".join(f"{v * 1000:>8.0f}" for v in stats[name]))
    b, a = stats["before"], stats["after"]
    print(f"{'speed-up before/after':<40} " + " ".join(f"{x / y:>7.1f}x" for x, y in zip(b, a, strict=True)))
    same = sum(x == y for x, y in zip(answers["before"], answers["after"], strict=True))
    print(f"same answer text in both modes: {same}/{n}")


def measure_overhead(settings, store, embedder, questions, collection, tmp: Path) -> str:
    """Sequential (max_parallel=1) so that the parts' times add up to the wall time; the shipped
    reader (its reading counts as reasoning). Reading stored sentences counts as search."""
    clock = Clock()
    t_embedder = Timed(embedder, clock, "embed", ["embed"])
    t_store = Timed(store, clock, "search", ["search", "sentences"])
    reasoner = Timed(build_reasoner(settings, t_embedder), clock, "reason", ["plan", "answer", "merge", "reflect"])
    assistant = Assistant(settings.replace(max_parallel=1), store=t_store, embedder=t_embedder, reasoner=reasoner,
                          state=SqliteState(tmp / "overhead.db"))
    total, depth2 = 0.0, 0
    for q in questions:
        t0 = time.perf_counter()
        result = assistant.ask(q, collection, max_depth=2)
        total += time.perf_counter() - t0
        depth2 += bool(result.sub_questions)
    parts = sum(clock.seconds.values())
    share = (total - parts) / total
    detail = ", ".join(f"{k} {v:.2f}s" for k, v in clock.seconds.items())
    return (f"controller overhead on {len(questions)} questions ({depth2} decomposed, sentence memory on): "
            f"{share:.1%} of {total:.2f}s wall (the rest: {detail})")


if __name__ == "__main__":
    main()
