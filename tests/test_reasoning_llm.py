"""The LLM reasoner's prompting, parsing and budget, with a scripted LLM.

`ScriptedLLM` implements the LLM Protocol with canned replies (a stand-in for a model: the real
local and OpenAI-compatible backends have their own tests); it counts tokens as words, so the
budget arithmetic is exact and checkable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_rlm.errors import BackendError, ConfigError
from rag_rlm.llm.base import LLM, Generation, Prompt
from rag_rlm.reasoning.base import (
    HOP,
    Claim,
    Draft,
    Evidence,
    Part,
    PartDraft,
    Plan,
    Source,
    SubQuestion,
    Turn,
)
from rag_rlm.reasoning.llm import LLMReasoner
from rag_rlm.reasoning.prompts import Prompts, parse_claims, render_claims
from rag_rlm.types import Span

Reply = str | BackendError | Callable[[Prompt], str]


class ScriptedLLM:
    """Replies in order (the last one repeats); a token is a whitespace-separated word."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies) or ["OK"]
        self.calls: list[tuple[list[Prompt], int]] = []
        self.served = 0

    def count_tokens(self, prompt: Prompt) -> int:
        return sum(len(m["content"].split()) + 2 for m in prompt) + 1

    def generate(self, prompts: Sequence[Prompt], max_new_tokens: int) -> list[Generation]:
        self.calls.append((list(prompts), max_new_tokens))
        return [self._one(p, max_new_tokens) for p in prompts]

    def _one(self, prompt: Prompt, max_new_tokens: int) -> Generation:
        reply = self.replies[min(self.served, len(self.replies) - 1)]
        self.served += 1
        if isinstance(reply, BackendError):
            return Generation(tokens_in=self.count_tokens(prompt), error=reply)
        text = reply(prompt) if callable(reply) else reply
        words = text.split(" ")[:max_new_tokens]  # a model stops at max_new_tokens
        return Generation(" ".join(words), self.count_tokens(prompt), len(" ".join(words).split()))


def span(i: int, text: str = "", title: str = "") -> Span:
    text = text or f"Fact number {i} is stated here."
    return Span(f"doc{i}", 0, title or f"Doc {i}", f"/src/{i}.md", text, 0, len(text), 1.0 - i / 100)


def user_text(prompt: Prompt) -> str:
    return prompt[-1]["content"]


def test_scripted_llm_is_an_llm():
    assert isinstance(ScriptedLLM(), LLM)


def ev(*spans: Span) -> Evidence:
    return Evidence(tuple(spans))


def said(question: str, *claims: tuple[str, tuple[Span, ...]]) -> Draft:
    """A found one-part draft whose claims cite whole spans (hand-made, as a reasoner would)."""
    made = tuple(Claim(text, tuple(Source(s, s.start, s.end) for s in spans)) for text, spans in claims)
    return Draft((PartDraft(question, made, True, 1.0),))


def sources(draft: Draft) -> list[list[Span]]:
    return [[s.span for s in c.sources] for c in draft.claims]


# -- plan -------------------------------------------------------------------------------------

def test_json_plan_anywhere_in_the_text_is_parsed():
    reply = ('Sure! Here is the plan:\n```json\n{"sub_questions": [{"question": "Which movie did Ann Lee '
             'star in?", "depends_on": []}, {"question": "Who directed #1?", "depends_on": [0]}]}\n```')
    llm = ScriptedLLM(reply)
    plan = LLMReasoner(llm, 64).plan("Who directed the movie that Ann Lee starred in?", ev(span(1)), 2000)
    assert plan.sub_questions == (
        SubQuestion("Which movie did Ann Lee star in?"),
        SubQuestion("Who directed #1?", (0,)),
    )
    assert plan.llm_calls == 1 and plan.tokens_in == llm.count_tokens(llm.calls[0][0][0])
    assert "Ann Lee starred" in user_text(llm.calls[0][0][0])
    assert "[1] Doc 1: Fact number 1" in user_text(llm.calls[0][0][0])  # a glimpse of the evidence


def test_placeholders_add_dependencies_the_json_left_out():
    reply = '{"sub_questions": ["Which movie did Ann Lee star in?", "When was #1 released?", "Who directed #1?"]}'
    plan = LLMReasoner(ScriptedLLM(reply), 64).plan("q", ev(), 2000)
    assert [s.depends_on for s in plan.sub_questions] == [(), (0,), (0,)]


