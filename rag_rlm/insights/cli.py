"""`rag-rlm insights [--collection C] [--since 30d] [--json]`: what the knowledge base is
missing (the report of GET /v1/insights, over every tenant: the command runs as the operator,
and `--collection` is the stored name, `acme__handbook` for tenant acme's `handbook`).

`rag-rlm insights purge --older-than 90d`: remove the questions and ratings older than that.

Exit codes: 0 done, 1 the work failed (an unknown collection, the store down), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from ..config import Settings, validate_collection_name
from .records import Window, cutoff, iso

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("insights", help="what the knowledge base is missing: unanswered questions, "
                                               "answers rated down, documents never cited",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", nargs="?", choices=("purge",), help="purge: remove entries older than --older-than")
    p.add_argument("--collection", "-c", help="the collection (default: the `collection` setting)")
    p.add_argument("--since", type=_moment, default="30d",
                   help="the window: a duration (30d, 12h, 2w) or an ISO date (default 30d)")
    p.add_argument("--older-than", type=_moment, metavar="AGE",
                   help="with purge: a duration (90d) or an ISO date; older entries are removed")
    p.add_argument("--json", action="store_true", help="the GET /v1/insights response, one JSON object")
    p.set_defaults(run=run)


def _moment(text: str) -> float:
    try:
        return cutoff(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def run(args: argparse.Namespace, settings: Settings) -> int:
    from .store import open_insight_store

    if args.action == "purge":
        if args.older_than is None:
            print("rag-rlm insights purge: --older-than is required (e.g. --older-than 90d)", file=sys.stderr)
            return EXIT_USAGE
        store = open_insight_store(settings.store, settings.data_dir, timeout=settings.store_timeout,
                                   statement_timeout=settings.store_statement_timeout)
        try:
            removed = store.purge(args.older_than)
        finally:
            store.close()
        print(f"removed {removed} questions and ratings older than {iso(args.older_than)}")
        return EXIT_OK
    if args.older_than is not None:
        print("rag-rlm insights: --older-than goes with purge", file=sys.stderr)
        return EXIT_USAGE
    report = _report(settings, validate_collection_name(args.collection or settings.collection), args.since)
    print(json.dumps(report, ensure_ascii=False) if args.json else render(report))
    return EXIT_OK


def _report(settings: Settings, collection: str, since: float) -> dict[str, Any]:
    from ..memory import open_store
    from .access import readable_by
    from .service import Insights

    store = open_store(settings.store, timeout=settings.store_timeout)
    try:
        store.collection_info(collection)  # UnknownCollection: exit 1, naming it
        documents = store.documents(collection)
    finally:
        store.close()
    insights = Insights.open(settings.replace(store_questions=False))  # reads only: no recorder
    try:
        report = insights.report(Window(collection, since), documents, readable_by(None))
    finally:
        insights.close()
    return {"collection": collection, "since": iso(since), **report}


def render(report: dict[str, Any]) -> str:
    """The report as text for a terminal."""
    out = [f"Insights for {report['collection']} since {report['since']}: {report['questions']} questions, "
           f"{report['not_found_questions']} not found"]
    out.append(f"\nNot found, grouped by meaning ({report['not_found_groups']} groups):")
    for g in report["not_found"]:
        out.append(f"  {g['count']:>4}  {g['label']}  (last asked {g['last_asked']})")
        others = [q["question"] for q in g["questions"] if q["question"] != g["label"]]
        if others:
            out.append(textwrap.indent(textwrap.fill("also: " + " | ".join(others), 90), " " * 8))
    out.append(f"\nRated down ({report['rated_down_answers']} answers):")
    for a in report["rated_down"]:
        cites = ", ".join(c["document_id"] for c in a["citations"]) or "no citations"
        out.append(f"  {a['down']:>4}  {a['question']}  ({cites}; {a['up']} up)")
        out += [f"        \u201c{c}\u201d" for c in a["comments"]]
    out.append("\nMost cited:")
    out += [f"  {d['citations']:>4}  {d['document_id']}  {d['title']}" for d in report["most_cited"]]
    out.append(f"\nNever cited ({report['never_cited_documents']} of {report['documents']} documents):")
    out += [f"        {d['document_id']}  {d['title']}" for d in report["never_cited"]]
    return "\n".join(out)
