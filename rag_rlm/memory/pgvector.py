"""PostgreSQL + pgvector store: embedded through pgserver (`pgserver://PATH`) or by DSN.

Layout: `rag_rlm_collections` and `rag_rlm_documents` are shared tables (migrations/), while each
collection's chunks live in their own table `rag_rlm_chunks_<collection id>`, created on the
collection's first write. Why per-collection chunk tables: an HNSW index needs a fixed vector
dimension (collections may use different embedders), and a per-collection index keeps top-k exact
in scope — on a shared table pgvector would filter by collection *after* the approximate index
scan and silently return fewer than k hits for small collections. Dropping a collection is a
`DROP TABLE`. Each chunk row carries a generated `tsvector` ('english') with a GIN index for
hybrid search.

Sentence memory lives beside the chunks in `rag_rlm_sentences_<collection id>` (text, exact
offsets, heading, kind and vector of every sentence; no vector index: sentences are looked up by
document and offsets, never searched). Collections made before it existed get the table on their
next write, and read as having no sentences until then.

Access groups (rag_rlm.access) are on the document's record and, copied, on every chunk row
(`groups text[]`, GIN-indexed), so a search filters inside the vector scan. pgvector 0.6 has no
iterative index scan: an HNSW scan with a filter returns the allowed rows among its ef_search
candidates, so a filtered search widens ef_search by the inverse of the fraction of chunks the
caller may read (counted from the document records, once per collection version and access
set), doubles it while fewer than k allowed rows come back, and scans the allowed rows exactly
(found through the GIN index) when they are few, or when the widening passes pgvector's cap.
bench/bench_access.py measures recall and time under a filter.

Every write is one transaction, however many parts a document comes in: a per-document advisory
lock (writers of one document take turns), the document's old chunks and sentences deleted, each
part's new ones COPYed in binary as it arrives, then the document record upserted and the
collection's version bumped last. Readers see the old version until the commit; a failure or an
interruption part-way rolls the whole document back.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from ..access import normalise_groups
from ..config import DEFAULT_STATEMENT_TIMEOUT, DEFAULT_STORE_TIMEOUT, validate_collection_name
from ..errors import StoreError, UnknownCollection
from ..types import Chunk, CollectionInfo, Document, DocumentRecord, Sentence, Span
from . import pgsearch
from .base import DocumentPart
from .migrate import ensure_migrated, open_postgres
from .pgpool import StorePool, store_error
from .sentences import check_part, rebuild_text

# HNSW candidates per query. On the real dev corpora 40 lost documents that an exact scan ranks
# in the top 5 (hotpotqa, 16k chunks: flat recall@5 0.730 vs 0.740 at 100, recursive 0.855 vs
# 0.865; bench/eval_results.md), although synthetic clustered vectors (bench_search.py) showed
# recall@10 0.992 at 40. 100 costs ~2 ms per search (6.2 vs 4.1 ms p50 at 100k vectors); a
# search for more than k=50 widens it to 2k.
EF_SEARCH = 100
MAX_EF_SEARCH = 1000  # pgvector's cap on hnsw.ef_search
# An exact scan of the allowed rows costs about half what an HNSW scan spends per candidate
# (bench_access.py, 6,500 chunks: 651 allowed rows exact 8 ms, HNSW at ef 1000 27 ms; 3,236 rows
# exact 15 ms, ef 200 2.2 ms): a filtered search is exact when allowed rows <= this x its ef.
EXACT_ROWS_PER_EF = 2
_FRACTIONS = 1024  # (collection version, access set) -> allowed and total chunks, remembered
HNSW_PARAMS = "m = 16, ef_construction = 64"
_COPY_TYPES = ["text", "int4", "text", "int4", "int4", "vector", "text[]"]
_SENTENCE_COPY_TYPES = ["text", "int4", "text", "int4", "int4", "text", "text", "vector"]


def _chunks_table(cid: int) -> sql.Identifier:
    return sql.Identifier(f"rag_rlm_chunks_{cid}")


def _sentences_table(cid: int) -> sql.Identifier:
    return sql.Identifier(f"rag_rlm_sentences_{cid}")


def _hnsw_index(cid: int) -> sql.Identifier:
    return sql.Identifier(f"rag_rlm_chunks_{cid}_hnsw")


class PgVectorStore:
    """The Store Protocol on PostgreSQL; safe to share between threads (a connection pool)."""

    def __init__(self, dsn: str, *, pool_size: int = 8, ef_search: int = EF_SEARCH,
                 timeout: float = DEFAULT_STORE_TIMEOUT, statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT,
                 on_close: Callable[[], None] | None = None):
        ensure_migrated(dsn, timeout)
        self.ef_search = ef_search  # read per search, so it may be tuned on a live store
        self._bulk: set[str] = set()  # collections inside bulk_load(): no HNSW index until the end
        self._lock = threading.Lock()
        self._pool = StorePool(dsn, timeout=timeout, statement_timeout=statement_timeout, max_size=pool_size,
                               configure=_configure, name="rag_rlm.store")
        self._on_close = on_close
        self._fractions: dict[tuple[int, int, tuple[str, ...]], tuple[int, int]] = {}

    @classmethod
    def from_url(cls, url: str, *, timeout: float = DEFAULT_STORE_TIMEOUT,
                 statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT) -> PgVectorStore:
        """`on_close` gives back the hold on the embedded server (pgserver://), if any."""
        return open_postgres(url, lambda dsn, release: cls(dsn, timeout=timeout, statement_timeout=statement_timeout,
                                                           on_close=release))

    # -- writes ---------------------------------------------------------------------------------

    def write_document(
        self, collection: str, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
        sentences: Sequence[Sentence] = (), sentence_vectors: np.ndarray | None = None,
    ) -> None:
        self.write_parts(collection, document, [DocumentPart(chunks, vectors, sentences, sentence_vectors)])

    def write_parts(self, collection: str, document: Document, parts: Iterable[DocumentPart]) -> None:
        with self._tx(f"writing document {document.id!r}") as conn:
            # Atomic and consistent either way; not waiting for the WAL flush only means an OS
            # crash can lose the last few documents, which the next ingest (by hash) rewrites.
            conn.execute("SET LOCAL synchronous_commit = off")
            cid = dim = None
            chunk_count = 0
            groups = list(normalise_groups(document.groups))
            for part in parts:
                vectors, sentence_vectors = check_part(document, part, dim)
                if cid is None:
                    dim = vectors.shape[1]
                    cid = self._begin_document(conn, collection, document.id, dim)
                _copy(conn, _chunks_table(cid), "document_id, chunk_index, text, start_pos, end_pos, embedding, groups",
                      _COPY_TYPES, ((document.id, c.index, c.text, c.start, c.end, v, groups)
                                    for c, v in zip(part.chunks, vectors, strict=True)))
                if part.sentences:
                    self._ensure_sentences_table(conn, collection, cid, vectors.shape[1])
                    _copy(conn, _sentences_table(cid),
                          "document_id, sentence_index, text, start_pos, end_pos, heading, kind, embedding",
                          _SENTENCE_COPY_TYPES, ((document.id, s.index, s.text, s.start, s.end, s.heading, s.kind, v)
                                                 for s, v in zip(part.sentences, sentence_vectors, strict=True)))
                chunk_count += len(part.chunks)
            if cid is None:
                raise StoreError(f"document {document.id!r}: no parts to write")
            conn.execute(
                "INSERT INTO rag_rlm_documents AS d (collection_id, document_id, title, source,"
                " content_hash, chunk_count, metadata, groups) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (collection_id, document_id) DO UPDATE SET title = excluded.title,"
                " source = excluded.source, content_hash = excluded.content_hash,"
                " chunk_count = excluded.chunk_count, metadata = excluded.metadata, groups = excluded.groups,"
                " updated_at = now()",
                (cid, document.id, document.title, document.source, document.content_hash,
                 chunk_count, Jsonb(dict(document.metadata)), groups),
            )
            # Last: the collection row stays locked until commit, and a large document's
            # transaction lasts minutes, which other writers of the collection must not wait for.
            _bump_version(conn, cid)

    def _begin_document(self, conn: psycopg.Connection, collection: str, document_id: str, dim: int) -> int:
        """The collection's id, with this document locked against other writers and its old
        chunks and sentences deleted (inside the caller's transaction: readers still see them)."""
        cid = self._ensure_collection(conn, collection, dim)
        _lock_document(conn, cid, document_id)
        conn.execute(sql.SQL("DELETE FROM {} WHERE document_id = %s").format(_chunks_table(cid)), (document_id,))
        if _has_table(conn, _sentences_table(cid)):
            conn.execute(sql.SQL("DELETE FROM {} WHERE document_id = %s").format(_sentences_table(cid)),
                         (document_id,))
        return cid

    def _ensure_sentences_table(self, conn: psycopg.Connection, collection: str, cid: int, dim: int) -> None:
        """A collection from before sentence memory gets its table with its first sentences;
        DDL only when missing, not on every part."""
        if not _has_table(conn, _sentences_table(cid)):
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("rag_rlm_collection:" + collection,))
            _create_sentences_table(conn, cid, dim)

    def delete_document(self, collection: str, document_id: str) -> bool:
        with self._tx(f"deleting document {document_id!r}") as conn:
            cid, _ = _collection_row(conn, collection)
            gone = conn.execute(
                "DELETE FROM rag_rlm_documents WHERE collection_id = %s AND document_id = %s RETURNING 1",
                (cid, document_id),
            ).fetchone()
            if gone is None:
                return False
            _lock_document(conn, cid, document_id)
            conn.execute(sql.SQL("DELETE FROM {} WHERE document_id = %s").format(_chunks_table(cid)), (document_id,))
            if _has_table(conn, _sentences_table(cid)):
                conn.execute(sql.SQL("DELETE FROM {} WHERE document_id = %s").format(_sentences_table(cid)),
                             (document_id,))
            _bump_version(conn, cid)
            return True

    def rename_document(self, collection: str, old_id: str, new_id: str, *, source: str,
                        metadata: Mapping[str, Any] | None = None) -> bool:
        """One transaction: the rows change their document id in place (their vectors, and so
        search scores, stay exactly as they were), so readers see the old id until the commit."""
        with self._tx(f"renaming document {old_id!r}") as conn:
            cid, _ = _collection_row(conn, collection)
            for document_id in sorted({old_id, new_id}):  # in one order: two crossing renames do not deadlock
                _lock_document(conn, cid, document_id)
            found = conn.execute(
                "SELECT 1 FROM rag_rlm_documents WHERE collection_id = %s AND document_id = %s",
                (cid, old_id)).fetchone()
            if found is None:
                return False
            tables = [_chunks_table(cid)] + ([_sentences_table(cid)] if _has_table(conn, _sentences_table(cid)) else [])
            if new_id != old_id:
                conn.execute("DELETE FROM rag_rlm_documents WHERE collection_id = %s AND document_id = %s",
                             (cid, new_id))
                for table in tables:
                    conn.execute(sql.SQL("DELETE FROM {} WHERE document_id = %s").format(table), (new_id,))
                    conn.execute(sql.SQL("UPDATE {} SET document_id = %s WHERE document_id = %s").format(table),
                                 (new_id, old_id))
            conn.execute(
                "UPDATE rag_rlm_documents SET document_id = %s, source = %s,"
                " metadata = coalesce(%s::jsonb, metadata), updated_at = now()"
                " WHERE collection_id = %s AND document_id = %s",
                (new_id, source, None if metadata is None else Jsonb(dict(metadata)), cid, old_id))
            _bump_version(conn, cid)
            return True

    def set_groups(self, collection: str, document_id: str, groups: Collection[str]) -> bool:
        wanted = list(normalise_groups(groups))
        with self._tx(f"changing the groups of document {document_id!r}") as conn:
            cid, _ = _collection_row(conn, collection)
            _lock_document(conn, cid, document_id)  # after a write in flight, never under it
            found = conn.execute(
                "UPDATE rag_rlm_documents SET groups = %s, updated_at = now()"
                " WHERE collection_id = %s AND document_id = %s RETURNING 1", (wanted, cid, document_id),
            ).fetchone()
            if found is None:
                return False
            conn.execute(sql.SQL("UPDATE {} SET groups = %s WHERE document_id = %s").format(_chunks_table(cid)),
                         (wanted, document_id))
            _bump_version(conn, cid)  # memo entries built before the change die with the version
            return True

    def drop_collection(self, collection: str) -> None:
        """Remove a collection with all its documents and chunks; UnknownCollection if absent."""
        with self._tx(f"dropping collection {collection!r}") as conn:
            cid, _ = _collection_row(conn, collection)
            conn.execute("DELETE FROM rag_rlm_collections WHERE id = %s", (cid,))
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(_chunks_table(cid)))
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(_sentences_table(cid)))

    @contextmanager
    def bulk_load(self, collection: str) -> Iterator[None]:
        """Many writes into one collection, fast: its HNSW index is dropped while they run and
        built once at the end (growing the graph row by row is ~10x slower). Searches in the
        meantime are exact, so still correct. Used by the search benchmark and big first loads."""
        validate_collection_name(collection)
        with self._lock:
            self._bulk.add(collection)
        try:
            with self._tx(f"preparing bulk load of {collection!r}") as conn:
                row = _find_collection(conn, collection)
                if row is not None:
                    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(_hnsw_index(row[0])))
            yield
        finally:
            with self._lock:
                self._bulk.discard(collection)
        with self._tx(f"indexing {collection!r}") as conn:
            row = _find_collection(conn, collection)
            if row is not None:
                conn.execute("SET LOCAL maintenance_work_mem = '1GB'")  # keep the graph in memory
                conn.execute("SET LOCAL statement_timeout = 0")  # a big build takes minutes: not a stuck query
                _create_hnsw_index(conn, row[0])

    # -- reads ----------------------------------------------------------------------------------

    def search(
        self,
        collection: str,
        vector: np.ndarray,
        k: int,
        where: Mapping[str, str] | None = None,
        text: str | None = None,
        groups: Collection[str] | None = None,
    ) -> list[Span]:
        if k <= 0:
            return []
        query_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        groups = None if groups is None else normalise_groups(groups)
        with self._tx(f"searching {collection!r}") as conn:
            cid, dim, version = _collection_state(conn, collection)
            if query_vector.shape[0] != dim:
                raise StoreError(f"query vector has dimension {query_vector.shape[0]}, collection {collection!r} has {dim}")
            query, params = pgsearch.search_sql(_chunks_table(cid), cid, query_vector, k, where, text, groups)
            ef = max(int(self.ef_search), 2 * k)
            if where:
                # The HNSW scan filters after the approximate search and can return fewer than k
                # rows under a selective filter; a filtered search is exact instead.
                rows = _run_search(conn, query, params, ef, exact=True)
            elif groups is None:
                rows = _run_search(conn, query, params, ef)
            else:
                allowed, total = self._allowed(conn, cid, version, groups)
                rows = _search_allowed(conn, query, params, ef, allowed, total, k, hybrid=bool(text and text.strip()))
        return [Span(*row[:7], score=float(row[7])) for row in rows]

    def _allowed(self, conn: psycopg.Connection, cid: int, version: int, groups: tuple[str, ...]) -> tuple[int, int]:
        """Chunks of the collection `groups` reads, and all its chunks (remembered per version)."""
        key = (cid, version, groups)
        found = self._fractions.get(key)
        if found is None:
            row = conn.execute(
                "SELECT coalesce(sum(chunk_count) FILTER (WHERE groups = '{}' OR groups && %s::text[]), 0),"
                " coalesce(sum(chunk_count), 0) FROM rag_rlm_documents WHERE collection_id = %s",
                (list(groups), cid)).fetchone()
            found = (int(row[0]), int(row[1])) if row else (0, 0)
            with self._lock:
                if len(self._fractions) >= _FRACTIONS:
                    self._fractions.clear()
                self._fractions[key] = found
        return found

    def sentences(self, collection: str, spans: Sequence[Span]) -> tuple[list[Sentence], np.ndarray]:
        with self._tx(f"reading sentences of {collection!r}") as conn:
            cid, dim = _collection_row(conn, collection)
            table = _sentences_table(cid)
            if not spans or not _has_table(conn, table):
                return [], np.zeros((0, dim), dtype=np.float32)
            rank: dict[str, int] = {}
            for span in spans:
                rank.setdefault(span.document_id, len(rank))
            rows = conn.execute(sql.SQL(
                "SELECT t.document_id, t.sentence_index, t.text, t.start_pos, t.end_pos, t.heading, t.kind,"
                " t.embedding FROM {} t JOIN unnest(%s::text[], %s::int[]) AS d(document_id, rank)"
                " ON t.document_id = d.document_id"
                " WHERE EXISTS (SELECT 1 FROM unnest(%s::text[], %s::int[], %s::int[]) AS s(document_id, lo, hi)"
                "  WHERE s.document_id = t.document_id AND t.start_pos < s.hi AND t.end_pos > s.lo)"
                " ORDER BY d.rank, t.sentence_index"
            ).format(table), (
                list(rank), list(rank.values()),
                [s.document_id for s in spans], [s.start for s in spans], [s.end for s in spans],
            ), binary=True).fetchall()  # vectors as raw floats: parsing their text was most of a read's CPU
        found = [Sentence(document_id=r[0], index=r[1], text=r[2], start=r[3], end=r[4], heading=r[5], kind=r[6])
                 for r in rows]
        if not rows:
            return found, np.zeros((0, dim), dtype=np.float32)
        return found, np.stack([_as_array(r[7]) for r in rows])

    def document_text(self, collection: str, document_id: str) -> str:
        with self._tx(f"reading document {document_id!r}") as conn:
            cid, _ = _collection_row(conn, collection)
            rows = conn.execute(sql.SQL(
                "SELECT text, start_pos, end_pos FROM {} WHERE document_id = %s ORDER BY chunk_index"
            ).format(_chunks_table(cid)), (document_id,)).fetchall()
        if not rows:
            raise KeyError(document_id)
        return rebuild_text(rows)

    def collections(self) -> list[CollectionInfo]:
        with self._tx("listing collections") as conn:
            rows = conn.execute(_INFO_SQL + " GROUP BY c.id ORDER BY c.name").fetchall()
        return [_info(row) for row in rows]

    def collection_info(self, collection: str) -> CollectionInfo:
        validate_collection_name(collection)
        with self._tx(f"reading collection {collection!r}") as conn:
            row = conn.execute(_INFO_SQL + " WHERE c.name = %s GROUP BY c.id", (collection,)).fetchone()
        if row is None:
            raise UnknownCollection(collection)
        return _info(row)

    def version(self, collection: str) -> str:
        validate_collection_name(collection)
        with self._tx(f"reading collection {collection!r}") as conn:
            row = conn.execute("SELECT id, version FROM rag_rlm_collections WHERE name = %s", (collection,)).fetchone()
        if row is None:
            raise UnknownCollection(collection)
        return _version(*row)

    def documents(self, collection: str) -> dict[str, DocumentRecord]:
        with self._tx(f"listing documents of {collection!r}") as conn:
            cid, _ = _collection_row(conn, collection)
            rows = conn.execute(
                "SELECT document_id, title, source, content_hash, chunk_count, metadata, groups"
                " FROM rag_rlm_documents WHERE collection_id = %s ORDER BY document_id",
                (cid,),
            ).fetchall()
        return {row[0]: DocumentRecord(*row[:6], groups=tuple(row[6])) for row in rows}

    def close(self) -> None:
        self._pool.close()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()

    # -- internals ------------------------------------------------------------------------------

    @contextmanager
    def _tx(self, what: str) -> Iterator[psycopg.Connection]:
        """A pooled connection inside one transaction; database errors become StoreError (with
        neither SQL nor table names in the message: it may reach an HTTP client)."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as e:
            raise store_error(what, e) from e

    def _ensure_collection(self, conn: psycopg.Connection, name: str, dim: int) -> int:
        validate_collection_name(name)
        row = _find_collection(conn, name)
        if row is None:
            # Two writers creating the same collection: the second waits here, then finds it.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("rag_rlm_collection:" + name,))
            row = _find_collection(conn, name) or self._create_collection(conn, name, dim)
        cid, stored_dim = row
        if stored_dim != dim:
            raise StoreError(f"collection {name!r} holds {stored_dim}-dimensional vectors, got {dim}")
        return cid

    def _create_collection(self, conn: psycopg.Connection, name: str, dim: int) -> tuple[int, int]:
        row = conn.execute(
            "INSERT INTO rag_rlm_collections (name, dimension) VALUES (%s, %s) RETURNING id", (name, dim)
        ).fetchone()
        assert row is not None
        cid = int(row[0])
        table = _chunks_table(cid)
        conn.execute(sql.SQL(
            "CREATE TABLE {} (document_id text NOT NULL, chunk_index integer NOT NULL,"
            " text text NOT NULL, start_pos integer NOT NULL, end_pos integer NOT NULL,"
            " embedding vector({}) NOT NULL,"
            " tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,"
            " groups text[] NOT NULL DEFAULT '{{}}',"
            " PRIMARY KEY (document_id, chunk_index))"
        ).format(table, sql.SQL(str(int(dim)))))
        conn.execute(sql.SQL("CREATE INDEX {} ON {} USING gin (tsv)").format(
            sql.Identifier(f"rag_rlm_chunks_{cid}_tsv"), table))
        conn.execute(sql.SQL("CREATE INDEX {} ON {} USING gin (groups)").format(
            sql.Identifier(f"rag_rlm_chunks_{cid}_groups"), table))
        _create_sentences_table(conn, cid, dim)
        with self._lock:
            bulk = name in self._bulk
        if not bulk:
            _create_hnsw_index(conn, cid)
        return cid, dim


_INFO_SQL = (
    "SELECT c.name, c.id, c.version, count(d.document_id), coalesce(sum(d.chunk_count), 0)"
    " FROM rag_rlm_collections c LEFT JOIN rag_rlm_documents d ON d.collection_id = c.id"
)


def _info(row: tuple[Any, ...]) -> CollectionInfo:
    name, cid, version, documents, chunks = row
    return CollectionInfo(name=name, documents=int(documents), chunks=int(chunks), version=_version(cid, version))


def _version(cid: int, version: int) -> str:
    # The id makes a dropped-and-recreated collection never reuse an old version string.
    return f"{cid}.{version}"


def _run_search(conn: psycopg.Connection, query: sql.Composed, params: dict[str, Any], ef: int,
                exact: bool = False, prepare: bool | None = None) -> list[tuple[Any, ...]]:
    """The search query on the HNSW index with `ef` candidates, or an exact scan (settings local
    to the transaction, set again by each run of a widening search). `prepare=False`: planned
    for this run, with its settings and parameters."""
    conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('enable_indexscan', %s, true)",
                 (str(min(ef, MAX_EF_SEARCH)), "off" if exact else "on"))
    return conn.execute(query, params, prepare=prepare).fetchall()


def _search_allowed(conn: psycopg.Connection, query: sql.Composed, params: dict[str, Any], ef: int,
                    allowed: int, total: int, k: int, hybrid: bool) -> list[tuple[Any, ...]]:
    """A search under an access filter that still finds the top k allowed rows: the HNSW scan
    widened by the inverse of the allowed fraction and doubled while it comes back short, or an
    exact scan of the allowed rows when they are few (module docstring). `allowed`, `total`:
    chunks as the document records count them (a write in flight may move them a little).

    Never a prepared statement: psycopg prepares a query run often, and PostgreSQL then keeps
    one generic plan whatever ef_search and enable_indexscan say, which for this filter is the
    exact scan (measured: 9 ms instead of 2 ms for half the collection allowed)."""
    if not allowed:
        return []
    if allowed >= total:  # nothing is held back: the filter costs the scan nothing
        return _run_search(conn, query, params, ef, prepare=False)
    want = min(k, allowed)
    ef = math.ceil(ef * total / allowed)
    if allowed <= EXACT_ROWS_PER_EF * ef:
        return _run_search(conn, query, params, ef, exact=True, prepare=False)
    while ef <= MAX_EF_SEARCH:
        rows = _run_search(conn, query, params, ef, prepare=False)
        if hybrid or len(rows) >= want:
            return rows
        ef *= 2
    return _run_search(conn, query, params, ef, exact=True, prepare=False)


def _configure(conn: psycopg.Connection) -> None:
    register_vector(conn)
    conn.commit()


def _find_collection(conn: psycopg.Connection, name: str) -> tuple[int, int] | None:
    row = conn.execute("SELECT id, dimension FROM rag_rlm_collections WHERE name = %s", (name,)).fetchone()
    return (int(row[0]), int(row[1])) if row else None


def _collection_state(conn: psycopg.Connection, name: str) -> tuple[int, int, int]:
    """(id, dimension, version); UnknownCollection when absent."""
    validate_collection_name(name)
    row = conn.execute("SELECT id, dimension, version FROM rag_rlm_collections WHERE name = %s", (name,)).fetchone()
    if row is None:
        raise UnknownCollection(name)
    return int(row[0]), int(row[1]), int(row[2])


def _collection_row(conn: psycopg.Connection, name: str) -> tuple[int, int]:
    validate_collection_name(name)
    row = _find_collection(conn, name)
    if row is None:
        raise UnknownCollection(name)
    return row


def _lock_document(conn: psycopg.Connection, cid: int, document_id: str) -> None:
    """Writers of one document take turns (until commit); writers of different ones do not.
    The wait is exempt from `statement_timeout`: a large document's write holds the lock for
    minutes, and the writer after it should wait, not fail."""
    row = conn.execute("SELECT current_setting('statement_timeout'), set_config('statement_timeout', '0', true)"
                       ).fetchone()
    conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (cid, document_id))
    conn.execute("SELECT set_config('statement_timeout', %s, true)", (row[0] if row else "0",))


def _bump_version(conn: psycopg.Connection, cid: int) -> None:
    conn.execute("UPDATE rag_rlm_collections SET version = version + 1 WHERE id = %s", (cid,))


def _create_hnsw_index(conn: psycopg.Connection, cid: int) -> None:
    conn.execute(sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops) WITH ({})"
    ).format(_hnsw_index(cid), _chunks_table(cid), sql.SQL(HNSW_PARAMS)))


def _create_sentences_table(conn: psycopg.Connection, cid: int, dim: int) -> None:
    table = _sentences_table(cid)
    conn.execute(sql.SQL(
        "CREATE TABLE IF NOT EXISTS {} (document_id text NOT NULL, sentence_index integer NOT NULL,"
        " text text NOT NULL, start_pos integer NOT NULL, end_pos integer NOT NULL,"
        " heading text NOT NULL DEFAULT '', kind text NOT NULL DEFAULT 'text', embedding vector({}) NOT NULL,"
        " PRIMARY KEY (document_id, sentence_index))"
    ).format(table, sql.SQL(str(int(dim)))))
    conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (document_id, start_pos)").format(
        sql.Identifier(f"rag_rlm_sentences_{cid}_pos"), table))


def _as_array(value: Any) -> np.ndarray:
    """A vector column value (pgvector's Vector, or an array with older adapters) as float32."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def _has_table(conn: psycopg.Connection, table: sql.Identifier) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", (table.as_string(conn),)).fetchone()
    return row is not None and row[0] is not None


def _copy(conn: psycopg.Connection, table: sql.Identifier, columns: str, types: list[str], rows) -> None:  # noqa: ANN001
    """Rows into `table` by binary COPY (pgvector-python's bulk-load path)."""
    copy_sql = sql.SQL("COPY {} (" + columns + ") FROM STDIN WITH (FORMAT BINARY)").format(table)
    with conn.cursor().copy(copy_sql) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)
