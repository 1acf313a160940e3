"""Access groups in the stores (one contract over pgvector and Qdrant local mode), the ingest
pipeline and the settings; the no-leak tests over HTTP are in test_access.py."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rag_rlm.access import EVERYTHING, Access, GroupError, parse_groups, parse_key_spec
from rag_rlm.memory import open_store
from rag_rlm.types import Chunk, Document

# doc id -> (groups, chunk texts)
CORPUS = {
    "volcano": ((), ["Volcanoes erupt when molten magma rises through the crust and escapes as lava.",
                     "Mount Etna in Sicily is one of the most active volcanoes in the world."]),
    "salaries": (("hr",), ["Salary bands: an engineer at level 3 earns between 70,000 and 85,000 euros.",
                           "The volcano research team's salary band is reviewed every March."]),
    "budget": (("finance",), ["The volcano observatory budget for next year is 2.4 million euros."]),
    "board": (("finance", "hr"), ["The board approved the volcano fieldwork bonus for HR and finance."]),
}
QUESTION = "How much do people at the volcano team earn?"


@pytest.fixture
def store(store_url):
    s = open_store(store_url)
    yield s
    s.close()


def write(store, collection, embedder, doc_id, groups, texts, vectors=None) -> None:
    text = "\n\n".join(texts)
    doc = Document(id=doc_id, title=doc_id.title(), source=f"/docs/{doc_id}.txt", text=text,
                   content_hash=hashlib.sha256(text.encode()).hexdigest(), groups=tuple(groups))
    chunks, pos = [], 0
    for i, t in enumerate(texts):
        start = text.index(t, pos)
        chunks.append(Chunk(doc_id, i, t, start, start + len(t)))
        pos = start + len(t)
    store.write_document(collection, doc, chunks, embedder.embed(texts) if vectors is None else vectors)


def load(store, collection, embedder) -> None:
    for doc_id, (groups, texts) in CORPUS.items():
        write(store, collection, embedder, doc_id, groups, texts)


def docs(spans) -> set[str]:
    return {s.document_id for s in spans}


@pytest.mark.parametrize(("groups", "readable"), [
    (None, {"volcano", "salaries", "budget", "board"}),  # no filter: the open server, the CLI
    ((), {"volcano"}),  # a key without groups reads the documents without groups
    (("hr",), {"volcano", "salaries", "board"}),
    (("finance",), {"volcano", "budget", "board"}),
    (("hr", "finance"), {"volcano", "salaries", "budget", "board"}),
    (("no-such-group",), {"volcano"}),  # an unknown group matches nothing
])
def test_search_reads_only_what_the_groups_allow(store, collection, embedder, groups, readable):
    load(store, collection, embedder)
    q = embedder.embed([QUESTION])[0]
    assert docs(store.search(collection, q, 20, groups=groups)) == readable
    hybrid = store.search(collection, q, 20, text="salary band euros", groups=groups)
    assert docs(hybrid) <= readable and docs(hybrid)
    # with a `where` too: the two filters combine
    assert docs(store.search(collection, q, 20, where={"document_id": "salaries"}, groups=groups)) \
        == {"salaries"} & readable


def test_records_carry_groups_and_set_groups_changes_them_without_reembedding(store, collection, embedder):
    load(store, collection, embedder)
    records = store.documents(collection)
    assert records["salaries"].groups == ("hr",) and records["board"].groups == ("finance", "hr")
    assert records["volcano"].groups == ()
    q = embedder.embed([QUESTION])[0]
    before = {s.id: s.score for s in store.search(collection, q, 20)}
    version = store.version(collection)

    assert store.set_groups(collection, "volcano", ["legal"]) is True
    assert store.version(collection) != version  # memo entries of the old version die
    assert store.documents(collection)["volcano"].groups == ("legal",)
    assert "volcano" not in docs(store.search(collection, q, 20, groups=()))
    assert "volcano" in docs(store.search(collection, q, 20, groups=("legal",)))
    after = {s.id: s.score for s in store.search(collection, q, 20)}
    assert after.keys() == before.keys()
    assert all(abs(after[i] - before[i]) < 1e-5 for i in before)  # same vectors: nothing re-embedded
    assert store.collection_info(collection).chunks == sum(len(t) for _, t in CORPUS.values())

    assert store.set_groups(collection, "salaries", []) is True  # now everyone's
    assert "salaries" in docs(store.search(collection, q, 20, groups=()))
    assert store.set_groups(collection, "missing", ["hr"]) is False


# half allowed with a narrow HNSW scan (pgvector: ef 10, widened to 20, on the index); 3.3%
# allowed (pgvector: few rows, scanned exactly)
@pytest.mark.parametrize(("every", "ef_search"), [(2, 10), (30, 100)])
def test_a_selective_filter_still_finds_the_top_k_allowed_chunks(store, collection, embedder, every, ef_search):
    """Few allowed documents among many: the HNSW scan alone would keep only the allowed rows
    among its candidates; the store must still return the k nearest allowed ones."""
    store.ef_search = ef_search  # read per search by pgvector; Qdrant has no such knob
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, embedder.dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    allowed = set(range(0, 300, every))
    for i in range(300):
        write(store, collection, embedder, f"d{i:03d}", ("hr",) if i in allowed else ("secret",),
              [f"text {i}"], vectors[i:i + 1])
    # near five allowed vectors (in this order) and, closer still, to forbidden ones
    query = sum(w * vectors[i] for w, i in zip((1.0, 0.9, 0.8, 0.7, 0.6), sorted(allowed)[3:8], strict=True))
    query = query + 1.2 * vectors[1] + 1.1 * vectors[every + 1]
    query /= np.linalg.norm(query)
    truth = sorted(allowed, key=lambda i: -float(vectors[i] @ query))[:5]
    assert set(truth) == set(sorted(allowed)[3:8])
    got = store.search(collection, query, 5, groups=("hr",))
    assert [s.document_id for s in got] == [f"d{i:03d}" for i in truth]
    assert len(store.search(collection, query, 200, groups=("hr",))) == min(200, len(allowed))


def test_pgvector_collection_from_before_access_groups(pg_url, collection, embedder):
    """A chunk table made before migration 0003 (no groups column) gets it from the migration's
    own SQL, and its documents read as everyone's."""
    import psycopg

    from rag_rlm.memory.migrate import MIGRATIONS_DIR, postgres_dsn

    store = open_store(pg_url)
    try:
        load(store, collection, embedder)
        with psycopg.connect(postgres_dsn(pg_url), autocommit=True) as conn:
            cid = conn.execute("SELECT id FROM rag_rlm_collections WHERE name = %s", (collection,)).fetchone()[0]
            conn.execute(f"ALTER TABLE rag_rlm_chunks_{cid} DROP COLUMN groups")
            conn.execute((MIGRATIONS_DIR / "0003_access_groups.sql").read_text().encode())
            assert conn.execute(f"SELECT count(*) FROM rag_rlm_chunks_{cid} WHERE groups = '{{}}'").fetchone()[0] == 6
        assert docs(store.search(collection, embedder.embed([QUESTION])[0], 20, groups=())) == set(CORPUS)
    finally:
        store.close()


