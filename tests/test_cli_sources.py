"""`rag-rlm source` as a person runs it: real processes over a real folder and Git repository,
the summary on stdout, exit codes as `ingest`'s."""

from __future__ import annotations

import json
import subprocess

import pytest
from clirun import copy_sample, run

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("cli_sources")


def test_add_sync_list_and_remove(folder):
    docs = copy_sample(folder, "docs")
    added = run("source", "add", "handbook", "folder", str(docs), "-c", "team", "--include", "*.md",
                "--sync", "--json", cwd=folder)
    assert added.returncode == 0, added.stderr
    summary = json.loads(added.stdout)
    assert summary["status"] == "done" and summary["added"] >= 3 and summary["failed"] == 0
    assert added.stderr == ""  # no bar, no warnings off a terminal

    (docs / "new-policy.md").write_text("# Plants\n\nEvery desk may hold one plant, watered on Mondays.\n")
    again = run("source", "sync", "handbook", "-c", "team", cwd=folder)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"handbook: 1 added, 0 updated, 0 renamed, 0 deleted, {summary['added']} unchanged")

    listed = json.loads(run("source", "list", "-c", "team", "--json", cwd=folder).stdout)
    assert [s["name"] for s in listed["sources"]] == ["handbook"]
    assert listed["sources"][0]["last_sync"]["added"] == 1

    asked = run("ask", "How often are desk plants watered?", "-c", "team", "--local", cwd=folder)
    assert "handbook/new-policy.md" in asked.stdout, asked.stdout

    removed = run("source", "remove", "handbook", "-c", "team", cwd=folder)
    assert removed.returncode == 0 and f"{summary['added'] + 1} documents deleted" in removed.stdout


def test_a_git_source_names_its_commit(folder):
    repo = folder / "repo"
    copy_sample(folder, "repo")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "docs"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    done = run("source", "add", "code", "git", str(repo), "-c", "repo", "--branch", "main", "--sync", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert f"commit {head}" in done.stdout


@pytest.mark.parametrize(("args", "code", "says"), [
    (("add", "x", "ftp", "/tmp"), 2, "invalid choice"),
    (("add", "x", "folder", "/no/such/folder"), 2, "does not exist"),
    (("add", "x", "folder", ".", "--every", "often"), 2, "every"),
    (("add", "x", "web", "ftp://example.org/"), 2, "http"),
    (("sync", "nothing-here"), 1, "no source 'nothing-here'"),
    (("remove", "nothing-here"), 1, "no source 'nothing-here'"),
])
def test_bad_input_is_a_clear_error(folder, args, code, says):
    done = run("source", *args, "-c", "bad", cwd=folder)
    assert done.returncode == code and says in done.stderr, (done.returncode, done.stderr)