def test_numbered_list_fallback_with_placeholders():
    reply = "1. Which movie did Ann Lee star in?\n2) Who directed #1?\nThat is all."
    plan = LLMReasoner(ScriptedLLM(reply), 64).plan("Who directed the movie that Ann Lee starred in?", ev(), 2000)
    assert plan.sub_questions == (SubQuestion("Which movie did Ann Lee star in?"), SubQuestion("Who directed #1?", (0,)))


@pytest.mark.parametrize("reply", ["\x19\ufffd garbage %%%", "", '{"sub_questions": "no"}', "{broken json"])
def test_unparseable_plan_is_no_decomposition_with_a_note(reply):
    plan = LLMReasoner(ScriptedLLM(reply), 64).plan("q", ev(), 2000)
    assert plan.sub_questions == () and plan.note == "unparseable plan output" and plan.llm_calls == 1


def test_forward_reference_makes_the_plan_unusable():
    plan = LLMReasoner(ScriptedLLM('["Who directed #2?", "Which film?"]'), 64).plan("q", ev(), 2000)
    assert plan.sub_questions == () and plan.note.startswith("unparseable plan output")


def test_empty_or_single_sub_question_means_answer_directly():
    assert LLMReasoner(ScriptedLLM('{"sub_questions": []}'), 64).plan("q", ev(), 2000).note == "no decomposition"
    one = LLMReasoner(ScriptedLLM('["Only this?"]'), 64).plan("q", ev(), 2000)
    assert one.sub_questions == () and "one sub-question" in one.note


def test_too_many_sub_questions_keep_a_valid_prefix():
    reply = "[" + ", ".join(f'"Step {i}?"' for i in range(9)) + "]"
    plan = LLMReasoner(ScriptedLLM(reply), 64).plan("q", ev(), 2000)
    assert [s.text for s in plan.sub_questions] == [f"Step {i}?" for i in range(6)] and "kept the first 6" in plan.note


def test_plan_backend_failure_is_a_note_not_an_exception():
    plan = LLMReasoner(ScriptedLLM(BackendError("down", transient=True)), 64).plan("q", ev(), 2000)
    assert plan.sub_questions == () and plan.note.startswith("plan failed: down")


# -- answer -----------------------------------------------------------------------------------

def test_answer_is_one_batched_call_and_claims_cite_the_passages_their_markers_name():
    spans = [span(1), span(2), span(3)]
    llm = ScriptedLLM("It is B [2]. Also A [1][2].", "Nothing cited here.", "See [9] and [3].")
    questions = [SubQuestion("q1"), SubQuestion("q2"), SubQuestion("q3")]
    drafts = LLMReasoner(llm, 64).answer(questions, [ev(*spans)] * 3, 3000)
    assert len(llm.calls) == 1 and len(llm.calls[0][0]) == 3
    first, second, third = drafts
    assert [p.question for d in drafts for p in d.parts] == ["q1", "q2", "q3"]
    assert [c.text for c in first.claims] == ["It is B.", "Also A."]
    assert sources(first) == [[spans[1]], [spans[0], spans[1]]]
    assert first.cited == (spans[1], spans[0]) and first.found and first.ok
    # the claim quotes the whole span it cites: the LLM does not say which sentence it used
    assert [(s.start, s.end) for s in first.claims[0].sources] == [(spans[1].start, spans[1].end)]
    assert second.cited == () and "no citations" in second.notes and second.ok
    assert third.cited == (spans[2],) and [c.text for c in third.claims] == ["See and."]
    assert any("removed 1" in n for n in third.notes)
    assert "[1] Doc 1: Fact number 1" in user_text(llm.calls[0][0][0])


def test_each_question_reads_its_own_evidence_and_the_retrieval_query():
    llm = ScriptedLLM("A [1].")
    sub = SubQuestion("How long is it?", focus="Red", query_text="running time")
    LLMReasoner(llm, 64).answer([sub, SubQuestion("other?")], [ev(span(1)), ev(span(2))], 3000)
    first, second = (user_text(p) for p in llm.calls[0][0])
    assert "Red: running time" in first and "Doc 1" in first and "Doc 2" not in first
    assert "Doc 2" in second and "Doc 1" not in second


