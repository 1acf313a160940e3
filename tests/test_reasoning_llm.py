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
from rag_rlm.reasoning.base import Draft, Part, SubQuestion
from rag_rlm.reasoning.llm import LLMReasoner
from rag_rlm.reasoning.prompts import Prompts
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


# -- plan -------------------------------------------------------------------------------------

def test_json_plan_anywhere_in_the_text_is_parsed():
    reply = ('Sure! Here is the plan:\n```json\n{"sub_questions": [{"question": "Which film did Ann Lee '
             'star in?", "depends_on": []}, {"question": "Who directed #1?", "depends_on": [0]}]}\n```')
    llm = ScriptedLLM(reply)
    plan = LLMReasoner(llm, 64).plan("Who directed the film in which Ann Lee starred?", [span(1)], 2000)
    assert plan.sub_questions == (
        SubQuestion("Which film did Ann Lee star in?"),
        SubQuestion("Who directed #1?", (0,)),
    )
    assert plan.llm_calls == 1 and plan.tokens_in == llm.count_tokens(llm.calls[0][0][0])
    assert "Ann Lee starred" in user_text(llm.calls[0][0][0])


def test_placeholders_add_dependencies_the_json_left_out():
    reply = '{"sub_questions": ["Which film did Ann Lee star in?", "When was #1 released?", "Who directed #1?"]}'
    plan = LLMReasoner(ScriptedLLM(reply), 64).plan("q", [], 2000)
    assert [s.depends_on for s in plan.sub_questions] == [(), (0,), (0,)]


def test_numbered_list_fallback_with_placeholders():
    reply = "1. Which film did Ann Lee star in?\n2) Who directed #1?\nThat is all."
    plan = LLMReasoner(ScriptedLLM(reply), 64).plan("Who directed the film in which Ann Lee starred?", [], 2000)
    assert plan.sub_questions == (SubQuestion("Which film did Ann Lee star in?"), SubQuestion("Who directed #1?", (0,)))


@pytest.mark.parametrize("reply", ["\x19\ufffd garbage %%%", "", '{"sub_questions": "no"}', "{broken json"])
def test_unparseable_plan_is_no_decomposition_with_a_note(reply):
    plan = LLMReasoner(ScriptedLLM(reply), 64).plan("q", [], 2000)
    assert plan.sub_questions == () and plan.note == "unparseable plan output" and plan.llm_calls == 1


def test_forward_reference_makes_the_plan_unusable():
    plan = LLMReasoner(ScriptedLLM('["Who directed #2?", "Which film?"]'), 64).plan("q", [], 2000)
    assert plan.sub_questions == () and plan.note.startswith("unparseable plan output")


def test_empty_or_single_sub_question_means_answer_directly():
    assert LLMReasoner(ScriptedLLM('{"sub_questions": []}'), 64).plan("q", [], 2000).note == "no decomposition"
    one = LLMReasoner(ScriptedLLM('["Only this?"]'), 64).plan("q", [], 2000)
    assert one.sub_questions == () and "one sub-question" in one.note


def test_plan_backend_failure_is_a_note_not_an_exception():
    plan = LLMReasoner(ScriptedLLM(BackendError("down", transient=True)), 64).plan("q", [], 2000)
    assert plan.sub_questions == () and plan.note.startswith("plan failed: down")


# -- answer -----------------------------------------------------------------------------------

def test_answer_is_one_batched_call_and_citations_map_to_spans():
    spans = [span(1), span(2), span(3)]
    llm = ScriptedLLM("It is B [2] and also A [1][2].", "Nothing cited here.", "See [9] and [3].")
    drafts = LLMReasoner(llm, 64).answer(["q1", "q2", "q3"], [spans, spans, spans], 3000)
    assert len(llm.calls) == 1 and len(llm.calls[0][0]) == 3
    first, second, third = drafts
    assert first.cited == (spans[1], spans[0]) and first.text == "It is B [1] and also A [2][1]."
    assert second.cited == () and "no citations" in second.notes and second.ok
    assert third.cited == (spans[2],) and third.text == "See and [1]." and any("removed 1" in n for n in third.notes)
    assert "[1] Doc 1: Fact number 1" in user_text(llm.calls[0][0][0])


def test_a_failed_prompt_does_not_spoil_the_batch():
    llm = ScriptedLLM("A [1].", BackendError("boom"), "C [1].")
    drafts = LLMReasoner(llm, 64).answer(["a", "b", "c"], [[span(1)]] * 3, 3000)
    assert [d.ok for d in drafts] == [True, False, True]
    assert drafts[1].error == "backend: boom" and drafts[1].text == ""
    assert drafts[2].cited == (span(1),)


def test_answer_without_room_reports_budget_and_does_not_call_the_model():
    llm = ScriptedLLM("never")
    drafts = LLMReasoner(llm, 64).answer(["a question"], [[span(1)]], 10)
    assert drafts[0].error == "budget" and drafts[0].tokens_in == drafts[0].tokens_out == 0
    assert llm.calls == []


