"""Ablation of the recursive path's ideas on a dev set: flat once, then recursive once per
variant of the extractive reasoner / retrieval settings, at one k. Prints one table row per run.

    python bench/eval_ablation.py DATA_DIR COLLECTION [--store URL] [--k 5] [--limit N] \
        [--variants base,full_query,no_bridge_any,...]

The collection must already hold DATA_DIR/corpus.jsonl (`rag-rlm eval ... --corpus`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rag_rlm.config import Settings
from rag_rlm.embed import load_embedder
from rag_rlm.eval.data import read_questions
from rag_rlm.eval.report import figures
from rag_rlm.eval.runner import run_eval
from rag_rlm.memory import open_store
from rag_rlm.reasoning import rules
from rag_rlm.reasoning.extractive import ExtractiveReasoner

# name -> (reasoner options, settings changes, surface-split rules off?)
VARIANTS = {
    "base": ({}, {}, False),
    "full_query": ({"bridge_query": "full"}, {}, False),
    "shape_only": ({"bridge_any": False}, {}, False),
    "bridges_1": ({"bridge_entities": 1}, {}, False),
    "bridges_3": ({"bridge_entities": 3}, {}, False),
    "bridge_from_5": ({"bridge_from": 5}, {}, False),
    "dense_only": ({}, {"hybrid": False}, False),
    "no_reflect": ({}, {"reflect": False}, False),
    "old_splits": ({}, {}, True),
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("collection")
    p.add_argument("--store", default="pgserver://.rag_rlm/eval-pg")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--limit", type=int)
    p.add_argument("--variants", default="base")
    p.add_argument("--flat", action="store_true", help="also run flat (dense and hybrid)")
    args = p.parse_args()
    questions = read_questions(Path(args.data) / "questions.jsonl", args.limit)
    base = Settings.from_env(store=args.store)
    store = open_store(base.store)
    embedder = load_embedder()
    print(f"| run | n | recall@{args.k} | all@{args.k} | containment | docs read | p50 s | mean s | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    runs = ([("flat dense", "flat", {}, {"hybrid": False}, False), ("flat hybrid", "flat", {}, {}, False)]
            if args.flat else [])
    runs += [(name, "recursive", *VARIANTS[name]) for name in args.variants.split(",")]
    for name, mode, options, changes, old_splits in runs:
        settings = base.replace(**changes)
        saved = rules._entity_comparison
        if old_splits:
            rules._entity_comparison = lambda q: []
        started = time.perf_counter()
        try:
            rows = run_eval(questions, args.collection, settings=settings, store=store, embedder=embedder,
                            modes=(mode,), ks=(args.k,),
                            make_reasoner=lambda options=options: ExtractiveReasoner(embedder, **options))
        finally:
            rules._entity_comparison = saved
        f = figures(rows)
        print(f"| {name} | {len(rows)} | {f['recall']:.3f} | {f['all_supporting']:.3f} | {f['containment']:.3f} | "
              f"{f['documents_read']:.1f} | {f['latency_p50']:.3f} | {f['latency_mean']:.3f} | "
              f"{time.perf_counter() - started:.0f} |", flush=True)
    store.close()


if __name__ == "__main__":
    main()