# -- the values ---------------------------------------------------------------------------------

def test_group_names_and_key_specs():
    assert parse_groups(" hr, finance,hr ") == ("finance", "hr") and parse_groups("") == ()
    for bad in ("hr,,finance", "h r", "ü", "a" * 64, "hr;drop"):
        with pytest.raises(GroupError, match="group"):
            parse_groups(bad)
    assert parse_key_spec("acme") == ("acme", Access())
    assert parse_key_spec("acme:hr|finance") == ("acme", Access(frozenset({"hr", "finance"})))
    for bad in ("acme:", "acme:hr||x", "acme:hr,x", "acme:h r"):
        with pytest.raises(GroupError, match="acme"):
            parse_key_spec(bad)


def test_access_allows_covers_and_round_trips():
    hr, none = Access.of(["hr"]), Access()
    assert hr.allows(()) and hr.allows(["hr", "x"]) and not hr.allows(["finance"])
    assert none.allows(()) and not none.allows(["hr"]) and EVERYTHING.allows(["anything"])
    assert hr.covers(none) and not none.covers(hr) and EVERYTHING.covers(hr) and not hr.covers(EVERYTHING)
    assert Access.from_dict(hr.to_dict()) == hr and Access.from_dict(none.to_dict()) == none
    assert Access.from_dict(None) == EVERYTHING  # a record from before groups: unrestricted callers only
    assert len({hr.key, none.key, EVERYTHING.key}) == 3


# -- ingest ---------------------------------------------------------------------------------------

