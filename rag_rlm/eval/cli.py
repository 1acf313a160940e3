"""`rag-rlm eval QUESTIONS.jsonl --collection NAME [--corpus CORPUS.jsonl] [--mode flat|recursive|both]
[--k 2,5,10] [--limit N] [--out DIR]`.

Exit codes: 0 done, 1 the work failed (e.g. some corpus documents did not go in), 2 bad input
(a question or corpus file with a problem, named with its line).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..clikit import positive_int
from ..config import Settings, validate_collection_name
from ..embed import Embedder
from ..memory import Store
from .data import DataError, check_corpus, read_questions
from .splits import in_half

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("eval", help="measure flat retrieval against the recursive controller",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("questions", help="JSONL: id, question, answer (string or list; empty: unanswerable), "
                                     "supporting_ids [, answer_aliases, type]")
    p.add_argument("--collection", "-c", help="collection to answer from (default: the `collection` setting)")
    p.add_argument("--corpus", help="JSONL of id, title, text: ingested into the collection first (idempotent)")
    p.add_argument("--mode", choices=("flat", "recursive", "both"), default="both")
    p.add_argument("--k", type=_ks, default=(2, 5, 10), help="comma-separated k values (default 2,5,10)")
    p.add_argument("--limit", type=positive_int, help="only the first N questions")
    p.add_argument("--out", default="eval_out",
                   help="folder for report.json, summary.md, plot.png [, answerability.png]")
    p.add_argument("--title", help="title of the summary and plot (default: the questions file's folder)")
    p.add_argument("--split", choices=("tune", "check", "all"), default="all",
                   help="only the tune or the check half of the questions (rag_rlm/eval/splits.py)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    collection = validate_collection_name(args.collection or settings.collection)
    try:
        questions = [q for q in read_questions(args.questions, args.limit) if in_half(q.id, args.split)]
        if args.corpus:
            check_corpus(args.corpus)
    except DataError as e:
        print(f"rag-rlm eval: {e}", file=sys.stderr)
        return EXIT_USAGE
    from ..embed import load_embedder
    from ..memory import open_store

    embedder = load_embedder(settings.embed_model, settings.embed_device, settings.batch_size)
    store = open_store(settings.store, timeout=settings.store_timeout)
    try:
        if args.corpus and not _ingest(args, collection, store, embedder, settings):
            return EXIT_FAILED
        return _evaluate(args, questions, collection, store, embedder, settings)
    finally:
        store.close()


def _ingest(args: argparse.Namespace, collection: str, store: Store, embedder: Embedder, settings: Settings) -> bool:
    from rag_rlm.ingest.pipeline import ingest_paths

    summary = ingest_paths([args.corpus], collection=collection, store=store, embedder=embedder,
                           settings=settings, progress=not args.quiet)
    print(f"corpus {args.corpus}: {summary.documents_new} new, {summary.documents_updated} updated, "
          f"{summary.documents_unchanged} unchanged, {summary.documents_failed} failed", file=sys.stderr)
    for failure in summary.failed[:20]:
        print(f"  {failure['path']}: {failure['reason']}", file=sys.stderr)
    return summary.documents_failed == 0


def _evaluate(args: argparse.Namespace, questions: list, collection: str, store: Store, embedder: Embedder,
              settings: Settings) -> int:
    from tqdm import tqdm

    from .answerability import cli_lines
    from .report import build_report, headline_k, summary_markdown, write_report
    from .runner import MODES, run_eval

    modes = MODES if args.mode == "both" else (args.mode,)
    bar = tqdm(total=len(questions) * len(modes) * len(args.k), unit="q", disable=args.quiet, file=sys.stderr)

    def tick(row: Any) -> None:
        bar.set_postfix_str(f"{row.mode} k={row.k}", refresh=False)
        bar.update(1)

    started = time.perf_counter()
    try:
        rows = run_eval(questions, collection, settings=settings, store=store, embedder=embedder, modes=modes,
                        ks=args.k, on_row=tick)
    finally:
        bar.close()
    meta = {
        "title": args.title or Path(args.questions).resolve().parent.name,
        "questions_file": str(args.questions), "corpus": args.corpus, "collection": collection,
        "questions": len(questions), "modes": list(modes), "k": list(args.k),
        "reasoner": "llm" if settings.llm else "extractive", "reader": settings.reader or "shipped",
        "hybrid": settings.hybrid,
        "max_depth": settings.max_depth, "reflect": settings.reflect, "token_budget": settings.token_budget,
        "store": settings.store, "seconds": round(time.perf_counter() - started, 1),
    }
    report = build_report(rows, meta)
    paths = write_report(report, args.out)
    print(summary_markdown(report))
    for line in cli_lines(report, headline_k(report)):
        print(line, file=sys.stderr)
    print("written: " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return EXIT_OK


def _ks(value: str) -> tuple[int, ...]:
    try:
        ks = tuple(dict.fromkeys(int(v) for v in value.split(",") if v.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {value!r}") from None
    if not ks or any(k <= 0 for k in ks):
        raise argparse.ArgumentTypeError(f"every k must be > 0, got {value!r}")
    return ks

