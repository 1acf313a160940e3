"""The chunker with the real MiniLM tokenizer: exact offsets, the token limit, headings, overlap."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_rlm.ingest.chunker import chunk_text, token_limit

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample"
HOTPOT = Path("/work/shared/data/hotpotqa/corpus.jsonl")


def long_text() -> str:
    """Real prose of a few thousand tokens: HotpotQA paragraphs when present, else the sample."""
    if HOTPOT.is_file():
        with HOTPOT.open() as f:
            return "\n\n".join(json.loads(next(f))["text"] for _ in range(60))
    return "\n\n".join(p.read_text() for p in sorted(SAMPLE.iterdir())) * 3


def check(text: str, chunks, embedder, limit: int) -> None:
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert text[c.start:c.end] == c.text
        assert c.text == c.text.strip() and c.text
        assert embedder.count_tokens(c.text) <= limit
    # nothing is lost: every word of the text lies inside some chunk
    covered = [False] * len(text)
    for c in chunks:
        covered[c.start:c.end] = [True] * (c.end - c.start)
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))


def test_chunks_are_exact_slices_within_the_limit_and_cover_everything(embedder):
    text = long_text()
    chunks = chunk_text("d", text, embedder, chunk_tokens=120, overlap=20)
    assert len(chunks) > 10
    check(text, chunks, embedder, 120)
    assert max(embedder.count_tokens(c.text) for c in chunks) > 90  # packed, not one paragraph each


def test_the_model_limit_caps_a_larger_setting_including_special_tokens(embedder):
    assert token_limit(embedder, 10_000) == embedder.max_tokens - 2
    text = " ".join(["word"] * 2000)  # one paragraph with no sentence end: split at tokens
    chunks = chunk_text("d", text, embedder, chunk_tokens=10_000, overlap=0)
    check(text, chunks, embedder, embedder.max_tokens - 2)
    assert len(embedder.tokenizer(chunks[0].text)["input_ids"]) <= embedder.max_tokens
    assert len(chunks) == -(-2000 // (embedder.max_tokens - 2))


def test_headings_start_new_chunks_and_carry_no_overlap(embedder):
    text = (SAMPLE / "team-structure.md").read_text()
    chunks = chunk_text("d", text, embedder, chunk_tokens=200, overlap=30)
    check(text, chunks, embedder, 200)
    assert [c.text.split("\n")[0] for c in chunks] == [
        "# Team structure", "## Platform team", "## Fleet team", "## Payments team", "## Security team",
        "## Data team"]
    assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:], strict=False))


def test_a_long_paragraph_splits_at_sentences_with_overlap_from_the_previous_chunk(embedder):
    sentences = [f"Sentence number {i} says the office in city {i} opens at {i % 12} o'clock." for i in range(60)]
    text = " ".join(sentences)
    chunks = chunk_text("d", text, embedder, chunk_tokens=64, overlap=16)
    check(text, chunks, embedder, 64)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.start < b.start < a.end < b.end  # overlapping, moving forward
        shared = embedder.count_tokens(text[b.start:a.end])
        assert 8 <= shared <= 16
        # the new part of each chunk begins at a sentence start
        assert text[a.end - 1] == "."


def test_no_overlap_means_disjoint_chunks_and_empty_text_means_none(embedder):
    text = long_text()
    chunks = chunk_text("d", text, embedder, chunk_tokens=50, overlap=0)
    check(text, chunks, embedder, 50)
    assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:], strict=False))
    assert chunk_text("d", " \n\n \t", embedder, chunk_tokens=50, overlap=0) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["word", "Lisbon.", "# Head", "\n", "\n\n", "€42", "naïve", "x" * 30, "?"]),
                max_size=300),
       st.integers(min_value=8, max_value=80), st.integers(min_value=0, max_value=7))
def test_any_text_chunks_exactly_and_within_the_limit(embedder, words, limit, overlap):
    text = " ".join(words)
    check(text, chunk_text("d", text, embedder, chunk_tokens=limit, overlap=overlap), embedder, limit)
