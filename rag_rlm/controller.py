"""The recursion of DESIGN.md: memo? -> retrieve -> plan -> (answer | sub-questions -> merge)
-> reflect, over one shared token budget, with a trace node per step.

Sub-questions are solved in waves: every sub-question whose inputs are known is in the same wave;
a wave retrieves with one embedding call and one sentence-memory read, plans, answers its leaves
with one batched reasoner call and recurses into the rest in parallel (at most `max_parallel`).
A failed sub-question is a value with a status, never an exception that fails the answer.

Every retrieval searches with the caller's access set (`Context.access`: rag_rlm.access), inside
the store's query, and the memo key names it: an answer built from documents of a group is
never served to a caller outside it.

Budget: a step reserves what it will read (the question and its evidence, counted with the
embedder's tokenizer) plus room for what it writes, and settles with what it spent. Nothing is
held back for later steps but a small floor for a decomposition's merge and the final
reflection, so a request is only cut short when its budget is really spent.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from .access import EVERYTHING, Access
from .budget import Budget, Reservation
from .embed import Embedder
from .errors import BudgetExceeded, Cancelled, RagRlmError
from .memo import MemoCache, memo_key
from .memory import Store
from .reader.data import reader_text
from .reasoning.base import (
    HOP,
    SIDE,
    Draft,
    Evidence,
    EvidenceSentence,
    Part,
    Plan,
    Reasoner,
    SentenceScorer,
    SubQuestion,
    Turn,
    failed,
)
from .reasoning.claims import code_names, name_like, thing_named
from .reasoning.forms import core_question, remarked_after
from .reasoning.serialize import node_from_dict, node_to_dict
from .trace import Trace, TraceNode
from .types import Sentence, Span

WRITE_WANT = 256  # room for what a step writes (an LLM completion; the extractive reasoner writes less)
PROMPT_WANT = 200  # a prompt's own words (an LLM's instructions)
PLAN_SPANS = 3  # spans a plan step reads at most
FLOOR = 300  # held back for a merge and for the reflection while the steps before them run
MIN_STEP = 48  # below this a step is skipped: the degrade path


@dataclass(frozen=True)
class Options:
    top_k: int
    max_depth: int
    max_parallel: int
    reflect: bool
    hybrid: bool
    sentence_memory: bool = True


@dataclass
class Context:
    """Everything one request's recursion needs; passed down, never global."""

    store: Store
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
    scorer: SentenceScorer | None = None  # checks a follow-up's rewrite (the reader)
    access: Access = EVERYTHING  # the documents the caller reads
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

    def tokens(self, text: str) -> int:
        """Tokens of a question or span text (the Assistant's embedder remembers the counts)."""
        return self.embedder.count_tokens(text)


@dataclass
class Node:
    """A solved (sub-)question."""

    sub: SubQuestion
    draft: Draft
    spans: list[Span] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)  # [0] is the question's own answer when decomposed
    status: str = "ok"
    cache_hit: bool = False
    sentences: list[EvidenceSentence] = field(default_factory=list)  # the spans' stored ones (none from the memo)

    @property
    def question(self) -> str:
        return self.sub.text

    def tree(self) -> list[Node]:
        """This node and those under it, each before its children."""
        return [self, *(n for child in self.children for n in child.tree())]

    def evidence(self) -> list[Span]:
        return [s for n in self.tree() for s in n.spans]

    def stored_sentences(self) -> list[EvidenceSentence]:
        return [e for n in self.tree() for e in n.sentences]


def solve(ctx: Context, question: str) -> Node:
    """The whole flow for the top-level question, reflection included."""
    root = ctx.trace.add("ask", question, None, 0)
    held = _reserve(ctx, FLOOR, "reflect") if ctx.options.reflect else None
    # with reflection on, what is remembered is the reflected answer (below), not the draft
    node = solve_wave(ctx, [_root(question)], 0, root, remember=not ctx.options.reflect)[0]
    if held is not None:
        held.release()
        if node.status == "ok" and node.draft.parts and not node.cache_hit:
            node = _reflect(ctx, node, root)
            _to_memo(ctx, node.sub, 0, node)  # a memo hit then answers as this request did
    return node


