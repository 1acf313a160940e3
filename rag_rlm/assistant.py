"""The Python API: `Assistant(settings).ask(question)` -> a cited `Result`.

It owns the long-lived parts (store, embedder, reasoner, memo cache, shared state) and builds a
fresh `Context` per request for the controller's recursion.

Access groups (rag_rlm.access): every read takes the caller's `access` (default: everything, as
the CLI and an open server read). A document outside it is reported exactly like a missing one,
and a trace carries the access set it was answered for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import controller
from .access import EVERYTHING, Access, normalise_groups
from .budget import Budget
from .config import Settings, validate_collection_name
from .controller import Context, Node, Options
from .embed import Embedder, cached, load_embedder
from .errors import BudgetExceeded
from .memo import MemoCache
from .memory import Store, open_store
from .reasoning.base import Reasoner, Turn
from .reasoning.build import build_reasoner
from .render import Numbering, render
from .result import Result, SubAnswer, Usage
from .trace import Trace
from .types import CollectionInfo, DocumentRecord

if TYPE_CHECKING:
    from .ingest.pipeline import IngestSummary

TRACE_KIND = "trace"
JOB_KIND = "upload_job"
JOB_CANCEL_KIND = "upload_job_cancel"  # apart from the job: its owner rewrites the job, never this


class Assistant:
    def __init__(
        self,
        settings: Settings | None = None,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        reasoner: Reasoner | None = None,
        state: Any = None,
    ):
        self.settings = settings or Settings.from_env()
        s = self.settings
        self.store = store or open_store(s.store, timeout=s.store_timeout, statement_timeout=s.store_statement_timeout)
        self.embedder = embedder or load_embedder(s.embed_model, s.embed_device, s.batch_size, s.model_lanes or None)
        # answering's view of it: a text met again (the question, at each step) is not encoded again
        self.answer_embedder = cached(self.embedder)
        self.reasoner = reasoner or build_reasoner(s, self.answer_embedder)
        # what checks a follow-up's rewrite: the reasoner's reader, when it reads with one
        self.scorer = getattr(self.reasoner, "scorer", None)
        self._owns_state = state is None
        if state is None:
            from .memory.state import open_state

            state = open_state(s.store, s.data_dir, timeout=s.store_timeout, statement_timeout=s.store_statement_timeout)
        self.state = state
        self.memo = MemoCache(s.memo_size, shared=state)
        from .sources.service import Sources

        # the collection's folders, repositories and sites; syncs write with this embedder
        self.sources = Sources(self.store, state, s, lambda: self.embedder)

    def ask(
        self,
        question: str,
        collection: str | None = None,
        *,
        top_k: int | None = None,
        max_depth: int | None = None,
        token_budget: int | None = None,
        reflect: bool | None = None,
        history: list[dict] | None = None,
        on_event: Callable[[str, dict], None] | None = None,
        cancel: threading.Event | None = None,
        request_id: str | None = None,
        access: Access = EVERYTHING,
    ) -> Result:
        s = self.settings
        collection = validate_collection_name(collection or s.collection)
        version = self.store.version(collection)  # UnknownCollection if absent
        started = time.perf_counter()
        emit = on_event or _ignore
        budget = Budget(token_budget or s.token_budget, s.request_timeout)
        options = Options(top_k or s.top_k, s.max_depth if max_depth is None else max_depth,
                          s.max_parallel, s.reflect if reflect is None else reflect, s.hybrid, s.sentence_memory)
        ctx = Context(self.store, self.answer_embedder, self.reasoner, self.memo, collection, version, options,
                      budget, Trace(request_id=request_id), emit, cancel, scorer=self.scorer, access=access)
        resolved = self._resolve(ctx, question, history)
        node = controller.solve(ctx, resolved)
        result = _result(ctx, node, question, time.perf_counter() - started)
        result.resolved_question = resolved
        self._save_trace(ctx, result)
        if ctx.budget.out_of_time() and not result.answer:
            raise BudgetExceeded(f"request timed out after {s.request_timeout:g}s", partial_answer=result)
        if result.answer:
            emit("answer", {"text": result.answer})
        return result

    def _resolve(self, ctx: Context, question: str, history: list[dict] | None) -> str:
        """A follow-up ("And vision?") as the question it stands for, given the earlier turns."""
        turns = [Turn(str(m.get("role", "")), str(m.get("content", ""))) for m in history or ()
                 if m.get("role") in ("user", "assistant") and m.get("content")]
        if not turns:
            return question
        return controller.condense(ctx, question, turns)

    def trace(self, trace_id: str, access: Access = EVERYTHING) -> dict | None:
        """A saved trace, without its access set; None when missing or when `access` does not
        cover the access set it was answered for (it may name documents outside `access`)."""
        data = self.state.get(TRACE_KIND, trace_id)
        if data is None or not access.covers(Access.from_dict(data.get("access"))):
            return None
        return {k: v for k, v in data.items() if k != "access"}

    def embed_questions(self, questions: Sequence[str]) -> np.ndarray:
        """The questions' vectors as retrieval computes them (the answer embedder remembers the
        texts it encoded: a question answered a moment ago is not encoded again)."""
        return self.answer_embedder.embed(questions)

    def close(self) -> None:
        """Close the store, and the state store this assistant opened (for pgserver:// that
        lets go of the embedded PostgreSQL: rag_rlm.memory.embedded)."""
        self.store.close()
        if self._owns_state and hasattr(self.state, "close"):
            self.state.close()

    # -- the facade the server uses: collections, documents, ingest, jobs, health ------------------

    def collections(self) -> list[CollectionInfo]:
        """Every stored collection, by name."""
        return self.store.collections()

    def collection_info(self, name: str) -> CollectionInfo:
        """Counts and content version of one collection; UnknownCollection when absent."""
        return self.store.collection_info(validate_collection_name(name))

    def documents(self, collection: str, access: Access = EVERYTHING) -> list[DocumentRecord]:
        """The collection's documents `access` reads, by id; UnknownCollection when absent."""
        self.collection_info(collection)
        return sorted((r for r in self.store.documents(collection).values() if access.allows(r.groups)),
                      key=lambda r: r.id)

    def document(self, collection: str, document_id: str, access: Access = EVERYTHING) -> dict[str, Any]:
        """One document's record and its whole text (citation offsets index into `text`).
        UnknownCollection, or KeyError for a missing document or one `access` does not read."""
        record = self._record(collection, document_id, access)
        return {"id": record.id, "title": record.title, "source": record.source,
                "content_hash": record.content_hash, "chunks": record.chunk_count,
                "metadata": record.metadata, "groups": list(record.groups),
                "text": self.store.document_text(collection, document_id)}

    def delete_document(self, collection: str, document_id: str, access: Access = EVERYTHING) -> bool:
        """Remove a document and its chunks; False when it was not there (or `access` does not
        read it). UnknownCollection when the collection is absent."""
        try:
            self._record(collection, document_id, access)
        except KeyError:
            return False
        return self.store.delete_document(collection, document_id)

    def set_groups(self, collection: str, document_id: str, groups: Iterable[str],
                   access: Access = EVERYTHING) -> DocumentRecord:
        """Give a document new access groups (validated: GroupError names a bad one) without
        embedding it again; the collection's version changes, so memo entries die. Its record
        afterwards; KeyError when it is missing or `access` does not read it (a caller may
        give away its own access to it)."""
        wanted = normalise_groups(groups)
        self._record(collection, document_id, access)
        if not self.store.set_groups(collection, document_id, wanted):
            raise KeyError(document_id)  # deleted meanwhile
        return self._record(collection, document_id, EVERYTHING)

    def _record(self, collection: str, document_id: str, access: Access) -> DocumentRecord:
        self.collection_info(collection)
        record = self.store.documents(collection)[document_id]  # KeyError when missing
        if not access.allows(record.groups):
            raise KeyError(document_id)  # outside the caller's groups: as if it were not there
        return record

    def ingest_files(self, paths: Iterable[str | Path], collection: str, *,
                     progress: bool | Callable[[int, int | None, int], None] = False,
                     stop: threading.Event | None = None, relative_sources: bool = False,
                     groups: Iterable[str] | None = None, access: Access = EVERYTHING) -> IngestSummary:
        """Files and folders into `collection` through the ingest pipeline (idempotent: unchanged
        files are skipped, changed ones replaced). FileNotFoundError for a missing path.
        `progress`: a bar on a terminal, or a callback (documents done, total or None, chunks
        written); `stop`: once set, the run ends after the document being written. `groups`:
        the documents' access groups (None keeps stored ones); a stored document `access` does
        not read is not replaced."""
        from .ingest.pipeline import ingest_paths

        return ingest_paths(paths, collection=validate_collection_name(collection), store=self.store,
                            embedder=self.embedder, settings=self.settings, progress=progress, stop=stop,
                            relative_sources=relative_sources, access=access,
                            groups=None if groups is None else normalise_groups(groups))

    def save_job(self, job: dict[str, Any]) -> None:
        """Record a background job (keyed by `job["id"]`) where every app process can read it."""
        self.state.put(JOB_KIND, job["id"], job)

    def job(self, job_id: str) -> dict[str, Any] | None:
        """A job recorded by `save_job`, or None."""
        return self.state.get(JOB_KIND, job_id)

    def jobs(self, limit: int, **match: Any) -> list[dict[str, Any]]:
        """Up to `limit` jobs whose fields equal `match` (e.g. tenant=..., status=...), the most
        recently saved first."""
        return self.state.items(JOB_KIND, match, limit)

    def request_job_cancel(self, job_id: str) -> None:
        """Ask whichever process runs the job to stop it (it looks with `job_cancel_requested`)."""
        self.state.put(JOB_CANCEL_KIND, job_id, {"requested": time.time()})

    def job_cancel_requested(self, job_id: str) -> bool:
        return self.state.get(JOB_CANCEL_KIND, job_id) is not None

    def prune_records(self, older_than_seconds: float, *, active_jobs: Iterable[str]) -> dict[str, int]:
        """Delete answer traces, jobs and job cancel flags not written for `older_than_seconds`,
        except jobs whose status is one of `active_jobs` (whatever their age: their owner, or
        the next server start, settles them); how many of each kind went."""
        keep = [{"status": status} for status in active_jobs]
        return {TRACE_KIND: self.state.prune(TRACE_KIND, older_than_seconds),
                JOB_KIND: self.state.prune(JOB_KIND, older_than_seconds, keep=keep),
                JOB_CANCEL_KIND: self.state.prune(JOB_CANCEL_KIND, older_than_seconds)}

    def health(self) -> dict[str, Any]:
        """Whether the store answers: `{"reachable": True, "collections": n}`, or `reachable`
        False with the error. Never raises: a health check reports failures."""
        try:
            count = len(self.store.collections())
        except Exception as e:
            return {"reachable": False, "error": f"{type(e).__name__}: {e}"}
        return {"reachable": True, "collections": count}

    def _save_trace(self, ctx: Context, result: Result) -> None:
        data = ctx.trace.to_dict()
        data.update(collection=ctx.collection, question=result.question, status=result.status,
                    access=ctx.access.to_dict())
        data.update(answer=result.answer, found=result.found, citations=[_cited(c) for c in result.citations])
        self.state.put(TRACE_KIND, ctx.trace.id, data)


