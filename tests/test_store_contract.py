"""The store contract, run on pgvector (embedded pgserver) and Qdrant local mode alike."""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rag_rlm.errors import ConfigError, StoreError, UnknownCollection
from rag_rlm.memory import Store, open_store
from rag_rlm.memory.migrate import migrate
from rag_rlm.memory.state import StateStore, open_state
from rag_rlm.types import Chunk, Document

CORPUS = {
    "volcano": [
        "Volcanoes erupt when molten magma rises through the crust and escapes as lava and ash.",
        "Mount Etna in Sicily is one of the most active volcanoes in the world.",
    ],
    "bread": [
        "To bake bread, knead flour, water, salt and yeast, let the dough rise, then bake it hot.",
        "A sourdough starter is a culture of wild yeast and lactic acid bacteria.",
        "Rye bread is dense and dark and is popular in Germany and Scandinavia.",
    ],
    "python": [
        "Python is a programming language; functions are defined with the def keyword.",
        "Use a virtual environment to keep a Python project's dependencies isolated.",
    ],
}


@pytest.fixture
def store(store_url):
    s = open_store(store_url)
    yield s
    s.close()


def write(store: Store, collection: str, embedder, doc_id: str, texts: list[str], **metadata: str) -> None:
    text = "\n\n".join(texts)
    doc = Document(id=doc_id, title=doc_id.title(), source=f"/docs/{doc_id}.txt", text=text,
                   content_hash=hashlib.sha256(text.encode()).hexdigest(), metadata=metadata)
    chunks, pos = [], 0
    for i, t in enumerate(texts):
        start = text.index(t, pos)
        chunks.append(Chunk(doc_id, i, t, start, start + len(t)))
        pos = start + len(t)
    store.write_document(collection, doc, chunks, embedder.embed(texts))


def load_corpus(store: Store, collection: str, embedder) -> None:
    for doc_id, texts in CORPUS.items():
        write(store, collection, embedder, doc_id, texts, topic="food" if doc_id == "bread" else "other")


def ids(spans) -> list[str]:
    return [s.id for s in spans]


def test_store_implements_the_protocol(store):
    assert isinstance(store, Store)


def test_search_returns_expected_chunk_first(store, collection, embedder):
    load_corpus(store, collection, embedder)
    spans = store.search(collection, embedder.embed(["How does magma come out of a volcano?"])[0], k=3)
    assert ids(spans)[0] == "volcano#0"
    first = spans[0]
    assert first.title == "Volcano" and first.source == "/docs/volcano.txt"
    assert first.text == CORPUS["volcano"][0] and (first.start, first.end) == (0, len(CORPUS["volcano"][0]))
    assert len(spans) == 3 and spans[0].score >= spans[1].score >= spans[2].score
    assert 0.3 < first.score <= 1.0001


def test_where_filters_on_metadata_document_and_title(store, collection, embedder):
    load_corpus(store, collection, embedder)
    q = embedder.embed(["How does magma come out of a volcano?"])[0]
    assert {s.document_id for s in store.search(collection, q, 10, where={"topic": "food"})} == {"bread"}
    assert ids(store.search(collection, q, 10, where={"document_id": "python"})) in (
        ["python#0", "python#1"], ["python#1", "python#0"])
    assert {s.document_id for s in store.search(collection, q, 10, where={"title": "Bread"})} == {"bread"}
    assert store.search(collection, q, 10, where={"source": "/nowhere"}) == []


def test_rewrite_with_fewer_chunks_leaves_exactly_the_new_chunks(store, collection, embedder):
    load_corpus(store, collection, embedder)
    write(store, collection, embedder, "bread", ["Focaccia is a flat Italian bread with olive oil."])
    spans = store.search(collection, embedder.embed(["bread baking"])[0], 10, where={"document_id": "bread"})
    assert [(s.id, s.text) for s in spans] == [("bread#0", "Focaccia is a flat Italian bread with olive oil.")]
    assert store.documents(collection)["bread"].chunk_count == 1
    assert store.collection_info(collection).chunks == 2 + 1 + 2


def test_delete_removes_the_document(store, collection, embedder):
    load_corpus(store, collection, embedder)
    assert store.delete_document(collection, "volcano") is True
    assert store.delete_document(collection, "volcano") is False
    spans = store.search(collection, embedder.embed(["volcano eruption lava"])[0], 10)
    assert spans and "volcano" not in {s.document_id for s in spans}
    assert set(store.documents(collection)) == {"bread", "python"}


