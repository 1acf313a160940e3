"""The command line as a person uses it (issue 16): `ingest`, `ask`, `eval`, `db`, `migrate` and
`--help` run as real processes in a folder of their own, with the default embedded store
(`./.rag_rlm/pgdata`, started and stopped by each command), text and `--json`, success and each
documented error exit. stderr must carry only what the user should act on.

`serve` and the server-backed `ask` are in test_cli_serve.py, `chat` in test_cli_chat.py, the
README's own lines in test_cli_readme.py.
"""

from __future__ import annotations

import json
import re

import pytest
from clirun import EVAL_DATA, PY, Terminal, copy_sample, env, imported_modules, run, run_ingest

from rag_rlm import clikit
from rag_rlm.memory import embedded

QUESTION = "How many vacation days do new hires get?"
CTRL_C = "\x03"
HEAVY = {"torch", "transformers", "sentence_transformers", "litestar"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("person")
    yield folder
    pgdata = folder / ".rag_rlm" / "pgdata"
    if embedded.status(pgdata).running:  # a failed test must not leave it behind
        embedded.stop(pgdata, force=True)


@pytest.fixture(scope="module")
def ingested(folder):
    """The sample documents ingested into `handbook`, as the README's first line does."""
    copy_sample(folder)
    return run_ingest("handbook", "--collection", "handbook", cwd=folder)


def test_ingest_prints_a_summary_and_nothing_on_stderr(ingested):
    assert ingested.returncode == 0, ingested.stderr
    assert "documents: 11 new, 0 updated, 0 unchanged, 0 failed" in ingested.stdout
    assert ingested.stderr == ""  # no progress bar off a terminal, no third-party warnings


def test_ingest_json_on_a_rerun_skips_every_file(folder, ingested):
    done = run_ingest("handbook", "--collection", "handbook", "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["documents_unchanged"] == 11 and summary["documents_new"] == 0
    assert done.stderr == ""


def test_ingest_names_a_bad_file_and_exits_1(folder, ingested):
    bad = folder / "bad"
    bad.mkdir()
    (bad / "good.md").write_text("# Good\n\nThe kettle is in the kitchen.\n")
    (bad / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    done = run_ingest("bad", "--collection", "bad", cwd=folder)
    assert done.returncode == 1
    assert "1 new" in done.stdout and "1 failed" in done.stdout
    assert "broken.pdf" in done.stdout


def test_ingest_shows_its_progress_bar_on_a_terminal_unless_quiet(folder, ingested):
    bar = Terminal(["handbook", "--collection", "on-a-terminal"], cwd=folder, module="ingest")
    shown = bar.rest()
    assert bar.close() == 0 and "11/11" in shown and "documents: 11 new" in shown
    quiet = Terminal(["handbook", "--collection", "on-a-terminal", "--quiet"], cwd=folder, module="ingest")
    shown = quiet.rest()
    assert quiet.close() == 0 and shown.startswith("documents: 0 new, 0 updated, 11 unchanged, 0 failed\n")
    assert "11/11" not in shown and "doc/s" not in shown


def test_ctrl_c_stops_ingest_after_the_document_it_writes(folder):
    many = folder / "many"
    many.mkdir()
    for i in range(300):
        (many / f"note-{i:03}.md").write_text(f"# Note {i}\n\nRoom {i} holds {i * 7} chairs and {i % 5} desks.\n")
    term = Terminal(["many", "--collection", "many"], cwd=folder, module="ingest")
    term.expect(re.compile(r"\b[1-9][0-9]*/300"))  # the bar: documents are going in
    term.type(CTRL_C)
    term.expect("ingest: stopping after the current document")
    shown = term.rest()
    assert term.close() == 130
    assert "interrupted: run again to finish (documents already written are kept)" in shown
    written = int(shown.split("documents: ", 1)[1].split(" new")[0])
    assert 0 < written < 300 and "Traceback" not in shown
    again = run_ingest("many", "--collection", "many", "--json", cwd=folder)
    finished = json.loads(again.stdout)
    assert again.returncode == 0 and (finished["documents_new"], finished["documents_unchanged"]) == (300 - written, written)


def test_ingest_usage_errors_exit_2(folder):
    missing = run_ingest("no-such-folder", "--collection", "x", cwd=folder)
    assert missing.returncode == 2 and "no such file or directory: no-such-folder" in missing.stderr
    bad_setting = run_ingest(".", "--collection", "x", "--chunk-tokens", "0", cwd=folder)
    assert bad_setting.returncode == 2 and "chunk_tokens" in bad_setting.stderr


def test_ask_prints_the_answer_and_its_sources(folder, ingested):
    done = run("ask", QUESTION, "-c", "handbook", cwd=folder)
    assert done.returncode == 0, done.stderr
    answer, sources = done.stdout.split("\nSources:\n")
    assert "22 vacation days" in answer
    # the document by its title and its path under the folder ingested, never an absolute path
    assert sources.splitlines()[0].startswith("  [1] Vacation policy — vacation-policy.txt, chars ")
    assert str(folder) not in done.stdout
    assert done.stderr == ""  # no RuntimeDirWarning, no "Loading weights" bar


def test_ask_says_plainly_when_the_documents_do_not_answer(folder, ingested):
    done = run("ask", "What is the capital of France?", "-c", "handbook", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Not found. The handbook documents do not say what the capital of France is.")
    assert "\nClosest documents:\n  " in done.stdout
    assert "Sources:" not in done.stdout


def test_ask_json_is_the_api_response(folder, ingested):
    done = run("ask", QUESTION, "-c", "handbook", "--json", "--max-depth", "1", "--top-k", "3", cwd=folder)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["found"] is True and answer["collection"] == "handbook"
    assert {"answer", "citations", "parts", "sub_questions", "usage", "trace_id", "related_documents"} <= set(answer)
    assert answer["citations"][0]["document_id"] == "vacation-policy.txt"
    assert done.stderr == ""


def test_ask_quiet_and_verbose(folder, ingested):
    """A short budget makes notes: shown by default, not with --quiet; --verbose also says where
    the answer was made."""
    question = ["ask", "Who is on call on weekends and where is the Lisbon office?", "-c", "handbook", "--budget", "60"]
    normal = run(*question, cwd=folder)
    assert normal.returncode == 0 and "note: budget short" in normal.stderr
    quiet = run(*question, "--quiet", cwd=folder)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == normal.stdout
    verbose = run(*question, "-v", cwd=folder)
    assert "rag-rlm: answering in this process" in verbose.stderr and "note: budget short" in verbose.stderr


def test_ask_errors_exit_1_for_the_work_and_2_for_usage(folder, ingested):
    unknown = run("ask", QUESTION, "-c", "nope", cwd=folder)
    assert unknown.returncode == 1
    assert unknown.stderr == ("rag-rlm: unknown collection 'nope'; ingest documents into it first "
                              "(ingest PATH --collection NAME)\n")
    unreachable = run("ask", QUESTION, "-c", "handbook", "--server", "http://127.0.0.1:9", cwd=folder)
    assert unreachable.returncode == 1 and "cannot reach the server at http://127.0.0.1:9" in unreachable.stderr
    bad_flag = run("ask", QUESTION, "--top-k", "0", cwd=folder)
    assert bad_flag.returncode == 2 and "--top-k: must be > 0" in bad_flag.stderr
    both = run("ask", QUESTION, "--local", "--server", "http://127.0.0.1:9", cwd=folder)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    bad_setting = run("ask", QUESTION, cwd=folder, extra_env={"RAG_RLM_TOP_K": "many"})
    assert bad_setting.returncode == 2 and "configuration error: RAG_RLM_TOP_K" in bad_setting.stderr


def test_eval_end_to_end_without_bars_off_a_terminal(folder):
    out = folder / "eval_out"
    done = run("eval", str(EVAL_DATA / "questions.jsonl"), "--collection", "dev", "--corpus",
               str(EVAL_DATA / "corpus.jsonl"), "--mode", "both", "--k", "2", "--out", str(out), cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "recall@2" in done.stdout and (out / "report.json").is_file()
    assert "\r" not in done.stderr and "it/s" not in done.stderr and "Warning" not in done.stderr


def test_eval_errors(folder, tmp_path):
    bad = tmp_path / "questions.jsonl"
    bad.write_text('{"id": "q1"}\n')
    usage = run("eval", str(bad), "--collection", "dev", "--out", str(tmp_path / "o"), cwd=folder)
    assert usage.returncode == 2 and "questions.jsonl" in usage.stderr
    unknown = run("eval", str(EVAL_DATA / "questions.jsonl"), "--collection", "nothing-here",
                  "--out", str(tmp_path / "o"), cwd=folder)
    assert unknown.returncode == 1 and "unknown collection 'nothing-here'" in unknown.stderr


def test_db_status_and_stop_when_nothing_runs(folder, ingested):
    """Every command above let go of the embedded PostgreSQL as it ended."""
    status = run("db", "status", cwd=folder)
    assert status.returncode == 0 and status.stdout.endswith(": not running\n"), status.stdout
    stop = run("db", "stop", "--quiet", cwd=folder)
    assert stop.returncode == 0 and "not running" in stop.stdout
    elsewhere = run("--store", f"qdrant://{folder}/q", "db", "status", cwd=folder)
    assert elsewhere.returncode == 2 and "not an embedded PostgreSQL" in elsewhere.stderr


def test_migrate(folder, ingested):
    done = run("migrate", cwd=folder)
    assert done.returncode == 0 and done.stdout == "schema is up to date\n", done.stderr
    refused = run("--store", f"qdrant://{folder}/q", "migrate", cwd=folder)
    assert refused.returncode == 2 and "not a PostgreSQL store URL" in refused.stderr


@pytest.mark.parametrize("command", [[], ["ask"], ["chat"], ["serve"], ["eval"], ["db", "status"], ["migrate"]])
def test_help_loads_nothing_heavy(command, folder):
    import subprocess

    done = subprocess.run([PY, "-X", "importtime", "-m", "rag_rlm.cli", *command, "--help"], cwd=folder,
                          env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: rag-rlm")
    assert not HEAVY & {m.split(".")[0] for m in imported_modules(done.stderr)}
    if command:
        assert "--quiet" in done.stdout and "-v, --verbose" in done.stdout


@pytest.mark.parametrize("command", [["ask", "q"], ["chat"], ["serve"], ["eval", "q.jsonl"], ["db", "status"],
                                     ["db", "stop"], ["migrate"]])
def test_quiet_and_verbose_are_the_same_flags_on_every_command(command):
    from rag_rlm.cli import _parser

    for flags, quiet, verbose in ((["-q"], True, False), (["--quiet"], True, False), (["-v"], False, True),
                                  (["--verbose"], False, True), ([], False, False)):
        args = _parser().parse_args([*command, *flags])
        assert (args.quiet, args.verbose) == (quiet, verbose)
    assert clikit.verbosity(_parser().parse_args([*command, "-q", "-v"])) == clikit.VERBOSE
