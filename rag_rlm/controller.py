"""The recursion of DESIGN.md: memo? -> retrieve -> plan -> (answer | sub-questions -> merge)
-> reflect, over one shared token budget, with a trace node per step.

Sub-questions are solved in waves: every sub-question whose inputs are known is in the same wave;
a wave retrieves with one embedding call, plans, answers its leaves with one batched reasoner
call and recurses into the rest in parallel (at most `max_parallel`). A failed sub-question is a
value with a status, never an exception that fails the answer.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from .budget import Budget, Reservation
from .embed import Embedder
from .errors import BudgetExceeded, Cancelled, RagRlmError
from .memo import MemoCache, memo_key
from .memory import VectorStore
from .reasoning.base import Draft, Part, Plan, Reasoner
from .trace import Trace, TraceNode
from .types import Span

# What a step asks for (it gets less when less remains, and trims its evidence to fit).
PLAN_WANT, MERGE_WANT, REFLECT_WANT = 1200, 1500, 2000
ANSWER_WANT_PER_SPAN, ANSWER_WANT_BASE = 280, 200
MIN_STEP = 48  # below this a step is skipped: the degrade path


@dataclass(frozen=True)
class Options:
    top_k: int
    max_depth: int
    max_parallel: int
    reflect: bool
    hybrid: bool


@dataclass
class Context:
    """Everything one request's recursion needs; passed down, never global."""

    store: VectorStore
    embedder: Embedder
    reasoner: Reasoner
    memo: MemoCache
    collection: str
    version: str
    options: Options
    budget: Budget
    trace: Trace
    on_event: Callable[[str, dict], None] = lambda kind, data: None
    cancel: threading.Event | None = None
    notes: list[str] = field(default_factory=list)
    cache_hits: int = 0
    retrievals: int = 0
    llm_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def note(self, text: str) -> None:
        with self._lock:
            if text not in self.notes:
                self.notes.append(text)

    def check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled("the request was cancelled")


@dataclass
class Node:
    """A solved (sub-)question."""

    question: str
    draft: Draft
    spans: list[Span] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    status: str = "ok"
    cache_hit: bool = False

    def evidence(self) -> list[Span]:
        out = list(self.spans)
        for child in self.children:
            out += child.evidence()
        return out


def solve(ctx: Context, question: str) -> Node:
    """The whole flow for the top-level question, reflection included."""
    root = ctx.trace.add("ask", question, None, 0)
    held = _reserve(ctx, REFLECT_WANT, "reflect") if ctx.options.reflect else None
    node = solve_wave(ctx, [question], 0, root)[0]
    if held is not None:
        held.release()
        if node.status == "ok" and node.draft.text:
            node = _reflect(ctx, node, root)
    return node


def solve_wave(ctx: Context, questions: Sequence[str], depth: int, parent: TraceNode) -> list[Node]:
    ctx.check()
    unique = list(dict.fromkeys(questions))  # the same sub-question twice is solved once
    solved = {q: _from_memo(ctx, q, depth, parent) for q in unique}
    todo = [q for q in unique if solved[q] is None]
    if todo:
        spans = _retrieve(ctx, todo, depth, parent)
        plans = [_plan(ctx, q, s, depth, parent) for q, s in zip(todo, spans, strict=True)]
        leaves = [i for i, p in enumerate(plans) if not p.sub_questions]
        for i, node in zip(leaves, _answer(ctx, [todo[i] for i in leaves], [spans[i] for i in leaves], depth, parent),
                           strict=True):
            solved[todo[i]] = node
        composite = [i for i, p in enumerate(plans) if p.sub_questions]
        with ThreadPoolExecutor(max_workers=ctx.options.max_parallel) as pool:
            futures = {i: pool.submit(_decompose, ctx, todo[i], spans[i], plans[i], depth, parent) for i in composite}
            for i, future in futures.items():
                solved[todo[i]] = future.result()
        for q in todo:
            _to_memo(ctx, q, depth, solved[q])
    return [solved[q] for q in questions]


def _retrieve(ctx: Context, questions: list[str], depth: int, parent: TraceNode) -> list[list[Span]]:
    vectors = ctx.embedder.embed(questions)  # one embedding call for the wave
    out = []
    for q, vector in zip(questions, vectors, strict=True):
        with ctx.trace.step("retrieve", q, parent, depth) as node:
            spans = ctx.store.search(ctx.collection, vector, ctx.options.top_k,
                                     text=q if ctx.options.hybrid else None)
            node.span_ids = [s.id for s in spans]
        out.append(spans)
    ctx.count(retrievals=len(questions))
    return out


