"""`rag-rlm chat -c COLLECTION`: a conversation in the terminal.

Each question goes with the earlier turns (the `history` of /v1/ask, the same as the web page
sends), so "And after three years?" is answered as the question it stands for; when the
resolved question differs, it is shown above the answer. Each answer lists its sources with
their document and place, and says "Not found." plainly when the collection does not answer.
Line editing and history come from readline (the questions are remembered across sessions in
DATA_DIR/chat_history). Ctrl-D leaves, Ctrl-C abandons the line or the answer being made,
`/new` starts a new conversation.

Answers come from the same place as `ask`'s (rag_rlm.answerers). With stdin not a terminal,
each line read is a question and no prompt is written (for scripts).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import clikit
from .answerers import Answerer, for_command, options_from
from .config import Settings
from .errors import ConfigError, RagRlmError, UnknownCollection
from .terminal import format_answer, notes

HISTORY_TURNS = 20  # the most earlier turns /v1/ask takes (rag_rlm.server.limits.MAX_HISTORY_TURNS)
HISTORY_FILE = "chat_history"
PROMPT = "? "
NEW = "/new"


def run(args: argparse.Namespace, settings: Settings) -> int:
    collection = args.collection or settings.collection
    interactive = sys.stdin.isatty()
    answerer = for_command(args, settings)
    try:
        with _line_editing(Path(settings.data_dir) / HISTORY_FILE, interactive):
            if interactive:
                clikit.note(args, f"Questions to the {collection!r} documents, answered in {answerer.where}. "
                                  f"Ctrl-D leaves, {NEW} starts a new conversation.")
            _converse(args, answerer, collection, interactive)
    finally:
        answerer.close()
    return clikit.EXIT_OK


def _converse(args: argparse.Namespace, answerer: Answerer, collection: str, interactive: bool) -> None:
    history: list[dict[str, str]] = []
    for question in _questions(interactive):
        if question == NEW:
            history.clear()
            clikit.note(args, "(a new conversation)")
            continue
        answer = _answer(args, answerer, question, collection, history)
        if answer is not None:
            history += [{"role": "user", "content": question}, {"role": "assistant", "content": answer["answer"]}]


def _questions(interactive: bool) -> Iterator[str]:
    """The questions typed, stripped, until end of input (Ctrl-D); Ctrl-C clears the line."""
    while True:
        try:
            line = input(PROMPT if interactive else "")
        except EOFError:
            if interactive:
                print()  # the shell's prompt then starts on a line of its own
            return
        except KeyboardInterrupt:
            print()
            continue
        if line.strip():
            yield line.strip()


def _answer(args: argparse.Namespace, answerer: Answerer, question: str, collection: str,
            history: list[dict[str, str]]) -> dict[str, Any] | None:
    """Print the answer to one question; None when there is none (said why, on stderr).
    A wrong collection or key ends the chat: every later question would fail the same way."""
    try:
        answer = answerer.ask(question, collection, history=history[-HISTORY_TURNS:] or None, **options_from(args))
    except (UnknownCollection, ConfigError):
        raise
    except RagRlmError as e:
        print(f"rag-rlm: {e}", file=sys.stderr, flush=True)
        return None
    except KeyboardInterrupt:
        print("(stopped)", file=sys.stderr, flush=True)
        return None
    resolved = answer.get("resolved_question") or question
    if resolved != question:
        print(f"(taken as: {resolved})")
    print(format_answer(answer) + "\n", flush=True)
    for line in notes(answer):
        clikit.note(args, line)
    return answer


@contextmanager
def _line_editing(history_file: Path, interactive: bool) -> Iterator[None]:
    """readline's editing and history for input(), the questions of earlier sessions included."""
    if not interactive:
        yield
        return
    try:
        import readline
    except ImportError:  # a Python built without it: input() still works, without editing
        yield
        return
    readline.set_history_length(1000)
    try:
        readline.read_history_file(history_file)
    except OSError:  # the first session, or an unreadable file: start with none
        pass
    try:
        yield
    finally:
        try:
            history_file.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(history_file)
        except OSError as e:
            print(f"rag-rlm: chat history not saved: {e}", file=sys.stderr)
