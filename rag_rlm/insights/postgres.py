"""The question log and the ratings in PostgreSQL (tables of migration 0004), beside the vectors
and the state: every app process writes and reads the same log."""

from __future__ import annotations

from ..memory.tables import MigratedTables
from .records import AskedQuestion, Rating, Window
from .store import vector_bytes, vector_of, window_where

_RATING_COLUMNS = "trace_id, rater, tenant, collection, rating, comment, question, answer, citations"


class PostgresInsights(MigratedTables):
    """Its own small pool (with the vector store's outage behaviour: `pgpool.StorePool`)."""

    POOL_NAME, POOL_SIZE, WHAT = "rag_rlm.insights", 2, "insights store"

    def log(self, asked: AskedQuestion) -> None:
        self._run("INSERT INTO rag_rlm_questions (trace_id, tenant, collection, question, groups, found, cited,"
                  " embedding, asked_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, to_timestamp(%s))",
                  (asked.trace_id, asked.tenant, asked.collection, asked.question, list(asked.groups), asked.found,
                   list(asked.cited), vector_bytes(asked.vector), asked.at))

    def questions(self, window: Window) -> list[AskedQuestion]:
        where, params = window_where(window, "asked_at", "%s", "to_timestamp(%s)")
        rows = self._run("SELECT trace_id, tenant, collection, question, groups, found, cited,"
                         " CASE WHEN found THEN NULL ELSE embedding END, extract(epoch FROM asked_at)::float8"
                         f" FROM rag_rlm_questions WHERE {where} ORDER BY asked_at DESC, id DESC", params, many=True)
        return [AskedQuestion(r[0], r[1], r[2], r[3], r[5], tuple(r[6]), tuple(r[4]), vector_of(r[7]), r[8])
                for r in rows]

    def purge(self, before: float) -> int:
        rows = self._run("WITH q AS (DELETE FROM rag_rlm_questions WHERE asked_at < to_timestamp(%s) RETURNING 1),"
                         " f AS (DELETE FROM rag_rlm_feedback WHERE rated_at < to_timestamp(%s) RETURNING 1)"
                         " SELECT (SELECT count(*) FROM q) + (SELECT count(*) FROM f)", (before, before))
        return int(rows[0])

    def rate(self, rating: Rating) -> None:
        from psycopg.types.json import Jsonb

        self._run(f"INSERT INTO rag_rlm_feedback ({_RATING_COLUMNS}, rated_at)"
                  " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, to_timestamp(%s)) ON CONFLICT (trace_id, rater)"
                  " DO UPDATE SET rating = excluded.rating, comment = excluded.comment, rated_at = excluded.rated_at",
                  (rating.trace_id, rating.rater, rating.tenant, rating.collection, rating.rating, rating.comment,
                   rating.question, rating.answer, Jsonb(rating.citations), rating.at))

    def ratings(self, window: Window) -> list[Rating]:
        where, params = window_where(window, "rated_at", "%s", "to_timestamp(%s)")
        rows = self._run(f"SELECT {_RATING_COLUMNS}, extract(epoch FROM rated_at)::float8 FROM rag_rlm_feedback"
                         f" WHERE {where} ORDER BY rated_at DESC", params, many=True)
        return [Rating(*r[:8], citations=r[8], at=r[9]) for r in rows]

