"""The recursive controller end to end on the real parts (pgserver PostgreSQL, MiniLM, the
extractive reasoner), plus its logic under a scripted reasoner: memo, budget, depth, failures."""

from __future__ import annotations

import re
import threading
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.controller import _root, with_named
from rag_rlm.errors import Cancelled, UnknownCollection
from rag_rlm.ingest.pipeline import ingest_paths
from rag_rlm.memory import open_store
from rag_rlm.memory.state import SqliteState, open_state
from rag_rlm.reasoning.base import Claim, Draft, PartDraft, Plan, Rewrite, Source, SubQuestion
from rag_rlm.reasoning.extractive import ExtractiveReasoner
from rag_rlm.types import Chunk, Document

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample"
TWO_PARTS = "Who approves expenses over $500 and how many vacation days do new hires get?"


@pytest.fixture(scope="module")
def corpus(pg_url, embedder, tmp_path_factory):
    """The bundled sample corpus in a pgvector collection, shared by this module's tests."""
    collection = "ctl_" + uuid.uuid4().hex[:8]
    settings = Settings(store=pg_url, data_dir=str(tmp_path_factory.mktemp("data")))
    store = open_store(pg_url)
    summary = ingest_paths([SAMPLE], collection=collection, store=store, embedder=embedder,
                           settings=settings, progress=False)
    assert summary.documents_failed == 0 and summary.chunks_written > 0
    # one state store for the module's assistants (they share the table anyway), closed at the end:
    # an assistant given a store but no state opens a pool of its own that nobody closes
    state = open_state(pg_url, settings.data_dir)
    yield settings, store, collection, state
    state.close()
    store.close()


def make(corpus, embedder, reasoner=None, **changes) -> tuple[Assistant, str]:
    settings, store, collection, state = corpus
    return Assistant(settings.replace(**changes), store=store, embedder=embedder, reasoner=reasoner,
                     state=state), collection


def markers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


def all_answers(subs) -> list[str]:
    return [t for s in subs for t in [s.answer, *all_answers(s.sub_questions)]]


def unmarked(text: str) -> str:
    return " ".join(re.sub(r"\s*\[\d+\]", "", text).split())


# --- the real parts --------------------------------------------------------------------------

def test_two_part_question_is_split_and_both_parts_cited(corpus, embedder):
    assistant, collection = make(corpus, embedder)
    result = assistant.ask(TWO_PARTS, collection)
    assert [s.question for s in result.sub_questions] == [
        "Who approves expenses over $500?", "How many vacation days do new hires get?"]
    assert all(s.status == "ok" for s in result.sub_questions)
    assert [p.question for p in result.parts] == [s.question for s in result.sub_questions]
    assert all(p.found and p.citations for p in result.parts) and result.found
    # the expense policy and the travel policy both say who approves a spend over $500
    cited = {c.span.document_id for c in result.citations}
    assert "vacation-policy.txt" in cited and cited & {"expense-policy.md", "travel-policy.html"}
    assert "Finance Director" in result.parts[0].answer and "22" in result.parts[1].answer
    assert result.answer == "\n\n".join(p.answer for p in result.parts)
    # numbered from 1 in order of first use, and every [n] points at a citation
    assert [c.n for c in result.citations] == list(range(1, len(result.citations) + 1))
    first_use = list(dict.fromkeys(markers(result.answer)))
    assert first_use == list(range(1, len(first_use) + 1)) and first_use
    assert set(markers(result.answer)) <= {c.n for c in result.citations}
    # plain text: no sub-question labels, no Markdown
    assert not any(s.question in result.answer for s in result.sub_questions)
    assert "**" not in result.answer and not re.search(r"^\s*(?:[-*#]|\d+\.)\s", result.answer, re.MULTILINE)
    assert result.usage.tokens_in + result.usage.tokens_out <= result.usage.token_budget


