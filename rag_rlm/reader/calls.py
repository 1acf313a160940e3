"""Training questions asked of manuals, with the candidates the system itself gave the reader.

`bench/reader_calls.py record` asks every real-page question of `bench/realdocs` and keeps each
call to the reader: the question, the candidate sentences as the reader read them (under their
page title and heading), and which of them hold the sentence the question's expectation quotes.
Those are the manuals' own questions (told as stories or asked directly, half of them not
answered by the pages) against the sentences retrieval really offers, where SQuAD gives a
paragraph's other sentences. A question the pages answer trains when one of its candidates is
labelled as answering (a listwise group); one they do not answer trains every candidate as a
negative: that is what teaches a reader to say a manual does not answer.

Only the real-page calls are read (never a dev set's); the sets named in `exclude` are left out,
so they can pick the threshold, or check, on pages the reader has not read.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Collection, Sequence
from pathlib import Path

from .data import Pair

SOURCE = "realdocs_calls"
FIRST_GROUP = 10_000_001  # group ids above any other source's


def pairs(paths: Path | Sequence[Path], exclude: Collection[str] = (), repeats: int = 1) -> list[Pair]:
    """Each usable call's candidates as one group, `repeats` times (each repeat its own groups); the
    files' calls in the order given, so that a file recorded later adds sets without renumbering."""
    files = [_read(p) for p in ([paths] if isinstance(paths, Path) else paths)]
    out: list[Pair] = []
    group = FIRST_GROUP - 1
    for _ in range(repeats):
        for texts, data in files:
            for call in data["calls"]:
                if call["kind"] != "real" or call["set"] in exclude:
                    continue
                if not call["unanswerable"] and not any(call["answers"]):
                    continue  # the expectation's sentence is not among them: no label to trust
                group += 1
                out += [Pair(*texts[i], 1.0 if answers else 0.0, 1.0, SOURCE, group)
                        for i, answers in zip(call["idx"], call["answers"], strict=True)]
    return out


def _read(path: Path) -> tuple[list[tuple[str, str]], dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    return [tuple(p) for p in data["pairs"]], data


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
