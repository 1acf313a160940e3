"""The call tree of one answer: a node per step, kept in memory while it runs, persisted after."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class TraceNode:
    id: str
    parent_id: str | None
    depth: int
    kind: str  # ask | retrieve | plan | answer | merge | reflect | sub_question
    question: str
    span_ids: list[str] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    cache_hit: bool = False
    status: str = "ok"  # ok | error | skipped | degraded
    note: str = ""
    rules: list[str] = field(default_factory=list)  # the rules of rag_rlm.reasoning.rules that fired


class Trace:
    """Thread-safe collector of nodes; `step()` times a node and records its outcome."""

    def __init__(self, trace_id: str | None = None, request_id: str | None = None):
        self.id = trace_id or uuid.uuid4().hex
        self.request_id = request_id
        self.created = time.time()
        self._nodes: list[TraceNode] = []
        self._lock = threading.Lock()

    def add(self, kind: str, question: str, parent: TraceNode | None, depth: int, **fields: Any) -> TraceNode:
        node = TraceNode(id=uuid.uuid4().hex[:12], parent_id=parent.id if parent else None,
                         depth=depth, kind=kind, question=question, **fields)
        with self._lock:
            self._nodes.append(node)
        return node

    def step(self, kind: str, question: str, parent: TraceNode | None, depth: int) -> _Step:
        return _Step(self.add(kind, question, parent, depth))

    @property
    def nodes(self) -> list[TraceNode]:
        with self._lock:
            return list(self._nodes)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "request_id": self.request_id, "created": self.created,
                "nodes": [asdict(n) for n in self.nodes]}


class _Step:
    """Context manager that fills in a node's latency, and its status when the body raises."""

    def __init__(self, node: TraceNode):
        self.node = node

    def __enter__(self) -> TraceNode:
        self._t0 = time.perf_counter()
        return self.node

    def __exit__(self, exc_type, exc, tb) -> None:
        self.node.latency_ms = round((time.perf_counter() - self._t0) * 1000, 3)
        if exc is not None:
            self.node.status = "error"
            self.node.note = f"{type(exc).__name__}: {exc}"