def test_two_part_question_within_the_default_budget_is_not_cut(corpus, embedder):
    """The old bug: "budget short: answer skipped" at 4-5k tokens of a 12k budget."""
    assistant, collection = make(corpus, embedder, ExtractiveReasoner(embedder))
    assert assistant.settings.token_budget == 12000
    result = assistant.ask("How many vacation days do new hires get and who approves expenses over $500?",
                           collection, top_k=6)
    assert result.status == "ok", result.notes
    assert not any(n.startswith("budget short") for n in result.notes), result.notes
    assert len(result.parts) == 2 and all(p.found for p in result.parts)
    assert result.usage.tokens_in + result.usage.tokens_out <= 12000


def test_citations_carry_exact_offsets(corpus, embedder):
    assistant, collection = make(corpus, embedder)
    result = assistant.ask("How long does the canary run before a release rolls out?", collection)
    assert result.found and "30 minutes" in result.answer
    assert result.citations, result
    text = (SAMPLE / "deployment-process.md").read_text()
    checked = 0
    for citation in result.citations:
        span = citation.span
        assert citation.quotes and all(span.start <= s < e <= span.end for s, e in citation.quotes)
        if span.document_id == "deployment-process.md":
            assert text[span.start:span.end] == span.text
            said = unmarked(" ".join([result.answer, *all_answers(result.sub_questions)]))
            for s, e in citation.quotes:  # each quote is a sentence the answer (or a sub-answer) says
                assert " ".join(text[s:e].split()) in said
                checked += 1
    assert checked


def test_off_topic_question_is_not_found_with_a_plain_message(corpus, embedder):
    assistant, collection = make(corpus, embedder)
    result = assistant.ask("What is the capital of France?", collection)
    assert result.found is False and result.citations == [] and markers(result.answer) == []
    assert result.answer == f"The {collection} documents do not say what the capital of France is."
    assert result.related and all(r["id"] and r["title"] for r in result.related)
    assert result.parts and not result.parts[0].found


def test_unknown_collection_is_an_error(corpus, embedder):
    assistant, _ = make(corpus, embedder)
    with pytest.raises(UnknownCollection):
        assistant.ask("anything?", "no_such_collection")


def test_trace_is_a_well_formed_tree_and_persists(corpus, embedder):
    assistant, collection = make(corpus, embedder)
    # top_k=4: not the shape of the first test, so no memo hit from the shared state table
    result = assistant.ask(TWO_PARTS, collection, top_k=4)
    trace = assistant.trace(result.trace_id)
    nodes = {n["id"]: n for n in trace["nodes"]}
    roots = [n for n in nodes.values() if n["parent_id"] is None]
    assert len(roots) == 1 and roots[0]["kind"] == "ask"
    for n in nodes.values():
        if n["parent_id"] is not None:
            parent = nodes[n["parent_id"]]  # every parent exists
            assert n["depth"] in (parent["depth"], parent["depth"] + 1)
    assert {"retrieve", "plan", "answer", "merge"} <= {n["kind"] for n in nodes.values()}
    assert trace["question"] == TWO_PARTS and trace["status"] == result.status


def test_memo_hit_costs_no_answer_call_keeps_the_tree_and_ingest_invalidates(corpus, embedder):
    reasoner = CountingReasoner(ExtractiveReasoner(embedder))
    settings, store, _, state = corpus
    collection = "memo_" + uuid.uuid4().hex[:8]
    ingest_paths([SAMPLE / "vacation-policy.txt", SAMPLE / "expense-policy.md"], collection=collection,
                 store=store, embedder=embedder, settings=settings, progress=False)
    assistant = Assistant(settings, store=store, embedder=embedder, reasoner=reasoner, state=state)
    first = assistant.ask(TWO_PARTS, collection, reflect=False)
    assert len(first.sub_questions) == 2 and first.status == "ok", first.notes
    calls = reasoner.answered
    second = assistant.ask(TWO_PARTS, collection, reflect=False)
    assert reasoner.answered == calls and second.usage.cache_hits == 1
    assert second.answer == first.answer and second.sub_questions == first.sub_questions
    assert [c.to_dict() for c in second.citations] == [c.to_dict() for c in first.citations]
    assert second.parts == first.parts
    # a new ingest changes the collection's version: the entry no longer applies
    doc = Document("extra.md", "Extra", "extra.md", "Parking is free for staff.", "h1")
    store.write_document(collection, doc, [Chunk(doc.id, 0, doc.text, 0, len(doc.text))], embedder.embed([doc.text]))
    third = assistant.ask(TWO_PARTS, collection, reflect=False)
    assert reasoner.answered > calls and third.usage.cache_hits == 0


