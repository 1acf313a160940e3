"""A large document's text in segments: bounded pieces that are chunked, sentence-split, embedded
and written one after another, so ingest memory does not grow with document size.

A segment ends after a blank line (paragraphs stay whole) found in the last three quarters of
its window; failing that after a line break, then after white space, and only in one huge run of
text with neither, at the limit. A document shorter than the limit is one segment, so its chunks
are exactly those of the whole text. Across a cut no chunk spans two segments (the cut acts like
a heading: no overlap is repeated into the next chunk); the sentences are the same as the whole
text's (SentenceSplitter carries its state), except where a cut had to fall inside a paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# ~110 chunks of the default 200 tokens: a few MB of tokens and vectors at a time, and any
# document of ordinary length (a 60-page report) is still a single segment.
SEGMENT_CHARS = 100_000
_CUTS = (re.compile(r"\n[ \t\f\v]*\n"), re.compile(r"\n"), re.compile(r"\s"))


def segments(text: str, size: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, end) of consecutive segments covering `text`, each at most `size` characters
    (default SEGMENT_CHARS, read at call time so a test can lower it)."""
    size = size or SEGMENT_CHARS
    start = 0
    while len(text) - start > size:
        end = _cut(text, start + size // 4, start + size)
        yield start, end
        start = end
    if start < len(text):
        yield start, len(text)


def _cut(text: str, lo: int, hi: int) -> int:
    """Where to end a segment in text[lo:hi]: after the last blank line, line break or white
    space there, in that order of preference; at `hi` when there is none."""
    for pattern in _CUTS:
        end = None
        for m in pattern.finditer(text, lo, hi):
            end = m.end()
        if end is not None:
            return end
    return hi