def test_rename_moves_a_document_without_embedding_it_again(store, collection, embedder):
    from dataclasses import replace

    load_corpus(store, collection, embedder)
    _, _, sentences, vectors = write_with_sentences(store, collection, embedder)
    q = embedder.embed(["How much may a hotel cost?"])[0]
    before, version, info = store.search(collection, q, 20), store.version(collection), store.collection_info(collection)
    record = store.documents(collection)["policy"]

    assert store.rename_document(collection, "policy", "policy-2024", source="/docs/2024/policy.md",
                                 metadata={"year": "2024"}) is True
    after = store.search(collection, q, 20)
    # the same chunks with the same vectors: the same scores (to float noise: Qdrant's local mode
    # moves untouched ones by 1e-8), only the id and source changed
    assert [s.id for s in after] == [s.id.replace("policy#", "policy-2024#") for s in before]
    assert [s.text for s in after] == [s.text for s in before]
    assert [s.score for s in after] == pytest.approx([s.score for s in before], abs=1e-6)
    moved = [s for s in after if s.document_id == "policy-2024"]
    assert moved and all(s.source == "/docs/2024/policy.md" and s.title == "Policy" for s in moved)
    assert {s.document_id for s in store.search(collection, q, 20, where={"year": "2024"})} == {"policy-2024"}
    found, got = store.sentences(collection, [span_of("policy-2024", 0, 10_000)])
    assert found == [replace(s, document_id="policy-2024") for s in sentences]
    np.testing.assert_allclose(got, vectors, atol=1e-6)
    assert store.sentences(collection, [span_of("policy", 0, 10_000)])[0] == []
    assert store.document_text(collection, "policy-2024") == DOC_TEXT
    with pytest.raises(KeyError):
        store.document_text(collection, "policy")
    docs = store.documents(collection)
    assert "policy" not in docs and docs["policy-2024"] == replace(
        record, id="policy-2024", source="/docs/2024/policy.md", metadata={"year": "2024"})
    assert store.version(collection) != version
    renamed = store.collection_info(collection)
    assert (renamed.documents, renamed.chunks) == (info.documents, info.chunks)

    version = store.version(collection)
    assert store.rename_document(collection, "policy", "other", source="/x") is False  # gone: nothing changes
    assert store.version(collection) == version and "other" not in store.documents(collection)
    with pytest.raises(UnknownCollection):
        store.rename_document("no_such_collection_here", "policy-2024", "x", source="/x")


def test_rename_onto_an_existing_document_replaces_it(store, collection, embedder):
    load_corpus(store, collection, embedder)
    bread = store.documents(collection)["bread"]
    assert store.rename_document(collection, "bread", "python", source="/docs/python.txt") is True
    spans = store.search(collection, embedder.embed(["bread baking"])[0], 10, where={"document_id": "python"})
    assert sorted(s.text for s in spans) == sorted(CORPUS["bread"])  # python's own chunks are gone
    docs = store.documents(collection)
    assert sorted(docs) == ["python", "volcano"]
    assert (docs["python"].content_hash, docs["python"].chunk_count, docs["python"].metadata) == (
        bread.content_hash, 3, {"topic": "food"})  # metadata not given: kept
    assert store.collection_info(collection).chunks == 2 + 3
    assert store.document_text(collection, "python") == "\n\n".join(CORPUS["bread"])
    # the same id again: only the source and metadata change
    assert store.rename_document(collection, "python", "python", source="/moved.txt", metadata={}) is True
    assert (store.documents(collection)["python"].source, store.documents(collection)["python"].metadata) == (
        "/moved.txt", {})
    assert store.collection_info(collection).chunks == 5


def test_qdrant_rename_interrupted_before_its_records_is_redone_whole(tmp_path, collection, embedder, monkeypatch):
    """Qdrant has no transactions: a rename that stops after relabelling the points (before the
    records) leaves the old record, and redoing it keeps the relabelled points."""
    store = open_store("qdrant://" + str(tmp_path / "qdrant"))
    try:
        load_corpus(store, collection, embedder)
        write(store, collection, embedder, "python2", ["An older page about Python."])
        client = store._client  # the test cuts the rename where a crash would
        monkeypatch.setattr(client, "batch_update_points", lambda *a, **k: (_ for _ in ()).throw(OSError("cut")))
        with pytest.raises(StoreError, match="cut"):
            store.rename_document(collection, "python", "python2", source="/docs/python2.txt")
        assert sorted(store.documents(collection)) == ["bread", "python", "python2", "volcano"]
        monkeypatch.undo()
        assert store.rename_document(collection, "python", "python2", source="/docs/python2.txt") is True
        assert sorted(store.documents(collection)) == ["bread", "python2", "volcano"]
        assert store.document_text(collection, "python2") == "\n\n".join(CORPUS["python"])
        assert store.collection_info(collection).chunks == 7
    finally:
        store.close()