def test_cancel_stops_the_request(corpus, embedder):
    assistant, collection = make(corpus, embedder)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        assistant.ask("What is the deploy freeze?", collection, cancel=cancel)


def test_a_chunk_cited_by_two_parts_is_one_source(corpus, embedder):
    assistant, collection = make(corpus, embedder)
    result = assistant.ask("Who approves expenses over $500 and who approves expenses under $500?", collection,
                           top_k=3)
    ids = [c.span.id for c in result.citations]
    assert ids and len(ids) == len(set(ids))


class CountingEmbedder:
    """The real embedder, counting every text it is asked to encode."""

    def __init__(self, inner):
        self.inner, self.dimension, self.max_tokens = inner, inner.dimension, inner.max_tokens
        self.encoded: Counter[str] = Counter()

    def embed(self, texts):
        self.encoded.update(texts)
        return self.inner.embed(texts)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def token_offsets(self, text):
        return self.inner.token_offsets(text)


@pytest.mark.parametrize("question", [
    "Who leads the team that owns the deploy pipeline?",  # hops, merged against the question
    "What is the capital of France?",  # not found: reflection retrieves for it once more
    TWO_PARTS,  # parts, each with hops
])
def test_an_ask_encodes_each_text_once(corpus, embedder, tmp_path, question):
    """Retrieval, the merge and reflection's second retrieval all need the question's vector."""
    settings, store, collection, _ = corpus
    counting = CountingEmbedder(embedder)
    assistant = Assistant(settings, store=store, embedder=counting, state=SqliteState(tmp_path / "memo.db"))
    result = assistant.ask(question, collection)
    assert result.sub_questions  # decomposed: sub-questions retrieved and merged
    assert counting.encoded[question] == 1 and set(counting.encoded.values()) == {1}, counting.encoded


class CountingState(SqliteState):
    """The real SQLite state store, counting its writes per (kind, key)."""

    def __init__(self, path):
        super().__init__(path)
        self.writes: Counter[tuple[str, str]] = Counter()

        self.reads: Counter[str] = Counter()

    def get(self, kind, key):
        self.reads[kind] += 1
        return super().get(kind, key)

    def put(self, kind, key, value):
        self.writes[kind, key] += 1
        super().put(kind, key, value)


class CountingStore:
    """The real store, counting the calls of each method."""

    def __init__(self, inner):
        self.inner, self.calls = inner, Counter()

    def __getattr__(self, name):
        method = getattr(self.inner, name)

        def counted(*args, **kwargs):
            self.calls[name] += 1
            return method(*args, **kwargs)
        return counted


def test_an_answer_is_remembered_once_after_reflection(corpus, embedder, tmp_path):
    settings, store, collection, _ = corpus
    state = CountingState(tmp_path / "memo.db")
    assistant = Assistant(settings, store=store, embedder=embedder, state=state)
    first = assistant.ask(TWO_PARTS, collection)
    assert first.status == "ok" and set(state.writes.values()) == {1}, state.writes
    again = assistant.ask(TWO_PARTS, collection)
    assert again.usage.cache_hits == 1 and again.answer == first.answer


def test_a_wave_reads_sentence_memory_once_and_hops_skip_the_memo(corpus, embedder, tmp_path):
    settings, store, collection, _ = corpus
    counting, state = CountingStore(store), CountingState(tmp_path / "memo.db")
    assistant = Assistant(settings, store=counting, embedder=embedder, state=state)
    result = assistant.ask("Who leads the team that owns the deploy pipeline?", collection)
    hops = [s for s in result.sub_questions if s.kind == "hop"]
    assert len(hops) == len(result.sub_questions) >= 2 and result.found  # no reflection retrieval
    assert counting.calls["search"] == 1 + len(hops) and counting.calls["sentences"] == 2  # two waves
    assert state.reads["memo"] == 1  # the question's own: a hop is never remembered, so never looked up


