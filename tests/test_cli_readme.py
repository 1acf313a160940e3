"""The README's "Using it" section is the source of these tests, so it cannot drift from the
program (issue 16): every command line of its `sh` blocks runs as written (`~` is a folder
holding the sample documents as `handbook`, `.venv/bin/X` this checkout's X), with and without
its `[optional]` flags; the second block with its server running; the shown output must be what
the program prints; the Python snippet must run.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from clirun import EVAL_DATA, PY, ROOT, TIMEOUT, Serve, copy_sample, env, free_port

from rag_rlm.memory import embedded

# Documented commands these tests do not run, and why (a line of any other command must run).
NOT_RUN = {"train-reader": "trains the reader for about 70 minutes"}
STDIN = {"chat": "What is the deploy freeze?\n"}  # chat without a terminal: one question a line


def using_it() -> list[tuple[str, str]]:
    """(language, text) of each code block of the README's "Using it" section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Using it\n", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.S)


def blocks(language: str) -> list[str]:
    return [body for lang, body in using_it() if lang == language]


def lines(block: str) -> list[str]:
    """The commands of a block, without their comments."""
    return [re.split(r"\s{2,}#", line)[0].strip() for line in block.splitlines() if line.strip()]


def variants(line: str) -> list[str]:
    """The line without its [optional] flags and, when it has some, with all of them."""
    bare = re.sub(r"\s*\[[^\]]*\]", "", line)
    full = re.sub(r"\[([^\]]*)\]", r"\1", line)
    return [bare] if bare == full else [bare, full]


def command_of(line: str) -> str:
    return line.split()[1] if line.startswith(".venv/bin/rag-rlm") else "ingest"


def shell(line: str) -> str:
    return line.replace(".venv/bin/rag-rlm", f"{PY} -m rag_rlm.cli").replace(".venv/bin/ingest", f"{PY} -m ingest")


def run_line(line: str, folder) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", shell(line)], cwd=folder, env=env(HOME=str(folder)),
                          input=STDIN.get(command_of(line), ""), capture_output=True, text=True, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("readme")
    copy_sample(folder)
    for name in ("questions.jsonl", "corpus.jsonl"):
        shutil.copy(EVAL_DATA / name, folder / name)
    yield folder
    if embedded.status(folder / ".rag_rlm" / "pgdata").running:  # a failed test must not leave it behind
        embedded.stop(folder / ".rag_rlm" / "pgdata", force=True)


@pytest.fixture(scope="module")
def first_block(folder):
    """Every line of the first block, in order, as a person would type them."""
    ran = []
    for line in lines(blocks("sh")[0]):
        if command_of(line) not in NOT_RUN:
            ran += [(variant, run_line(variant, folder)) for variant in variants(line)]
    return ran


def test_the_first_block_runs_as_written(first_block):
    commands = {command_of(line) for line, _ in first_block}
    assert {"ingest", "ask", "chat", "eval", "db", "migrate"} <= commands
    for line, done in first_block:
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        assert done.stdout.strip(), line
        assert "Warning" not in done.stderr and "\r" not in done.stderr, f"{line}\n{done.stderr}"


def test_the_server_block_is_answered_by_the_server(first_block, folder):
    serve_line, *asks = lines(blocks("sh")[1])
    assert command_of(serve_line) == "serve" and "--port 8000" in serve_line
    port = free_port()
    command = shell(variants(serve_line)[-1]).replace("--port 8000", f"--port {port}")
    server = Serve(folder, port=port, argv=["bash", "-c", f"exec {command}"], extra_env={"HOME": str(folder)})
    with server:
        for line in asks:
            done = run_line(f"{line} --verbose", folder)
            assert done.returncode == 0, f"{line}\n{done.stderr}"
            where = "this process" if "--local" in line else f"the server at http://127.0.0.1:{port}"
            assert f"rag-rlm: answering in {where}" in done.stderr, line
            assert "Sources:" in done.stdout
    assert server.exit_code == 0, server.stderr


def test_the_example_output_is_what_ask_prints(first_block, folder):
    command, *shown = blocks("text")[0].splitlines()
    assert command.startswith("$ ")
    done = run_line(command[2:], folder)
    assert done.returncode == 0 and done.stdout == "\n".join(shown) + "\n"


def test_the_python_snippet_runs(first_block, folder):
    (snippet,) = blocks("python")
    done = subprocess.run([PY, "-c", snippet], cwd=folder, env=env(), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert "deployment" in done.stdout.lower()