def test_catalog_counts(store, collection, embedder):
    load_corpus(store, collection, embedder)
    info = store.collection_info(collection)
    assert (info.name, info.documents, info.chunks) == (collection, 3, 7)
    assert info in store.collections()
    docs = store.documents(collection)
    assert sorted(docs) == ["bread", "python", "volcano"]
    bread = docs["bread"]
    assert (bread.title, bread.source, bread.chunk_count) == ("Bread", "/docs/bread.txt", 3)
    assert bread.metadata == {"topic": "food"}
    assert bread.content_hash == hashlib.sha256("\n\n".join(CORPUS["bread"]).encode()).hexdigest()


def test_version_changes_on_every_write_and_delete_but_not_on_reads(store, collection, embedder):
    write(store, collection, embedder, "volcano", CORPUS["volcano"])
    seen = [store.collection_info(collection).version]
    store.search(collection, embedder.embed(["lava"])[0], 3, text="lava")
    store.documents(collection)
    store.collections()
    assert store.collection_info(collection).version == seen[-1]
    write(store, collection, embedder, "bread", CORPUS["bread"])
    seen.append(store.collection_info(collection).version)
    write(store, collection, embedder, "bread", CORPUS["bread"][:1])
    seen.append(store.collection_info(collection).version)
    store.delete_document(collection, "bread")
    seen.append(store.collection_info(collection).version)
    assert len(set(seen)) == 4
    assert store.delete_document(collection, "bread") is False  # nothing changed: same version
    assert store.collection_info(collection).version == seen[-1] == store.version(collection)
    write(store, collection, embedder, "bread", CORPUS["bread"])  # the version alone follows writes too
    assert store.version(collection) == store.collection_info(collection).version not in seen


def test_unknown_collection_raises(store, collection, embedder):
    q = embedder.embed(["anything"])[0]
    with pytest.raises(UnknownCollection):
        store.collection_info(collection)
    with pytest.raises(UnknownCollection):
        store.version(collection)
    with pytest.raises(UnknownCollection):
        store.search(collection, q, 3)
    with pytest.raises(UnknownCollection):
        store.documents(collection)
    with pytest.raises(UnknownCollection):
        store.delete_document(collection, "x")
    with pytest.raises(UnknownCollection):
        store.drop_collection(collection)
    assert collection not in {c.name for c in store.collections()}


def test_drop_collection_removes_everything(store, collection, embedder):
    load_corpus(store, collection, embedder)
    store.drop_collection(collection)
    with pytest.raises(UnknownCollection):
        store.collection_info(collection)
    write(store, collection, embedder, "python", CORPUS["python"])  # the name can be reused
    assert (store.collection_info(collection).documents, store.collection_info(collection).chunks) == (1, 2)


def test_hybrid_search_finds_an_exact_rare_keyword(store, store_url, collection, embedder):
    load_corpus(store, collection, embedder)
    write(store, collection, embedder, "parts", [
        "Replacement gaskets ship in boxes of twenty.",
        "Order code ZX-4471Q fits only the 2019 pump housing.",
        "Gaskets should be inspected for cracks every year.",
    ])
    # The vector says "bread"; only the keyword points at the part.
    q = embedder.embed(["How is bread baked?"])[0]
    assert "parts#1" not in ids(store.search(collection, q, 3))
    hybrid = store.search(collection, q, 3, text="ZX-4471Q")
    assert ids(hybrid)[0] == "parts#1"
    if store_url.startswith("pgserver"):
        # A long question with words the chunk lacks ("gasket") still matches it (OR semantics).
        # pgvector only: Qdrant local BM25 keeps stop words, whose matches elsewhere outvote it.
        long = store.search(collection, q, 3, text="which pump housing does the ZX-4471Q gasket fit?")
        assert "parts#1" in ids(long)
    assert -1.0 <= hybrid[0].score <= 1.0001  # the cosine similarity, not the fusion score