@pytest.mark.parametrize("reply", ["NOT FOUND", "not found.", "The passages do not contain the answer."])
def test_not_found_reply_is_a_part_the_evidence_does_not_answer(reply):
    (draft,) = LLMReasoner(ScriptedLLM(reply), 64).answer([SubQuestion("Who won?")], [ev(span(1))], 2000)
    assert draft.ok and not draft.found and draft.claims == () and draft.cited == ()
    assert draft.parts[0].question == "Who won?" and not draft.parts[0].found


def test_a_failed_prompt_does_not_spoil_the_batch():
    llm = ScriptedLLM("A [1].", BackendError("boom"), "C [1].")
    subs = [SubQuestion("a"), SubQuestion("b"), SubQuestion("c")]
    drafts = LLMReasoner(llm, 64).answer(subs, [ev(span(1))] * 3, 3000)
    assert [d.ok for d in drafts] == [True, False, True]
    assert drafts[1].error == "backend: boom" and drafts[1].claims == () and not drafts[1].found
    assert drafts[2].cited == (span(1),)


def test_answer_without_room_reports_budget_and_does_not_call_the_model():
    llm = ScriptedLLM("never")
    drafts = LLMReasoner(llm, 64).answer([SubQuestion("a question")], [ev(span(1))], 10)
    assert drafts[0].error == "budget" and drafts[0].tokens_in == drafts[0].tokens_out == 0
    assert llm.calls == []


def test_evidence_is_trimmed_to_fit_and_the_cut_span_still_cited():
    long = span(1, text=" ".join(f"w{i}" for i in range(400)))
    llm = ScriptedLLM("Answer [1].")
    (draft,) = LLMReasoner(llm, 32).answer([SubQuestion("q")], [ev(long, span(2))], 250)
    shown = user_text(llm.calls[0][0][0])
    assert "[1] Doc 1: w0 w1" in shown and "w399" not in shown and "[2]" not in shown
    assert draft.cited == (long,) and draft.tokens_in + draft.tokens_out <= 250


def test_a_marker_for_a_passage_cut_from_the_prompt_is_dropped():
    long = span(1, text=" ".join(f"w{i}" for i in range(400)))
    (draft,) = LLMReasoner(ScriptedLLM("Answer [2]."), 32).answer([SubQuestion("q")], [ev(long, span(2))], 250)
    assert draft.cited == () and any("removed 1" in n for n in draft.notes)


# -- merge ------------------------------------------------------------------------------------

def test_merge_keeps_independent_parts_as_parts_without_a_model_call():
    llm = ScriptedLLM("never")
    a = said("Who approves?", ("Finance approves [1].", (span(1),)))
    b = Draft((PartDraft("How many days?"),))  # not found
    merged = LLMReasoner(llm, 64).merge("Who approves and how many days?", Draft(),
                                        [Part(SubQuestion("Who approves?"), a), Part(SubQuestion("How many days?"), b)],
                                        Plan(), 3000)
    assert llm.calls == [] and merged.ok
    assert [p.question for p in merged.parts] == ["Who approves?", "How many days?"]
    assert [p.found for p in merged.parts] == [True, False] and merged.cited == (span(1),)


def dependent_parts() -> list[Part]:
    a, b, c = span(1), span(2), span(3)
    return [
        Part(SubQuestion("Which film?"), said("Which film?", ("The film is Red.", (a, b)))),
        Part(SubQuestion("Who directed #1?", (0,)), said("Who directed Red?", ("Bo Chen.", (c,)))),
        Part(SubQuestion("Failed one?"), Draft((PartDraft("Failed one?"),), error="backend: down")),
    ]


def test_merge_asks_the_model_for_dependent_parts_and_maps_its_markers_back():
    llm = ScriptedLLM("Bo Chen [3] directed Red [1].")
    merged = LLMReasoner(llm, 64).merge("Who directed the film?", Draft(), dependent_parts(), Plan(), 3000)
    assert len(llm.calls) == 1 and merged.llm_calls == 1
    shown = user_text(llm.calls[0][0][0])
    assert "A: The film is Red. [1][2]" in shown and "A: Bo Chen. [3]" in shown
    assert "Q: Failed one?\nA: (not found)" in shown
    assert "[1] Doc 1" in shown and "[3] Doc 3" in shown
    assert [p.question for p in merged.parts] == ["Who directed the film?"]
    assert merged.cited == (span(3), span(1)) and [c.text for c in merged.claims] == ["Bo Chen directed Red."]