def test_evidence_is_trimmed_to_fit_and_the_cut_span_still_cited():
    long = span(1, text=" ".join(f"w{i}" for i in range(400)))
    llm = ScriptedLLM("Answer [1].")
    (draft,) = LLMReasoner(llm, 32).answer(["q"], [[long, span(2)]], 250)
    shown = user_text(llm.calls[0][0][0])
    assert "[1] Doc 1: w0 w1" in shown and "w399" not in shown and "[2]" not in shown
    assert draft.cited == (long,) and draft.tokens_in + draft.tokens_out <= 250


# -- merge ------------------------------------------------------------------------------------

def parts() -> list[Part]:
    a, b, c = span(1), span(2), span(3)
    return [
        Part("Which film?", Draft("The film is Red [1] per [2].", cited=(a, b))),
        Part("Who directed it?", Draft("Bo Chen [1].", cited=(c,))),
        Part("Failed one?", Draft("", error="backend: down")),
    ]


def test_merge_renumbers_the_parts_citations_into_one_list():
    llm = ScriptedLLM("Bo Chen [3] directed Red [1].")
    merged = LLMReasoner(llm, 64).merge("Who directed the film?", parts(), 3000)
    shown = user_text(llm.calls[0][0][0])
    assert "A: The film is Red [1] per [2]." in shown and "A: Bo Chen [3]." in shown
    assert "(no answer: backend: down)" in shown
    assert merged.cited == (span(3), span(1)) and merged.text == "Bo Chen [1] directed Red [2]."


def test_merge_keeps_the_grounded_parts_when_the_model_cites_nothing():
    merged = LLMReasoner(ScriptedLLM("\x19 random bytes"), 64).merge("q", parts(), 3000)
    assert merged.ok and merged.cited == (span(1), span(2), span(3))
    assert "Bo Chen [3]" in merged.text and merged.llm_calls == 1


def test_merge_without_budget_joins_the_parts_without_the_model():
    llm = ScriptedLLM("never")
    merged = LLMReasoner(llm, 64).merge("q", parts(), 20)
    assert merged.error == "budget" and llm.calls == [] and merged.cited == (span(1), span(2), span(3))


# -- reflect ----------------------------------------------------------------------------------

def draft() -> Draft:
    return Draft("Red was directed by Bo Chen [1].", cited=(span(3),), tokens_in=99, tokens_out=9, llm_calls=1)


def test_reflect_ok_returns_the_draft_with_this_steps_usage_and_missing():
    llm = ScriptedLLM("OK.\nMISSING: release year of Red")
    out = LLMReasoner(llm, 64).reflect("q", draft(), [span(3), span(4)], 3000)
    assert out.text == draft().text and out.cited == draft().cited
    assert out.missing == ("release year of Red",) and out.llm_calls == 1 and out.tokens_in != 99
    assert "[1] Doc 3" in user_text(llm.calls[0][0][0]) and "[2] Doc 4" in user_text(llm.calls[0][0][0])


def test_reflect_revision_is_parsed_against_the_evidence():
    out = LLMReasoner(ScriptedLLM("Red was directed by Al Wu [2]."), 64).reflect("q", draft(), [span(4)], 3000)
    assert out.text == "Red was directed by Al Wu [1]." and out.cited == (span(4),)
    assert "revised by reflection" in out.notes


@pytest.mark.parametrize("reply", ["\x19\x13 garbage", BackendError("down")])
def test_reflect_garbage_or_failure_keeps_the_draft(reply):
    out = LLMReasoner(ScriptedLLM(reply), 64).reflect("q", draft(), [span(4)], 3000)
    assert out.text == draft().text and out.cited == draft().cited
    assert out.ok == isinstance(reply, str)


# -- prompts ----------------------------------------------------------------------------------

def test_prompts_are_overridable_by_files(tmp_path):
    (tmp_path / "answer_system.txt").write_text("Answer like a pirate, citing [n].")
    (tmp_path / "answer_user.txt").write_text("Q={question}\nE={evidence} {\"json\": 1}")
    llm = ScriptedLLM("Arr [1].")
    LLMReasoner(llm, 16, prompts=tmp_path).answer(["where?"], [[span(1)]], 1000)
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
    plan = reasoner.plan(question, spans, allowance)
    assert plan.tokens_in + plan.tokens_out <= allowance
    drafts = reasoner.answer([question] * n_questions, [spans] * n_questions, allowance)
    assert sum(d.tokens_in + d.tokens_out for d in drafts) <= allowance
    assert all(d.error in (None, "budget") for d in drafts)
    merged = reasoner.merge(question, [Part(question, d) for d in drafts], allowance)
    assert merged.tokens_in + merged.tokens_out <= allowance
    checked = reasoner.reflect(question, merged, spans, allowance)
    assert checked.tokens_in + checked.tokens_out <= allowance