def test_hybrid_search_weighs_a_rare_word_above_several_common_ones(store, collection, embedder):
    # Every filler chunk says "river", "country" and "name"; one chunk names the Orvelle. Counting
    # words alike (ts_rank) ranks the fillers first; weighing them by rarity ranks the Orvelle first.
    write(store, collection, embedder, "rivers", [
        f"The river number {i} of the country has a name and a length of {10 * i} km." for i in range(1, 17)
    ] + ["The Orvelle flows north into the Tarnow lakes."])
    q = embedder.embed(["How is bread baked?"])[0]  # the vector points nowhere near
    text = "Which country holds the lake that the Orvelle river feeds, and what is its name?"
    assert ids(store.search(collection, q, 1, text=text)) == ["rivers#16"]
    # quotes and backslashes in a question are words to match, never query syntax
    odd = store.search(collection, q, 3, text="C:\\temp\\ it's the 'Orvelle' \\& (river) | !")
    assert "rivers#16" in ids(odd)


def test_bad_input_is_a_clear_error(store, collection, embedder):
    doc = Document(id="d", title="D", source="/d", text="abc", content_hash="h")
    with pytest.raises(StoreError, match="expected 1 vectors"):
        store.write_document(collection, doc, [Chunk("d", 0, "abc", 0, 3)], np.zeros((2, 384), np.float32))
    with pytest.raises(ConfigError, match="collection"):
        store.write_document("bad name!", doc, [Chunk("d", 0, "abc", 0, 3)], embedder.embed(["abc"]))
    write(store, collection, embedder, "python", CORPUS["python"])
    with pytest.raises(StoreError, match="dimension"):
        store.write_document(collection, doc, [Chunk("d", 0, "abc", 0, 3)], np.ones((1, 8), np.float32))
    assert store.collection_info(collection).documents == 1  # nothing half-written


def test_concurrent_writers_from_threads(store, collection, embedder):
    def one(i: int) -> None:
        write(store, collection, embedder, f"doc{i}", [f"note {i} about topic {i}", f"second note {i}"])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(16)))
    info = store.collection_info(collection)
    assert (info.documents, info.chunks) == (16, 32)


def test_reopened_store_sees_the_data(store_url, collection, embedder):
    first = open_store(store_url)
    load_corpus(first, collection, embedder)
    version = first.collection_info(collection).version
    first.close()
    again = open_store(store_url)
    try:
        assert again.collection_info(collection).version == version
        assert ids(again.search(collection, embedder.embed(["sourdough starter"])[0], 1)) == ["bread#1"]
    finally:
        again.close()


def test_migrations_are_applied_once(tmp_path, pg_url):
    fresh = "pgserver://" + str(tmp_path / "pgdata")
    first = migrate(fresh)
    assert first[0] == "0001_init.sql" and "0002_state.sql" in first
    assert migrate(fresh) == []
    open_store(pg_url).close()  # the shared server was migrated on first use
    assert migrate(pg_url) == []


def test_state_store_round_trip(store_url, tmp_path):
    state = open_state(store_url, str(tmp_path / "data"))
    assert isinstance(state, StateStore)
    key = tmp_path.name
    assert state.get("memo", key) is None
    state.put("memo", key, {"answer": "42", "spans": ["a#0"], "n": 1.5})
    state.put("trace", key, {"other": True})
    assert state.get("memo", key) == {"answer": "42", "spans": ["a#0"], "n": 1.5}
    state.put("memo", key, {"answer": "43"})
    other = open_state(store_url, str(tmp_path / "data"))  # another handle (process) sees it
    assert other.get("memo", key) == {"answer": "43"}
    assert other.get("trace", key) == {"other": True}
    with pytest.raises(StoreError, match="JSON"):
        state.put("memo", key, {"bad": object()})
    assert state.get("memo", key) == {"answer": "43"}
    for s in (state, other):
        s.close()


def test_state_store_finds_values_by_fields_newest_first(store_url, tmp_path):
    state = open_state(store_url, str(tmp_path / "data"))
    kind = "k_" + tmp_path.name[-20:]  # the PostgreSQL state is shared by the whole run
    try:
        state.put(kind, "a", {"tenant": "acme", "status": "done"})
        state.put(kind, "b", {"tenant": None, "status": "running"})
        state.put(kind, "c", {"tenant": "acme", "status": "running"})
        state.put("other", "d", {"tenant": "acme", "status": "running"})
        assert state.items(kind, {"tenant": "acme"}, 10) == [{"tenant": "acme", "status": "running"},
                                                            {"tenant": "acme", "status": "done"}]
        assert state.items(kind, {"tenant": "acme"}, 1) == [{"tenant": "acme", "status": "running"}]
        assert state.items(kind, {"tenant": None}, 10) == [{"tenant": None, "status": "running"}]
        assert [v["tenant"] for v in state.items(kind, {"status": "running"}, 10)] == ["acme", None]
        assert state.items(kind, {"tenant": "acm"}, 10) == []  # exact, not a prefix
        assert len(state.items(kind, {}, 10)) == 3
        with pytest.raises(StoreError, match="identifiers"):
            state.items(kind, {'a"b': 1}, 10)
    finally:
        state.close()


