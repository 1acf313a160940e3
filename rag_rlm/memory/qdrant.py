"""Qdrant store: local mode on disk (`qdrant://PATH`, `qdrant://:memory:`) or a server
(`qdrant+http://HOST:PORT`, `qdrant+https://...`, API key from `QDRANT_API_KEY`).

One Qdrant collection per rag-rlm collection (`rag_rlm__<name>`, cosine), whose points are the
chunks, plus one registry collection (`rag_rlm_registry`) holding a point per document record and
per collection (its dimension and content version). Qdrant has no multi-point transactions, so a
write orders its steps: every part's points go to a staging collection (`rag_rlm_w__<name>`, never
searched) under ids of their own (uuid5 of document id + index + a per-write token), so the old
version stays whole and readable meanwhile; then the write is published (its points copied into
the live collections, the document's other points deleted there) and the document record and the
collection version are written LAST — an interrupted write leaves staged points and the old (or
no) content hash behind, and the next ingest simply redoes the document (its publish deletes the
leftovers). Why staging and not a "staged" flag on live points: every read would then need a
filter, and local mode evaluates filters in Python per point (10x slower searches at 20k chunks).

Sentence memory: the document's sentences (text, exact offsets, heading, kind, vector) are the
points of a second Qdrant collection, `rag_rlm_s__<name>`, written and published like the chunks
(before the record); collections made before it existed get it on their next write.

Access groups (rag_rlm.access) are in every chunk's payload (`groups`, keyword-indexed) and in
the document's record; a search under them adds a payload filter (no groups, or any of the
caller's), which Qdrant applies inside its HNSW traversal, so k allowed points still come back.

Hybrid search (`text=`) fuses the vector top-N with a BM25 text query over a scored full-text
index on the chunk text, by reciprocal rank, inside Qdrant (works in local mode too).
"""

from __future__ import annotations

import math
import os
import threading
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from ..access import normalise_groups
from ..config import DEFAULT_STORE_TIMEOUT, validate_collection_name
from ..errors import ConfigError, StoreError, UnknownCollection
from ..types import Chunk, CollectionInfo, Document, DocumentRecord, Sentence, Span
from .base import DocumentPart
from .sentences import check_part, overlapping, rebuild_text

REGISTRY = "rag_rlm_registry"  # user collections are rag_rlm__<name>, so this cannot clash
CANDIDATES = 40  # per side of the hybrid fusion
RRF_K = 60  # as in the pgvector store, so both rank alike
_NS = uuid.UUID("6f1c1f4e-2a59-4c55-9a7e-5f0d3c1b2a10")
_DOC_FIELDS = ("document_id", "title", "source")

# Local mode allows one client per path per process: opens of one path share a client.
# Local mode is also not thread-safe (one SQLite connection), so each local client comes with a
# lock that serialises its calls; a server client needs none.
_clients: dict[str, tuple[QdrantClient, threading.RLock, int]] = {}
_clients_lock = threading.Lock()


def _acquire(key: str, factory: Any) -> tuple[QdrantClient, threading.RLock]:
    with _clients_lock:
        client, lock, refs = _clients.get(key, (None, threading.RLock(), 0))
        if client is None:
            client = factory()
        _clients[key] = (client, lock, refs + 1)
        return client, lock


def _release(key: str) -> None:
    with _clients_lock:
        client, lock, refs = _clients.get(key, (None, None, 0))
        if client is None or lock is None:
            return
        if refs <= 1:
            del _clients[key]
            with lock:
                client.close()
        else:
            _clients[key] = (client, lock, refs - 1)


def point_id(document_id: str, chunk_index: int, write: str) -> str:
    return str(uuid.uuid5(_NS, f"{document_id}\x00{chunk_index}\x00{write}"))


def _record_id(collection: str, document_id: str | None = None) -> str:
    return str(uuid.uuid5(_NS, f"{collection}\x00{document_id}" if document_id is not None else collection))


def _version_of(record: list[Any]) -> str:
    """The content version in a collection's registry record (as `retrieve` returns it)."""
    return str(record[0].payload.get("version", "")) if record and record[0].payload else ""


def _qname(collection: str) -> str:
    return "rag_rlm__" + validate_collection_name(collection)


def _wname(collection: str) -> str:
    """The staging collection: points of writes not yet published, never read by a search."""
    return "rag_rlm_w__" + validate_collection_name(collection)


