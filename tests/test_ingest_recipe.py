"""The ingest recipe: a document whose bytes are unchanged is still made again when this release
segments differently or the chunk or embedder settings changed, by `ingest` and by a source sync
(both backends); and the segmentation of the sample corpus and tests/data's manual pages is pinned to
INGEST_VERSION."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from ingest.cli import format_summary
from rag_rlm.config import Settings
from rag_rlm.ingest import recipe
from rag_rlm.ingest.parsers import parse_file
from rag_rlm.ingest.parts import document_parts
from rag_rlm.ingest.pipeline import ingest_paths
from rag_rlm.memory import open_store
from rag_rlm.memory.state import open_state
from rag_rlm.sources.service import Sources, make_spec

ROOT = Path(__file__).resolve().parents[1]
# the bundled sample corpus (Markdown, text, HTML) and the real manual pages of tests/data (tables,
# code, definition lists: where splitter fixes land)
PAGES = [*sorted((ROOT / "examples" / "sample").iterdir()), *sorted((ROOT / "tests" / "data").glob("p*docs/*.html"))]
# sha256 of those pages' chunks and sentences (text, offsets, heading, kind) at INGEST_VERSION
PINNED = (31, "35da1c07651ff4cbdbb5eb603985356c35f4e9490a38880a9c907ed4cef6bf46")


def _segmentation_digest(embedder) -> str:
    digest = hashlib.sha256()
    for path in PAGES:
        for doc in parse_file(path, path.name, path.read_bytes()).documents:
            for part in document_parts(doc, embedder, Settings()):
                rows = [[c.index, c.start, c.end, c.text] for c in part.chunks]
                rows += [[s.start, s.end, s.text, s.heading, s.kind] for s in part.sentences]
                digest.update(json.dumps([doc.id, doc.text, rows]).encode())
    return digest.hexdigest()


def test_the_pinned_pages_segment_as_the_segmentation_version_says(embedder):
    assert len(PAGES) > 20
    now = _segmentation_digest(embedder)
    assert PINNED == (recipe.INGEST_VERSION, now), (
        "parsing, chunking or sentence splitting changed what the pinned pages' documents hold: stored "
        "documents made by the last release differ from what this one makes. Bump INGEST_VERSION in "
        f"rag_rlm/ingest/recipe.py and pin (the new number, {now!r}) here.")


def _corpus(root: Path) -> Path:
    root.mkdir()
    (root / "vacation.md").write_text("# Vacation\n\nNew hires get 22 vacation days per year. " * 30)
    (root / "expenses.txt").write_text("Expenses over $500 are approved by the Finance Director.\n")
    return root


def _ingest(corpus: Path, store, embedder, settings: Settings, collection: str):
    return ingest_paths([str(corpus)], collection=collection, store=store, embedder=embedder, settings=settings,
                        progress=False)


def test_unchanged_files_are_made_again_under_a_new_recipe_and_only_once(tmp_path, settings, embedder, collection,
                                                                        monkeypatch):
    corpus = _corpus(tmp_path / "corpus")
    store = open_store(settings.store)
    try:
        first = _ingest(corpus, store, embedder, settings, collection)
        assert (first.documents_new, first.documents_refreshed) == (2, 0)
        stored = store.documents(collection)
        assert {r.metadata[recipe.METADATA_KEY] for r in stored.values()} == {recipe.recipe(settings)}

        smaller = replace(settings, chunk_tokens=48, chunk_overlap=8)  # other chunk settings: another recipe
        assert recipe.recipe(smaller) != recipe.recipe(settings)
        resplit = _ingest(corpus, store, embedder, smaller, collection)
        assert (resplit.documents_updated, resplit.documents_refreshed, resplit.documents_unchanged) == (2, 2, 0)
        assert "2 updated (2 of them unchanged, made again with the current ingest recipe)" in format_summary(resplit)
        records = store.documents(collection)
        assert records["vacation.md"].chunk_count > stored["vacation.md"].chunk_count
        assert {r.metadata[recipe.METADATA_KEY] for r in records.values()} == {recipe.recipe(smaller)}

        again = _ingest(corpus, store, embedder, smaller, collection)
        assert (again.documents_unchanged, again.documents_updated, again.chunks_written) == (2, 0, 0)

        # a release that segments differently (same settings) makes them again too
        monkeypatch.setattr(recipe, "INGEST_VERSION", recipe.INGEST_VERSION + 1)
        upgraded = _ingest(corpus, store, embedder, smaller, collection)
        assert (upgraded.documents_refreshed, upgraded.documents_unchanged) == (2, 0)
        assert "refreshed" not in format_summary(_ingest(corpus, store, embedder, smaller, collection))
    finally:
        store.close()


def test_a_sync_makes_again_what_an_older_recipe_stored(tmp_path, settings, embedder, collection, monkeypatch):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "alpha.md").write_text("# Alpha\n\nThe alpha reactor runs at four hundred kelvin.\n")
    (root / "beta.txt").write_text("The beta pump moves twelve litres of coolant every minute.\n")
    store = open_store(settings.store)
    state = open_state(settings.store, settings.data_dir)
    try:
        sources = Sources(store, state, settings, lambda: embedder)
        spec = make_spec("handbook", "folder", str(root), collection)
        sources.add(spec)
        assert sources.sync(spec).added == 2
        assert sources.sync(spec).unchanged == 2

        monkeypatch.setattr(recipe, "INGEST_VERSION", recipe.INGEST_VERSION + 1)
        upgraded = sources.sync(spec)
        assert (upgraded.updated, upgraded.refreshed, upgraded.unchanged, upgraded.deleted) == (2, 2, 0, 0)
        records = store.documents(collection)
        assert {r.metadata[recipe.METADATA_KEY] for r in records.values()} == {recipe.recipe(settings)}
        assert {r.metadata["source_name"] for r in records.values()} == {"handbook"}
        after = sources.sync(spec)
        assert (after.unchanged, after.updated, after.chunks_written) == (2, 0, 0)
    finally:
        getattr(state, "close", lambda: None)()
        store.close()


@pytest.mark.parametrize("change", [{"chunk_tokens": 100}, {"chunk_overlap": 0}, {"sentence_vectors": "encode"},
                                    {"embed_model": "/models/other-embedder"}])
def test_each_setting_that_shapes_a_stored_document_is_in_the_recipe(change):
    assert recipe.recipe(replace(Settings(), **change)) != recipe.recipe(Settings())
    assert recipe.recipe(replace(Settings(), top_k=9)) == recipe.recipe(Settings())  # asking settings are not
