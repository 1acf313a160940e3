"""Folder and Git sources synced into a real store (both backends): only the difference is
applied, renames are not re-embedded, a source that cannot be read changes nothing."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from rag_rlm.errors import UnknownCollection
from rag_rlm.memory import open_store
from rag_rlm.memory.state import open_state
from rag_rlm.sources.service import SourceBusy, SourceInvalid, Sources, check_allowed, make_spec, parse_every

ALPHA = "# Alpha\n\nThe alpha reactor runs at four hundred kelvin during the night shift.\n"
BETA = "Beta notes.\n\nThe beta pump moves twelve litres of coolant every minute.\n"
GAMMA = "# Gamma\n\nGamma badges are issued by the front desk on the second floor.\n"
DELTA = "# Delta\n\nThe delta archive keeps invoices for seven years.\n"


@pytest.fixture
def sources(settings, embedder):
    store = open_store(settings.store)
    state = open_state(settings.store, settings.data_dir)
    yield Sources(store, state, settings, lambda: embedder)
    getattr(state, "close", lambda: None)()
    store.close()


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _docs(sources: Sources, collection: str) -> dict:
    try:
        return sources.store.documents(collection)
    except UnknownCollection:  # nothing was ever written to it
        return {}


def test_folder_sync_applies_only_the_difference(sources, collection, tmp_path):
    root = tmp_path / "docs"
    _write(root, {"alpha.md": ALPHA, "beta.txt": BETA, "team/gamma.md": GAMMA, "notes.bin": "not a document"})
    spec = make_spec("handbook", "folder", str(root), collection)
    sources.add(spec)

    first = sources.sync(spec)
    assert (first.status, first.added, first.failed) == ("done", 3, 0)
    docs = _docs(sources, collection)
    assert set(docs) == {"handbook/alpha.md", "handbook/beta.txt", "handbook/team/gamma.md"}
    assert docs["handbook/team/gamma.md"].source == "team/gamma.md"
    assert docs["handbook/team/gamma.md"].metadata["source_name"] == "handbook"

    again = sources.sync(spec)
    assert (again.unchanged, again.added, again.updated, again.chunks_written) == (3, 0, 0, 0)

    (root / "beta.txt").write_text(BETA + "\nThe pump was replaced in March.\n")  # changed
    (root / "alpha.md").unlink()  # deleted
    (root / "team/gamma.md").rename(root / "gamma-badges.md")  # renamed, same bytes
    _write(root, {"delta.md": DELTA})  # new
    diff = sources.sync(spec)
    assert (diff.added, diff.updated, diff.renamed, diff.deleted, diff.unchanged, diff.failed) == (1, 1, 1, 1, 0, 0)
    docs = _docs(sources, collection)
    assert set(docs) == {"handbook/beta.txt", "handbook/gamma-badges.md", "handbook/delta.md"}
    assert docs["handbook/gamma-badges.md"].source == "gamma-badges.md"
    # the rename moved the stored chunks: only beta and delta were embedded and written
    written = docs["handbook/beta.txt"].chunk_count + docs["handbook/delta.md"].chunk_count
    assert diff.chunks_written == written
    status = sources.get(collection, "handbook")["last_sync"]
    assert (status["status"], status["renamed"], status["reader"]["files"]) == ("done", 1, 3)


def test_touched_file_is_not_rewritten_and_a_hand_deleted_document_comes_back(sources, collection, tmp_path):
    root = tmp_path / "docs"
    _write(root, {"alpha.md": ALPHA, "beta.txt": BETA})
    spec = make_spec("f", "folder", str(root), collection)
    sources.add(spec)
    sources.sync(spec)
    (root / "alpha.md").write_text(ALPHA)  # new mtime, same bytes
    sources.store.delete_document(collection, "f/beta.txt")
    out = sources.sync(spec)
    assert (out.unchanged, out.added, out.updated) == (1, 1, 0)
    assert set(_docs(sources, collection)) == {"f/alpha.md", "f/beta.txt"}


def test_include_exclude_globs_and_groups(sources, collection, tmp_path):
    root = tmp_path / "docs"
    _write(root, {"a.md": ALPHA, "drafts/b.md": BETA, "c.txt": GAMMA})
    spec = make_spec("g", "folder", str(root), collection, include=["*.md"], exclude=["drafts/*"],
                     groups=["hr", "finance"])
    sources.add(spec)
    sources.sync(spec)
    docs = _docs(sources, collection)
    assert set(docs) == {"g/a.md"}
    assert docs["g/a.md"].groups == ("finance", "hr")  # the source's access groups, on its documents


def test_a_folder_that_is_gone_changes_nothing(sources, collection, tmp_path):
    root = tmp_path / "docs"
    _write(root, {"alpha.md": ALPHA, "beta.txt": BETA})
    spec = make_spec("f", "folder", str(root), collection)
    sources.add(spec)
    sources.sync(spec)
    before = _docs(sources, collection)
    (root / "alpha.md").unlink()
    (root / "beta.txt").unlink()
    root.rmdir()
    out = sources.sync(spec)
    assert out.status == "failed" and str(root) in out.error and "does not exist" in out.error
    assert _docs(sources, collection) == before
    assert sources.get(collection, "f")["last_sync"]["status"] == "failed"


def test_an_interrupted_sync_deletes_nothing(sources, collection, tmp_path):
    root = tmp_path / "docs"
    _write(root, {"alpha.md": ALPHA, "beta.txt": BETA})
    spec = make_spec("f", "folder", str(root), collection)
    sources.add(spec)
    sources.sync(spec)
    (root / "alpha.md").unlink()
    stop = threading.Event()
    stop.set()
    out = sources.sync(spec, stop=stop)
    assert out.status == "cancelled" and out.deleted == 0
    assert "f/alpha.md" in _docs(sources, collection)
    assert sources.sync(spec).deleted == 1  # the next full sync finishes the job


def test_one_sync_per_source_at_a_time(sources, collection, tmp_path):
    root = tmp_path / "docs"
    _write(root, {"alpha.md": ALPHA})
    spec = make_spec("f", "folder", str(root), collection)
    sources.add(spec)
    assert sources.registry.claim(spec, "another-process", 60)
    with pytest.raises(SourceBusy):
        sources.sync(spec)
    sources.registry.release(spec, "another-process")
    assert sources.sync(spec).added == 1


def test_remove_deletes_the_sources_documents_only(sources, collection, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _write(a, {"alpha.md": ALPHA})
    _write(b, {"beta.txt": BETA})
    for name, root in (("one", a), ("two", b)):
        spec = make_spec(name, "folder", str(root), collection)
        sources.add(spec)
        sources.sync(spec)
    assert sources.remove(collection, "one") == 1
    assert set(_docs(sources, collection)) == {"two/beta.txt"}
    assert [r["name"] for r in sources.list(collection)] == ["two"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin",
                               "HOME": str(repo)}).stdout.strip()


def _repo(path: Path) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    _write(path, {"alpha.md": ALPHA, "beta.txt": BETA, "docs/gamma.md": GAMMA, "script.py": "print(1)\n"})
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "first")
    _write(path, {"untracked.md": DELTA})  # in the working tree only: not at the branch head
    return path


def test_git_sync_touches_exactly_what_a_commit_changed(sources, collection, tmp_path):
    repo = _repo(tmp_path / "repo")
    spec = make_spec("code", "git", str(repo), collection, branch="main")
    sources.add(spec)
    first = sources.sync(spec)
    head = _git(repo, "rev-parse", "HEAD")
    assert (first.status, first.added, first.reader["commit"]) == ("done", 3, head)
    docs = _docs(sources, collection)
    assert set(docs) == {"code/alpha.md", "code/beta.txt", "code/docs/gamma.md"}
    assert docs["code/alpha.md"].source == f"alpha.md@{head[:12]}"

    _write(repo, {"beta.txt": BETA + "\nEdited.\n", "delta.md": DELTA})
    _git(repo, "mv", "docs/gamma.md", "gamma.md")
    _git(repo, "rm", "-q", "alpha.md")
    _git(repo, "add", "beta.txt", "delta.md")
    _git(repo, "commit", "-qm", "second")
    second = sources.sync(spec)
    head2 = _git(repo, "rev-parse", "HEAD")
    assert (second.added, second.updated, second.renamed, second.deleted, second.unchanged) == (1, 1, 1, 1, 0)
    docs = _docs(sources, collection)
    assert set(docs) == {"code/beta.txt", "code/gamma.md", "code/delta.md"}
    assert docs["code/beta.txt"].source == f"beta.txt@{head2[:12]}"
    assert docs["code/gamma.md"].source == f"gamma.md@{head2[:12]}"
    assert sources.sync(spec).unchanged == 3


def test_a_repository_that_does_not_exist_fails_and_changes_nothing(sources, collection, tmp_path):
    spec = make_spec("code", "git", str(tmp_path / "nowhere"), collection)
    sources.add(spec)
    out = sources.sync(spec)
    assert out.status == "failed" and "git clone" in out.error and "nowhere" in out.error
    repo = _repo(tmp_path / "repo")
    spec = make_spec("code2", "git", str(repo), collection, branch="no-such-branch")
    sources.add(spec)
    out = sources.sync(spec)
    assert out.status == "failed" and "no-such-branch" in out.error
    assert _docs(sources, collection) == {}


def test_bad_definitions_name_the_field(tmp_path):
    with pytest.raises(SourceInvalid, match="kind"):
        make_spec("x", "ftp", "/tmp", "c")
    with pytest.raises(SourceInvalid, match="location"):
        make_spec("x", "web", "ftp://example.org/", "c")
    with pytest.raises(SourceInvalid, match="name"):
        make_spec("../x", "folder", "/tmp", "c")
    with pytest.raises(SourceInvalid, match="every"):
        parse_every("5 minutes")
    with pytest.raises(SourceInvalid, match="groups"):
        make_spec("x", "folder", "/tmp", "c", groups=["hr team"])
    assert parse_every("10m") == 600 and parse_every("") == 0
    roots = [str(tmp_path / "allowed")]
    with pytest.raises(SourceInvalid, match="source_roots"):
        check_allowed(make_spec("x", "folder", "/etc", "c"), roots, [])
    check_allowed(make_spec("x", "folder", str(tmp_path / "allowed" / "sub"), "c"), roots, [])
    with pytest.raises(SourceInvalid, match="source_hosts"):
        check_allowed(make_spec("x", "web", "http://169.254.169.254/latest", "c"), roots, ["intranet.example"])
    with pytest.raises(SourceInvalid, match="http"):
        check_allowed(make_spec("x", "git", "ext::sh -c touch% /tmp/pwned", "c"), roots, ["intranet.example"])
