"""Reading and checking the eval inputs: a questions JSONL and a corpus JSONL.

Every problem is a `DataError` that names the file and the line, so a user can fix the file:
bad JSON, a line that is not an object, a missing or mistyped field, a duplicate id.

A question whose `answer` is empty ("", [] or null) and that has no `answer_aliases` is
unanswerable (SQuAD 2.0 style): the collection is not expected to answer it, and its
`supporting_ids` (when given) are a paragraph on the same topic that does not answer it.
Optional fields (`type`, `answer_aliases`, anything not required) may be null.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RagRlmError


class DataError(RagRlmError):
    def __init__(self, path: str | Path, line: int | None, reason: str):
        self.path, self.line, self.reason = str(path), line, reason
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: tuple[str, ...]  # acceptable answers: `answer` (string or list) and `answer_aliases`
    supporting_ids: tuple[str, ...]
    type: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # every other field, kept for the report

    @property
    def answerable(self) -> bool:
        """False for a question with no gold answer: the right reply is "not found"."""
        return bool(self.answers)


_QUESTION_FIELDS = ("id", "question", "answer", "supporting_ids")
_CORPUS_FIELDS = ("id", "title", "text")


def read_questions(path: str | Path, limit: int | None = None) -> list[Question]:
    """The questions of a JSONL file, in file order; the first `limit` when given (the whole
    file is still checked up to that point)."""
    out: list[Question] = []
    seen: set[str] = set()
    for line_no, record in _records(path):
        q = _question(path, line_no, record)
        if q.id in seen:
            raise DataError(path, line_no, f"duplicate question id {q.id!r}")
        seen.add(q.id)
        out.append(q)
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise DataError(path, None, "no questions in the file")
    return out


def check_corpus(path: str | Path) -> int:
    """Check a corpus JSONL before it is ingested: every line an object with string `id`,
    `title` and `text`, ids unique. Returns the number of documents."""
    seen: set[str] = set()
    for line_no, record in _records(path):
        for name in _CORPUS_FIELDS:
            if name not in record:
                raise DataError(path, line_no, f"missing field {name!r}")
            if not isinstance(record[name], str):
                raise DataError(path, line_no, f"field {name!r} must be a string")
        if not record["id"].strip():
            raise DataError(path, line_no, "field 'id' is empty")
        if record["id"] in seen:
            raise DataError(path, line_no, f"duplicate document id {record['id']!r}")
        seen.add(record["id"])
    if not seen:
        raise DataError(path, None, "no documents in the file")
    return len(seen)


def _records(path: str | Path):
    """(line number, object) for each non-blank line."""
    p = Path(path)
    try:
        handle = p.open(encoding="utf-8")
    except OSError as e:
        raise DataError(path, None, f"cannot read: {e.strerror or e}") from None
    with handle:
        try:
            for line_no, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DataError(path, line_no, f"bad JSON: {e.msg} (column {e.colno})") from None
                if not isinstance(record, dict):
                    raise DataError(path, line_no, f"expected a JSON object, got {type(record).__name__}")
                yield line_no, record
        except UnicodeDecodeError as e:
            raise DataError(path, None, f"not UTF-8 text: {e.reason}") from None


def _question(path: str | Path, line_no: int, r: dict[str, Any]) -> Question:
    for name in _QUESTION_FIELDS:
        if name not in r:
            raise DataError(path, line_no, f"missing field {name!r}")
    if not isinstance(r["id"], str | int) or isinstance(r["id"], bool):
        raise DataError(path, line_no, "field 'id' must be a string")
    if not isinstance(r["question"], str) or not r["question"].strip():
        raise DataError(path, line_no, "field 'question' must be a non-empty string")
    # an empty answer with no aliases is an unanswerable question, not a mistake in the file
    answers = _strings(path, line_no, r, "answer", allow_single=True)
    answers += _strings(path, line_no, r, "answer_aliases", allow_single=False)
    supporting = _strings(path, line_no, r, "supporting_ids", allow_single=False)
    if answers and not supporting:
        raise DataError(path, line_no, "field 'supporting_ids' is empty (recall needs gold documents)")
    kind = r.get("type")
    if kind is not None and not isinstance(kind, str):
        raise DataError(path, line_no, "field 'type' must be a string")
    extra = {k: v for k, v in r.items() if k not in {*_QUESTION_FIELDS, "answer_aliases", "type"}}
    return Question(str(r["id"]), r["question"].strip(), tuple(dict.fromkeys(answers)), tuple(supporting),
                    kind or "", extra)


def _strings(path: str | Path, line_no: int, r: dict[str, Any], name: str, *, allow_single: bool) -> list[str]:
    """The non-blank strings of a field; a missing or null field has none."""
    value = r.get(name)
    if value is None:
        return []
    if allow_single and isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        kind = "a string or a list of strings" if allow_single else "a list of strings"
        raise DataError(path, line_no, f"field {name!r} must be {kind}")
    return [v for v in value if v.strip()]