def _cited(citation: Any) -> dict[str, Any]:
    """A citation as a trace keeps it (what answer feedback stores with the rating): no text."""
    s = citation.span
    return {"n": citation.n, "document_id": s.document_id, "title": s.title, "chunk_index": s.chunk_index,
            "start": s.start, "end": s.end}


def _ignore(kind: str, data: dict) -> None:
    """The event sink of a caller that does not stream."""


def _result(ctx: Context, node: Node, question: str, seconds: float) -> Result:
    numbering = Numbering()
    shown = render(node.draft, ctx.collection, numbering)
    numbering.freeze()
    subs = [_sub_answer(child, ctx.collection, numbering) for child in node.children[1:]]  # [0]: own answer
    failed = any(sub.status != "ok" for sub in subs)
    tokens_in, tokens_out = _tokens(ctx)
    usage = Usage(llm_calls=ctx.llm_calls, tokens_in=tokens_in, tokens_out=tokens_out, cache_hits=ctx.cache_hits,
                  retrievals=ctx.retrievals, seconds=round(seconds, 4), token_budget=ctx.budget.total)
    status = "partial" if failed or not node.draft.ok else ("degraded" if ctx.notes else "ok")
    evidence = _unique(node.evidence())
    parts = node.draft.parts
    related = [] if node.draft.found else _related(evidence)
    return Result(question, ctx.collection, shown.text, shown.citations, subs, usage, ctx.trace.id, status,
                  list(ctx.notes), evidence, found=node.draft.found,
                  confidence=max((p.confidence for p in parts), default=0.0), parts=shown.parts, lead=shown.lead,
                  short_answer=parts[0].answer if len(parts) == 1 and parts[0].found else "", related=related)


def _sub_answer(node: Node, collection: str, numbering: Numbering) -> SubAnswer:
    shown = render(node.draft, collection, numbering)
    children = node.children[1:] if node.children else []
    numbers = sorted({n for p in shown.parts for n in p.citations})
    return SubAnswer(node.question, shown.text if node.draft.parts else "", node.status, node.draft.error, numbers,
                     node.cache_hit, [_sub_answer(c, collection, numbering) for c in children],
                     node.draft.found, node.sub.focus, node.sub.kind)


def _related(evidence: list) -> list[dict[str, str]]:
    """The documents read, best first: where to look when the answer is not there."""
    seen: dict[str, str] = {}
    for span in sorted(evidence, key=lambda s: -s.score):
        seen.setdefault(span.document_id, span.title)
    return [{"id": k, "title": v} for k, v in list(seen.items())[:5]]


def _tokens(ctx: Context) -> tuple[int, int]:
    nodes = ctx.trace.nodes
    return sum(n.tokens_in for n in nodes), sum(n.tokens_out for n in nodes)


def _unique(spans: list) -> list:
    return list({s.id: s for s in spans}.values())
