"""The command line's small parts, in process: how an answer is printed, the server record, the
shared --quiet/--verbose, and the chat's history limit against the server's."""

from __future__ import annotations

import argparse
import logging
import os
import warnings

from rag_rlm import clikit, serverfile
from rag_rlm.chat import HISTORY_TURNS
from rag_rlm.config import Settings
from rag_rlm.server.limits import MAX_HISTORY_TURNS
from rag_rlm.terminal import format_answer, notes

CHUNK = "## Approval\n\nA trip over $500 needs the Finance Director."  # document chars 424-482


def _citation(**fields) -> dict:
    return {"n": 1, "document_id": "travel/policy.html", "title": "Travel policy", "source": "/srv/docs/travel/policy.html",
            "start": 424, "end": 482, "text": CHUNK, "quotes": [[437, 482]], **fields}


def test_a_found_answer_lists_its_sources_by_title_path_and_place():
    shown = format_answer({"answer": "It needs the Finance Director [1].", "found": True, "citations": [
        _citation(), _citation(n=2, document_id="notes.txt", title="notes.txt", quotes=[[424, 430], [431, 440]])]})
    assert shown == ("It needs the Finance Director [1].\n\nSources:\n"
                     '  [1] Travel policy — travel/policy.html, section "Approval", chars 437-482\n'
                     "  [2] notes.txt, chars 424-430, 431-440")
    assert "/srv/docs" not in shown  # never the ingesting machine's absolute path


def test_a_quote_before_any_heading_has_no_section():
    shown = format_answer({"answer": "A [1].", "found": True, "citations": [_citation(quotes=[])]})
    assert shown.endswith("  [1] Travel policy — travel/policy.html, chars 424-482")


def test_not_found_is_said_plainly_with_the_closest_documents():
    shown = format_answer({"answer": "The handbook documents do not say how many desks there are.", "found": False,
                           "citations": [], "related_documents": [{"id": "office.md", "title": "Offices"}]})
    assert shown == ("Not found. The handbook documents do not say how many desks there are.\n\n"
                     "Closest documents:\n  Offices — office.md")


def test_notes_say_what_was_cut_short():
    assert notes({"notes": ["budget short: answer skipped"], "status": "partial"}) == [
        "note: budget short: answer skipped",
        "note: part of the question could not be answered (see sub_questions in --json)"]
    assert notes({"notes": [], "status": "ok"}) == []


def test_a_wildcard_address_is_reached_on_loopback():
    assert serverfile.connect_url("0.0.0.0", 8000) == "http://127.0.0.1:8000"
    assert serverfile.connect_url("::", 8000) == "http://[::1]:8000"
    assert serverfile.connect_url("::1", 80) == "http://[::1]:80"
    assert serverfile.connect_url("localhost", 81) == "http://localhost:81"


def test_the_store_identity_is_absolute_and_keeps_no_secret(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert serverfile.store_id("pgserver://.rag_rlm/pgdata") == serverfile.store_id(f"pgserver://{tmp_path}/.rag_rlm/pgdata")
    assert serverfile.store_id("pgserver://a") != serverfile.store_id("pgserver://b")
    assert "hunter2" not in serverfile.store_id("postgresql://me:hunter2@db/rag")


def test_the_record_is_written_read_and_forgotten_by_its_own_process(tmp_path):
    settings = Settings(data_dir=str(tmp_path), store=f"pgserver://{tmp_path}/pg")
    serverfile.record(settings, "http://127.0.0.1:8123")
    found = serverfile.find(settings)
    assert found == serverfile.ServerRecord("http://127.0.0.1:8123", os.getpid(), serverfile.store_id(settings.store))
    assert serverfile.find(settings.replace(store=f"pgserver://{tmp_path}/other")) is None
    serverfile.path(settings).write_text(serverfile.path(settings).read_text().replace(str(os.getpid()), "1"))
    serverfile.forget(settings)  # pid 1's record: not ours to remove
    assert serverfile.read(settings).pid == 1
    serverfile.forget(settings.replace(data_dir=str(tmp_path / "none")))  # no record: nothing to do
    serverfile.path(settings).write_text("{half a rec")
    assert serverfile.find(settings) is None


def test_a_server_that_could_not_start_gives_the_record_back(tmp_path):
    """A second `serve` of the same data (its port taken, say) must not leave the first unfound."""
    settings = Settings(data_dir=str(tmp_path), store=f"pgserver://{tmp_path}/pg")
    first = serverfile.ServerRecord("http://127.0.0.1:8000", 1, serverfile.store_id(settings.store))  # pid 1 lives
    serverfile._write(settings, first)
    replaced = serverfile.record(settings, "http://127.0.0.1:8001")
    assert replaced == first and serverfile.read(settings).url == "http://127.0.0.1:8001"
    serverfile.forget(settings, replaced)
    assert serverfile.read(settings) == first


def test_a_command_with_its_own_quiet_gets_the_same_flags():
    """train-reader and eval define --quiet themselves (as 'no progress bar')."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    clikit.add_output_options(parser)
    assert parser.parse_args(["-q"]).quiet and parser.parse_args(["--quiet"]).quiet
    assert parser.parse_args(["-v"]).verbose and not parser.parse_args([]).verbose


def test_quiet_stderr_restores_what_it_changed(monkeypatch):
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    args = argparse.Namespace(quiet=False, verbose=False)
    filters = list(warnings.filters)
    with clikit.quiet_stderr(args):
        assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("from a third party", UserWarning, stacklevel=1)
        assert caught == []  # ignored, not merely hidden
        assert args.verbosity == clikit.NORMAL and args.quiet  # no terminal here: no progress bar
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
    assert warnings.filters == filters


def test_pgservers_retried_start_errors_are_not_logged_unless_verbose(caplog):
    """rag_rlm.memory.embedded retries a start that timed out; pgserver has already logged it."""
    for verbose in (False, True):
        caplog.clear()
        with clikit.quiet_stderr(argparse.Namespace(quiet=False, verbose=verbose)):
            logging.getLogger("pgserver").error("Timeout starting server.")
        assert ("Timeout starting server." in caplog.text) == verbose
    assert logging.getLogger("pgserver").level == logging.NOTSET


def test_chat_sends_no_more_history_than_the_server_takes():
    assert HISTORY_TURNS == MAX_HISTORY_TURNS
