"""The local transformers backend with a real, tiny, randomly initialised Llama model.

The model and its tokenizer are built and saved here at test time (a BPE tokenizer trained in
memory; nothing is downloaded). Its output is garbage by construction, which is what the
graceful-degradation tests through the LLM reasoner need.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from rag_rlm.config import Settings
from rag_rlm.errors import ModelNotFound
from rag_rlm.llm import open_llm
from rag_rlm.llm.local import LocalLLM
from rag_rlm.llm.random_model import CHAT_TEMPLATE, build_random_llama
from rag_rlm.reasoning.base import Claim, Draft, Evidence, Part, PartDraft, Plan, Source, SubQuestion, Turn
from rag_rlm.reasoning.llm import LLMReasoner
from rag_rlm.types import Span


def build_tiny_model(folder: Path, chat_template: str | None = CHAT_TEMPLATE) -> Path:
    return build_random_llama(folder, hidden=64, layers=2, vocab_size=400, max_positions=1024,
                              chat_template=chat_template)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny(model_dir) -> LocalLLM:
    return LocalLLM(model_dir, quantization="none")


PROMPTS = [
    [{"role": "user", "content": "Who?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who directed the movie that the fox starred in?"}],
    [{"role": "user", "content": "Expenses are reimbursed within thirty days. " * 6}],
]


@pytest.mark.parametrize("quantization,layer", [("none", "Linear"), ("8bit", "Linear8bitLt"), ("4bit", "Linear4bit")])
def test_loads_quantised_and_generates_a_batch(model_dir, quantization, layer, monkeypatch):
    llm = LocalLLM(model_dir, quantization=quantization)
    q_proj = llm.model.model.layers[0].self_attn.q_proj
    assert type(q_proj).__name__ == layer
    if quantization != "none":
        assert type(q_proj).__module__.startswith("bitsandbytes")
    batches = []
    real_generate = llm.model.generate
    monkeypatch.setattr(llm.model, "generate", lambda **kw: batches.append(kw["input_ids"].shape) or real_generate(**kw))
    results = llm.generate(PROMPTS, max_new_tokens=8)
    assert len(batches) == 1 and batches[0][0] == 3  # one call for the whole batch
    assert len(results) == 3 and all(r.ok for r in results)
    assert [r.tokens_in for r in results] == [llm.count_tokens(p) for p in PROMPTS]
    assert all(1 <= r.tokens_out <= 8 for r in results)


def test_token_counts_exclude_padding_and_follow_the_chat_template(tiny):
    counts = [tiny.count_tokens(p) for p in PROMPTS]
    assert counts[0] < counts[1] < counts[2]  # so the batch really was padded
    rendered = tiny.render(PROMPTS[1])
    assert rendered.startswith("<s><|system|>Be brief.\n<|user|>Who directed") and rendered.endswith("<|assistant|>")


def test_min_new_tokens_runs_the_full_length_and_decoding_is_greedy(tiny):
    first = tiny.generate(PROMPTS, max_new_tokens=12, min_new_tokens=12)
    again = tiny.generate(PROMPTS, max_new_tokens=12, min_new_tokens=12)
    assert [r.tokens_out for r in first] == [12, 12, 12]
    assert [r.text for r in first] == [r.text for r in again]


def test_left_padding_does_not_change_a_prompts_result(tiny):
    batched = tiny.generate(PROMPTS, max_new_tokens=6)
    alone = [tiny.generate([p], max_new_tokens=6)[0] for p in PROMPTS]
    assert [r.text for r in batched] == [r.text for r in alone]
    assert [r.tokens_in for r in batched] == [r.tokens_in for r in alone]


def test_a_prompt_beyond_the_context_fails_alone(tiny):
    huge = [{"role": "user", "content": "Expenses are reimbursed within thirty days. " * 200}]
    ok, too_long = tiny.generate([PROMPTS[0], huge], max_new_tokens=4)
    assert ok.ok and ok.tokens_in == tiny.count_tokens(PROMPTS[0])
    assert not too_long.ok and "context of 1024" in str(too_long.error) and not too_long.error.transient


def test_plain_rendering_without_a_chat_template(tmp_path):
    llm = LocalLLM(build_tiny_model(tmp_path / "plain", chat_template=None), quantization="none")
    assert llm.render(PROMPTS[1]) == "system: Be brief.\nuser: Who directed the movie that the fox starred in?\nassistant:"
    (result,) = llm.generate([PROMPTS[1]], 4)
    assert result.tokens_in == llm.count_tokens(PROMPTS[1]) and result.tokens_out <= 4


def test_concurrent_callers_are_serialised_safely(tiny):
    expected = [r.text for r in tiny.generate(PROMPTS, 5)]
    outputs: list[list[str]] = []

    def call() -> None:
        outputs.append([r.text for r in tiny.generate(PROMPTS, 5)])

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outputs == [expected] * 3


def test_missing_folder_names_the_path_and_where_to_put_a_model(tmp_path):
    missing = tmp_path / "models" / "nope"
    with pytest.raises(ModelNotFound, match="nope") as info:
        LocalLLM(missing)
    assert info.value.path == str(missing) and "models/README.md" in str(info.value)


def test_folder_without_config_or_with_broken_weights(tmp_path, model_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelNotFound, match="no config.json"):
        LocalLLM(empty)
    broken = tmp_path / "broken"
    shutil.copytree(model_dir, broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ModelNotFound, match="cannot load the model") as info:
        LocalLLM(broken, quantization="none")
    assert info.value.path == str(broken)


def test_open_llm_with_a_relative_local_path(model_dir, monkeypatch):
    monkeypatch.chdir(model_dir.parent.parent)
    relative = f"{model_dir.parent.name}/{model_dir.name}"
    llm = open_llm(f"local:{relative}", Settings(llm_quantization="none"))
    assert isinstance(llm, LocalLLM) and llm.quantization == "none"
    assert llm.generate([PROMPTS[0]], 3)[0].ok
    assert isinstance(open_llm(relative, Settings(llm_quantization="8bit")), LocalLLM)  # a bare folder


# -- garbage from a random model, through the LLM reasoner ------------------------------------

def spans() -> list[Span]:
    texts = ["Staff may work remotely two days a week.", "Expenses are reimbursed within thirty days."]
    return [Span(f"d{i}", 0, f"Doc {i}", f"/d{i}.md", t, 0, len(t), 0.9) for i, t in enumerate(texts)]


def cite_only_given(draft: Draft, given: list[Span]) -> bool:
    return all(s.span in given for c in draft.claims for s in c.sources)


def test_random_model_output_degrades_gracefully(tiny):
    reasoner = LLMReasoner(tiny, max_new_tokens=24)
    plan = reasoner.plan("Who directed the movie that the fox starred in?", Evidence(tuple(spans())), 2000)
    assert plan.sub_questions == () and plan.note.startswith("unparseable plan output")
    assert 0 < plan.tokens_in + plan.tokens_out <= 2000 and plan.llm_calls == 1

    subs = [SubQuestion("Remote work?"), SubQuestion("Expenses?")]
    drafts = reasoner.answer(subs, [Evidence(tuple(spans())), Evidence(tuple(spans()[:1]))], 1200)
    assert len(drafts) == 2 and all(isinstance(d, Draft) and d.llm_calls == 1 for d in drafts)
    assert [d.parts[0].question for d in drafts] == ["Remote work?", "Expenses?"]
    assert sum(d.tokens_in + d.tokens_out for d in drafts) <= 1200
    assert all(d.tokens_out <= 24 for d in drafts)
    assert all("\x19" not in c.text for d in drafts for c in d.claims)  # control bytes cleaned out
    assert cite_only_given(drafts[0], spans()) and cite_only_given(drafts[1], spans()[:1])

    # dependent parts, so merge asks the model
    parts = [Part(subs[0], drafts[0]), Part(SubQuestion("Expenses after #1?", (0,)), drafts[1])]
    merged = reasoner.merge("Both?", drafts[0], parts, Plan(), 800)
    assert isinstance(merged, Draft) and merged.tokens_in + merged.tokens_out <= 800
    assert cite_only_given(merged, spans())
    s0 = spans()[0]
    grounded = Draft((PartDraft("Remote work?", (Claim("Two days a week.", (Source(s0, s0.start, s0.end),)),), True),))
    checked = reasoner.reflect("Remote work?", grounded, Evidence(tuple(spans())), 600)
    assert checked.tokens_in + checked.tokens_out <= 600 and checked.llm_calls == 1
    assert checked.cited == grounded.cited  # an uncited rewrite never replaces a grounded draft
    rewrite = reasoner.condense("And expenses?", [Turn("user", "Can I work remotely?")], 400)
    standalone = rewrite.question
    assert "\n" not in standalone and 3 <= len(standalone) <= 4 * len("And expenses?") + 200
    assert not any(ch in standalone for ch in "\x19\ufffd")
    assert rewrite.tokens_in + rewrite.tokens_out <= 400 and rewrite.framed  # counted; checked like a framed rewrite


def test_tiny_allowance_is_budget_not_an_overrun(tiny):
    reasoner = LLMReasoner(tiny, max_new_tokens=24)
    (draft,) = reasoner.answer([SubQuestion("Remote work?")], [Evidence(tuple(spans()))], 30)
    assert draft.error == "budget" and draft.tokens_in + draft.tokens_out == 0 and not draft.found
    assert reasoner.plan("Remote work?", Evidence(tuple(spans())), 30).note.startswith("budget")
