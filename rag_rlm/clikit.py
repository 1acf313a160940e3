"""What every command line of ours shares: exit codes, `--quiet` / `--verbose`, and a quiet
stderr.

    EXIT_OK 0, EXIT_FAILED 1 (the work failed), EXIT_USAGE 2 (usage or configuration),
    EXIT_INTERRUPTED 130 (Ctrl-C)

A subcommand registered on `rag-rlm` (`register(subparsers)`, as eval and train-reader are)
needs nothing more: `rag_rlm.cli` adds the two flags to every command after registering them (a
`--quiet` the command defines itself is kept, and gets `-q`) and runs it inside
`quiet_stderr(args)`; the command asks `show_progress(args)` before drawing a bar, and says
things with `note` and `detail`. A console script of its own (`ingest`) calls
`add_output_options(parser)` and `quiet_stderr(args)` itself. Then:

- stdout carries the result, whatever the flags;
- stderr carries only what the user should act on: errors, and notes about the answer
  (`--quiet` leaves out the notes too). Third-party warnings (platformdirs, transformers, ...)
  and model-loading bars are off, unless `--verbose`, which also shows our own logs (INFO);
- progress bars only for long work, only on a terminal: `show_progress(args)`. Commands that
  read `args.quiet` as "no progress bar" (eval, train-reader) get exactly that, since
  `quiet_stderr` sets it when there is no terminal to draw on.

The silencing is done here, at the process's edge, never inside the library the server uses.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
QUIET, NORMAL, VERBOSE = 0, 1, 2

# Read by huggingface_hub and transformers when they are imported, which the commands do lazily,
# after this is set: the "Loading weights" bar, and transformers' advisory warnings.
_QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}
# Third-party loggers whose errors are not the user's to act on: pgserver logs a start that timed
# out on a busy machine, with the server's whole log, and rag_rlm.memory.embedded then tries
# again; when every try fails, our StoreError says so.
_QUIET_LOGGERS = ("pgserver",)


def positive_int(value: str) -> int:
    """An argparse type: a whole number above 0, or a usage error that names the value."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return n


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """`-q/--quiet` and `-v/--verbose` (given both, --verbose wins); an option the parser
    already has (a command's own `--quiet`) is kept as it is."""
    known = set(parser._option_string_actions)  # argparse's public API has no lookup
    if "--quiet" not in known:
        parser.add_argument("-q", "--quiet", action="store_true",
                            help="only the result and errors: no progress bar, no notes")
    elif "-q" not in known:  # the command's own --quiet: -q still works, as everywhere
        parser.add_argument("-q", dest="quiet", action="store_true", help=argparse.SUPPRESS)
    if "--verbose" not in known:
        parser.add_argument("-v", "--verbose", action="store_true",
                            help="also third-party warnings and rag-rlm's logs, on stderr")


def verbosity(args: argparse.Namespace) -> int:
    """QUIET, NORMAL or VERBOSE, from the flags (as `quiet_stderr` fixed it, once inside)."""
    if hasattr(args, "verbosity"):
        return args.verbosity
    if getattr(args, "verbose", False):
        return VERBOSE
    return QUIET if getattr(args, "quiet", False) else NORMAL


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars: not with --quiet, and only where a person watches (stderr a terminal)."""
    return verbosity(args) > QUIET and sys.stderr.isatty()


@contextmanager
def quiet_stderr(args: argparse.Namespace) -> Iterator[None]:
    """Run a command with stderr as the module docstring says; restores what it changed (the
    commands also run inside test processes)."""
    level = args.verbosity = verbosity(args)
    progress = show_progress(args)
    if hasattr(args, "quiet"):
        args.quiet = not progress  # what commands that predate this module read it as
    saved_env = {name: os.environ.get(name) for name in _QUIET_ENV}
    saved_levels = {name: logging.getLogger(name).level for name in _QUIET_LOGGERS}
    with warnings.catch_warnings():
        if level == VERBOSE:  # third parties' warnings; our INFO (their INFO is their debugging)
            logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
            logging.getLogger("rag_rlm").setLevel(logging.INFO)
        else:
            warnings.simplefilter("ignore")  # none of ours are warnings: they are errors or notes
            for name, value in _QUIET_ENV.items():
                os.environ.setdefault(name, value)
            for name in _QUIET_LOGGERS:
                logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        try:
            yield
        finally:
            _restore(saved_env)
            for name, saved in saved_levels.items():
                logging.getLogger(name).setLevel(saved)


def note(args: argparse.Namespace, message: str) -> None:
    """A note on stderr for the person running the command, unless --quiet."""
    if verbosity(args) > QUIET:
        print(message, file=sys.stderr, flush=True)


def detail(args: argparse.Namespace, message: str) -> None:
    """A line on stderr only with --verbose (where an answer came from, timings)."""
    if verbosity(args) >= VERBOSE:
        print(message, file=sys.stderr, flush=True)


def _restore(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextmanager
def stop_on_signals(prog: str) -> Iterator[threading.Event]:
    """The first Ctrl-C (or SIGTERM) sets the event: long work (ingest, a sync) stops after the
    document it is writing; a second Ctrl-C interrupts at once (per-document writes are atomic)."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # signals go to the main thread only
        yield stop
        return

    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print(f"\n{prog}: stopping after the current document (Ctrl-C again to abort)", file=sys.stderr)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
