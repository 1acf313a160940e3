"""`rag-rlm`: ask, chat, serve, source, migrate, db, eval, train-reader, average-readers, insights.

Exit codes: 0 ok, 1 the work failed, 2 usage or configuration error, 130 interrupted. Every
command takes -q/--quiet and -v/--verbose, which mean the same everywhere (rag_rlm.clikit).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from . import clikit
from .config import Settings
from .errors import ConfigError, RagRlmError, UnknownCollection


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)  # usage errors exit 2 from argparse itself
    with clikit.quiet_stderr(args):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        settings = Settings.from_env(config_file=args.config, store=args.store)
        return args.run(args, settings)
    except ConfigError as e:
        print(f"rag-rlm: configuration error: {e}", file=sys.stderr)
        return clikit.EXIT_USAGE
    except UnknownCollection as e:
        print(f"rag-rlm: {e}; ingest documents into it first (ingest PATH --collection NAME)", file=sys.stderr)
        return clikit.EXIT_FAILED
    except RagRlmError as e:
        print(f"rag-rlm: {e}", file=sys.stderr)
        return clikit.EXIT_FAILED
    except KeyboardInterrupt:
        return clikit.EXIT_INTERRUPTED


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-rlm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="a TOML settings file (else RAG_RLM_CONFIG)")
    parser.add_argument("--store", help="store URL, e.g. pgserver://.rag_rlm/pgdata or qdrant://PATH")
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="answer a question with cited sources")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="the /v1/ask response, one JSON object on stdout")
    _add_answer_options(ask)
    ask.set_defaults(run=_ask)

    chat = sub.add_parser("chat", help="a conversation in the terminal: follow-up questions, Ctrl-D to leave")
    _add_answer_options(chat)
    chat.set_defaults(run=_chat)

    serve = sub.add_parser("serve", help="serve the HTTP API and the web page")
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

    from .insights.cli import register as register_insights
    from .reader.cli import register as register_train_reader
    from .sources.cli import register as register_sources

    register_sources(sub)

    register_train_reader(sub)
    register_insights(sub)
    try:
        from .eval.cli import register as register_eval
    except ImportError:  # the eval extras are optional
        pass
    else:
        register_eval(sub)
    for command in _commands(sub):  # after every register(): the flags mean the same everywhere
        clikit.add_output_options(command)
    return parser


def _commands(sub: argparse._SubParsersAction) -> Iterator[argparse.ArgumentParser]:
    """Every parser that runs a command (`db status`, not `db`): a flag given to `db` would be
    overwritten by the default of the same flag on `status`."""
    for parser in dict.fromkeys(sub.choices.values()):  # aliases map to the same parser
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            for inner in nested:
                yield from _commands(inner)
        else:
            yield parser


def _add_answer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collection", "-c", help="the collection to answer from (default: the `collection` setting)")
    parser.add_argument("--max-depth", type=_nonneg)
    parser.add_argument("--top-k", type=_positive)
    parser.add_argument("--budget", type=_positive, help="token budget for the whole request")
    parser.add_argument("--no-reflect", action="store_true")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--server", metavar="URL",
                       help="answer through this rag-rlm server (key: RAG_RLM_API_KEY); default: the one "
                            "`serve` runs for this data folder, if any, else this process")
    where.add_argument("--local", action="store_true", help="answer in this process, even when a server runs")
    where.add_argument("--model", help="a local model folder (transformers); answers in this process")
    where.add_argument("--openai-url", help="an OpenAI-compatible server, e.g. http://localhost:8000/v1; "
                                            "answers in this process")


def _ask(args: argparse.Namespace, settings: Settings) -> int:
    from .answerers import for_command, options_from
    from .terminal import format_answer, notes

    answerer = for_command(args, settings)
    try:
        answer = answerer.ask(args.question, args.collection or settings.collection, **options_from(args))
    finally:
        answerer.close()
    print(json.dumps(answer, ensure_ascii=False) if args.json else format_answer(answer), flush=True)
    for line in notes(answer):
        clikit.note(args, line)
    return clikit.EXIT_OK


def _chat(args: argparse.Namespace, settings: Settings) -> int:
    from .chat import run

    return run(args, settings)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    """Serve until Ctrl-C or SIGTERM (exit 0, after a graceful shutdown), with
    DATA_DIR/server.json saying so meanwhile (rag_rlm.serverfile); exit 1 when it cannot start
    (its port taken). Stopping is how a server ends, not an interruption: no 130."""
    from . import serverfile
    from .server import serve

    settings = settings.replace(host=args.host or settings.host, port=args.port or settings.port,
                                log_level=_log_level(args, settings))
    url = serverfile.connect_url(settings.host, settings.port)
    replaced = serverfile.record(settings, url)
    try:
        with _signals_stop():
            # said once the socket listens, so that whoever waits for this line can ask at once
            serve(settings, workers=args.workers, ready=lambda: clikit.note(
                args, f"rag-rlm: serving {url}/ (the web page; the API under /v1), Ctrl-C stops it"))
    except _Stopped:
        pass
    except SystemExit as e:  # uvicorn's way of saying it could not start (exit status 3)
        if e.code not in (0, None):
            print("rag-rlm: the server did not start (the reason is above)", file=sys.stderr)
            return clikit.EXIT_FAILED
    finally:
        serverfile.forget(settings, replaced)
    return clikit.EXIT_OK


class _Stopped(BaseException):
    """SIGTERM or SIGINT, raised where the process is (a BaseException: no `except Exception`
    stops it)."""


@contextmanager
def _signals_stop() -> Iterator[None]:
    """uvicorn shuts down gracefully on SIGTERM and SIGINT, then sends the signal again to the
    handler it found: this one, so the process ends through our `finally` blocks (SIGTERM's
    default would end it in its tracks; SIGINT's depends on whether asyncio's handler was the
    one uvicorn found)."""
    def stop(signum: int, frame: object) -> None:
        raise _Stopped

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _log_level(args: argparse.Namespace, settings: Settings) -> str:
    level = clikit.verbosity(args)
    return {clikit.QUIET: "warning", clikit.VERBOSE: "debug"}.get(level, settings.log_level)


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from .memory.migrate import migrate

    applied = migrate(settings.store)
    print("applied: " + ", ".join(applied) if applied else "schema is up to date")
    return clikit.EXIT_OK


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
        return clikit.EXIT_OK
    users = ", ".join(map(str, st.users)) or "none (it stops when the next process of ours using it ends; or: rag-rlm db stop)"
    print(f"embedded PostgreSQL in {st.folder}: running (pid {st.pid})\n  dsn: {st.dsn}\n  used by pids: {users}")
    return clikit.EXIT_OK


def _db_stop(args: argparse.Namespace, settings: Settings) -> int:
    from .memory import embedded

    st = embedded.stop(_embedded_folder(settings), force=args.force)
    if not st.running:
        print(f"embedded PostgreSQL in {st.folder}: not running")
        return clikit.EXIT_OK
    if st.users and not args.force:
        print(f"rag-rlm: the embedded PostgreSQL in {st.folder} is in use by pids {', '.join(map(str, st.users))}; "
              "stop them first (it then stops by itself), or use --force", file=sys.stderr)
        return clikit.EXIT_FAILED
    print(f"stopped the embedded PostgreSQL in {st.folder} (pid {st.pid})")
    return clikit.EXIT_OK


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