def _plan(ctx: Context, question: str, spans: list[Span], depth: int, parent: TraceNode) -> Plan:
    if depth >= ctx.options.max_depth:
        return Plan(note="depth limit")
    # Decompose only if the budget can also pay for the children and their merge.
    if ctx.budget.remaining < PLAN_WANT // 4 + MERGE_WANT // 4 + 2 * MIN_STEP:
        ctx.note("budget short: no further decomposition")
        return Plan(note="budget short")
    with ctx.trace.step("plan", question, parent, depth) as node:
        plan = _run_step(ctx, PLAN_WANT, node, lambda allowance: ctx.reasoner.plan(question, spans, allowance))
        if plan is None:
            return Plan(note="budget short")
        node.note = plan.note
    if depth == 0 and plan.sub_questions:
        ctx.on_event("plan", {"question": question, "sub_questions": [s.text for s in plan.sub_questions]})
    return plan


def _answer(ctx: Context, questions: list[str], spans: list[list[Span]], depth: int, parent: TraceNode) -> list[Node]:
    """Leaves, batched through the reasoner in groups of `max_parallel`."""
    nodes: list[Node] = []
    step = ctx.options.max_parallel
    for lo in range(0, len(questions), step):
        qs, ss = questions[lo:lo + step], spans[lo:lo + step]
        want = sum(ANSWER_WANT_BASE + ANSWER_WANT_PER_SPAN * len(s) for s in ss)
        with ctx.trace.step("answer", " | ".join(qs), parent, depth) as node:
            node.span_ids = [s.id for group in ss for s in group]
            drafts = _run_step(ctx, want, node, lambda allowance, qs=qs, ss=ss: ctx.reasoner.answer(qs, ss, allowance))
        if drafts is None:
            drafts = [Draft("", error="budget") for _ in qs]
        nodes += [Node(q, d, list(s), status=_status(d)) for q, s, d in zip(qs, ss, drafts, strict=True)]
    return nodes


def _decompose(ctx: Context, question: str, spans: list[Span], plan: Plan, depth: int, parent: TraceNode) -> Node:
    """Answer the sub-questions wave by wave (dependent ones once their inputs are known), then
    merge them with the answer from the question's own evidence."""
    me = ctx.trace.add("sub_questions", question, parent, depth, note=plan.note)
    merge_hold = _reserve(ctx, MERGE_WANT, "merge")
    own = _answer(ctx, [question], [spans], depth + 1, me)[0]
    answers: dict[int, Node] = {}
    pending = list(range(len(plan.sub_questions)))
    while pending:
        ready = [i for i in pending if all(d in answers for d in plan.sub_questions[i].depends_on)]
        if not ready:  # a dependency cycle or a dangling index: the model's fault, not ours
            ready = pending
        texts = [_fill(plan.sub_questions[i].text, answers) for i in ready]
        for i, node in zip(ready, _guarded_wave(ctx, texts, depth + 1, me), strict=True):
            answers[i] = node
            if depth == 0:
                ctx.on_event("sub_answer", {"question": node.question, "answer": node.draft.text, "status": node.status})
        pending = [i for i in pending if i not in answers]
    children = [answers[i] for i in range(len(plan.sub_questions))]
    parts = [Part(question, own.draft)] + [Part(c.question, c.draft) for c in children if c.status == "ok"]
    if merge_hold is not None:
        merge_hold.release()
    with ctx.trace.step("merge", question, me, depth) as node:
        merged = _run_step(ctx, MERGE_WANT, node, lambda allowance: ctx.reasoner.merge(question, parts, allowance))
    merged = merged or own.draft
    return Node(question, merged, list(spans), [own, *children], status=_status(merged))


def _guarded_wave(ctx: Context, questions: list[str], depth: int, parent: TraceNode) -> list[Node]:
    """A wave whose failure is reported per sub-question instead of failing the answer."""
    try:
        return solve_wave(ctx, questions, depth, parent)
    except (Cancelled, BudgetExceeded):
        raise
    except RagRlmError as e:
        ctx.note(f"sub-questions failed: {e}")
        return [Node(q, Draft("", error=str(e)), status="error") for q in questions]


