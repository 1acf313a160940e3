"""What a stored document was made with: its ingest recipe.

A stored document is current when its bytes are unchanged *and* it was parsed, chunked, split
into sentences and embedded the way this version and these settings do it. Without the second
half, a store kept the sentences of whatever release first ingested a file: a splitter fix or a
new `chunk_tokens` never reached documents whose bytes had not changed. The recipe is a short
hash written into each document's record metadata; a document stored under another recipe (or
before recipes existed) is read and written again by the next ingest or sync of its source.
"""

from __future__ import annotations

import hashlib
import json

from rag_rlm.config import Settings
from rag_rlm.types import DocumentRecord

# Bump when parsing, chunking, sentence splitting or what the embedder reads of a chunk changes
# what a stored document holds. tests/test_ingest_recipe.py pins the segmentation of some pages
# to this number, so a change that moves it fails there until it is bumped.
INGEST_VERSION = 31
METADATA_KEY = "ingest_recipe"
BUNDLED_EMBEDDER = "all-MiniLM-L6-v2"  # what an empty `embed_model` loads


def recipe(settings: Settings) -> str:
    """The recipe of documents ingested now with `settings` (16 hex digits)."""
    made_with = {
        "version": INGEST_VERSION,
        "chunk_tokens": settings.chunk_tokens,
        "chunk_overlap": settings.chunk_overlap,
        "sentence_vectors": settings.sentence_vectors,
        "embedder": settings.embed_model or BUNDLED_EMBEDDER,
    }
    return hashlib.sha256(json.dumps(made_with, sort_keys=True).encode()).hexdigest()[:16]


def refreshed_note(count: int) -> str:
    """What a run's summary adds after its count of updated documents."""
    return f" ({count} of them unchanged, made again with the current ingest recipe)" if count else ""


def made_with(record: DocumentRecord, current: str) -> bool:
    """Whether the stored document was made with the `current` recipe."""
    return record.metadata.get(METADATA_KEY) == current


def is_current(record: DocumentRecord, content_hash: str, current: str) -> bool:
    """Whether `record` holds these bytes made with the `current` recipe."""
    return record.content_hash == content_hash and made_with(record, current)
