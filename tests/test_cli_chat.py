"""`rag-rlm chat` in a pseudo-terminal, typed at as a person would (issue 16): follow-up
questions resolved against the earlier turns, citations under each answer, "Not found." said
plainly, readline's line editing and history (across sessions too), Ctrl-C and Ctrl-D."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time

import pytest
from clirun import PY, TIMEOUT, copy_sample, env, run, run_ingest

from rag_rlm.memory import embedded

UP, BACKSPACE, CTRL_C, CTRL_D = "\x1b[A", "\x7f", "\x03", "\x04"
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")  # cursor moves, bracketed-paste mode, carriage returns


class Terminal:
    """A command on the slave side of a pseudo-terminal; we type on the master side and read
    what it shows."""

    def __init__(self, args: list[str], cwd):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))  # wide: no line wrapping
        self.proc = subprocess.Popen([PY, "-m", "rag_rlm.cli", *args], cwd=cwd, env=env(TERM="xterm"),
                                     stdin=slave, stdout=slave, stderr=slave, preexec_fn=_own_terminal)
        os.close(slave)
        self.master = master
        self.pending = ""

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def expect(self, text: str, timeout: float = TIMEOUT) -> str:
        """What the terminal showed up to and including `text` (then forgotten), or fail."""
        deadline = time.monotonic() + timeout
        while text not in self.pending:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; the terminal shows:\n{self.pending}"
            ready, _, _ = select.select([self.master], [], [], min(left, 1.0))
            if ready:
                try:
                    self.pending += _CONTROL.sub("", os.read(self.master, 65536).decode(errors="replace"))
                except OSError:  # the command ended: its side of the terminal is gone
                    assert text in self.pending, f"ended without {text!r}:\n{self.pending}"
        shown, _, self.pending = self.pending.partition(text)
        return shown + text

    def close(self) -> int:
        try:
            return self.proc.wait(60)
        finally:
            os.close(self.master)


def _own_terminal() -> None:
    """In the child: a session whose controlling terminal is the pseudo-terminal, so that
    Ctrl-C typed there is a SIGINT, as in a shell."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chat")
    copy_sample(folder)
    done = run_ingest("handbook", "--collection", "handbook", cwd=folder)
    assert done.returncode == 0, done.stderr
    yield folder
    if embedded.status(folder / ".rag_rlm" / "pgdata").running:  # a failed test must not leave it behind
        embedded.stop(folder / ".rag_rlm" / "pgdata", force=True)


def test_a_conversation(folder):
    term = Terminal(["chat", "-c", "handbook"], folder)
    try:
        term.expect("Ctrl-D leaves")
        term.expect("? ")
        term.type(f"How many vacation dayz{BACKSPACE}s do new hires get?\r")  # line editing
        shown = term.expect("? ")
        assert "22 vacation days per calendar year" in shown
        assert "Sources:\n  [1] Vacation policy — vacation-policy.txt, chars " in shown

        term.type("And after three years?\r")  # a follow-up: the earlier turns go with it
        shown = term.expect("? ")
        assert "(taken as: How many vacation days do new hires get after three years?)" in shown

        term.type("What is the capital of France?\r")
        assert "Not found. The handbook documents do not say what the capital of France is." in term.expect("? ")

        term.type(f"half a question{CTRL_C}")  # abandons the line, asks nothing
        shown = term.expect("? ")
        assert "Not found" not in shown and "Sources" not in shown

        term.type(f"{UP * 3}\r")  # history: the first question again, as it was edited
        shown = term.expect("? ")
        assert "How many vacation days do new hires get?" in shown and "22 vacation days per calendar year" in shown

        term.type(CTRL_D)
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    saved = (folder / ".rag_rlm" / "chat_history").read_text()
    assert "How many vacation days do new hires get?" in saved and "And after three years?" in saved


def test_history_carries_over_to_the_next_session(folder):
    (folder / ".rag_rlm" / "chat_history").write_text("Who approves expenses over $500?\n")
    term = Terminal(["chat", "-c", "handbook", "--quiet"], folder)
    try:
        term.expect("? ")
        term.type(f"{UP}\r")
        assert "Finance Director" in term.expect("? ")
        term.type(CTRL_D)
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()


def test_chat_reads_questions_from_a_pipe(folder):
    """Not a terminal: every line is a question, no prompt, no banner; an unknown collection ends it."""
    done = run("chat", "-c", "handbook", cwd=folder, input="How many vacation days do new hires get?\n"
                                                          "And after three years?\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Sources:") == 2 and "(taken as: " in done.stdout and "? " not in done.stdout
    assert done.stderr == ""
    unknown = run("chat", "-c", "nope", cwd=folder, input="Anything?\n")
    assert unknown.returncode == 1 and "unknown collection 'nope'" in unknown.stderr