def condense(ctx: Context, question: str, history: Sequence[Turn]) -> str:
    """A follow-up as the question it stands for, within the request's budget. A rewrite that put
    the asker's words into the earlier question's frame is kept only when the reader finds it
    better supported by the collection than those words, alone and read after the earlier
    question: one that garbles the question ("What about the laptop?" read into an earlier "Can I
    work from another country?") loses to the question as asked. A pronoun's rewrite is not
    weighed so: an open "it" reads as whatever a sentence is about, so the words as asked would
    win where the rewrite is right ("Can it be changed?" after a question about the TCP port)."""
    with ctx.trace.step("condense", question, None, 0) as node:
        want = ctx.tokens(question) + sum(ctx.tokens(t.content) for t in history[-6:]) + WRITE_WANT + PROMPT_WANT
        rewrite = _run_step(ctx, want, node, lambda allowance: ctx.reasoner.condense(question, history, allowance))
        resolved = rewrite.question if rewrite is not None and rewrite.question.strip() else question
        earlier = next((t.content for t in reversed(history) if t.role == "user"), "")
        framed = rewrite is not None and rewrite.framed
        asked = [question, f"{earlier} {question}"] if earlier else [question]
        checked = resolved != question and framed and ctx.scorer is not None
        support = _support(ctx, [*asked, resolved]) if checked else None
        if support is not None:  # None: nothing to read it against (no sentence memory)
            own, rewritten = max(support[:-1]), support[-1]
            if rewritten <= own:
                node.note = f"kept the question as asked: its rewrite {resolved!r} reads {rewritten:.2f} against {own:.2f}"
                return question
            node.note = f"{resolved} (reads {rewritten:.2f} against {own:.2f} as asked)"
        else:
            node.note = resolved if resolved != question else "standalone"
    return resolved


def _root(question: str) -> SubQuestion:
    """The question as asked; one asked first and remarked on after ("Which setting ...? I have a
    leaky C extension.") is retrieved by what it asks: the remark draws passages that repeat it."""
    q = " ".join(question.split())
    return SubQuestion(question, query_text=core_question(q)) if remarked_after(q) else SubQuestion(question)


CHECK_SENTENCES = 16  # sentences a follow-up check reads per wording (the closest by the bi-encoder)


def _support(ctx: Context, questions: list[str]) -> list[float] | None:
    """How well the collection answers each wording: the reader's best score over the closest
    stored sentences of its top-k spans; None when a wording has no stored sentences."""
    if not ctx.options.sentence_memory:
        return None
    evidence = _retrieve(ctx, [SubQuestion(q) for q in questions], 0, None)
    out = []
    for question, ev in zip(questions, evidence, strict=True):
        stored = [e for e in ev.sentences if e.vector is not None]
        if not stored:
            return None
        close = np.argsort(-(np.stack([e.vector for e in stored]) @ ev.query_vector))[:CHECK_SENTENCES]
        texts = [reader_text(stored[i].span.title, stored[i].sentence.text, stored[i].sentence.heading) for i in close]
        out.append(float(ctx.scorer.score_texts(question, texts).max()))
    return out


def solve_wave(ctx: Context, subs: Sequence[SubQuestion], depth: int, parent: TraceNode,
               remember: bool = True) -> list[Node]:
    ctx.check()
    unique = list(dict.fromkeys(subs))  # the same sub-question twice is solved once
    solved = {s: _from_memo(ctx, s, depth, parent) for s in unique}
    todo = [s for s in unique if solved[s] is None]
    if todo:
        evidence = _retrieve(ctx, todo, depth, parent)
        plans = [_plan(ctx, s, e, depth, parent) for s, e in zip(todo, evidence, strict=True)]
        leaves = [i for i, p in enumerate(plans) if not p.sub_questions]
        answered = _answer(ctx, [todo[i] for i in leaves], [evidence[i] for i in leaves], depth, parent)
        for i, node in zip(leaves, answered, strict=True):
            solved[todo[i]] = node
        composite = [i for i, p in enumerate(plans) if p.sub_questions]
        with ThreadPoolExecutor(max_workers=ctx.options.max_parallel) as pool:
            futures = {i: pool.submit(_decompose, ctx, todo[i], evidence[i], plans[i], depth, parent)
                       for i in composite}
            for i, future in futures.items():
                solved[todo[i]] = future.result()
        for s in todo if remember else ():
            _to_memo(ctx, s, depth, solved[s])
    return [solved[s] for s in subs]  # type: ignore[misc]