def _without(payload: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != key}


def _sname(collection: str) -> str:
    """The Qdrant collection of a collection's sentences."""
    return "rag_rlm_s__" + validate_collection_name(collection)


def sentence_point_id(document_id: str, sentence_index: int, write: str) -> str:
    return str(uuid.uuid5(_NS, f"sentence\x00{document_id}\x00{sentence_index}\x00{write}"))


def _match(key: str, value: Any) -> qm.FieldCondition:
    return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))



class QdrantStore:
    """The Store Protocol on Qdrant; thread-safe (the client is, and writes take a lock)."""

    def __init__(self, client: QdrantClient, *, client_key: str | None = None,
                 io_lock: threading.RLock | None = None):
        self._client = client
        self._key = client_key
        self._lock = threading.RLock()  # collection creation: check-then-create must not interleave
        self._io = io_lock
        self._ensure_registry()

    @classmethod
    def from_url(cls, url: str, *, timeout: float = DEFAULT_STORE_TIMEOUT) -> QdrantStore:
        """`timeout` bounds each request to a Qdrant server (whole seconds; local mode has none)."""
        scheme, _, rest = url.partition("://")
        if not rest:
            raise ConfigError("store", f"{url!r}: expected qdrant://PATH or qdrant+http(s)://HOST:PORT")
        if scheme in ("qdrant+http", "qdrant+https"):
            base = scheme.removeprefix("qdrant+") + "://" + rest
            return cls(QdrantClient(url=base, api_key=os.environ.get("QDRANT_API_KEY") or None,
                                    timeout=max(1, math.ceil(timeout))))
        if scheme != "qdrant":
            raise ConfigError("store", f"not a Qdrant store URL: {url!r}")
        if rest == ":memory:":
            return cls(QdrantClient(location=":memory:"), io_lock=threading.RLock())
        path = os.path.abspath(os.path.expanduser(rest))
        try:
            client, lock = _acquire(path, lambda: QdrantClient(path=path))
        except (RuntimeError, OSError) as e:  # e.g. the folder is locked by another process
            raise StoreError(f"cannot open Qdrant local storage at {path}: {e}") from e
        return cls(client, client_key=path, io_lock=lock)

    # -- writes ---------------------------------------------------------------------------------

    def write_document(
        self, collection: str, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
        sentences: Sequence[Sentence] = (), sentence_vectors: np.ndarray | None = None,
    ) -> None:
        self.write_parts(collection, document, [DocumentPart(chunks, vectors, sentences, sentence_vectors)])

    def write_parts(self, collection: str, document: Document, parts: Iterable[DocumentPart]) -> None:
        write = uuid.uuid4().hex  # this write's points get ids of their own: the old version's stay
        base = {"title": document.title, "source": document.source, "metadata": dict(document.metadata),
                "content_hash": document.content_hash, "groups": list(normalise_groups(document.groups))}
        name, dim, chunk_count = None, None, 0
        for part in parts:  # no lock held while waiting for the next part
            vectors, sentence_vectors = check_part(document, part, dim)
            dim = vectors.shape[1]
            with self._errors(f"writing document {document.id!r}"):
                if name is None:
                    name = self._ensure_collection(collection, dim)
                    self._ensure_side_collection(_wname(collection), dim)
                if part.sentences:
                    self._ensure_side_collection(_sname(collection), dim)
                chunk_points = [
                    (point_id(document.id, c.index, write), v,
                     {**base, "document_id": document.id, "chunk_index": c.index, "text": c.text,
                      "start": c.start, "end": c.end})
                    for c, v in zip(part.chunks, vectors, strict=True)]
                sentence_points = [
                    (sentence_point_id(document.id, s.index, write), v,
                     {"document_id": document.id, "sentence_index": s.index, "text": s.text, "start": s.start,
                      "end": s.end, "heading": s.heading, "kind": s.kind})
                    for s, v in zip(part.sentences, sentence_vectors, strict=True)]
                self._client.upsert(_wname(collection), wait=True, points=[
                    qm.PointStruct(id=pid, vector=v.tolist(), payload={**payload, "write": write, "into": into})
                    for into, points in ((name, chunk_points), (_sname(collection), sentence_points))
                    for pid, v, payload in points])
            chunk_count += len(part.chunks)
        if name is None:
            raise StoreError(f"document {document.id!r}: no parts to write")
        with self._errors(f"writing document {document.id!r}"):
            self._publish(collection, document.id, write)
            record = {"kind": "document", "collection": collection, "document_id": document.id,
                      "chunk_count": chunk_count, "write": write, **base}
            self._put_record(_record_id(collection, document.id), record)
            self._bump_version(collection)

    def _publish(self, collection: str, document_id: str, write: str) -> None:
        """Move this write's points from staging into the collections readers use, page by
        page, then delete the document's other points (the old version) there and its staged
        leftovers. A crash part-way shows old and new points side by side until the next write,
        which the old content hash in the record asks for."""
        wname, of_doc = _wname(collection), _match("document_id", document_id)
        mine = qm.Filter(must=[of_doc, _match("write", write)])
        offset = None
        while True:
            points, offset = self._client.scroll(wname, scroll_filter=mine, limit=256, offset=offset,
                                                 with_payload=True, with_vectors=True)
            for into in {p.payload["into"] for p in points if p.payload}:
                self._client.upsert(into, wait=True, points=[
                    qm.PointStruct(id=p.id, vector=p.vector, payload=_without(p.payload, "into"))
                    for p in points if p.payload and p.payload["into"] == into])
            if offset is None:
                break
        stale = qm.FilterSelector(filter=qm.Filter(must=[of_doc], must_not=[_match("write", write)]))
        for name in (_qname(collection), _sname(collection)):
            if self._client.collection_exists(name):
                self._client.delete(name, points_selector=stale, wait=True)
        self._client.delete(wname, points_selector=qm.FilterSelector(filter=qm.Filter(must=[of_doc])), wait=True)

    def delete_document(self, collection: str, document_id: str) -> bool:
        name = self._existing(collection)
        rid = _record_id(collection, document_id)
        with self._errors(f"deleting document {document_id!r}"):
            if not self._client.retrieve(REGISTRY, ids=[rid]):
                return False
            selector = qm.FilterSelector(filter=qm.Filter(must=[_match("document_id", document_id)]))
            self._client.delete(name, points_selector=selector, wait=True)
            for side in (_sname(collection), _wname(collection)):
                if self._client.collection_exists(side):
                    self._client.delete(side, points_selector=selector, wait=True)
            self._client.delete(REGISTRY, points_selector=qm.PointIdsList(points=[rid]), wait=True)
            self._bump_version(collection)
        return True

    def rename_document(self, collection: str, old_id: str, new_id: str, *, source: str,
                        metadata: Mapping[str, Any] | None = None) -> bool:
        """The points keep their ids and vectors and change their payload (`set_payload` by
        filter, one request per collection), in the order a write publishes: first the points
        `new_id` held before are deleted, then the old document's points are relabelled, and
        the records (new in, old out) and the version change LAST, in one request. An
        interruption leaves the old record naming the old content hash, so the next sync redoes
        the rename (or rewrites the document), and a rename redone keeps what was relabelled:
        a document's live points carry the token of the write that made them, which its record
        names, and only `new_id`'s points of other writes are deleted."""
        name = self._existing(collection)
        with self._errors(f"renaming document {old_id!r}"):
            found = self._client.retrieve(REGISTRY, ids=[_record_id(collection, old_id)], with_payload=True)
            if not found:
                return False
            record = {**(found[0].payload or {}), "document_id": new_id, "source": source}
            if metadata is not None:
                record["metadata"] = dict(metadata)
            write = record.get("write") or self._write_of(name, old_id)
            sides = [n for n in (_sname(collection), _wname(collection)) if self._client.collection_exists(n)]
            if new_id != old_id:
                others = qm.Filter(must=[_match("document_id", new_id)],
                                   must_not=[_match("write", write)] if write else [])
                for target in (name, *sides):
                    self._client.delete(target, points_selector=qm.FilterSelector(filter=others), wait=True)
            relabel = {"document_id": new_id}
            chunk_fields = {"source": source, **({"metadata": dict(metadata)} if metadata is not None else {})}
            of_old = qm.Filter(must=[_match("document_id", old_id)])
            for target in (name, *sides):
                if target == _wname(collection):  # staged leftovers of an interrupted write: not moved
                    self._client.delete(target, points_selector=qm.FilterSelector(filter=of_old), wait=True)
                else:
                    self._client.set_payload(target, payload={**relabel, **(chunk_fields if target == name else {})},
                                             points=of_old, wait=True)
            record["write"] = write
            operations: list[Any] = [qm.UpsertOperation(upsert=qm.PointsList(points=[
                qm.PointStruct(id=_record_id(collection, new_id), vector=[1.0], payload=record)]))]
            if new_id != old_id:
                operations.append(qm.DeleteOperation(delete=qm.PointIdsList(points=[_record_id(collection, old_id)])))
            operations.append(qm.SetPayloadOperation(set_payload=qm.SetPayload(
                payload={"version": uuid.uuid4().hex}, points=[_record_id(collection)])))
            self._client.batch_update_points(REGISTRY, update_operations=operations, wait=True)
        return True

    def _write_of(self, name: str, document_id: str) -> str | None:
        """The write token of a document's live points, for a record written before records named it."""
        points, _ = self._client.scroll(name, scroll_filter=qm.Filter(must=[_match("document_id", document_id)]),
                                        limit=1, with_payload=["write"])
        return str(points[0].payload["write"]) if points and points[0].payload else None

    def set_groups(self, collection: str, document_id: str, groups: Collection[str]) -> bool:
        name = self._existing(collection)
        rid = _record_id(collection, document_id)
        payload = {"groups": list(normalise_groups(groups))}
        with self._errors(f"changing the groups of document {document_id!r}"):
            if not self._client.retrieve(REGISTRY, ids=[rid]):
                return False
            # the chunks first: until the record says so, the document is read as it was
            self._client.set_payload(name, payload=payload, wait=True,
                                     points=qm.Filter(must=[_match("document_id", document_id)]))
            self._client.set_payload(REGISTRY, payload=payload, points=[rid], wait=True)
            self._bump_version(collection)
        return True

    def drop_collection(self, collection: str) -> None:
        """Remove a collection with all its documents and chunks; UnknownCollection if absent."""
        name = self._existing(collection)
        with self._errors(f"dropping collection {collection!r}"):
            self._client.delete_collection(name)
            for side in (_sname(collection), _wname(collection)):
                if self._client.collection_exists(side):
                    self._client.delete_collection(side)
            selector = qm.FilterSelector(filter=qm.Filter(must=[_match("collection", collection)]))
            self._client.delete(REGISTRY, points_selector=selector, wait=True)

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
        name = self._existing(collection)
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        query_filter = _filter(where, None if groups is None else normalise_groups(groups))
        with self._errors(f"searching {collection!r}"):
            if text and text.strip():
                n = max(CANDIDATES, k)
                hits = self._client.query_points(
                    name, limit=k, with_payload=True, with_vectors=True,
                    prefetch=[qm.Prefetch(query=query.tolist(), filter=query_filter, limit=n),
                              qm.Prefetch(query=qm.TextQuery(text=text), using="text", filter=query_filter, limit=n)],
                    query=qm.RrfQuery(rrf=qm.Rrf(k=RRF_K)),
                ).points
            else:
                hits = self._client.query_points(
                    name, query=query.tolist(), query_filter=query_filter, limit=k, with_payload=True
                ).points
        unit = query / (np.linalg.norm(query) or 1.0)
        return [_span(hit, unit) for hit in hits]

    def sentences(self, collection: str, spans: Sequence[Span]) -> tuple[list[Sentence], np.ndarray]:
        self._existing(collection)
        sname = _sname(collection)
        dim = self._dimension(collection)
        found: dict[tuple[str, int], tuple[Sentence, list[float]]] = {}
        with self._errors(f"reading sentences of {collection!r}"):
            if not spans or not self._client.collection_exists(sname):
                return [], np.zeros((0, dim), dtype=np.float32)
            ids = list(dict.fromkeys(s.document_id for s in spans))
            query = qm.Filter(must=[qm.FieldCondition(key="document_id", match=qm.MatchAny(any=ids))])
            offset = None
            while True:
                points, offset = self._client.scroll(sname, scroll_filter=query, limit=512, offset=offset,
                                                     with_payload=True, with_vectors=True)
                for p in points:
                    s = _sentence(p.payload or {})
                    found[(s.document_id, s.index)] = (s, p.vector)  # type: ignore[assignment]
                if offset is None:
                    break
        chosen = overlapping((s for s, _ in found.values()), spans)
        if not chosen:
            return [], np.zeros((0, dim), dtype=np.float32)
        vectors = np.asarray([found[(s.document_id, s.index)][1] for s in chosen], dtype=np.float32)
        return chosen, vectors

    def document_text(self, collection: str, document_id: str) -> str:
        name = self._existing(collection)
        query = qm.Filter(must=[_match("document_id", document_id)])
        rows = []
        offset = None
        with self._errors(f"reading document {document_id!r}"):
            while True:
                points, offset = self._client.scroll(name, scroll_filter=query, limit=256, offset=offset,
                                                     with_payload=["text", "start", "end"])
                rows += [(p.payload["text"], int(p.payload["start"]), int(p.payload["end"]))
                         for p in points if p.payload]
                if offset is None:
                    break
        if not rows:
            raise KeyError(document_id)
        return rebuild_text(rows)

    def collections(self) -> list[CollectionInfo]:
        records = self._scroll(qm.Filter(must=[_match("kind", "collection")]))
        return sorted((self.collection_info(r["collection"]) for r in records), key=lambda c: c.name)

    def collection_info(self, collection: str) -> CollectionInfo:
        name = self._existing(collection)
        with self._errors(f"reading collection {collection!r}"):
            record = self._client.retrieve(REGISTRY, ids=[_record_id(collection)], with_payload=True)
            docs = self._client.count(REGISTRY, count_filter=_documents_of(collection), exact=True).count
            chunks = self._client.count(name, exact=True).count
        return CollectionInfo(name=collection, documents=docs, chunks=chunks, version=_version_of(record))

    def version(self, collection: str) -> str:
        validate_collection_name(collection)
        with self._errors(f"reading collection {collection!r}"):
            record = self._client.retrieve(REGISTRY, ids=[_record_id(collection)], with_payload=True)
        if not record:
            raise UnknownCollection(collection)
        return _version_of(record)

    def documents(self, collection: str) -> dict[str, DocumentRecord]:
        self._existing(collection)
        out = {}
        for r in self._scroll(_documents_of(collection)):
            out[r["document_id"]] = DocumentRecord(
                id=r["document_id"], title=r["title"], source=r["source"], content_hash=r["content_hash"],
                chunk_count=int(r["chunk_count"]), metadata=dict(r.get("metadata") or {}),
                groups=tuple(r.get("groups") or ()),
            )
        return dict(sorted(out.items()))

    def close(self) -> None:
        if self._key is not None:
            _release(self._key)
            self._key = None
        else:
            with self._io or nullcontext():
                self._client.close()

    # -- internals ------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Client calls: serialised for local mode, transport/API errors turned into StoreError."""
        with self._io or nullcontext():
            try:
                yield
            except (StoreError, UnknownCollection, ConfigError):
                raise
            except Exception as e:
                raise StoreError(f"{what}: {e}") from e

    def _ensure_registry(self) -> None:
        with self._lock, self._errors("creating the registry"):
            if not self._client.collection_exists(REGISTRY):
                self._client.create_collection(
                    REGISTRY, vectors_config=qm.VectorParams(size=1, distance=qm.Distance.DOT))
                for key in ("kind", "collection"):
                    self._index(REGISTRY, key, qm.PayloadSchemaType.KEYWORD)

    def _existing(self, collection: str) -> str:
        name = _qname(collection)
        with self._errors(f"looking up {collection!r}"):
            if not self._client.retrieve(REGISTRY, ids=[_record_id(collection)]):
                raise UnknownCollection(collection)
        return name

    def _ensure_collection(self, collection: str, dim: int) -> str:
        name = _qname(collection)
        with self._lock, self._errors(f"creating collection {collection!r}"):
            found = self._client.retrieve(REGISTRY, ids=[_record_id(collection)], with_payload=True)
            if found:
                stored = int((found[0].payload or {}).get("dimension", dim))
                if stored != dim:
                    raise StoreError(f"collection {collection!r} holds {stored}-dimensional vectors, got {dim}")
                return name
            if not self._client.collection_exists(name):
                self._client.create_collection(name, vectors_config=qm.VectorParams(size=dim, distance=qm.Distance.COSINE))
                self._index(name, "document_id", qm.PayloadSchemaType.KEYWORD)
                self._index(name, "chunk_index", qm.PayloadSchemaType.INTEGER)
                self._index(name, "write", qm.PayloadSchemaType.KEYWORD)
                self._index(name, "groups", qm.PayloadSchemaType.KEYWORD)
                self._index(name, "text", qm.TextIndexParams(type=qm.TextIndexType.TEXT, scoring=True))
            self._put_record(_record_id(collection), {"kind": "collection", "collection": collection,
                                                      "dimension": dim, "version": uuid.uuid4().hex})
        return name

    def _ensure_side_collection(self, name: str, dim: int) -> None:
        """The sentences' or the staging collection (collections made before them get them on
        their next write)."""
        with self._lock:
            if not self._client.collection_exists(name):
                self._client.create_collection(name, vectors_config=qm.VectorParams(size=dim, distance=qm.Distance.COSINE))
                for key in ("document_id", "write"):
                    self._index(name, key, qm.PayloadSchemaType.KEYWORD)

    def _dimension(self, collection: str) -> int:
        with self._errors(f"reading collection {collection!r}"):
            found = self._client.retrieve(REGISTRY, ids=[_record_id(collection)], with_payload=True)
        return int((found[0].payload or {}).get("dimension", 0)) if found else 0

    def _index(self, name: str, key: str, schema: Any) -> None:
        import warnings

        with warnings.catch_warnings():  # local mode warns that keyword indexes are no-ops there
            warnings.simplefilter("ignore", UserWarning)
            self._client.create_payload_index(name, key, field_schema=schema, wait=True)

    def _put_record(self, rid: str, payload: dict[str, Any]) -> None:
        self._client.upsert(REGISTRY, points=[qm.PointStruct(id=rid, vector=[1.0], payload=payload)], wait=True)

    def _bump_version(self, collection: str) -> None:
        self._client.set_payload(REGISTRY, payload={"version": uuid.uuid4().hex},
                                 points=[_record_id(collection)], wait=True)

    def _scroll(self, query_filter: qm.Filter) -> Iterator[dict[str, Any]]:
        offset = None
        while True:
            with self._errors("listing the registry"):
                points, offset = self._client.scroll(REGISTRY, scroll_filter=query_filter, limit=256,
                                                     offset=offset, with_payload=True)
            yield from (p.payload or {} for p in points)
            if offset is None:
                return