def test_merge_asks_the_model_for_hops_too():
    llm = ScriptedLLM("Red came out in 1999 [1].")
    hop = Part(SubQuestion("When?", focus="Red", kind=HOP), said("When?", ("Red came out in 1999.", (span(4),))))
    merged = LLMReasoner(llm, 64).merge("When did the film come out?", Draft(), [hop], Plan(), 3000)
    assert len(llm.calls) == 1 and merged.cited == (span(4),)


def test_merge_keeps_the_grounded_answer_when_the_model_cites_nothing():
    merged = LLMReasoner(ScriptedLLM("\x19 random bytes"), 64).merge("q", Draft(), dependent_parts(), Plan(), 3000)
    assert merged.ok and merged.found and merged.llm_calls == 1
    assert merged.cited == (span(1), span(2)) and [c.text for c in merged.claims] == ["The film is Red."]
    assert merged.parts[0].question == "q" and any("cited nothing" in n for n in merged.notes)


def test_merge_without_budget_keeps_the_best_part_without_the_model():
    llm = ScriptedLLM("never")
    merged = LLMReasoner(llm, 64).merge("q", Draft(), dependent_parts(), Plan(), 20)
    assert merged.error == "budget" and llm.calls == [] and merged.cited == (span(1), span(2))


def test_merge_of_nothing_found_is_not_found_without_the_model():
    llm = ScriptedLLM("never")
    parts = [Part(SubQuestion("a?"), Draft((PartDraft("a?"),))), Part(SubQuestion("b #1?", (0,)), Draft((PartDraft("b?"),)))]
    merged = LLMReasoner(llm, 64).merge("q", Draft((PartDraft("q"),)), parts, Plan(), 3000)
    assert llm.calls == [] and not merged.found and merged.ok


# -- reflect ----------------------------------------------------------------------------------

def draft() -> Draft:
    return said("q", ("Red was directed by Bo Chen.", (span(3),))).with_usage(99, 9, 1)


def test_reflect_ok_returns_the_draft_with_this_steps_usage_and_missing():
    llm = ScriptedLLM("OK.\nMISSING: release year of Red")
    out = LLMReasoner(llm, 64).reflect("q", draft(), ev(span(3), span(4)), 3000)
    assert out.claims == draft().claims and out.cited == draft().cited
    assert out.missing == ("release year of Red",) and out.llm_calls == 1 and out.tokens_in != 99
    shown = user_text(llm.calls[0][0][0])
    assert "[1] Doc 3" in shown and "[2] Doc 4" in shown and "Red was directed by Bo Chen. [1]" in shown


def test_reflect_revision_is_parsed_against_the_evidence():
    out = LLMReasoner(ScriptedLLM("Red was directed by Al Wu [2]."), 64).reflect("q", draft(), ev(span(4)), 3000)
    assert [c.text for c in out.claims] == ["Red was directed by Al Wu."] and out.cited == (span(4),)
    assert "revised by reflection" in out.notes


def test_reflect_may_decide_the_evidence_does_not_answer():
    out = LLMReasoner(ScriptedLLM("NOT FOUND"), 64).reflect("q", draft(), ev(span(4)), 3000)
    assert not out.found and out.claims == () and out.parts[0].question == "q"


@pytest.mark.parametrize("reply", ["\x19\x13 garbage", BackendError("down")])
def test_reflect_garbage_or_failure_keeps_the_draft(reply):
    out = LLMReasoner(ScriptedLLM(reply), 64).reflect("q", draft(), ev(span(4)), 3000)
    assert out.claims == draft().claims and out.cited == draft().cited
    assert out.ok == isinstance(reply, str)


def test_reflect_on_a_multi_part_answer_names_the_missing_parts_without_a_model_call():
    llm = ScriptedLLM("never")
    two = Draft((said("a?", ("A.", (span(1),))).parts[0], PartDraft("b?")))
    out = LLMReasoner(llm, 64).reflect("a and b?", two, ev(span(1)), 3000)
    assert llm.calls == [] and out.parts == two.parts and out.missing == ("b?",) and out.llm_calls == 0


# -- condense ---------------------------------------------------------------------------------

HISTORY = [Turn("user", "What does the dental plan cover?"), Turn("assistant", "Cleanings twice a year [1].")]