# --- controller logic under a scripted reasoner ----------------------------------------------

def test_a_follow_ups_condense_step_is_paid_from_the_request_budget(corpus, embedder):
    """The condense step (a model's rewrite, scripted here) reserves and spends budget like any
    step, and its tokens are in the answer's usage."""
    class Condensing(ScriptedReasoner):
        def condense(self, question, history, allowance):
            return Rewrite("Who approves expenses over $500?", tokens_in=37, tokens_out=9, llm_calls=1)

    reasoner = Condensing(plans={})
    assistant, collection = make(corpus, embedder, reasoner, reflect=False)
    history = [{"role": "user", "content": "What is the expense policy?"}, {"role": "assistant", "content": "..."}]
    result = assistant.ask("And over $500?", collection, history=history, max_depth=0)
    node = next(n for n in assistant.trace(result.trace_id)["nodes"] if n["kind"] == "condense")
    assert (node["tokens_in"], node["tokens_out"]) == (37, 9)
    assert result.usage.llm_calls >= 2 and result.usage.tokens_in >= 37
    assert result.resolved_question == "Who approves expenses over $500?"  # no reader to check it: kept
    starved = assistant.ask("And over $500?", collection, history=history, max_depth=0, token_budget=40)
    assert starved.resolved_question == "And over $500?"  # no room for the step: the question as asked


def test_same_sub_question_twice_is_answered_once(corpus, embedder):
    scripted = ScriptedReasoner(plans={"root?": ["same?", "same?"]})
    assistant, collection = make(corpus, embedder, scripted)
    result = assistant.ask("root?", collection, reflect=False)
    assert scripted.answered.count("same?") == 1
    assert [s.question for s in result.sub_questions] == ["same?", "same?"]


@pytest.mark.parametrize("first,lead,short,filled", [
    ("first lead?", "", "", "second about it?"),
    ("first short?", "", "Bo Chen", "second about Bo Chen?"),
    ("first code?", "pg_restore is a utility.", "PostgreSQL", "second about pg_restore?"),
    ("first name?", "The DirectoryIndex directive sets the files.", "", "second about DirectoryIndex?")])
def test_dependent_sub_question_gets_the_earlier_answer(corpus, embedder, first, lead, short, filled):
    """The placeholder takes the thing the lead sentence names (a code name before a short
    answer, a word written as a name after it); with none, the question says "it" as the asker
    did, and retrieval reads the lead sentence."""
    scripted = ScriptedReasoner(plans={f"root {first}": [(first, ()), ("second about #1?", (0,))]},
                                shorts={first: short}, leads={first: lead} if lead else None)
    assistant, collection = make(corpus, embedder, scripted)
    result = assistant.ask(f"root {first}", collection, reflect=False)
    assert filled in scripted.answered
    assert scripted.answered.index(first) < scripted.answered.index(filled)
    assert [s.question for s in result.sub_questions] == [first, filled]
    retrieved = [n["question"] for n in assistant.trace(result.trace_id)["nodes"] if n["kind"] == "retrieve"]
    assert ("second about answer to first lead??" in retrieved) == (first == "first lead?")


def test_a_dependent_sub_question_whose_input_is_not_found_keeps_a_pronoun(corpus, embedder):
    scripted = ScriptedReasoner(plans={"root unknown?": [("which unknown?", ()), ("What is #1's default?", (0,))]},
                                failing={"which unknown?"})
    assistant, collection = make(corpus, embedder, scripted)
    assistant.ask("root unknown?", collection, reflect=False)
    assert "What is its default?" in scripted.answered and not any("#1" in q for q in scripted.answered)