def corpus(root):
    root.mkdir(parents=True, exist_ok=True)
    (root / "bands.md").write_text("# Salary bands\n\nLevel 3 engineers earn 70,000 to 85,000 euros.\n")
    (root / "canteen.txt").write_text("The canteen serves lunch from noon to two.\n")
    (root / "records.jsonl").write_text('{"id": "r1", "title": "R1", "text": "The board meets on Fridays."}\n')
    return root


def groups_of(store, collection) -> dict[str, tuple[str, ...]]:
    return {doc_id: r.groups for doc_id, r in store.documents(collection).items()}


def test_ingest_sets_groups_and_a_changed_groups_value_on_unchanged_content_is_applied(
        tmp_path, store, embedder, settings, collection):
    from rag_rlm.ingest.pipeline import ingest_paths

    root = corpus(tmp_path / "docs")

    def run(**kw):
        return ingest_paths([root], collection=collection, store=store, embedder=embedder, settings=settings,
                            progress=False, **kw)

    first = run(groups=("hr",))
    assert first.documents_new == 3 and set(groups_of(store, collection).values()) == {("hr",)}
    version = store.version(collection)
    again = run(groups=("finance", "hr"))  # same bytes, new groups: applied, nothing embedded
    assert (again.documents_updated, again.documents_unchanged, again.chunks_written) == (3, 0, 0)
    assert set(groups_of(store, collection).values()) == {("finance", "hr")}
    assert store.version(collection) != version
    kept = run()  # no groups given: the stored ones stay
    assert (kept.documents_unchanged, kept.documents_updated) == (3, 0)
    assert set(groups_of(store, collection).values()) == {("finance", "hr")}
    (root / "canteen.txt").write_text("The canteen now serves lunch from 11:30.\n")
    changed = run()  # new content, no groups given: the stored groups go with the new version
    assert changed.documents_updated == 1 and groups_of(store, collection)["canteen.txt"] == ("finance", "hr")
    cleared = run(groups=())
    assert cleared.documents_updated == 3 and set(groups_of(store, collection).values()) == {()}


def test_a_writer_cannot_replace_a_document_it_cannot_read(tmp_path, store, embedder, settings, collection):
    from rag_rlm.ingest.pipeline import HIDDEN, ingest_paths

    root = corpus(tmp_path / "docs")
    ingest_paths([root / "bands.md"], collection=collection, store=store, embedder=embedder, settings=settings,
                 progress=False, groups=("hr",))
    hash_before = store.documents(collection)["bands.md"].content_hash
    (root / "bands.md").write_text("# Salary bands\n\nOverwritten by someone outside HR.\n")
    summary = ingest_paths([root], collection=collection, store=store, embedder=embedder, settings=settings,
                           progress=False, groups=(), access=Access())
    assert summary.documents_new == 2 and summary.failed == [{"path": str(root / "bands.md"), "reason": HIDDEN}]
    assert store.documents(collection)["bands.md"].content_hash == hash_before
    assert store.documents(collection)["bands.md"].groups == ("hr",)


def test_ingest_documents_writes_each_documents_own_groups(store, embedder, settings, collection):
    from rag_rlm.ingest.pipeline import ingest_documents

    doc = Document(id="synced", title="Synced", source="src", text="The wiki says the door code is 1234.",
                   content_hash="h1", groups=("ops",))
    ingest_documents([doc], collection=collection, store=store, embedder=embedder, settings=settings)
    assert groups_of(store, collection) == {"synced": ("ops",)}
    from dataclasses import replace

    again = ingest_documents([replace(doc, groups=("ops", "hr"))], collection=collection, store=store,
                             embedder=embedder, settings=settings)
    assert (again.documents_updated, again.chunks_written) == (1, 0)
    assert groups_of(store, collection) == {"synced": ("hr", "ops")}


def test_ingest_cli_groups_flag(tmp_path, capsys, pg_url, collection):
    from ingest.cli import main

    root = corpus(tmp_path / "docs")
    code = main([str(root), "--collection", collection, "--store", pg_url, "--groups", "hr,bad name", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2 and "--groups" in err and "'bad name'" in err
    assert main([str(root), "--collection", collection, "--store", pg_url, "--groups", "hr, legal", "--quiet"]) == 0
    store = open_store(pg_url)
    try:
        assert set(groups_of(store, collection).values()) == {("hr", "legal")}
    finally:
        store.close()