def test_condense_uses_the_models_rewrite_and_counts_its_tokens():
    llm = ScriptedLLM("What does the vision plan cover?\nExtra line the model added.")
    rewrite = LLMReasoner(llm, 64).condense("And vision?", HISTORY, 2000)
    assert rewrite.question == "What does the vision plan cover?"
    assert rewrite.llm_calls == 1 and rewrite.tokens_in == llm.count_tokens(llm.calls[0][0][0]) and rewrite.tokens_out > 0
    shown = user_text(llm.calls[0][0][0])
    assert "user: What does the dental plan cover?" in shown and "Last question: And vision?" in shown


def test_condense_without_budget_does_not_call_the_model():
    llm = ScriptedLLM("What does the vision plan cover?")
    rewrite = LLMReasoner(llm, 64).condense("And vision?", HISTORY, 10)
    assert rewrite.question == "And vision?" and rewrite.error == "budget" and not llm.calls


@pytest.mark.parametrize("reply", ["\x19\ufffd\x13", "", "  ", "x" * 2000, BackendError("down")])
def test_condense_keeps_the_question_on_garbage_empty_or_failure(reply):
    assert LLMReasoner(ScriptedLLM(reply), 64).condense("And vision?", HISTORY, 2000).question == "And vision?"


# -- parse_claims -----------------------------------------------------------------------------

def test_parse_claims_markers_belong_to_their_sentence():
    a, b = span(1), span(2)
    part, notes = parse_claims("q", "Red is a film [1]. Bo Chen directed it [2][1]. 1999 was the year. [2]", [a, b])
    assert part.found and part.question == "q" and notes == ()
    assert [c.text for c in part.claims] == ["Red is a film.", "Bo Chen directed it.", "1999 was the year."]
    assert [[s.span for s in c.sources] for c in part.claims] == [[a], [b, a], [b]]


@pytest.mark.parametrize("reply", ["NOT FOUND", "  not found", "NOT FOUND.", "The passages do not say."])
def test_parse_claims_not_found(reply):
    part, notes = parse_claims("q", reply, [span(1)])
    assert part == PartDraft("q") and not part.found and notes == ()


def test_parse_claims_strips_markdown():
    text = "- **Red** is a film [1].\n* Bo Chen directed `it` [2].\n2. It won __two__ awards [1, 2].\n## Notes"
    part, _ = parse_claims("q", text, [span(1), span(2)])
    assert [c.text for c in part.claims] == ["Red is a film.", "Bo Chen directed it.", "It won two awards.", "Notes"]
    assert [len(c.sources) for c in part.claims] == [1, 1, 2, 0]


def test_parse_claims_drops_and_notes_out_of_range_markers():
    part, notes = parse_claims("q", "Red is a film [3][0]. Bo Chen [2].", [span(1), span(2)])
    assert [[s.span for s in c.sources] for c in part.claims] == [[], [span(2)]]
    assert "removed 2 citation(s) of passages that were not given" in notes and "no citations" not in notes
    none, notes = parse_claims("q", "Uncited [7].", [span(1)])
    assert none.found and none.claims[0].sources == () and "no citations" in notes


def test_render_claims_numbers_the_spans_it_is_given():
    d = said("q", ("Red.", (span(2),)), ("Bo.", (span(1), span(3))))
    assert render_claims(d, [span(1), span(2)]) == "Red. [2] Bo. [1]"


# -- prompts ----------------------------------------------------------------------------------

def test_prompts_are_overridable_by_files(tmp_path):
    (tmp_path / "answer_system.txt").write_text("Answer like a pirate, citing [n].")
    (tmp_path / "answer_user.txt").write_text("Q={question}\nE={evidence} {\"json\": 1}")
    llm = ScriptedLLM("Arr [1].")
    LLMReasoner(llm, 16, prompts=tmp_path).answer([SubQuestion("where?")], [ev(span(1))], 1000)
    system, user = llm.calls[0][0][0]
    assert system["content"] == "Answer like a pirate, citing [n]."
    assert user["content"].startswith("Q=where?\nE=[1] Doc 1") and '{"json": 1}' in user["content"]
    (tmp_path / "typo.txt").write_text("x")
    with pytest.raises(ConfigError, match="typo"):
        Prompts.load(tmp_path)


# -- the budget, whatever the sizes -----------------------------------------------------------

def long_reply(prompt: Prompt) -> str:
    return "Words [1] " * 300


