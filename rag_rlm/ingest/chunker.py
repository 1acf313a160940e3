"""Token-aware chunking with the embedder's own tokenizer.

The document is tokenized once; everything after works on token indices and their character
offsets, so a chunk is a contiguous token range [t0, t1) and its text is exactly
`text[offsets[t0][0]:offsets[t1 - 1][1]]` - which is what makes citations exact.

    blocks (split at blank lines; `#` lines are headings)
      -> units (a block too long for one chunk is split at sentences, then at tokens)
      -> chunks (units packed greedily up to the limit; a heading starts a new chunk;
                 the next chunk repeats ~overlap tokens from the end of the previous one)
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Protocol

from rag_rlm.types import Chunk

SPECIAL_TOKENS = 2  # [CLS] and [SEP] count against the model's max_tokens
_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n\s*")
_HEADING = re.compile(r"#{1,6}\s")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])[\"')\]]*\s+|\n")


class Tokenizing(Protocol):
    max_tokens: int

    def token_offsets(self, text: str) -> list[tuple[int, int]]: ...


@dataclass(frozen=True)
class _Unit:
    """A token range [a, b) that should not be split further; `heading` starts a section."""

    a: int
    b: int
    heading: bool


def token_limit(embedder: Tokenizing, chunk_tokens: int) -> int:
    """The most tokens a chunk may have: the setting, capped by what the model can read."""
    return max(1, min(chunk_tokens, int(embedder.max_tokens) - SPECIAL_TOKENS))


def chunk_text(
    document_id: str, text: str, embedder: Tokenizing, *, chunk_tokens: int, overlap: int,
    base: int = 0, first_index: int = 0,
) -> list[Chunk]:
    """The chunks of `text`; for one segment of a larger document, `base` is where it starts
    in the document (chunk offsets are the document's) and `first_index` the next chunk index."""
    offsets = embedder.token_offsets(text)
    offsets = [o for o in offsets if o[1] > o[0]]  # zero-width tokens carry no text to cite
    if not offsets:
        return []
    limit = token_limit(embedder, chunk_tokens)
    overlap = max(0, min(overlap, limit - 1))
    units = [u for block in _blocks(text, offsets) for u in _split(block, text, offsets, limit)]
    ranges = _pack(units, offsets, limit, overlap)
    return [
        Chunk(document_id=document_id, index=i, text=text[offsets[a][0]:offsets[b - 1][1]],
              start=base + offsets[a][0], end=base + offsets[b - 1][1])
        for i, (a, b) in enumerate(ranges, start=first_index)
    ]


def _blocks(text: str, offsets: list[tuple[int, int]]) -> list[_Unit]:
    """Paragraphs and headings as token ranges (blank lines separate them)."""
    starts = [s for s, _ in offsets]
    blocks = []
    pos = 0
    for sep in [*_BLANK_LINE.finditer(text), None]:
        end = sep.start() if sep else len(text)
        a, b = bisect_left(starts, pos), bisect_left(starts, end)
        if b > a:
            heading = _HEADING.match(text, offsets[a][0]) is not None
            blocks.append(_Unit(a, b, heading))
        pos = sep.end() if sep else end
    return blocks


def _split(block: _Unit, text: str, offsets: list[tuple[int, int]], limit: int) -> list[_Unit]:
    """A block that fits is one unit; a longer one is cut at sentence ends, and any sentence
    still too long at token boundaries."""
    if block.b - block.a <= limit:
        return [block]
    starts = [s for s, _ in offsets[block.a:block.b]]
    lo, hi = offsets[block.a][0], offsets[block.b - 1][1]
    cuts = [block.a + bisect_left(starts, m.end()) for m in _SENTENCE_END.finditer(text, lo, hi)]
    bounds = sorted({block.a, *cuts, block.b})
    units = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        for s in range(a, b, limit):
            units.append(_Unit(s, min(s + limit, b), block.heading and s == block.a))
    return units


def _pack(units: list[_Unit], offsets: list[tuple[int, int]], limit: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy packing of units into token ranges of at most `limit` tokens."""
    ranges: list[tuple[int, int]] = []
    start = end = -1
    fresh = False  # the current chunk has units of its own, not only the overlap
    body = False  # ... and at least one that is not a heading
    for unit in units:
        too_long = unit.b - start > limit
        if fresh and (too_long or (unit.heading and body)):
            ranges.append((start, end))
            start = unit.a if unit.heading else _overlap_start(offsets, start, end, unit, limit, overlap)
            fresh = body = False
        if start < 0:
            start = unit.a
        end = unit.b
        fresh = True
        body = body or not unit.heading
    if fresh:
        ranges.append((start, end))
    return ranges


def _overlap_start(
    offsets: list[tuple[int, int]], prev_start: int, prev_end: int, unit: _Unit, limit: int, overlap: int
) -> int:
    """Where the next chunk starts: ~overlap tokens before the end of the previous one, moved
    forward to the start of a word, and never so early that the new unit would not fit."""
    if overlap == 0:
        return unit.a
    t = max(prev_start + 1, prev_end - overlap, unit.b - limit)
    while t < unit.a and offsets[t][0] == offsets[t - 1][1]:  # inside a word (##piece)
        t += 1
    return min(t, unit.a)