def _reflect(ctx: Context, node: Node, root: TraceNode) -> Node:
    """Check the draft against the evidence; retrieve once more for what is still missing."""
    question = node.question
    with ctx.trace.step("reflect", question, root, 0) as step:
        checked = _run_step(ctx, REFLECT_WANT, step,
                            lambda allowance: ctx.reasoner.reflect(question, node.draft, node.evidence(), allowance))
    if checked is None or not checked.ok or not checked.text:
        return node
    draft, extra = checked, []
    if checked.missing and not ctx.budget.out_of_time() and ctx.options.max_depth > 0:
        extra = _guarded_wave(ctx, list(checked.missing), 1, root)
        parts = [Part(question, checked)] + [Part(n.question, n.draft) for n in extra if n.status == "ok" and n.draft.text]
        if len(parts) > 1:
            with ctx.trace.step("merge", question, root, 0) as step:
                draft = _run_step(ctx, MERGE_WANT, step,
                                  lambda allowance: ctx.reasoner.merge(question, parts, allowance)) or checked
    return Node(question, draft, node.spans, node.children + extra, node.status, node.cache_hit)


def _run_step(ctx: Context, want: int, node: TraceNode, call: Callable[[int], object]):
    """Reserve, run, settle: the one place where tokens are spent. None when the budget or the
    clock is too short for the step (it is then skipped and the trace says so)."""
    ctx.check()
    if ctx.budget.out_of_time():
        node.status = "skipped"
        ctx.note("request timeout: remaining steps skipped")
        return None
    held = _reserve(ctx, want, node.kind)
    if held is None:
        node.status = "skipped"
        return None
    try:
        result = call(held.granted)
    except BaseException:
        held.release()
        raise
    drafts = result if isinstance(result, list) else [result]
    tokens_in = sum(d.tokens_in for d in drafts)
    tokens_out = sum(d.tokens_out for d in drafts)
    held.settle(tokens_in + tokens_out)
    node.tokens_in, node.tokens_out = tokens_in, tokens_out
    ctx.count(llm_calls=sum(d.llm_calls for d in drafts))
    if any(getattr(d, "error", None) for d in drafts):
        node.status = "error"
        node.note = "; ".join(sorted({d.error for d in drafts if getattr(d, "error", None)}))
    return result


def _reserve(ctx: Context, want: int, what: str) -> Reservation | None:
    held = ctx.budget.reserve(want, MIN_STEP)
    if held is None:
        ctx.note(f"budget short: {what} skipped")
    return held


def _status(draft: Draft) -> str:
    return "ok" if draft.ok else "error"


_PLACEHOLDER = re.compile(r"#(\d+)")


def _fill(text: str, answers: dict[int, Node]) -> str:
    """Put the answers of earlier sub-questions into "#1"-style placeholders."""
    def repl(m: re.Match[str]) -> str:
        node = answers.get(int(m.group(1)) - 1)
        return _short(node.draft.text) if node and node.draft.text else m.group(0)

    return _PLACEHOLDER.sub(repl, text)


def _short(answer: str) -> str:
    return re.sub(r"\s*\[\d+\]", "", answer.split("\n")[0])[:200].strip()


def _from_memo(ctx: Context, question: str, depth: int, parent: TraceNode) -> Node | None:
    value = ctx.memo.get(_key(ctx, question, depth))
    if value is None:
        return None
    ctx.count(cache_hits=1)
    ctx.trace.add("memo", question, parent, depth, cache_hit=True)
    draft = Draft(value["text"], tuple(Span(**s) for s in value["cited"]))
    return Node(question, draft, list(draft.cited), cache_hit=True)


def _to_memo(ctx: Context, question: str, depth: int, node: Node) -> None:
    # Only complete answers are remembered: a degraded or failed one should be retried.
    if node.status == "ok" and node.draft.text and not ctx.notes:
        ctx.memo.put(_key(ctx, question, depth),
                     {"text": node.draft.text, "cited": [asdict(s) for s in node.draft.cited]})


def _key(ctx: Context, question: str, depth: int) -> str:
    o = ctx.options
    shape = {"top_k": o.top_k, "depth_left": o.max_depth - depth, "hybrid": o.hybrid,
             "reasoner": type(ctx.reasoner).__name__}
    return memo_key(question, ctx.collection, ctx.version, shape)