def test_state_store_delete_and_leases(store_url, tmp_path):
    state = open_state(store_url, str(tmp_path / "data"))
    kind = "k_" + tmp_path.name[-20:]
    try:
        state.put(kind, "x", {"a": 1})
        assert state.delete(kind, "x") is True and state.get(kind, "x") is None
        assert state.delete(kind, "x") is False

        assert state.claim(kind, "sync", "alpha", ttl=60) is True
        assert state.claim(kind, "sync", "beta", ttl=60) is False  # held
        assert state.claim(kind, "sync", "alpha", ttl=60) is True  # renewed by its holder
        assert state.release(kind, "sync", "beta") is False  # not beta's to free
        assert state.claim(kind, "sync", "beta", ttl=60) is False
        assert state.release(kind, "sync", "alpha") is True
        assert state.claim(kind, "sync", "beta", ttl=60) is True  # free again
        time.sleep(0.3)
        assert state.claim(kind, "sync", "alpha", ttl=60) is False  # beta's is fresh for a minute...
        assert state.claim(kind, "sync", "alpha", ttl=0.2) is True  # ...but 0.3 s old: expired for 0.2
        assert state.release(kind, "sync", "beta") is False  # beta lost it
        assert state.get(kind, "sync") == {"holder": "alpha"}
    finally:
        state.close()


@pytest.mark.parametrize("taken", [False, True], ids=["free", "expired"])
def test_state_store_claims_racing_from_two_handles_have_one_winner(store_url, tmp_path, taken):
    """Eight threads on two handles (connections, as two processes have) claim one lease at once."""
    handles = [open_state(store_url, str(tmp_path / "data")) for _ in range(2)]
    kind = "k_" + tmp_path.name[-20:]
    try:
        if taken:
            handles[0].claim(kind, "lease", "gone", ttl=60)
            time.sleep(0.3)
        start = threading.Barrier(8)

        def claim(i: int) -> bool:
            start.wait()
            return handles[i % 2].claim(kind, "lease", f"holder{i}", ttl=0.2)

        with ThreadPoolExecutor(8) as pool:
            won = list(pool.map(claim, range(8)))
        assert won.count(True) == 1
        assert handles[1].get(kind, "lease") == {"holder": f"holder{won.index(True)}"}
    finally:
        for h in handles:
            h.close()


def test_state_store_prunes_old_entries_of_a_kind_except_kept_ones(store_url, tmp_path):
    state = open_state(store_url, str(tmp_path / "data"))
    kind = "k_" + tmp_path.name[-20:]
    try:
        for key, status in (("old-done", "done"), ("old-running", "running"), ("old-queued", "queued"),
                            ("old-none", None)):
            state.put(kind, key, {"status": status})
        state.put(kind + "_other", "old", {"status": "done"})
        time.sleep(0.4)
        state.put(kind, "new-done", {"status": "done"})
        active = [{"status": "queued"}, {"status": "running"}]
        assert state.prune(kind, 0.3, keep=active) == 2  # old-done and old-none (no status: not kept)
        assert [state.get(kind, k) is not None for k in ("old-done", "old-none", "old-running", "old-queued",
                                                         "new-done")] == [False, False, True, True, True]
        assert state.get(kind + "_other", "old") is not None  # another kind: untouched
        assert state.prune(kind, 3600) == 0
        assert state.prune(kind, 0.3) == 2  # nothing kept: the old active ones go too
        assert state.items(kind, {}, 10) == [{"status": "done"}]
    finally:
        state.close()


def test_state_store_kind_follows_the_store_url(store_url, tmp_path):
    state = open_state(store_url, str(tmp_path / "data"))
    try:
        sqlite_file = tmp_path / "data" / "state.sqlite3"
        assert sqlite_file.exists() == store_url.startswith("qdrant")
    finally:
        state.close()


# -- sentence memory ---------------------------------------------------------------------------

