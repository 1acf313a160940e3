"""Spacing around punctuation when inline pieces of text are joined with spaces (HTML's inline
tags, a claim's sentence), shared by ingest and rendering so that both write it alike."""

from __future__ import annotations

import re

# a closing mark after a space, when what follows is a space, another mark or the end: "pg_restore ,"
# -> "pg_restore,", while ".htaccess" or ".gitignore" after a space keep it (a dot that opens a word).
# A "?" or "!" that a word follows is a name, not the sentence's end: "the ? operator", "the ? Operator".
_SPACE_BEFORE_CLOSE = re.compile(r"\s+([,.;:)\]”’]|[!?](?!\s+\w))(?=[\s,.;:!?)\]”’]|$)")
_SPACE_AFTER_OPEN = re.compile(r"([(\[“‘])\s+")


def tight(text: str) -> str:
    """`text` on one line, without a space before closing punctuation."""
    return _SPACE_BEFORE_CLOSE.sub(r"\1", " ".join(text.split()))


def tight_brackets(text: str) -> str:
    """`tight`, and no space after an opening bracket or quote either."""
    return _SPACE_AFTER_OPEN.sub(r"\1", tight(text))
