"""The Assistant as the facade the server uses: collections, documents (with their text), ingest,
jobs and health, on both stores; and no server module reaching past it."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from rag_rlm.assistant import Assistant
from rag_rlm.errors import UnknownCollection

SERVER = Path(__file__).resolve().parent.parent / "rag_rlm" / "server"
ZEPHYR = "# Zephyr lab\n\nThe Zephyr lab door code is 4417 and it changes every Tuesday.\n"
CANTEEN = "The canteen serves lunch from noon to two.\n"


@pytest.fixture
def assistant(settings, embedder):
    a = Assistant(settings, embedder=embedder)
    yield a
    a.close()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "zephyr.md").write_text(ZEPHYR)
    (folder / "canteen.txt").write_text(CANTEEN)
    return folder


def test_ingest_then_list_read_and_delete_documents(assistant, corpus, collection):
    summary = assistant.ingest_files([corpus], collection)
    assert summary.documents_new == 2 and summary.chunks_written >= 2 and not summary.failed
    assert assistant.ingest_files([corpus], collection).documents_unchanged == 2  # idempotent

    assert collection in {c.name for c in assistant.collections()}
    info = assistant.collection_info(collection)
    assert info.documents == 2 and info.chunks >= 2 and info.version
    docs = assistant.documents(collection)
    assert [d.id for d in docs] == ["canteen.txt", "notes/zephyr.md"] and all(d.chunk_count >= 1 for d in docs)

    assert assistant.delete_document(collection, "canteen.txt") is True
    assert assistant.delete_document(collection, "canteen.txt") is False
    assert [d.id for d in assistant.documents(collection)] == ["notes/zephyr.md"]
    assert assistant.collection_info(collection).documents == 1


def test_document_holds_its_text_with_the_offsets_of_its_chunks(assistant, corpus, collection, embedder):
    """Needs the stores' `document_text` (the sentence-memory branch)."""
    assistant.ingest_files([corpus], collection)
    doc = assistant.document(collection, "notes/zephyr.md")
    assert (doc["id"], doc["chunks"]) == ("notes/zephyr.md", 1) and doc["content_hash"]
    assert "door code is 4417" in doc["text"]
    spans = assistant.store.search(collection, embedder.embed(["door code"])[0], 5)
    for span in spans:
        text = assistant.document(collection, span.document_id)["text"]
        assert text[span.start:span.end] == span.text


def test_missing_documents_and_collections_raise(assistant, corpus, collection):
    assistant.ingest_files([corpus], collection)
    with pytest.raises(KeyError):
        assistant.document(collection, "notes/nope.md")
    missing = "nope_" + uuid.uuid4().hex[:8]
    for call in (assistant.collection_info, assistant.documents):
        with pytest.raises(UnknownCollection):
            call(missing)
    with pytest.raises(UnknownCollection):
        assistant.document(missing, "notes/zephyr.md")
    with pytest.raises(UnknownCollection):
        assistant.delete_document(missing, "notes/zephyr.md")
    with pytest.raises(FileNotFoundError):
        assistant.ingest_files([corpus / "absent.md"], collection)


def test_jobs_round_trip_through_the_state_store(assistant):
    job_id = uuid.uuid4().hex
    assert assistant.job(job_id) is None
    assistant.save_job({"id": job_id, "status": "queued", "files": 2})
    assistant.save_job({"id": job_id, "status": "done", "files": 2, "summary": {"documents_new": 2}})
    assert assistant.job(job_id) == {"id": job_id, "status": "done", "files": 2, "summary": {"documents_new": 2}}


def test_health_counts_collections(assistant, corpus, collection):
    before = assistant.health()
    assert before["reachable"] is True
    assistant.ingest_files([corpus], collection)
    assert assistant.health() == {"reachable": True, "collections": before["collections"] + 1}


def test_no_server_module_reaches_past_the_facade():
    reach = re.compile(r"assistant\s*\.\s*(store|state|embedder|reasoner|memo)\b")
    offenders = [f"{p.name}:{n}" for p in sorted(SERVER.glob("*.py"))
                 for n, line in enumerate(p.read_text().splitlines(), 1) if reach.search(line)]
    assert not offenders, offenders
    assert any("ctx.assistant." in p.read_text() for p in SERVER.glob("*.py"))  # the pattern can match
