"""Asks the questions of a real-documents review (`bench/realdocs/<set>.json`: pages of a manual
nobody here wrote, questions a new user would ask, and what a right answer says) and prints each
answer as the asker reads it, for grading by reading: right / partly / wrong / correctly declined /
wrongly declined. Follow-ups ("after") are asked with the earlier question and its answer as history.

    python bench/realdocs.py pg [--store pgserver://bench/out/realdocs/pg] [--reader none] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_rlm.assistant import Assistant  # noqa: E402
from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.eval.runner import _NoSharedState  # noqa: E402


def open_assistant(store: str | None = None, reader: str | None = None) -> Assistant:
    """An assistant on the real-page store (default: an embedded PostgreSQL under bench/out/realdocs)
    that remembers nothing, so every answer is fresh."""
    data = ROOT / "bench" / "out" / "realdocs"
    settings = Settings.from_env(store=store or f"pgserver://{data}/pgdata", data_dir=str(data), reader=reader)
    return Assistant(settings, state=_NoSharedState())


def answer_set(assistant: Assistant, name: str, on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """Ingest set `name`'s pages (unchanged ones are skipped) and answer its questions, a follow-up
    with its earlier question and that question's answer as history."""
    spec = json.loads((ROOT / "bench" / "realdocs" / f"{name}.json").read_text())
    collection = f"real_{name}"
    pages = [Path(spec["root"]) / (p if "." in p else f"{p}.html") for p in spec["pages"]]
    summary = assistant.ingest_files(pages, collection)
    print(f"{spec['title']}: {len(pages)} pages, {summary.documents_new} new, {summary.documents_updated} updated "
          f"({summary.documents_refreshed} by a newer ingest recipe), {summary.documents_failed} failed; "
          f"reader {assistant.settings.reader or 'shipped'}", file=sys.stderr)
    rows = []
    for q in spec["questions"]:
        history = None
        if q.get("after"):
            first = assistant.ask(q["after"], collection)
            history = [{"role": "user", "content": q["after"]}, {"role": "assistant", "content": first.answer}]
        started = time.perf_counter()
        r = assistant.ask(q["question"], collection, history=history)
        rows.append({"id": q["id"], "question": q["question"], "after": q.get("after", ""),
                     "resolved": r.resolved_question, "answer": r.answer, "found": r.found,
                     "confidence": round(float(r.confidence), 4), "short_answer": r.short_answer,
                     "cited": [c.span.source.rsplit("/", 1)[-1] for c in r.citations],
                     "expect": q["expect"], "seconds": round(time.perf_counter() - started, 2)})
        if on_row:
            on_row(rows[-1])
    return rows


def _print_row(row: dict) -> None:
    print(f"\n[{row['id']}] {row['question']}" + (f"  (after: {row['after']}; resolved: {row['resolved']})"
                                                  if row["after"] else ""))
    print(f"  expect: {row['expect']}")
    print(f"  found={row['found']} ({row['confidence']}) short={row['short_answer']!r} cited={row['cited'][:3]} {row['seconds']}s")
    print("  " + row["answer"].replace("\n", "\n  "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("set", help="a file of bench/realdocs/ without .json (pg, py)")
    parser.add_argument("--store", help="store URL (default: an embedded PostgreSQL under bench/out/realdocs)")
    parser.add_argument("--reader", help="RAG_RLM_READER for this run (default: the shipped reader)")
    parser.add_argument("--out", help="write the answers as JSON here")
    args = parser.parse_args()
    assistant = open_assistant(args.store, args.reader)
    rows = answer_set(assistant, args.set, _print_row)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    assistant.close()


if __name__ == "__main__":
    main()