DOC_TEXT = ("# Travel policy\n\nFlights are booked early. Hotels cost at most 120 EUR.\n\n"
            "## Meals\n\n- Lunch is covered up to 25 EUR. Dinner too.\n- Receipts are required.")


def write_with_sentences(store: Store, collection: str, embedder, doc_id: str = "policy",
                         text: str = DOC_TEXT, chunk_at: tuple[int, ...] = ()):
    """The document in chunks cut at `chunk_at` (no gaps; or one chunk), with its sentences."""
    from rag_rlm.ingest.sentences import split_sentences

    doc = Document(id=doc_id, title="Policy", source=f"/docs/{doc_id}.md", text=text,
                   content_hash=hashlib.sha256(text.encode()).hexdigest())
    cuts = [0, *chunk_at, len(text)]
    chunks = [Chunk(doc_id, i, text[a:b], a, b) for i, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False))]
    sentences = split_sentences(text, doc_id)
    vectors = embedder.embed([s.text for s in sentences])
    store.write_document(collection, doc, chunks, embedder.embed([c.text for c in chunks]), sentences, vectors)
    return doc, chunks, sentences, vectors


def span_of(doc_id: str, start: int, end: int, index: int = 0):
    from rag_rlm.types import Span

    return Span(doc_id, index, "", "", "", start, end, 0.0)


def test_sentences_round_trip_with_vectors(store, collection, embedder):
    _, _, sentences, vectors = write_with_sentences(store, collection, embedder)
    found, got = store.sentences(collection, [span_of("policy", 0, len(DOC_TEXT))])
    assert found == sentences
    assert [s.kind for s in found] == ["heading", "text", "text", "heading", "item", "item", "item"]
    assert found[4].heading == "Meals" and found[4].text == "Lunch is covered up to 25 EUR."
    assert got.dtype == np.float32 and got.shape == vectors.shape
    np.testing.assert_allclose(got, vectors, atol=1e-6)


def test_sentences_overlapping_spans_in_span_order(store, collection, embedder):
    write_with_sentences(store, collection, embedder)
    write_with_sentences(store, collection, embedder, "other", "First other sentence. Second other sentence.")
    hotels = DOC_TEXT.index("Hotels cost")
    lunch = DOC_TEXT.index("Lunch")
    spans = [span_of("other", 30, 31), span_of("policy", lunch + 3, lunch + 5),
             span_of("policy", hotels - 3, hotels + 1), span_of("policy", lunch, lunch + 2)]
    found, vectors = store.sentences(collection, spans)
    # "other" first (named first), then policy's sentences once each, in document order
    assert [(s.document_id, s.text) for s in found] == [
        ("other", "Second other sentence."),
        ("policy", "Flights are booked early."), ("policy", "Hotels cost at most 120 EUR."),
        ("policy", "Lunch is covered up to 25 EUR.")]
    assert vectors.shape == (4, embedder.dimension)
    q = embedder.embed(["How much may a hotel cost?"])[0]
    assert found[int(np.argmax(vectors @ q))].text == "Hotels cost at most 120 EUR."
    # a span ending exactly where a sentence starts does not overlap it
    assert store.sentences(collection, [span_of("policy", 0, DOC_TEXT.index("Flights"))])[0] == [
        store.sentences(collection, [span_of("policy", 0, 3)])[0][0]]
    assert store.sentences(collection, [span_of("nope", 0, 100)])[1].shape == (0, embedder.dimension)


def test_rewrite_replaces_sentences_and_delete_removes_them(store, collection, embedder):
    write_with_sentences(store, collection, embedder)
    everything = [span_of("policy", 0, 10_000)]
    write_with_sentences(store, collection, embedder, text="Only one sentence now.")
    found, vectors = store.sentences(collection, everything)
    assert [s.text for s in found] == ["Only one sentence now."] and vectors.shape == (1, embedder.dimension)
    write_with_sentences(store, collection, embedder, "keep", "This one stays here.")
    assert store.delete_document(collection, "policy")
    assert store.sentences(collection, everything)[0] == []
    assert [s.text for s in store.sentences(collection, [span_of("keep", 0, 5)])[0]] == ["This one stays here."]
    store.drop_collection(collection)
    write(store, collection, embedder, "python", CORPUS["python"])  # recreated: no old sentences
    assert store.sentences(collection, [span_of("keep", 0, 5)])[0] == []


