"""`rag-rlm`: ask, serve, migrate, db, eval, train-reader. Exit codes: 0 ok, 1 the work failed, 2 usage/config error."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .config import Settings
from .errors import ConfigError, RagRlmError, UnknownCollection


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env(config_file=args.config, store=args.store)
        return args.run(args, settings)
    except ConfigError as e:
        print(f"rag-rlm: configuration error: {e}", file=sys.stderr)
        return 2
    except UnknownCollection as e:
        print(f"rag-rlm: {e}; ingest documents into it first (ingest PATH --collection NAME)", file=sys.stderr)
        return 1
    except RagRlmError as e:
        print(f"rag-rlm: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-rlm", description=__doc__)
    parser.add_argument("--config", help="a TOML settings file (else RAG_RLM_CONFIG)")
    parser.add_argument("--store", help="store URL, e.g. pgserver://.rag_rlm/pgdata or qdrant://PATH")
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="answer a question with cited sources")
    ask.add_argument("question")
    ask.add_argument("--collection", "-c")
    ask.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ask.add_argument("--max-depth", type=_nonneg)
    ask.add_argument("--top-k", type=_positive)
    ask.add_argument("--budget", type=_positive, help="token budget for the whole request")
    ask.add_argument("--no-reflect", action="store_true")
    model = ask.add_mutually_exclusive_group()
    model.add_argument("--model", help="a local model folder (transformers)")
    model.add_argument("--openai-url", help="an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    ask.set_defaults(run=_ask)

    serve = sub.add_parser("serve", help="serve the HTTP API")
    serve.add_argument("--host")
    serve.add_argument("--port", type=_positive)
    serve.add_argument("--workers", type=_positive, default=1)
    serve.set_defaults(run=_serve)

    migrate = sub.add_parser("migrate", help="apply pending schema migrations to a PostgreSQL store")
    migrate.set_defaults(run=_migrate)

    db = sub.add_parser("db", help="the embedded PostgreSQL (pgserver://): status, stop")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("status", help="whether it runs, and which processes use it").set_defaults(run=_db_status)
    db_stop = db_sub.add_parser("stop", help="stop it (e.g. one left behind by a killed process)")
    db_stop.add_argument("--force", action="store_true", help="stop it even while processes of ours use it")
    db_stop.set_defaults(run=_db_stop)

    from .reader.cli import register as register_train_reader

    register_train_reader(sub)
    try:
        from .eval.cli import register as register_eval
    except ImportError:  # the eval extras are optional
        pass
    else:
        register_eval(sub)
    return parser


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    from .assistant import Assistant

    llm = args.model and f"local:{args.model}" or args.openai_url and f"openai+{args.openai_url}"
    if llm:
        settings = settings.replace(llm=llm)
    assistant = Assistant(settings)
    try:
        result = assistant.ask(args.question, args.collection, top_k=args.top_k, max_depth=args.max_depth,
                               token_budget=args.budget, reflect=False if args.no_reflect else None)
    finally:
        assistant.close()
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        print(result.answer or "(no answer found in the collection)")
        if result.citations:
            print("\nSources:")
            for n, span in enumerate(result.citations, 1):
                print(f"  [{n}] {span.title} — {span.source} (chunk {span.chunk_index}, chars {span.start}-{span.end})")
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
    return 0


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from .server import serve

    serve(settings, host=args.host or settings.host, port=args.port or settings.port, workers=args.workers)
    return 0


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from .memory.migrate import migrate

    applied = migrate(settings.store)
    print("applied: " + ", ".join(applied) if applied else "schema is up to date")
    return 0


def _embedded_folder(settings: Settings) -> str:
    scheme, _, rest = settings.store.partition("://")
    if scheme != "pgserver" or not rest:
        raise ConfigError("store", f"{settings.store!r} is not an embedded PostgreSQL (pgserver://PATH); "
                                   "rag-rlm does not start or stop other stores")
    return rest


def _db_status(args: argparse.Namespace, settings: Settings) -> int:
    from .memory import embedded

    st = embedded.status(_embedded_folder(settings))
    if not st.running:
        print(f"embedded PostgreSQL in {st.folder}: not running")
        return 0
    users = ", ".join(map(str, st.users)) or "none (it stops when the next process of ours using it ends; or: rag-rlm db stop)"
    print(f"embedded PostgreSQL in {st.folder}: running (pid {st.pid})\n  dsn: {st.dsn}\n  used by pids: {users}")
    return 0


def _db_stop(args: argparse.Namespace, settings: Settings) -> int:
    from .memory import embedded

    st = embedded.stop(_embedded_folder(settings), force=args.force)
    if not st.running:
        print(f"embedded PostgreSQL in {st.folder}: not running")
        return 0
    if st.users and not args.force:
        print(f"rag-rlm: the embedded PostgreSQL in {st.folder} is in use by pids {', '.join(map(str, st.users))}; "
              "stop them first (it then stops by itself), or use --force", file=sys.stderr)
        return 1
    print(f"stopped the embedded PostgreSQL in {st.folder} (pid {st.pid})")
    return 0


def _positive(value: str) -> int:
    n = _int(value)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return n


def _nonneg(value: str) -> int:
    n = _int(value)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return n


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None


if __name__ == "__main__":
    sys.exit(main())