def test_failed_sub_question_is_reported_and_the_rest_merged(corpus, embedder):
    scripted = ScriptedReasoner(plans={"root fail?": ["good?", "bad?"]}, failing={"bad?"})
    assistant, collection = make(corpus, embedder, scripted)
    result = assistant.ask("root fail?", collection, reflect=False)
    by_q = {s.question: s for s in result.sub_questions}
    assert by_q["bad?"].status == "error" and "scripted failure" in by_q["bad?"].error
    assert by_q["good?"].status == "ok" and by_q["good?"].found
    assert unmarked(result.answer) == "answer to good?" and result.status == "partial"
    assert [p.question for p in result.parts] == ["good?"]


def test_depth_limit_is_respected(corpus, embedder):
    # every question decomposes again: only max_depth stops it
    scripted = ScriptedReasoner(plans={}, always_split=True)
    assistant, collection = make(corpus, embedder, scripted)
    for max_depth in (0, 1, 2):
        result = assistant.ask(f"deep {max_depth}?", collection, max_depth=max_depth, reflect=False)
        nodes = assistant.trace(result.trace_id)["nodes"]
        assert max(n["depth"] for n in nodes if n["kind"] == "retrieve") == max_depth


@hyp_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(min_value=1, max_value=6000), fanout=st.integers(min_value=0, max_value=4),
       depth=st.integers(min_value=0, max_value=3), cost=st.floats(min_value=0.0, max_value=1.0),
       reflect=st.booleans())
def test_no_request_ever_exceeds_its_budget(corpus, embedder, budget, fanout, depth, cost, reflect):
    scripted = ScriptedReasoner(plans={}, always_split=fanout > 0, fanout=fanout, spend=cost)
    assistant, collection = make(corpus, embedder, scripted)
    result = assistant.ask(f"q {budget} {fanout} {depth} {cost}?", collection, max_depth=depth,
                           token_budget=budget, reflect=reflect)
    nodes = assistant.trace(result.trace_id)["nodes"]
    spent = sum(n["tokens_in"] + n["tokens_out"] for n in nodes)
    assert spent == result.usage.tokens_in + result.usage.tokens_out
    assert spent <= budget


# --- scripted parts (named as such): controller logic without a model ----------------------

class CountingReasoner:
    """The real extractive reasoner, counting how many questions it answered."""

    def __init__(self, inner):
        self.inner, self.answered = inner, 0

    def plan(self, question, evidence, allowance):
        return self.inner.plan(question, evidence, allowance)

    def answer(self, questions, evidence, allowance):
        self.answered += len(questions)
        return self.inner.answer(questions, evidence, allowance)

    def merge(self, question, own, parts, plan, allowance):
        return self.inner.merge(question, own, parts, plan, allowance)

    def reflect(self, question, draft, evidence, allowance):
        return self.inner.reflect(question, draft, evidence, allowance)

    def condense(self, question, history, allowance):
        return self.inner.condense(question, history, allowance)


class ScriptedReasoner:
    """A reasoner that follows a script: fixed plans, answers "answer to Q" (or `leads[Q]`) citing
    the first retrieved span (with `shorts[Q]` as its short answer), a configurable share of each
    allowance spent, and failures on chosen questions."""

    def __init__(self, plans, failing=(), always_split=False, fanout=2, spend=0.5, shorts=None, leads=None):
        self.plans, self.failing, self.always_split = plans, set(failing), always_split
        self.fanout, self.spend, self.shorts, self.leads = fanout, spend, shorts or {}, leads or {}
        self.answered: list[str] = []
        self._lock = threading.Lock()

    def _cost(self, allowance):
        return int(allowance * self.spend)

    def plan(self, question, evidence, allowance):
        subs = self.plans.get(question)
        if subs is None and self.always_split:
            subs = [f"{question} / {i}" for i in range(self.fanout)]
        subs = [s if isinstance(s, tuple) else (s, ()) for s in subs or []]
        return Plan(tuple(SubQuestion(t, d) for t, d in subs), note="scripted", tokens_in=self._cost(allowance))

    def answer(self, questions, evidence, allowance):
        share = allowance // max(len(questions), 1)
        with self._lock:
            self.answered += [q.text for q in questions]
        drafts = []
        for q, e in zip(questions, evidence, strict=True):
            if q.text in self.failing:
                drafts.append(Draft((PartDraft(q.text),), error="scripted failure: backend down"))
                continue
            sources = tuple(Source(s, s.start, s.end) for s in e.spans[:1])
            claim = Claim(self.leads.get(q.text, f"answer to {q.text}"), sources, answer=self.shorts.get(q.text, ""))
            drafts.append(Draft((PartDraft(q.text, (claim,), True, 1.0),), tokens_in=self._cost(share), llm_calls=1))
        return drafts

    def merge(self, question, own, parts, plan, allowance):
        return Draft(tuple(p for part in parts for p in part.draft.parts), tokens_out=self._cost(allowance))

    def reflect(self, question, draft, evidence, allowance):
        return replace(draft, tokens_in=self._cost(allowance), tokens_out=0, llm_calls=0, missing=())

    def condense(self, question, history, allowance):
        return Rewrite(question)