texts = st.text(alphabet="abc xyz.", min_size=0, max_size=600)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    allowance=st.integers(0, 1500),
    max_new=st.integers(1, 300),
    span_texts=st.lists(texts, max_size=6),
    n_questions=st.integers(1, 4),
    question=st.text(alphabet="ab cd?", max_size=300),
)
def test_no_step_spends_more_than_its_allowance(allowance, max_new, span_texts, n_questions, question):
    spans = [span(i, text=t or "x") for i, t in enumerate(span_texts)]
    reasoner = LLMReasoner(ScriptedLLM(long_reply), max_new)
    plan = reasoner.plan(question, ev(*spans), allowance)
    assert plan.tokens_in + plan.tokens_out <= allowance
    subs = [SubQuestion(question)] * n_questions
    drafts = reasoner.answer(subs, [ev(*spans)] * n_questions, allowance)
    assert sum(d.tokens_in + d.tokens_out for d in drafts) <= allowance
    assert all(d.error in (None, "budget") for d in drafts)
    assert all(s.span in spans for d in drafts for c in d.claims for s in c.sources)
    # dependent parts: the merge that calls the model
    parts = [Part(SubQuestion(question, (0,) if i else ()), d) for i, d in enumerate(drafts)]
    merged = reasoner.merge(question, drafts[0], parts, Plan(), allowance)
    assert merged.tokens_in + merged.tokens_out <= allowance
    checked = reasoner.reflect(question, merged, ev(*spans), allowance)
    assert checked.tokens_in + checked.tokens_out <= allowance


# -- reflection by the reader ------------------------------------------------------------------

def test_a_generated_claim_is_read_with_the_entry_its_sentence_belongs_to():
    """Reflection reads a cited sentence as answering does: a manual entry's later sentence with
    the entry's name ("If delete is true..." is about tempfile.NamedTemporaryFile)."""
    from rag_rlm.reasoning.verify import _grounded

    entry = span(1, "tempfile.NamedTemporaryFile(mode='w+b', delete=True): This function operates exactly as "
                    "TemporaryFile() does. If delete is true (the default), the file is deleted as soon as it is "
                    "closed.", "tempfile")
    claim = Claim("By default a NamedTemporaryFile is deleted when it is closed.",
                  (Source(entry, entry.start, entry.end),), kind="generated")
    narrowed, read = _grounded(claim)
    assert read == ("tempfile — tempfile.NamedTemporaryFile: If delete is true (the default), the file is deleted "
                    "as soon as it is closed.")
    assert entry.text[narrowed.sources[0].start - entry.start:].startswith("If delete is true")


def test_reflection_drops_a_generated_claim_the_reader_finds_unsupported():
    """The model's claims meet the same check as quoted ones: each is read against the sentence
    of the passage it cites that it says (the scripted LLM approves its own draft with "OK")."""
    from rag_rlm.reader import load_reader, shipped_reader_path
    from rag_rlm.reasoning.scoring import ReaderScorer

    reader = load_reader(shipped_reader_path())
    q = "Who approves expenses over $500?"
    policy = span(1, "Travel is booked through the portal. Expenses over $500 must be approved by the Finance "
                     "Director before the purchase is made.", "Expense policy")
    kitchen = span(2, "The office kitchen is cleaned every Friday afternoon by an outside company.", "Office")
    made = (Claim("The Finance Director approves expenses over $500.", (Source(policy, policy.start, policy.end),),
                  kind="generated"),
            Claim("The kitchen company approves them.", (Source(kitchen, kitchen.start, kitchen.end),), kind="generated"))
    draft = Draft((PartDraft(q, made, True, 1.0),))
    reasoner = LLMReasoner(ScriptedLLM("OK"), 64, scorer=ReaderScorer(reader))
    checked = reasoner.reflect(q, draft, ev(policy, kitchen), 4000)
    assert [c.text for c in checked.claims] == ["The Finance Director approves expenses over $500."]
    (source,) = checked.claims[0].sources  # narrowed to the sentence it says, not the whole passage
    assert policy.text[source.start:source.end].startswith("Expenses over $500 must be approved")
    assert any("dropped 'The kitchen company approves them.'" in n for n in checked.notes)
    # a part none of whose claims is supported is not found, and named as missing
    only_kitchen = Draft((PartDraft(q, made[1:], True, 1.0),))
    checked = reasoner.reflect(q, only_kitchen, ev(kitchen), 4000)
    assert not checked.found and checked.missing == (q,)
