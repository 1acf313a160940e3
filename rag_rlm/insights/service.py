"""`Insights`: the question log, the answer ratings and the report over them, for one process
(the server holds one; so does `rag-rlm insights`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import Settings
from ..result import Result
from ..types import DocumentRecord
from .access import CanRead
from .cluster import THRESHOLD
from .recorder import Embed, QuestionRecorder
from .records import AskedQuestion, Rating, Window
from .report import build
from .store import InsightStore, open_insight_store

FLUSH_SECONDS = 2.0  # a report waits this long for the questions this process has yet to write


class Insights:
    def __init__(self, store: InsightStore, *, embed: Embed | None = None, store_questions: bool = True,
                 threshold: float = THRESHOLD):
        self.store = store
        self.store_questions = store_questions
        self.threshold = threshold
        self._recorder = QuestionRecorder(store, embed) if store_questions else None

    @classmethod
    def open(cls, settings: Settings, embed: Embed | None = None) -> Insights:
        store = open_insight_store(settings.store, settings.data_dir, timeout=settings.store_timeout,
                                   statement_timeout=settings.store_statement_timeout)
        return cls(store, embed=embed, store_questions=settings.store_questions)

    def record(self, result: Result, collection: str, caller: Any = None) -> None:
        """Log an answered question (in the background), when `store_questions` allows it.
        `collection` is the stored name; `caller` the server's Caller (tenant, access groups)."""
        if self._recorder is None:
            return
        cited = tuple(dict.fromkeys(c.span.document_id for c in result.citations))
        self._recorder.submit(AskedQuestion(
            trace_id=result.trace_id, tenant=getattr(caller, "tenant", None) or "", collection=collection,
            question=result.resolved_question or result.question, found=result.found, cited=cited,
            groups=_groups(caller)))

    def rate(self, rating: Rating) -> None:
        self.store.rate(rating)

    def report(self, window: Window, documents: Mapping[str, DocumentRecord], can_read: CanRead) -> dict[str, Any]:
        if self._recorder is not None:
            self._recorder.flush(FLUSH_SECONDS)
        return build(self.store.questions(window), self.store.ratings(window), documents, can_read,
                     threshold=self.threshold)

    def purge(self, before: float) -> int:
        return self.store.purge(before)

    def close(self) -> None:
        if self._recorder is not None:
            self._recorder.close()
        self.store.close()


def _groups(caller: Any) -> tuple[str, ...]:
    """The asker's access groups as logged (an unrestricted caller: none)."""
    access = getattr(caller, "access", None)
    return tuple(sorted(access.groups)) if access is not None else ()