def _retrieve(ctx: Context, subs: list[SubQuestion], depth: int, parent: TraceNode) -> list[Evidence]:
    vectors = ctx.embedder.embed([s.query for s in subs])  # one embedding call for the wave
    found = []
    for sub, vector in zip(subs, vectors, strict=True):
        with ctx.trace.step("retrieve", sub.query, parent, depth) as node:
            spans = ctx.store.search(ctx.collection, vector, ctx.options.top_k,
                                     text=sub.query if ctx.options.hybrid else None,
                                     groups=ctx.access.store_filter)
            spans, named = with_named(ctx.store, ctx.collection, sub.query, vector, spans, ctx.options.top_k,
                                      ctx.access.store_filter)
            node.span_ids = [s.id for s in spans]
            node.note = f"looked up by name: {', '.join(named)}" if named else node.note
        found.append(spans)
    stored = _sentences(ctx, found) if ctx.options.sentence_memory else [() for _ in found]
    ctx.count(retrievals=len(subs))
    return [Evidence(tuple(spans), sentences, vector)
            for spans, sentences, vector in zip(found, stored, vectors, strict=True)]


NAMED_SPANS = 2  # spans a name lookup adds at most: the entry that says the name, and one more
# fused hits a name lookup reads: a chunk that holds the rare name but is far from the question's
# vector loses the fusion to near chunks that share one common word with it ("keep" of --keep-debuginfo)
LOOKUP_DEPTH = 40


def with_named(store: Store, collection: str, query: str, vector: np.ndarray, spans: list[Span], k: int,
               groups=None) -> tuple[list[Span], list[str]]:
    """`spans` and, when the question writes a code name (IGNORE_EOF, --keep-debuginfo) whose entry
    none of them holds (no line opens with it), the spans a keyword search for that name finds
    opening a line with it (its entry, an example of it): the embedder reads such a name poorly, and
    the entry it names is then never read. A span that only mentions the name in passing is neither
    its entry nor added: it says nothing of what the name is. Also the names looked up."""
    names = list(dict.fromkeys(query[a:b] for a, b in code_names(query)))
    missing = [n for n in names if not any(_opens_a_line(n, s.text) for s in spans)]
    if not missing:
        return spans, []
    seen = {s.id for s in spans}
    found = store.search(collection, vector, max(k, LOOKUP_DEPTH), text=" ".join(missing), groups=groups)
    saying = [s for s in found if s.id not in seen and any(_opens_a_line(n, s.text) for n in missing)]
    return spans + saying[:NAMED_SPANS], missing if saying else []


def _opens_a_line(name: str, text: str) -> bool:
    """Whether a line of `text` starts with `name`, after list, table or heading marks."""
    return re.search(rf"(?im)^[\s*`#>|+-]*{re.escape(name)}(?![\w-])", text) is not None


def _sentences(ctx: Context, found: list[list[Span]]) -> list[tuple[EvidenceSentence, ...]]:
    """The stored sentences of each question's spans, read once for the whole wave."""
    union = list({s.id: s for spans in found for s in spans}.values())
    if not union:
        return [() for _ in found]
    sentences, vectors = ctx.store.sentences(ctx.collection, union)
    return [_attach(spans, sentences, vectors) for spans in found]


def _attach(spans: Sequence[Span], sentences: Sequence[Sentence], vectors: np.ndarray) -> tuple[EvidenceSentence, ...]:
    """The sentences that overlap one of `spans`, each with the first it overlaps (its citation),
    in the order a read of these spans alone returns: by their documents' order, then in place."""
    rank: dict[str, int] = {}
    for span in spans:
        rank.setdefault(span.document_id, len(rank))
    out = []
    for sentence, vector in zip(sentences, vectors, strict=True):
        span = next((s for s in spans if s.document_id == sentence.document_id
                     and sentence.start < s.end and sentence.end > s.start), None)
        if span is not None:
            out.append(EvidenceSentence(sentence, span, vector))
    out.sort(key=lambda e: rank[e.sentence.document_id])  # stable: keeps document order within one
    return tuple(out)


def _plan(ctx: Context, sub: SubQuestion, evidence: Evidence, depth: int, parent: TraceNode) -> Plan:
    if depth >= ctx.options.max_depth:
        return Plan(note="depth limit")
    if sub.kind in (HOP, SIDE):  # one step to one thing's document: it is not split again
        return Plan(note=sub.kind)
    # Decompose only if the budget can also pay for the children and their merge.
    if ctx.budget.remaining < FLOOR + 2 * MIN_STEP:
        ctx.note("budget short: no further decomposition")
        return Plan(note="budget short")
    want = _want(ctx, [sub], [evidence], spans=PLAN_SPANS)
    with ctx.trace.step("plan", sub.text, parent, depth) as node:
        plan = _run_step(ctx, want, node, lambda allowance: ctx.reasoner.plan(sub.query, evidence, allowance))
        if plan is None:
            return Plan(note="budget short")
        node.note = plan.note
        node.rules = list(plan.rules)
    if depth == 0 and plan.sub_questions:
        ctx.on_event("plan", {"question": sub.text, "sub_questions": [_public(s) for s in plan.sub_questions]})
    return plan


