"""`ingest PATH... --collection NAME`: load files into vector memory.

Exit status: 0 every file went in, 1 some failed (each named with its reason), 2 usage or
configuration error, 130 interrupted (what was written stays; the next run finishes the job).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rag_rlm import clikit
from rag_rlm.access import GroupError, parse_groups
from rag_rlm.clikit import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from rag_rlm.config import Settings
from rag_rlm.errors import ConfigError, ModelNotFound, RagRlmError
from rag_rlm.ingest.pipeline import IngestSummary, ingest_paths
from rag_rlm.ingest.recipe import refreshed_note


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ingest",
        description="Load files (txt, md, rst, html, pdf, docx, odt, xlsx, csv, pptx, epub, eml, mbox, JSONL) "
                    "into a collection of vector memory. "
                    "Re-running is safe: unchanged files are skipped, changed files replace their chunks.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (searched recursively)")
    p.add_argument("--collection", help="collection name (default: the `collection` setting)")
    p.add_argument("--store", help="store URL: pgserver://PATH, postgresql://..., qdrant://PATH, qdrant+http://HOST:PORT")
    p.add_argument("--chunk-tokens", type=int, metavar="N", help="most tokens per chunk")
    p.add_argument("--overlap", type=int, metavar="N", help="tokens repeated from the previous chunk")
    p.add_argument("--glob", metavar="PATTERN", help="only files in folders whose relative path matches, e.g. '*.md'")
    p.add_argument("--prune", action="store_true", help="delete documents whose files under PATH are gone")
    p.add_argument("--groups", metavar="G1,G2",
                   help="access groups of the documents (letters, digits, '-', '_'): only API keys naming one "
                        "of them read the documents; '' makes them everyone's again. Without it, documents "
                        "keep the groups they have (new ones get none)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--config", metavar="FILE", help="TOML settings file")
    clikit.add_output_options(p)  # the progress bar shows on a terminal only, and not with --quiet
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # usage errors exit 2 from argparse itself
    with clikit.quiet_stderr(args):
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    try:
        settings = Settings.from_env(
            config_file=args.config, store=args.store, chunk_tokens=args.chunk_tokens,
            chunk_overlap=args.overlap, collection=args.collection,
        )
    except ConfigError as e:
        return _usage(f"invalid setting {e.setting}: {e.reason}")
    try:
        groups = None if args.groups is None else parse_groups(args.groups)
    except GroupError as e:
        return _usage(f"--groups: {e}")
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        return _usage(f"no such file or directory: {missing[0]}")
    special = [p for p in args.paths if not (Path(p).is_file() or Path(p).is_dir())]
    if special:  # a FIFO, socket or device: reading it would block or never end
        return _usage(f"not a regular file or folder: {special[0]}")

    try:
        summary = _ingest(args, settings, groups)
    except (ConfigError, ModelNotFound) as e:
        return _usage(str(e))
    except RagRlmError as e:
        print(f"ingest: error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:  # before the pipeline took over Ctrl-C (loading the model), or a second one
        print("ingest: interrupted; documents already written are kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(json.dumps(summary.to_dict()) if args.json else format_summary(summary), flush=True)
    if summary.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if summary.documents_failed else EXIT_OK


def _ingest(args: argparse.Namespace, settings: Settings, groups: tuple[str, ...] | None) -> IngestSummary:
    from rag_rlm.embed import load_embedder
    from rag_rlm.memory import open_store

    store = open_store(settings.store, timeout=settings.store_timeout)
    try:
        embedder = load_embedder(settings.embed_model, settings.embed_device, settings.batch_size)
        with clikit.stop_on_signals("ingest") as stop:
            return ingest_paths(
                args.paths, collection=settings.collection, store=store, embedder=embedder,
                settings=settings, glob=args.glob, prune=args.prune, progress=clikit.show_progress(args), stop=stop,
                groups=groups,
            )
    finally:
        store.close()


def format_summary(s: IngestSummary) -> str:
    lines = [
        f"documents: {s.documents_new} new, {s.documents_updated} updated{refreshed_note(s.documents_refreshed)}, "
        f"{s.documents_unchanged} unchanged, "
        f"{s.documents_failed} failed" + (f", {s.documents_pruned} pruned" if s.documents_pruned else ""),
        f"chunks written: {s.chunks_written} in {s.seconds:.1f} s ({s.chunks_per_second:.1f} chunks/s)",
    ]
    if s.interrupted:
        lines.append("interrupted: run again to finish (documents already written are kept)")
    lines += [f"{f['path']}: {f['reason']}" for f in s.failed]
    return "\n".join(lines)


def _usage(message: str) -> int:
    print(f"ingest: error: {message}", file=sys.stderr)
    return EXIT_USAGE