def _documents_of(collection: str) -> qm.Filter:
    return qm.Filter(must=[_match("kind", "document"), _match("collection", collection)])


def _filter(where: Mapping[str, str] | None, groups: Sequence[str] | None = None) -> qm.Filter | None:
    """`where` as must-match conditions; `groups` (the caller's access groups): a point of a
    document without groups (an empty or, written before groups existed, missing field), or
    one sharing a group."""
    must: list[Any] = []
    if where:
        keys = [key if key in _DOC_FIELDS else f"metadata.{key}" for key in where]
        must += [_match(key, value) for key, value in zip(keys, where.values(), strict=True)]
    if groups is not None:
        allowed: list[Any] = [qm.IsEmptyCondition(is_empty=qm.PayloadField(key="groups"))]
        if groups:
            allowed.append(qm.FieldCondition(key="groups", match=qm.MatchAny(any=list(groups))))
        must.append(qm.Filter(should=allowed))
    return qm.Filter(must=must) if must else None


def _span(hit: qm.ScoredPoint, unit_query: np.ndarray) -> Span:
    p = hit.payload or {}
    score = hit.score
    if isinstance(hit.vector, list):  # hybrid: report cosine similarity, not the fused rank score
        score = float(np.dot(unit_query, np.asarray(hit.vector, dtype=np.float32)))
    return Span(document_id=p["document_id"], chunk_index=int(p["chunk_index"]), title=p.get("title", ""),
                source=p.get("source", ""), text=p.get("text", ""), start=int(p.get("start", 0)),
                end=int(p.get("end", 0)), score=float(score))


def _sentence(p: dict[str, Any]) -> Sentence:
    return Sentence(document_id=p["document_id"], index=int(p["sentence_index"]), text=p.get("text", ""),
                    start=int(p["start"]), end=int(p["end"]), heading=p.get("heading", ""),
                    kind=p.get("kind", "text"))
