"""Sentence vectors for sentence memory, made at ingest so answering encodes only the question.

Two ways, compared by bench/bench_sentence_vectors.py: encode each sentence's text (with its
context: `context_text`), or pool the token vectors of the chunk pass over each sentence's tokens
(`pool_sentences`: no second forward pass).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_rlm.types import Chunk, Sentence


def context_text(title: str, sentence: Sentence) -> str:
    """"Title — Heading: sentence": what the sentence is about, for an encoder that sees it alone."""
    heading = sentence.heading if sentence.heading and sentence.heading != title else ""
    prefix = f"{title} — {heading}" if title and heading else title or heading
    return f"{prefix}: {sentence.text}" if prefix else sentence.text


def pool_sentences(
    chunks: Sequence[Chunk], token_sets: Sequence[tuple[np.ndarray, np.ndarray]], sentences: Sequence[Sentence]
) -> np.ndarray:
    """Unit vectors of `sentences`: the mean of the token vectors that cover each one, from the
    chunks in document order (a token in the overlap of two chunks is counted once, from the
    first). `token_sets[i]` is chunk i's (token vectors, (start, end) offsets in its text)."""
    dim = token_sets[0][0].shape[1] if token_sets else 0
    out = np.zeros((len(sentences), dim), dtype=np.float32)
    if not sentences or not chunks:
        return out
    prepared = []
    for chunk, (vecs, offsets) in zip(chunks, token_sets, strict=True):
        sums = np.vstack([np.zeros((1, dim), dtype=np.float64), np.cumsum(vecs, axis=0, dtype=np.float64)])
        prepared.append((chunk.start + offsets[:, 0], chunk.start + offsets[:, 1], sums))
    for i, s in enumerate(sentences):
        total = np.zeros(dim, dtype=np.float64)
        count = 0
        covered = s.start
        for starts, ends, sums in prepared:
            if len(starts) == 0 or starts[0] >= s.end or ends[-1] <= covered:
                continue
            lo = int(np.searchsorted(ends, covered, side="right"))
            hi = int(np.searchsorted(starts, s.end, side="left"))
            if hi > lo:
                total += sums[hi] - sums[lo]
                count += hi - lo
                covered = int(ends[hi - 1])
        if count:
            out[i] = total / count
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-12)