def _answer(ctx: Context, subs: list[SubQuestion], evidence: list[Evidence], depth: int, parent: TraceNode) -> list[Node]:
    """Leaves, batched through the reasoner in groups of `max_parallel`."""
    nodes: list[Node] = []
    step = ctx.options.max_parallel
    for lo in range(0, len(subs), step):
        group, ev = subs[lo:lo + step], evidence[lo:lo + step]
        with ctx.trace.step("answer", " | ".join(s.query for s in group), parent, depth) as node:
            node.span_ids = [s.id for e in ev for s in e.spans]
            drafts = _run_step(ctx, _want(ctx, group, ev), node,
                               lambda allowance, g=group, e=ev: ctx.reasoner.answer(g, e, allowance))
        if drafts is None:
            drafts = [failed("budget", s.text) for s in group]
        nodes += [Node(s, d, list(e.spans), status=_status(d), sentences=list(e.sentences))
                  for s, e, d in zip(group, ev, drafts, strict=True)]
    return nodes


def _decompose(ctx: Context, sub: SubQuestion, evidence: Evidence, plan: Plan, depth: int,
               parent: TraceNode) -> Node:
    """Answer the sub-questions wave by wave (dependent ones once their inputs are known), then
    merge them with the answer from the question's own evidence."""
    me = ctx.trace.add("sub_questions", sub.text, parent, depth, note=plan.note)
    merge_hold = _reserve(ctx, FLOOR, "merge")
    own = _answer(ctx, [sub], [evidence], depth + 1, me)[0]
    answers: dict[int, Node] = {}
    pending = list(range(len(plan.sub_questions)))
    while pending:
        ready = [i for i in pending if all(d in answers for d in plan.sub_questions[i].depends_on)]
        if not ready:  # a dependency cycle or a dangling index: the model's fault, not ours
            ready = pending
        wave = [_fill(plan.sub_questions[i], answers) for i in ready]
        for i, node in zip(ready, _guarded_wave(ctx, wave, depth + 1, me), strict=True):
            answers[i] = node
            if depth == 0:
                ctx.on_event("sub_answer", {"question": node.question, "focus": node.sub.focus,
                                            "found": node.draft.found, "status": node.status})
        pending = [i for i in pending if i not in answers]
    children = [answers[i] for i in range(len(plan.sub_questions))]
    parts = [Part(c.sub, c.draft) for c in children if c.status == "ok"]
    if merge_hold is not None:
        merge_hold.release()
    want = sum(ctx.tokens(_claims_text(p.draft)) for p in parts) + ctx.tokens(_claims_text(own.draft)) + WRITE_WANT
    with ctx.trace.step("merge", sub.text, me, depth) as node:
        merged = _run_step(ctx, want + PROMPT_WANT, node,
                           lambda allowance: ctx.reasoner.merge(sub.text, own.draft, parts, plan, allowance))
    merged = merged if merged is not None and merged.parts else own.draft
    return Node(sub, merged, list(evidence.spans), [own, *children], status=_status(merged),
                sentences=list(evidence.sentences))


def _guarded_wave(ctx: Context, subs: list[SubQuestion], depth: int, parent: TraceNode) -> list[Node]:
    """A wave whose failure is reported per sub-question instead of failing the answer."""
    try:
        return solve_wave(ctx, subs, depth, parent)
    except (Cancelled, BudgetExceeded):
        raise
    except RagRlmError as e:
        ctx.note(f"sub-questions failed: {e}")
        return [Node(s, failed(str(e), s.text), status="error") for s in subs]


def _reflect(ctx: Context, node: Node, root: TraceNode) -> Node:
    """Check the draft against the evidence; retrieve once more for the parts still unanswered."""
    question = node.question
    evidence = Evidence(tuple(_unique(node.evidence())), tuple(node.stored_sentences()))
    want = ctx.tokens(question) + ctx.tokens(_claims_text(node.draft)) + WRITE_WANT + PROMPT_WANT
    with ctx.trace.step("reflect", question, root, 0) as step:
        checked = _run_step(ctx, want, step,
                            lambda allowance: ctx.reasoner.reflect(question, node.draft, evidence, allowance))
        if checked is not None and checked.notes and step.status == "ok":
            step.note = "; ".join(checked.notes)  # which claims the reader dropped, and why
    if checked is None or not checked.ok or not checked.parts:
        return node
    draft, extra = replace(checked, missing=()), []
    if checked.missing and not ctx.budget.out_of_time() and ctx.options.max_depth > 0:
        asks = [SubQuestion(q, query_text=q) for q in checked.missing]
        extra = _guarded_wave(ctx, asks, 1, root)
        found = {n.question: n.draft.parts[0] for n in extra if n.status == "ok" and n.draft.found}
        draft = replace(draft, parts=tuple(found.get(p.question, p) if not p.found else p for p in draft.parts))
    return Node(node.sub, draft, node.spans, node.children + extra, node.status, node.cache_hit, node.sentences)