def test_a_document_written_without_sentences_has_none(store, collection, embedder):
    write_with_sentences(store, collection, embedder)
    write(store, collection, embedder, "python", CORPUS["python"])
    found, vectors = store.sentences(collection, [span_of("python", 0, 1000)])
    assert found == [] and vectors.shape == (0, embedder.dimension) and vectors.dtype == np.float32
    write(store, collection, embedder, "policy", ["A rewrite without sentences."])  # drops the old ones
    assert store.sentences(collection, [span_of("policy", 0, 1000)])[0] == []


def test_sentence_vectors_are_checked(store, collection, embedder):
    from rag_rlm.ingest.sentences import split_sentences

    doc = Document(id="d", title="D", source="", text="One sentence here. Two sentences here.", content_hash="h")
    chunks = [Chunk("d", 0, doc.text, 0, len(doc.text))]
    sentences = split_sentences(doc.text, "d")
    with pytest.raises(StoreError, match="sentence vectors"):
        store.write_document(collection, doc, chunks, embedder.embed([doc.text]), sentences,
                             embedder.embed([sentences[0].text]))


def test_document_text_is_rebuilt_with_exact_offsets(store, collection, embedder):
    text = "First block of text.\n\n  Second block, after a gap.\n\nThird block with overlap here."
    second, third = text.index("Second"), text.index("Third")
    doc = Document(id="d", title="D", source="", text=text, content_hash="h")
    chunks = [Chunk("d", 0, text[:20], 0, 20), Chunk("d", 1, text[second:third + 5], second, third + 5),
              Chunk("d", 2, text[third:], third, len(text))]  # gaps between 0/1, overlap 1/2
    store.write_document(collection, doc, chunks, embedder.embed([c.text for c in chunks]))
    rebuilt = store.document_text(collection, "d")
    assert len(rebuilt) == len(text)
    assert all(rebuilt[c.start:c.end] == c.text for c in chunks)
    assert rebuilt[20:second] == "\n" * (second - 20)  # the gap: newlines
    assert rebuilt[:20] == text[:20] and rebuilt[second:] == text[second:]
    with pytest.raises(KeyError):
        store.document_text(collection, "missing")
    with pytest.raises(UnknownCollection):
        store.document_text("no_such_collection_here", "d")
    with pytest.raises(UnknownCollection):
        store.sentences("no_such_collection_here", [span_of("d", 0, 1)])


def test_pgvector_collection_from_before_sentence_memory(pg_url, collection, embedder):
    """A collection whose sentence table does not exist (made by the previous version) reads as
    having no sentences, and gets the table on its next write with sentences."""
    import psycopg

    from rag_rlm.memory.migrate import postgres_dsn

    store = open_store(pg_url)
    try:
        write(store, collection, embedder, "python", CORPUS["python"])
        with psycopg.connect(postgres_dsn(pg_url), autocommit=True) as conn:
            cid = conn.execute("SELECT id FROM rag_rlm_collections WHERE name = %s", (collection,)).fetchone()[0]
            conn.execute(f"DROP TABLE rag_rlm_sentences_{cid}")
        assert store.sentences(collection, [span_of("python", 0, 100)])[0] == []
        write(store, collection, embedder, "bread", CORPUS["bread"])  # no sentences: no table needed
        assert store.delete_document(collection, "bread")
        _, _, sentences, _ = write_with_sentences(store, collection, embedder)
        assert store.sentences(collection, [span_of("policy", 0, 10_000)])[0] == sentences
    finally:
        store.close()


# -- a document written in parts (write_parts) ------------------------------------------------

LONG_TEXT = "\n\n".join(f"## Part {i}\n\nSection {i} says the code word is word{i}. It has a second sentence."
                        for i in range(6))


def parts_of(embedder, doc_id: str, text: str, per_part: int):
    """The document's paragraphs as chunks (one each) with their sentences, `per_part` chunks a
    part, indices continuing across parts."""
    from rag_rlm.ingest.sentences import split_sentences
    from rag_rlm.memory import DocumentPart

    doc = Document(id=doc_id, title="Long", source=f"/docs/{doc_id}.md", text=text,
                   content_hash=hashlib.sha256(text.encode()).hexdigest())
    chunks, pos = [], 0
    for i, block in enumerate(text.split("\n\n")):
        start = text.index(block, pos)
        chunks.append(Chunk(doc_id, i, block, start, start + len(block)))
        pos = start + len(block)
    sentences = split_sentences(text, doc_id)
    parts = []
    for i in range(0, len(chunks), per_part):
        mine = chunks[i:i + per_part]
        said = [s for s in sentences if mine[0].start <= s.start < mine[-1].end]
        parts.append(DocumentPart(mine, embedder.embed([c.text for c in mine]), said,
                                  embedder.embed([s.text for s in said])))
    return doc, parts


