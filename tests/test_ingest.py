"""Ingest end to end into pgvector (pgserver) and Qdrant local mode, and the real `ingest` CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_parsers import make_docx, make_pdf, write

from ingest.cli import main
from rag_rlm.ingest.pipeline import IngestSummary, ingest_documents, ingest_paths
from rag_rlm.ingest.recipe import METADATA_KEY, recipe
from rag_rlm.memory import open_store
from rag_rlm.types import Document

SUMMARY_KEYS = {"documents_new", "documents_updated", "documents_unchanged", "documents_failed",
                "documents_pruned", "chunks_written", "seconds", "chunks_per_second", "failed"}


def make_corpus(root: Path) -> Path:
    write(root / "expenses.md", "# Expense policy\n\nExpenses over $500 are approved by the Finance "
                                "Director, Hannah Lindqvist.\n\n## Receipts\n\nKeep every receipt over $25.\n")
    write(root / "vacation.txt", "Vacation\n\nNew hires get 22 vacation days per year.\n")
    write(root / "offices/lisbon.html", "<html><head><title>Lisbon office</title><script>x()</script></head>"
                                        "<body><h1>Lisbon</h1><p>The Lisbon office is at Rua da Prata 88.</p></body></html>")
    write(root / "security.pdf", make_pdf([["Security incidents", "Report incidents in the sec-incidents channel."],
                                           ["SEV1 incidents reach the CTO within one hour."]]))
    write(root / "deploy.docx", make_docx("Deployment", ["The Platform team owns the Conveyor deployment pipeline."]))
    return root


@pytest.fixture
def store(store_url):
    s = open_store(store_url)
    yield s
    s.close()


def run(paths, store, embedder, settings, collection, **kw) -> IngestSummary:
    return ingest_paths([str(p) for p in paths], collection=collection, store=store, embedder=embedder,
                        settings=settings, progress=False, **kw)


def top(store, embedder, collection, query: str):
    return store.search(collection, embedder.embed([query])[0], 3)[0]


def stored_chunks(store, embedder, collection, doc_id: str):
    return store.search(collection, embedder.embed(["x"])[0], 1000, where={"document_id": doc_id})


def assert_consistent(store, embedder, collection) -> dict:
    """Every stored document has exactly its recorded number of chunks: no partial document."""
    records = store.documents(collection)
    for doc_id, record in records.items():
        spans = stored_chunks(store, embedder, collection, doc_id)
        assert sorted(s.chunk_index for s in spans) == list(range(record.chunk_count)), doc_id
    return records


def test_mixed_corpus_is_searchable_and_reingest_stores_nothing_new(tmp_path, store, embedder, settings, collection):
    corpus = make_corpus(tmp_path / "corpus")
    first = run([corpus], store, embedder, settings, collection)
    assert (first.documents_new, first.documents_failed, first.failed) == (5, 0, [])
    assert first.chunks_written == store.collection_info(collection).chunks >= 5
    records = store.documents(collection)
    assert set(records) == {"expenses.md", "vacation.txt", "offices/lisbon.html", "security.pdf", "deploy.docx"}
    assert records["offices/lisbon.html"].title == "Lisbon office"
    assert records["deploy.docx"].title == "Deployment"
    assert top(store, embedder, collection, "Who approves expenses over $500?").document_id == "expenses.md"
    assert top(store, embedder, collection, "Which team owns the deployment pipeline?").document_id == "deploy.docx"
    hit = top(store, embedder, collection, "How fast must a SEV1 incident reach the CTO?")
    assert hit.document_id == "security.pdf" and "within one hour" in hit.text

    version = store.collection_info(collection).version
    again = run([corpus], store, embedder, settings, collection)
    assert (again.documents_unchanged, again.documents_new, again.documents_updated, again.chunks_written) == (5, 0, 0, 0)
    assert store.collection_info(collection).version == version
    assert_consistent(store, embedder, collection)


def test_a_modified_file_replaces_its_chunks(tmp_path, store, embedder, settings, collection):
    corpus = make_corpus(tmp_path / "corpus")
    run([corpus], store, embedder, settings, collection)
    paragraphs = [f"Rule {i}: meals on trip day {i} are capped at {20 + i} euros." for i in range(40)]
    write(corpus / "expenses.md", "# Expense policy\n\n" + "\n\n".join(paragraphs) + "\n")
    summary = run([corpus], store, embedder, settings, collection)
    assert (summary.documents_updated, summary.documents_unchanged, summary.documents_new) == (1, 4, 0)
    record = store.documents(collection)["expenses.md"]
    spans = stored_chunks(store, embedder, collection, "expenses.md")
    assert record.chunk_count == len(spans) == summary.chunks_written > 1
    assert not any("Hannah Lindqvist" in s.text for s in spans)
    assert "Rule 7:" in top(store, embedder, collection, "meal cap on trip day 7").text


def test_sentences_are_stored_with_their_vectors_and_exact_offsets(tmp_path, store, embedder, settings, collection):
    from dataclasses import replace

    settings = replace(settings, sentence_vectors="encode")
    corpus = make_corpus(tmp_path / "corpus")
    assert run([corpus], store, embedder, settings, collection).documents_failed == 0
    doc_id = "expenses.md"
    text = store.document_text(collection, doc_id)
    assert text == (corpus / "expenses.md").read_text().rstrip("\n")
    spans = stored_chunks(store, embedder, collection, doc_id)
    sentences, vectors = store.sentences(collection, spans)
    assert [(s.kind, s.heading, s.text) for s in sentences] == [
        ("heading", "", "Expense policy"),
        ("text", "Expense policy", "Expenses over $500 are approved by the Finance Director, Hannah Lindqvist."),
        ("heading", "Expense policy", "Receipts"),
        ("text", "Receipts", "Keep every receipt over $25.")]
    assert all(text[s.start:s.end] == s.text for s in sentences)
    assert vectors.shape == (4, embedder.dimension)
    assert (vectors * embedder.embed([s.text for s in sentences])).sum(axis=1).min() > 0.999
    # a changed file replaces its sentences too
    write(corpus / "expenses.md", "# Expense policy\n\nAll expenses need a receipt.\n")
    run([corpus], store, embedder, settings, collection)
    spans = stored_chunks(store, embedder, collection, doc_id)
    assert [s.text for s in store.sentences(collection, spans)[0]] == ["Expense policy", "All expenses need a receipt."]


def test_pooled_sentence_vectors_are_the_default(store, embedder, settings, collection):
    from dataclasses import replace

    assert settings.sentence_vectors == "pool"
    text = "# Travel\n\nFlights are booked by the travel desk. Hotels are capped at 120 EUR a night."
    doc = Document(id="travel", title="Travel", source="", text=text, content_hash="h1")
    summary = ingest_documents([doc], collection=collection, store=store, embedder=embedder,
                               settings=replace(settings, sentence_vectors="pool"))
    assert summary.documents_new == 1
    sentences, vectors = store.sentences(collection, stored_chunks(store, embedder, collection, "travel"))
    assert [s.text for s in sentences] == ["Travel", "Flights are booked by the travel desk.",
                                           "Hotels are capped at 120 EUR a night."]
    assert vectors.shape == (3, embedder.dimension)
    q = embedder.embed(["How much may a hotel cost per night?"])[0]
    assert sentences[int((vectors @ q).argmax())].text.startswith("Hotels")


def test_bad_files_are_reported_while_the_rest_goes_in_and_stored_copies_survive(
        tmp_path, store, embedder, settings, collection):
    corpus = make_corpus(tmp_path / "corpus")
    run([corpus], store, embedder, settings, collection)
    before = stored_chunks(store, embedder, collection, "security.pdf")
    write(corpus / "security.pdf", b"%PDF-1.4\n1 0 obj garbage, the rest of the file is gone")
    write(corpus / "blob.txt", b"\x7fELF\x00\x00\x01binary")
    write(corpus / "empty.md", b"\n\n")
    write(corpus / "new.txt", "Parking\n\nThe Austin office has 40 parking spaces.\n")
    summary = run([corpus], store, embedder, settings, collection)
    reasons = {Path(f["path"]).name: f["reason"] for f in summary.failed}
    assert reasons.keys() == {"security.pdf", "blob.txt", "empty.md"}
    assert reasons["security.pdf"].startswith("corrupt PDF")
    assert reasons["blob.txt"] == "binary file (NUL bytes)"
    assert reasons["empty.md"] == "empty: no text"
    assert (summary.documents_failed, summary.documents_new, summary.documents_unchanged) == (3, 1, 4)
    # the last good version of the corrupted file is still there, whole
    assert stored_chunks(store, embedder, collection, "security.pdf") == before
    assert top(store, embedder, collection, "How many parking spaces in Austin?").document_id == "new.txt"


def test_prune_removes_documents_of_deleted_files_only_under_the_given_roots(
        tmp_path, store, embedder, settings, collection):
    corpus = make_corpus(tmp_path / "corpus")
    other = write(tmp_path / "other" / "notes.txt", "Notes\n\nThe Toronto office opened in 2019.\n")
    run([corpus, other], store, embedder, settings, collection)
    (corpus / "vacation.txt").unlink()
    other.unlink()  # gone too, but not under the root pruned below
    kept = run([corpus], store, embedder, settings, collection)
    assert kept.documents_pruned == 0 and "vacation.txt" in store.documents(collection)
    summary = run([corpus], store, embedder, settings, collection, prune=True)
    assert summary.documents_pruned == 1
    assert set(store.documents(collection)) == {"expenses.md", "offices/lisbon.html", "security.pdf",
                                                "deploy.docx", "notes.txt"}
    assert stored_chunks(store, embedder, collection, "vacation.txt") == []


def test_jsonl_records_keep_their_ids_and_a_bad_line_is_named(tmp_path, store, embedder, settings, collection):
    lines = [json.dumps({"id": f"hp-{i}", "title": f"T{i}", "text": f"Paragraph {i} is about river {i}.", "split": "dev"})
             for i in range(5)]
    lines.insert(2, '{"id": "broken"')
    path = write(tmp_path / "corpus.jsonl", "\n".join(lines) + "\n")
    summary = run([path], store, embedder, settings, collection)
    assert summary.documents_new == 5
    assert summary.failed == [{"path": f"{path}:3", "reason": summary.failed[0]["reason"]}]
    assert summary.failed[0]["reason"].startswith("line 3: ")
    records = store.documents(collection)
    assert sorted(records) == [f"hp-{i}" for i in range(5)]
    assert records["hp-3"].title == "T3" and records["hp-3"].metadata == {"split": "dev", METADATA_KEY: recipe(settings)}


def test_a_stop_request_ends_after_a_whole_document_and_the_next_run_finishes(
        tmp_path, store, embedder, settings, collection):
    corpus = tmp_path / "big"
    for i in range(20):
        write(corpus / f"doc{i:02}.txt", f"Doc {i}\n\n" + f"Fact {i}: the code word is w{i}. " * 12)
    stop = threading.Event()

    def progress(done: int, total: int | None, chunks: int) -> None:
        if done >= 5:
            stop.set()

    part = ingest_paths([corpus], collection=collection, store=store, embedder=embedder,
                        settings=settings.replace(batch_size=4), progress=progress, stop=stop)
    assert part.interrupted and 5 <= part.documents_new < 20
    assert len(assert_consistent(store, embedder, collection)) == part.documents_new
    rest = run([corpus], store, embedder, settings, collection)
    assert (rest.documents_unchanged, rest.documents_new) == (part.documents_new, 20 - part.documents_new)
    assert len(assert_consistent(store, embedder, collection)) == 20


def test_ingest_documents_takes_parsed_uploads_and_skips_unchanged_hashes(store, embedder, settings, collection):
    docs = [Document(id=f"up-{i}", title=f"Upload {i}", source="upload", text=f"Upload {i} says the door code is {i}{i}.",
                     content_hash=f"h{i}") for i in range(3)]
    seen: list[tuple[int, int | None, int]] = []
    first = ingest_documents(docs, collection=collection, store=store, embedder=embedder, settings=settings,
                             progress=lambda *a: seen.append(a))
    assert (first.documents_new, first.chunks_written) == (3, 3)
    assert seen[-1] == (3, None, 3)
    changed = [docs[0], docs[1], Document("up-2", "Upload 2", "upload", "Upload 2 was rewritten.", "h2b")]
    again = ingest_documents(changed, collection=collection, store=store, embedder=embedder, settings=settings)
    assert (again.documents_unchanged, again.documents_updated, again.chunks_written) == (2, 1, 1)
    assert store.documents(collection)["up-2"].content_hash == "h2b"


# --- the CLI ---------------------------------------------------------------------------------

def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_codes_and_json_summary(tmp_path, capsys, pg_url, collection):
    corpus = make_corpus(tmp_path / "corpus")
    code, out, _ = cli(capsys, str(corpus), "--collection", collection, "--store", pg_url, "--json")
    summary = json.loads(out)
    assert code == 0 and SUMMARY_KEYS <= summary.keys()
    assert (summary["documents_new"], summary["documents_failed"]) == (5, 0)
    write(corpus / "bad.docx", b"not a zip")
    code, out, _ = cli(capsys, str(corpus), "--collection", collection, "--store", pg_url, "--quiet")
    assert code == 1
    assert "documents: 0 new, 0 updated, 5 unchanged, 1 failed" in out
    assert f"{corpus / 'bad.docx'}: corrupt DOCX" in out
    code, _, err = cli(capsys, str(corpus / "missing"), "--collection", collection, "--store", pg_url)
    assert code == 2 and "missing" in err
    os.mkfifo(corpus / "pipe")  # named on the command line: refused, never read (it would block)
    code, out, err = cli(capsys, str(corpus / "pipe"), "--collection", collection, "--store", pg_url)
    assert code == 2 and out == "" and f"not a regular file or folder: {corpus / 'pipe'}" in err
    with pytest.raises(SystemExit) as usage:
        main([str(corpus), "--chunk-tokens", "lots"])
    assert usage.value.code == 2


@pytest.mark.parametrize("env,argv,setting", [
    ({"RAG_RLM_CHUNK_TOKENS": "abc"}, [], "RAG_RLM_CHUNK_TOKENS"),
    ({}, ["--chunk-tokens", "50", "--overlap", "80"], "chunk_overlap"),
    ({}, ["--collection", "no spaces allowed"], "collection"),
    ({}, ["--store", "ftp://somewhere"], "store"),
])
def test_cli_bad_settings_exit_2_naming_the_setting(tmp_path, capsys, monkeypatch, env, argv, setting):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code, out, err = cli(capsys, str(make_corpus(tmp_path / "c")), *argv)
    assert code == 2 and out == ""
    assert setting in err


def spawn_ingest(corpus: Path, collection: str, store_url: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ingest", str(corpus), "--collection", collection,
                             "--store", store_url, "--quiet", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1], env={**os.environ, "RAG_RLM_BATCH_SIZE": "8"})


def wait_for_documents(store, collection: str, proc: subprocess.Popen, at_least: int) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if len(store.documents(collection)) >= at_least:
                return
        except Exception:  # the collection does not exist yet
            pass
        time.sleep(0.05)
    raise AssertionError(f"ingest never stored {at_least} documents: {proc.communicate()}")


N_BIG = 40  # documents of about 2 chunks; batches of 8 chunks write a few documents at a time


def big_corpus(root: Path, n: int) -> Path:
    for i in range(n):
        body = "\n\n".join(f"Section {j} of report {i}: the {j}th figure is {i * j} units, "
                           f"measured in warehouse {i % 7} during week {j}." for j in range(4))
        write(root / f"r{i:03}.md", f"# Report {i}\n\n{body}\n")
    return root


@pytest.mark.parametrize("sig,code", [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGINT, 130)])
def test_an_interrupted_cli_run_leaves_no_partial_document_and_the_next_run_finishes(
        tmp_path, pg_url, embedder, collection, sig, code):
    corpus = big_corpus(tmp_path / "big", N_BIG)
    store = open_store(pg_url)
    try:
        proc = spawn_ingest(corpus, collection, pg_url)
        wait_for_documents(store, collection, proc, 3)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == code, err
        records = assert_consistent(store, embedder, collection)
        assert 3 <= len(records) < N_BIG
        if sig == signal.SIGINT:  # a clean stop prints the partial summary
            partial = json.loads(out)
            assert partial["interrupted"] and partial["documents_new"] == len(records)
        proc = spawn_ingest(corpus, collection, pg_url)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        summary = json.loads(out)
        assert summary["documents_unchanged"] == len(records)
        assert summary["documents_new"] == N_BIG - len(records)
        assert len(assert_consistent(store, embedder, collection)) == N_BIG
    finally:
        store.close()


class RecordingEmbedder:
    """The real embedder, recording how many texts each encode call got."""

    def __init__(self, embedder):
        self.inner, self.calls = embedder, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts):
        self.calls.append(len(texts))
        return self.inner.embed(texts)

    def embed_with_tokens(self, texts):
        self.calls.append(len(texts))
        return self.inner.embed_with_tokens(texts)


class RecordingStore:
    """The real store, recording how many parts each document was written in."""

    def __init__(self, store):
        self.inner, self.parts = store, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def write_parts(self, collection, document, parts):
        def counted():
            for part in parts:
                self.parts[-1] += 1
                yield part

        self.parts.append(0)
        return self.inner.write_parts(collection, document, counted())


def test_a_large_document_is_ingested_in_parts_with_bounded_embed_calls(
        tmp_path, monkeypatch, store, embedder, settings, collection):
    """Issue 9: a document many segments long is chunked, embedded and written part by part;
    what is stored is the whole document, in order, with its sentences."""
    from dataclasses import replace

    from rag_rlm.ingest import segments
    from rag_rlm.ingest.pipeline import EMBED_GROUP
    from rag_rlm.ingest.sentences import split_sentences

    monkeypatch.setattr(segments, "SEGMENT_CHARS", 600)
    sections = [f"# Project {i}\n\nThe code name of project {i} is {name}. It ships in {2000 + i}.\n\n"
                f"Its team meets on floor {i % 7}. The budget review is in month {i % 12 + 1}."
                for i, name in enumerate(["Heron", "Osprey", "Kestrel", "Falcon", "Merlin", "Harrier", "Condor",
                                          "Kite", "Buzzard", "Eagle", "Hobby", "Shrike"] * 3)]
    text = "\n\n".join(sections) + "\n"
    write(tmp_path / "big.md", text)
    settings = replace(settings, batch_size=4, chunk_tokens=48, chunk_overlap=8)
    recorder, recording_store = RecordingEmbedder(embedder), RecordingStore(store)
    progress: list[int] = []
    summary = ingest_paths([tmp_path / "big.md"], collection=collection, store=recording_store, embedder=recorder,
                           settings=settings, progress=lambda done, total, chunks: progress.append(chunks))
    assert summary.documents_new == 1 and summary.documents_failed == 0
    assert recording_store.parts[0] > 5  # written in parts ...
    biggest_part = 600 // 20  # a 48-token chunk holds more than 20 characters
    assert max(recorder.calls) <= settings.batch_size * EMBED_GROUP + biggest_part  # ... and embedded in bounded calls
    assert progress == sorted(progress) and len(set(progress)) > 3  # the bar moves part by part

    chunks = sorted(stored_chunks(store, embedder, collection, "big.md"), key=lambda s: s.chunk_index)
    assert [c.chunk_index for c in chunks] == list(range(summary.chunks_written))
    assert all(text[c.start:c.end] == c.text for c in chunks)
    assert all(a.start < b.start and a.end <= b.end for a, b in zip(chunks, chunks[1:], strict=False))
    covered = set().union(*(range(c.start, c.end) for c in chunks))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())  # every word is stored
    assert store.document_text(collection, "big.md") == text.rstrip()

    from test_store_contract import span_of

    sentences, vectors = store.sentences(collection, [span_of("big.md", 0, len(text))])
    assert sentences == split_sentences(text, "big.md")  # the same as from the whole text
    assert sentences[-1].heading == "Project 35" and vectors.shape == (len(sentences), embedder.dimension)
    assert "Condor" in top(store, embedder, collection, "What is the code name of project 6?").text


def test_a_stop_request_inside_a_large_document_keeps_its_old_version(
        tmp_path, monkeypatch, store, embedder, settings, collection):
    from rag_rlm.ingest import segments

    monkeypatch.setattr(segments, "SEGMENT_CHARS", 300)
    old = "\n\n".join(f"Old paragraph {i} tells the old story." for i in range(40))
    write(tmp_path / "big.txt", old)
    assert run([tmp_path / "big.txt"], store, embedder, settings, collection).documents_new == 1
    write(tmp_path / "big.txt", old.replace("old", "new"))
    stop = threading.Event()
    summary = ingest_paths([tmp_path / "big.txt"], collection=collection, store=store, embedder=embedder,
                           settings=settings, stop=stop, progress=lambda *_: stop.set())  # after its first part
    assert summary.interrupted and summary.documents_updated == 0
    assert store.document_text(collection, "big.txt") == old
    assert_consistent(store, embedder, collection)
    assert run([tmp_path / "big.txt"], store, embedder, settings, collection).documents_updated == 1
    assert store.document_text(collection, "big.txt") == old.replace("old", "new")
