"""`rag-rlm chat` in a pseudo-terminal, typed at as a person would (issue 16): follow-up
questions resolved against the earlier turns, citations under each answer, "Not found." said
plainly, readline's line editing and history (across sessions too), Ctrl-C and Ctrl-D."""

from __future__ import annotations

import pytest
from clirun import Terminal, ingested_sample, run

UP, BACKSPACE, CTRL_C, CTRL_D = "\x1b[A", "\x7f", "\x03", "\x04"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    yield from ingested_sample(tmp_path_factory.mktemp("chat"))


def test_a_conversation(folder):
    term = Terminal(["chat", "-c", "handbook"], cwd=folder)
    try:
        term.expect("Ctrl-D leaves")
        term.expect("? ")
        term.type(f"How many vacation dayz{BACKSPACE}s do new hires get?\r")  # line editing
        shown = term.expect("? ")
        assert "22 vacation days per calendar year" in shown
        assert "Sources:\n  [1] Vacation policy — vacation-policy.txt, chars " in shown

        term.type("How do I request them?\r")  # a follow-up: the earlier turns go with it
        shown = term.expect("? ")
        assert "(taken as: How do I request vacation days?)" in shown and "Tempo" in shown

        term.type("What is the capital of France?\r")
        assert "Not found. The handbook documents do not say what the capital of France is." in term.expect("? ")

        term.type(f"half a question{CTRL_C}")  # abandons the line, asks nothing
        shown = term.expect("? ")
        assert "Not found" not in shown and "Sources" not in shown

        term.type(f"{UP * 3}\r")  # history: the first question again, as it was edited
        shown = term.expect("? ")
        # readline redraws over the longer line before it: what it shows is the end of the recalled one
        assert "vacation days do new hires get?" in shown and "22 vacation days per calendar year" in shown

        term.type("/new\r")  # forgets the earlier turns: a follow-up no longer has one to follow
        term.expect("(a new conversation)")
        term.expect("? ")
        term.type("How do I request them?\r")
        shown = term.expect("? ")
        assert ("Sources:" in shown or "Not found." in shown) and "(taken as: " not in shown

        term.type(CTRL_D)
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    saved = (folder / ".rag_rlm" / "chat_history").read_text()
    assert "How many vacation days do new hires get?" in saved and "How do I request them?" in saved


def test_history_carries_over_to_the_next_session(folder):
    (folder / ".rag_rlm" / "chat_history").write_text("Who approves expenses over $500?\n")
    term = Terminal(["chat", "-c", "handbook", "--quiet"], cwd=folder)
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
                                                          "How do I request them?\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Sources:") == 2 and "(taken as: " in done.stdout and "? " not in done.stdout
    assert done.stderr == ""
    unknown = run("chat", "-c", "nope", cwd=folder, input="Anything?\n")
    assert unknown.returncode == 1 and "unknown collection 'nope'" in unknown.stderr
