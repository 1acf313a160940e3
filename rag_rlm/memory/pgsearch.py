"""The SQL of PgVectorStore.search: plain top-k by cosine, or hybrid (vector + full text) fused
by reciprocal rank in one query, as in pgvector-python's hybrid search example.

The keyword side weighs each word of the question by its rarity in the collection (BM25's idf,
ln(1 + (N - df + 0.5) / (df + 0.5)), df counted on the GIN index), and a chunk scores the sum over
the question's words it holds. ts_rank, which the side used before, counts every word alike: a
chunk holding three common words of the question outranked the one naming its rare subject, and
hybrid search lost a sixth of MuSiQue's supporting paragraphs (bench/eval_results.md).

Rows come back as (document_id, chunk_index, title, source, text, start, end, cosine similarity),
best first.

Access groups (`groups`, the caller's) are a condition on the chunk row itself, `(groups = '{}'
OR groups && caller's)`, so the unfiltered-by-`where` path keeps the HNSW scan with the condition
inside it; the store widens the scan (hnsw.ef_search) so that k allowed rows survive it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
from psycopg import sql

RRF_K = 60  # the usual reciprocal-rank-fusion constant
CANDIDATES = 40  # per side of the fusion; a k larger than this widens it
_DOC_FIELDS = ("title", "source")

_COLUMNS = "c.document_id, c.chunk_index, d.title, d.source, c.text, c.start_pos, c.end_pos"
# One lexeme as a tsquery, quoted (quotes and backslashes doubled) so that it is never query syntax.
_LEXEME_QUERY = r"('''' || replace(replace(lex, '\', '\\'), '''', '''''') || '''')::tsquery"
_JOIN_DOCS = " JOIN rag_rlm_documents d ON d.collection_id = %(cid)s AND d.document_id = c.document_id"


def search_sql(
    table: sql.Identifier,
    cid: int,
    vector: np.ndarray,
    k: int,
    where: Mapping[str, str] | None,
    text: str | None,
    groups: Collection[str] | None = None,
) -> tuple[sql.Composed, dict[str, Any]]:
    filter_sql, params = _filter(where or {}, groups)
    params.update(q=vector, cid=cid, k=k)
    nearest = _nearest(table, filter_sql, where, groups)
    if not text or not text.strip():
        params["n"] = k
        query = sql.SQL("SELECT * FROM ({}) hits ORDER BY score DESC").format(nearest)
        return query, params
    params.update(text=text, n=max(CANDIDATES, k), rrf=RRF_K)
    query = sql.SQL(
        "WITH semantic AS ("
        "  SELECT document_id, chunk_index, row_number() OVER (ORDER BY score DESC) AS rank FROM ({n}) s),"
        " terms AS (SELECT DISTINCT " + _LEXEME_QUERY + " AS q"
        "  FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) lex),"
        " weighted AS MATERIALIZED (SELECT q, ln(1 + (n - df + 0.5) / (df + 0.5)) AS idf FROM"
        "  (SELECT q, (SELECT count(*) FROM {t} c WHERE c.tsv @@ terms.q) AS df FROM terms) x,"
        "  (SELECT count(*) AS n FROM {t}) total),"
        " keyword AS ("
        "  SELECT c.document_id, c.chunk_index,"
        "   row_number() OVER (ORDER BY sum(w.idf) DESC) AS rank"
        "  FROM {t} c" + _JOIN_DOCS + " JOIN weighted w ON c.tsv @@ w.q"
        "  WHERE TRUE {f}"
        "  GROUP BY c.document_id, c.chunk_index"
        "  ORDER BY sum(w.idf) DESC LIMIT %(n)s),"
        " fused AS ("
        "  SELECT document_id, chunk_index,"
        "   coalesce(1.0 / (%(rrf)s + s.rank), 0.0) + coalesce(1.0 / (%(rrf)s + kw.rank), 0.0) AS rrf"
        "  FROM semantic s FULL OUTER JOIN keyword kw USING (document_id, chunk_index)"
        "  ORDER BY rrf DESC LIMIT %(k)s)"
        " SELECT " + _COLUMNS + ", 1 - (c.embedding <=> %(q)s) AS score"
        " FROM fused f JOIN {t} c USING (document_id, chunk_index)" + _JOIN_DOCS
        + " ORDER BY f.rrf DESC, score DESC"
    ).format(n=nearest, t=table, f=filter_sql)
    return query, params


def _nearest(table: sql.Identifier, filter_sql: sql.Composable, where: Mapping[str, str] | None,
             groups: Collection[str] | None) -> sql.Composed:
    """The %(n)s chunks nearest to %(q)s, with their document's title and source. Without `where`,
    the ORDER BY ... LIMIT runs on the chunk table alone (access groups are a condition on its
    rows) so the planner walks the HNSW index."""
    if not where:
        allowed = sql.SQL("") if groups is None else sql.SQL(" WHERE " + _ALLOWED)
        source = sql.SQL("(SELECT * FROM {} c{} ORDER BY embedding <=> %(q)s LIMIT %(n)s) c").format(table, allowed)
        tail = sql.SQL("")
    else:
        source = sql.SQL("{} c").format(table)
        tail = sql.SQL(" WHERE TRUE {} ORDER BY c.embedding <=> %(q)s LIMIT %(n)s").format(filter_sql)
    return sql.SQL(
        "SELECT " + _COLUMNS + ", 1 - (c.embedding <=> %(q)s) AS score FROM {}" + _JOIN_DOCS + "{}"
    ).format(source, tail)


# a document without groups is everyone's; else the caller must share one of its groups
_ALLOWED = "(c.groups = '{}' OR c.groups && %(groups)s::text[])"


def _filter(where: Mapping[str, str], groups: Collection[str] | None = None) -> tuple[sql.Composable, dict[str, Any]]:
    """`AND ...` conditions on the document: its id, title, source or a metadata key, and its
    access groups."""
    parts: list[sql.Composable] = []
    params: dict[str, Any] = {}
    if groups is not None:
        params["groups"] = sorted(groups)
        parts.append(sql.SQL("AND " + _ALLOWED))
    for i, (key, value) in enumerate(where.items()):
        name = f"w{i}"
        params[name] = _as_text(value)
        if key == "document_id":
            parts.append(sql.SQL("AND c.document_id = {}").format(sql.Placeholder(name)))
        elif key in _DOC_FIELDS:
            parts.append(sql.SQL("AND d.{} = {}").format(sql.Identifier(key), sql.Placeholder(name)))
        else:
            params[name + "k"] = key
            parts.append(sql.SQL("AND d.metadata ->> {} = {}").format(
                sql.Placeholder(name + "k"), sql.Placeholder(name)))
    return sql.SQL(" ").join(parts), params


def _as_text(value: Any) -> str:
    """Metadata compares as JSON text (`->>`): true/false for booleans, str() otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