def test_a_code_name_whose_entry_no_retrieved_span_holds_is_looked_up_by_keyword(pg_url, embedder, tmp_path):
    """The embedder reads "IGNORE_EOF" poorly, so the option's entry may not be among the spans
    retrieved for "What does the IGNORE_EOF option do?". A keyword search for the name adds the span
    whose line opens with it (its entry); a span that only mentions it in passing is not added, and
    does not stand for the entry either. The entry is found even where chunks nearer the question
    share a common word with the name ("ignore") and so win the fusion's first places."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "options.md").write_text("# Input/Output options\n\n- IGNORE_EOF (-7): Do not exit on end-of-file. "
                                     "Require the use of exit or logout instead.\n")
    (docs / "notes.md").write_text("# Notes\n\nSome users set IGNORE_EOF in their startup files.\n")
    (docs / "prompt.md").write_text("# Prompts\n\nThe prompt is printed before each command is read.\n")
    for i, what in enumerate(["case", "blank lines", "comments", "duplicates"]):
        (docs / f"near{i}.md").write_text(f"# What the option does\n\nThe option makes the shell ignore {what}.\n")
    collection = "named_" + uuid.uuid4().hex[:8]
    store = open_store(pg_url)
    try:
        ingest_paths([docs], collection=collection, store=store, embedder=embedder,
                     settings=Settings(store=pg_url, data_dir=str(tmp_path / "data")), progress=False)
        question = "What does the IGNORE_EOF option do?"
        vector = embedder.embed([question])[0]
        prompt = [s for s in store.search(collection, vector, 10) if Path(s.source).name == "prompt.md"]
        spans, named = with_named(store, collection, question, vector, prompt, 3)
        assert named == ["IGNORE_EOF"] and [Path(s.source).name for s in spans] == ["prompt.md", "options.md"]
        # the name already said by a retrieved span: nothing is looked up
        assert with_named(store, collection, question, vector, spans, 3) == (spans, [])
        assert with_named(store, collection, "What is a prompt?", vector, prompt, 3) == (prompt, [])
        # a passing mention retrieved is no entry: the entry is still looked up, and the mention not added
        notes = [s for s in store.search(collection, vector, 10) if Path(s.source).name == "notes.md"]
        spans, named = with_named(store, collection, question, vector, notes, 1)
        assert named == ["IGNORE_EOF"] and [Path(s.source).name for s in spans] == ["notes.md", "options.md"]
    finally:
        store.close()


def test_a_question_asked_first_and_remarked_on_after_is_retrieved_by_what_it_asks():
    """"Which setting ...? I have a leaky C extension.": the remark draws passages that repeat it
    (a guide's aside on C extensions) instead of the setting's entry; the question is still the
    asker's, as written."""
    asked = "Which setting replaces a worker process after its resident memory grows past a limit?"
    root = _root(f"{asked} I have a leaky C extension.")
    assert root.query == asked and root.text == f"{asked} I have a leaky C extension."
    story = _root(f"Our workers keep growing until the machine swaps. {asked}")
    assert story.query == story.text  # a scene before the question is read with it (rule long_question)