def _want(ctx: Context, subs: Sequence[SubQuestion], evidence: Sequence[Evidence], spans: int | None = None) -> int:
    """What a step over these questions will read, plus room to write."""
    read = sum(ctx.tokens(s.query) + sum(ctx.tokens(span.text) for span in e.spans[:spans])
               for s, e in zip(subs, evidence, strict=True))
    return read + len(subs) * (WRITE_WANT + PROMPT_WANT)


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
    node.rules = list(dict.fromkeys(r for d in drafts for r in getattr(d, "rules", ())))
    errors = sorted({d.error for d in drafts if getattr(d, "error", None)})
    if errors:
        node.status = "error"
        node.note = "; ".join(errors)
        if "budget" in errors:
            ctx.note(f"budget short: {node.kind} trimmed")
    return result


def _reserve(ctx: Context, want: int, what: str) -> Reservation | None:
    held = ctx.budget.reserve(want, MIN_STEP)
    if held is None:
        ctx.note(f"budget short: {what} skipped")
    return held


def _status(draft: Draft) -> str:
    return "ok" if draft.ok else "error"


def _claims_text(draft: Draft) -> str:
    return " ".join(c.text for c in draft.claims)


def _unique(spans: list[Span]) -> list[Span]:
    return list({s.id: s for s in spans}.values())


def _public(sub: SubQuestion) -> dict:
    return {"question": sub.text, "focus": sub.focus, "kind": sub.kind}


_PLACEHOLDER = re.compile(r"#(\d+)('s)?")


def _fill(sub: SubQuestion, answers: dict[int, Node]) -> SubQuestion:
    """Put the answers of earlier sub-questions into "#1"-style placeholders: the thing the lead
    sentence names (an entry, a code name), else the short answer, else a word written as a name.
    Where none is, the question says "it" as the asker did, and retrieval reads the lead sentence."""
    def repl(m: re.Match[str], shown: bool) -> str:
        node = answers.get(int(m.group(1)) - 1)
        possessive = m.group(2) or ""
        pronoun = "its" if possessive else "it"
        if node is None or not node.draft.found:
            return pronoun
        part = next(p for p in node.draft.parts if p.found)
        lead = part.claims[0].text if part.claims else ""
        name = thing_named(lead, part.question) or part.answer or name_like(lead, part.question)
        if name:
            return name + possessive
        return pronoun if shown else lead[:200] or pronoun

    return replace(sub, text=_PLACEHOLDER.sub(lambda m: repl(m, True), sub.text),
                   query_text=_PLACEHOLDER.sub(lambda m: repl(m, False), sub.query_text or sub.text))


def _from_memo(ctx: Context, sub: SubQuestion, depth: int, parent: TraceNode) -> Node | None:
    if not _memoised(sub):
        return None
    value = ctx.memo.get(_key(ctx, sub, depth))
    if value is None:
        return None
    ctx.count(cache_hits=1)
    ctx.trace.add("memo", sub.query, parent, depth, cache_hit=True)
    node = node_from_dict(value, Node)
    node.cache_hit = True
    return node


def _to_memo(ctx: Context, sub: SubQuestion, depth: int, node: Node) -> None:
    # Only complete answers are remembered: a degraded or failed one should be retried.
    if node.status == "ok" and node.draft.parts and not ctx.notes and _memoised(sub):
        ctx.memo.put(_key(ctx, sub, depth), node_to_dict(node))


def _memoised(sub: SubQuestion) -> bool:
    """A hop (an entity found in this request's evidence) is rarely asked again: neither written
    nor looked up."""
    return sub.kind != HOP


def _key(ctx: Context, sub: SubQuestion, depth: int) -> str:
    o = ctx.options
    # the reasoner's identity names its reader's weights: a new reader never serves the old one's answers
    reasoner = getattr(ctx.reasoner, "identity", type(ctx.reasoner).__name__)
    shape = {"top_k": o.top_k, "depth_left": o.max_depth - depth, "hybrid": o.hybrid, "reasoner": reasoner,
             "sentences": o.sentence_memory, "focus": sub.focus, "kind": sub.kind, "text": sub.text,
             "access": ctx.access.key}
    return memo_key(sub.query, ctx.collection, ctx.version, shape)