def stored(store: Store, collection: str, embedder, doc_id: str) -> tuple[list[int], list[str]]:
    """The chunk indices and sentence texts a reader sees of the document."""
    spans = store.search(collection, embedder.embed(["code word"])[0], 100, where={"document_id": doc_id})
    sentences, _ = store.sentences(collection, [span_of(doc_id, 0, 100_000)])
    return sorted(s.chunk_index for s in spans), [s.text for s in sentences]


def test_write_parts_stores_every_part(store, collection, embedder):
    doc, parts = parts_of(embedder, "long", LONG_TEXT, per_part=2)
    handed: list[int] = []

    def lazily():  # the store takes the parts one at a time, as ingest makes them
        for i, part in enumerate(parts):
            handed.append(i)
            yield part

    store.write_parts(collection, doc, lazily())
    assert handed == [0, 1, 2, 3, 4, 5][:len(parts)] and len(parts) == 6
    chunks, sentences = stored(store, collection, embedder, "long")
    assert chunks == list(range(12))
    assert len(sentences) == 18 and sentences[1] == "Section 0 says the code word is word0."
    assert store.documents(collection)["long"].chunk_count == 12
    assert store.collection_info(collection).chunks == 12
    assert store.document_text(collection, "long") == LONG_TEXT
    top_span = store.search(collection, embedder.embed(["Which section says word4?"])[0], 1)[0]
    assert top_span.text.startswith("Section 4")


def test_write_parts_replacing_with_fewer_leaves_nothing_stale(store, collection, embedder):
    doc, parts = parts_of(embedder, "long", LONG_TEXT, per_part=2)
    store.write_parts(collection, doc, parts)
    short = LONG_TEXT[:LONG_TEXT.index("## Part 2") - 2]
    doc2, parts2 = parts_of(embedder, "long", short, per_part=1)
    store.write_parts(collection, doc2, iter(parts2))
    chunks, sentences = stored(store, collection, embedder, "long")
    assert chunks == [0, 1, 2, 3] and len(sentences) == 6
    assert store.collection_info(collection).chunks == 4
    assert store.documents(collection)["long"].content_hash == doc2.content_hash
    assert store.document_text(collection, "long") == short
    store.write_document(collection, doc2, [Chunk("long", 0, "## Part 0", 0, 9)], embedder.embed(["## Part 0"]))
    assert stored(store, collection, embedder, "long") == ([0], [])  # one part, no sentences: none left


def test_write_parts_failing_midway_keeps_the_old_version(store, collection, embedder):
    doc, parts = parts_of(embedder, "long", LONG_TEXT, per_part=2)
    store.write_parts(collection, doc, parts)
    before = stored(store, collection, embedder, "long"), store.documents(collection), store.collection_info(collection)
    other = LONG_TEXT.replace("code word", "pass phrase")
    doc2, parts2 = parts_of(embedder, "long", other, per_part=2)

    def failing():
        yield parts2[0]
        yield parts2[1]
        raise KeyboardInterrupt  # what an interrupted ingest raises through the write

    with pytest.raises(KeyboardInterrupt):
        store.write_parts(collection, doc2, failing())
    assert (stored(store, collection, embedder, "long"), store.documents(collection),
            store.collection_info(collection)) == before
    assert store.document_text(collection, "long") == LONG_TEXT
    # the next run redoes it, and nothing of the failed write is left over
    store.write_parts(collection, doc2, parts2)
    assert stored(store, collection, embedder, "long")[0] == list(range(12))
    assert store.document_text(collection, "long") == other
    assert store.collection_info(collection).chunks == 12


def test_write_parts_checks_each_part(store, collection, embedder):
    doc, parts = parts_of(embedder, "long", LONG_TEXT, per_part=3)
    bad = [parts[0], type(parts[1])(parts[1].chunks, np.ones((3, 8), np.float32))]
    with pytest.raises(StoreError, match="dimensional"):
        store.write_parts(collection, doc, bad)
    with pytest.raises(StoreError, match="no parts"):
        store.write_parts(collection, doc, [])
    try:  # nothing of either attempt is stored (Qdrant may have made the empty collection)
        assert store.documents(collection) == {} and store.collection_info(collection).chunks == 0
    except UnknownCollection:
        pass
