"""`rag-rlm source add|list|remove|sync`: a collection's folders, Git repositories and web sites.

Exit status as `ingest`: 0 done, 1 the work failed (a sync that failed or had failed items, an
unknown source), 2 usage or configuration error, 130 interrupted. `--json` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import clikit
from ..config import Settings
from ..ingest.recipe import refreshed_note
from .registry import SourceExists, UnknownSource
from .service import SourceBusy, SourceInvalid, Sources, check_exists, make_spec
from .sync import SyncSummary


def register(sub: argparse._SubParsersAction) -> None:
    source = sub.add_parser("source", help="keep a collection in sync with folders, Git repositories, web sites")
    commands = source.add_subparsers(dest="source_command", required=True)

    add = commands.add_parser("add", help="add a source to a collection")
    add.add_argument("name", help="the source's name (documents are named NAME/path)")
    add.add_argument("kind", choices=("folder", "git", "web"))
    add.add_argument("location", help="a folder path; a repository path or URL; a start URL")
    add.add_argument("--branch", default="", help="git: the branch to follow (default: the remote's default)")
    add.add_argument("--every", help="sync on this schedule while the server runs: 90s, 10m, 1h, 2d")
    add.add_argument("--include", action="append", default=[], metavar="GLOB",
                     help="only items whose relative path (URL path for web) matches; repeatable; '*' crosses '/'")
    add.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="leave out matches; repeatable")
    add.add_argument("--groups", default="", help="access groups of its documents, comma-separated")
    add.add_argument("--max-pages", type=clikit.positive_int, help="web: pages per crawl (default 500)")
    add.add_argument("--max-depth", type=int, help="web: links followed from the start URL (default 5)")
    add.add_argument("--delay", type=float, help="web: seconds between two requests (default 0.5)")
    add.add_argument("--sync", action="store_true", help="sync it once now")
    add.set_defaults(run=_add)

    listing = commands.add_parser("list", help="sources and the status of their last sync")
    listing.set_defaults(run=_list)

    remove = commands.add_parser("remove", help="remove a source and (unless --keep-documents) its documents")
    remove.add_argument("name")
    remove.add_argument("--keep-documents", action="store_true")
    remove.set_defaults(run=_remove)

    run = commands.add_parser("sync", help="sync one source now, or every source of the collection")
    run.add_argument("name", nargs="?")
    run.set_defaults(run=_sync)

    for parser in (add, listing, remove, run):
        parser.add_argument("--collection", "-c", help="the collection (default: the `collection` setting)")
        parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


@contextmanager
def _sources(settings: Settings) -> Iterator[Sources]:
    from ..embed import load_embedder
    from ..memory import open_store
    from ..memory.state import open_state

    store = open_store(settings.store, timeout=settings.store_timeout)
    state = open_state(settings.store, settings.data_dir, timeout=settings.store_timeout)
    try:
        yield Sources(store, state, settings,
                      lambda: load_embedder(settings.embed_model, settings.embed_device, settings.batch_size))
    finally:
        getattr(state, "close", lambda: None)()
        store.close()


def _collection(args: argparse.Namespace, settings: Settings) -> str:
    return args.collection or settings.collection


def _fail(message: str, code: int = clikit.EXIT_FAILED) -> int:
    print(f"rag-rlm source: {message}", file=sys.stderr)
    return code


def _add(args: argparse.Namespace, settings: Settings) -> int:
    try:
        spec = make_spec(args.name, args.kind, args.location, _collection(args, settings), branch=args.branch,
                         every=args.every, include=args.include, exclude=args.exclude,
                         groups=[g.strip() for g in args.groups.split(",") if g.strip()],
                         max_pages=args.max_pages, max_depth=args.max_depth, delay=args.delay)
        check_exists(spec)
    except SourceInvalid as e:
        return _fail(str(e), clikit.EXIT_USAGE)
    with _sources(settings) as sources:
        try:
            record = sources.add(spec)
        except SourceExists as e:
            return _fail(f"{e} (remove it first, or choose another name)")
        if not args.sync:
            print(json.dumps(record) if args.json else f"added {spec.kind} source {spec.name!r} to {spec.collection!r}")
            return clikit.EXIT_OK
        return _report(args, [_run_sync(args, sources, spec)])


def _list(args: argparse.Namespace, settings: Settings) -> int:
    with _sources(settings) as sources:
        records = sources.list(_collection(args, settings))
    if args.json:
        print(json.dumps({"collection": _collection(args, settings), "sources": records}))
    elif not records:
        print(f"no sources in {_collection(args, settings)!r} (add one: rag-rlm source add NAME KIND LOCATION)")
    for record in [] if args.json else records:
        print(format_source(record))
    return clikit.EXIT_OK


def _remove(args: argparse.Namespace, settings: Settings) -> int:
    with _sources(settings) as sources:
        try:
            deleted = sources.remove(_collection(args, settings), args.name, keep_documents=args.keep_documents)
        except UnknownSource as e:
            return _fail(str(e))
    out = {"removed": args.name, "documents_deleted": deleted}
    print(json.dumps(out) if args.json else f"removed source {args.name!r}; {deleted} documents deleted")
    return clikit.EXIT_OK


def _sync(args: argparse.Namespace, settings: Settings) -> int:
    collection = _collection(args, settings)
    with _sources(settings) as sources:
        try:
            specs = [sources.spec(collection, args.name)] if args.name else \
                [sources.spec(collection, r["name"]) for r in sources.list(collection)]
        except UnknownSource as e:
            return _fail(str(e))
        if not specs:
            return _fail(f"collection {collection!r} has no sources (add one: rag-rlm source add NAME KIND LOCATION)")
        summaries = []
        for spec in specs:
            try:
                summaries.append(_run_sync(args, sources, spec))
            except SourceBusy as e:
                summaries.append(SyncSummary(spec.name, collection, status="failed", error=str(e)))
        return _report(args, summaries)


def _run_sync(args: argparse.Namespace, sources: Sources, spec: Any) -> SyncSummary:
    with clikit.stop_on_signals("rag-rlm source") as stop:
        return sources.sync(spec, stop=stop, progress=clikit.show_progress(args))


def _report(args: argparse.Namespace, summaries: list[SyncSummary]) -> int:
    if args.json:
        data = [s.to_dict() for s in summaries]
        print(json.dumps(data[0] if len(data) == 1 and args.name else {"syncs": data}))
    else:
        print("\n".join(format_summary(s) for s in summaries), flush=True)
    if any(s.status == "cancelled" for s in summaries):
        return clikit.EXIT_INTERRUPTED
    return clikit.EXIT_FAILED if any(s.status == "failed" or s.failed for s in summaries) else clikit.EXIT_OK


def format_summary(s: SyncSummary) -> str:
    if s.status == "failed":
        return f"{s.source}: sync failed: {s.error} (the collection is unchanged)"
    at = ", ".join(f"{k} {v}" for k, v in s.reader.items() if k in ("commit", "pages", "files", "not_modified"))
    lines = [f"{s.source}: {s.added} added, {s.updated} updated{refreshed_note(s.refreshed)}, {s.renamed} renamed, "
             f"{s.deleted} deleted, "
             f"{s.unchanged} unchanged, {s.failed} failed in {s.seconds:.1f} s" + (f" ({at})" if at else "")]
    if s.status == "cancelled":
        lines.append(f"{s.source}: interrupted: nothing was deleted; sync again to finish")
    lines += [f"  {f['item']}: {f['reason']}" for f in s.failures]
    return "\n".join(lines)


def format_source(record: dict[str, Any]) -> str:
    spec, last = record["spec"], record.get("last_sync")
    every = f", every {spec['every']:.0f}s" if spec.get("every") else ""
    line = f"{record['name']}  {spec['kind']}  {spec['location']}" + (f" ({spec['branch']})" if spec.get("branch") else "") + every
    if not last:
        return line + "\n  never synced"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last.get("finished") or last.get("started") or 0))
    if last.get("status") == "failed":
        return line + f"\n  last sync {when}: failed: {last.get('error')}"
    return line + f"\n  last sync {when}: " + format_summary(_summary(last)).split(": ", 1)[1]


def _summary(data: dict[str, Any]) -> SyncSummary:
    fields = set(SyncSummary.__dataclass_fields__)
    return SyncSummary(**{k: v for k, v in data.items() if k in fields})
