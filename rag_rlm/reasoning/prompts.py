"""The LLM reasoner's prompts, all in one place, and the parsers of the replies they ask for.

Each step has a system and a user template; `{name}` fields are filled by plain replacement (so
the JSON example braces need no escaping). Any template can be overridden by a text file named
after it (`plan_system.txt`, `answer_user.txt`, ...) in a directory given to `Prompts.load`.

The parsers never raise on model output: they return what they could read, or nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

from ..errors import ConfigError
from ..types import Span
from .base import Claim, Draft, PartDraft, Source, SubQuestion

PLAN_SYSTEM = """\
You split a question into the sub-questions needed to answer it from a knowledge base.
Reply with JSON only, in this form:
{"sub_questions": [{"question": "...", "depends_on": []}, ...]}
Rules:
- If the question can be answered directly, reply {"sub_questions": []}.
- Use at most 4 sub-questions, each answerable on its own from one document.
- When a sub-question needs the answer of an earlier one, write #1, #2... for that answer
  (numbered from 1) and list the earlier ones in "depends_on" (numbered from 0).
Example: "Who directed the movie that Ann Lee starred in?" ->
{"sub_questions": [{"question": "Which movie did Ann Lee star in?", "depends_on": []},
 {"question": "Who directed #1?", "depends_on": [0]}]}"""

PLAN_USER = """\
Question: {question}

Some retrieved passages, for context:
{evidence}"""

ANSWER_SYSTEM = """\
You answer questions using only the numbered passages given.
Answer in one to three short sentences, the answer first, in plain text (no lists, no Markdown).
End every sentence with the passages it uses, as [1] or [1][2].
If the passages do not contain the answer, reply with exactly: NOT FOUND"""

ANSWER_USER = """\
Passages:
{evidence}

Question: {question}
Answer:"""

MERGE_SYSTEM = """\
You combine answers to sub-questions into one answer to the main question.
Keep the citations [n] exactly as given; they refer to the numbered passages.
Do not add facts that are not in the sub-answers or the passages."""

MERGE_USER = """\
Main question: {question}

Sub-answers:
{parts}

Passages:
{evidence}

Answer to the main question:"""

REFLECT_SYSTEM = """\
You check a draft answer against the numbered passages.
If every statement is supported by the passages it cites, reply with the single word OK.
Otherwise reply with a corrected answer in plain sentences, each ending with its passages as [n];
if the passages do not answer the question at all, reply with exactly: NOT FOUND
If evidence needed to answer is missing, add a line "MISSING: <search query>" for each gap."""

CONDENSE_SYSTEM = """\
You rewrite the last question of a conversation so that it can be understood without the
conversation: put back the subject that pronouns or ellipsis leave out ("And vision?",
"Who approves it?"). If it already stands on its own, repeat it unchanged.
Reply with the question only, on one line."""

CONDENSE_USER = """\
Conversation:
{history}

Last question: {question}
Standalone question:"""

REFLECT_USER = """\
Passages:
{evidence}

Question: {question}

Draft answer:
{draft}

Your verdict (OK, or a corrected answer):"""


@dataclass(frozen=True)
class Prompts:
    plan_system: str = PLAN_SYSTEM
    plan_user: str = PLAN_USER
    answer_system: str = ANSWER_SYSTEM
    answer_user: str = ANSWER_USER
    merge_system: str = MERGE_SYSTEM
    merge_user: str = MERGE_USER
    reflect_system: str = REFLECT_SYSTEM
    reflect_user: str = REFLECT_USER
    condense_system: str = CONDENSE_SYSTEM
    condense_user: str = CONDENSE_USER

    @classmethod
    def load(cls, directory: str | Path | None = None) -> Prompts:
        """The defaults, with any `<name>.txt` in `directory` replacing that template."""
        prompts = cls()
        if directory is None:
            return prompts
        folder = Path(directory)
        if not folder.is_dir():
            raise ConfigError("prompts", f"{folder} is not a folder")
        known = {f.name for f in fields(cls)}
        overrides = {}
        for path in sorted(folder.glob("*.txt")):
            if path.stem not in known:
                raise ConfigError("prompts", f"unknown prompt file {path}; known: {', '.join(sorted(known))}")
            overrides[path.stem] = path.read_text(encoding="utf-8").strip()
        return replace(prompts, **overrides)

    def messages(self, step: str, **values: str) -> list[dict[str, str]]:
        """The chat messages of one step ("plan", "answer", "merge", "reflect", "condense")."""
        system = getattr(self, f"{step}_system")
        user = getattr(self, f"{step}_user")
        return [{"role": "system", "content": system}, {"role": "user", "content": fill(user, **values)}]


def fill(template: str, **values: str) -> str:
    # one pass, so a value that happens to contain "{draft}" is not filled in again
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


# -- reading the replies ----------------------------------------------------------------------

UNPARSEABLE = "unparseable plan output"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffd]")
_CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
_LIST_ITEM = re.compile(r"^\s*(?:\d+\s*[.):]|[-*\u2022])\s+(.+?)\s*$")
_PLACEHOLDER = re.compile(r"#(\d+)")


def clean(text: str) -> str:
    """Model text without control characters and undecodable bytes (a broken model's output)."""
    return _CONTROL.sub("", text).strip()


def parse_plan(text: str) -> tuple[tuple[SubQuestion, ...], str]:
    """Sub-questions from JSON anywhere in the text, else from a numbered or bulleted list.
    "#k" in a sub-question is the answer of the k-th (1-based) and makes it depend on it."""
    items = _json_items(text)
    if items is None:
        items = _list_items(text)
    if items is None:
        return (), UNPARSEABLE
    if not items:
        return (), "no decomposition"
    subs = []
    for i, (question, depends_on) in enumerate(items):
        refs = {int(k) - 1 for k in _PLACEHOLDER.findall(question)}
        if any(not 0 <= r < i for r in refs):
            return (), f"{UNPARSEABLE}: sub-question {i + 1} refers to a later or missing answer"
        deps = {d for d in depends_on if 0 <= d < i} | refs
        subs.append(SubQuestion(question, tuple(sorted(deps))))
    return tuple(subs), "decomposed by the model"


def _json_items(text: str) -> list[tuple[str, list[int]]] | None:
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"[\[{]", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            value = value.get("sub_questions")
        if isinstance(value, list):
            items = [_json_item(v) for v in value]
            if all(item is not None for item in items):
                return items  # type: ignore[return-value]
    return None


def _json_item(value: object) -> tuple[str, list[int]] | None:
    if isinstance(value, str):
        question, deps = value, []
    elif isinstance(value, dict):
        question = value.get("question", value.get("text"))
        raw_deps = value.get("depends_on") or []
        deps = [d for d in raw_deps if isinstance(d, int)] if isinstance(raw_deps, list) else []
    else:
        return None
    if not isinstance(question, str) or not question.strip():
        return None
    return question.strip(), deps


def _list_items(text: str) -> list[tuple[str, list[int]]] | None:
    items = [m.group(1).strip().strip('"') for m in map(_LIST_ITEM.match, text.splitlines()) if m]
    items = [q for q in items if q]
    return [(q, []) for q in items] or None


_NOT_FOUND = re.compile(r"^\W*(?:not\s+found|the\s+passages\s+do\s+not\s+(?:contain|answer|say|mention))", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:\s*(?:\[\d+(?:\s*[,;]\s*\d+)*\])+)?\s+(?=[A-Z0-9\"“(])")
_MARKDOWN = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#{1,6})\s+|\*\*|__|`")


def parse_claims(question: str, text: str, spans: Sequence[Span]) -> tuple[PartDraft, tuple[str, ...]]:
    """A model's answer as a part: NOT FOUND (or "the passages do not ...") is a part the evidence
    does not answer; otherwise each sentence is a claim citing the spans its [n] markers name (the
    markers point into `spans`, 1-based; others are dropped and noted)."""
    text = text.strip()
    if not text or _NOT_FOUND.match(text):
        return PartDraft(question), ()
    claims, dropped = [], 0
    for line in filter(None, (ln.strip() for ln in text.splitlines())):
        for sentence in _split_reply(_MARKDOWN.sub("", line)):
            numbers = [int(k) for m in _CITATION.finditer(sentence) for k in re.split(r"\s*[,;]\s*", m.group(1))]
            body = " ".join(_CITATION.sub(" ", sentence).split())
            body = re.sub(r"\s+([.,;:!?])", r"\1", body)
            if len(body) < 2:
                continue
            good = [n for n in dict.fromkeys(numbers) if 1 <= n <= len(spans)]
            dropped += len(numbers) - len([n for n in numbers if 1 <= n <= len(spans)])
            sources = tuple(Source(spans[n - 1], spans[n - 1].start, spans[n - 1].end) for n in good)
            claims.append(Claim(body, sources, kind="generated"))
    notes = [] if any(c.sources for c in claims) else ["no citations"]
    if dropped:
        notes.append(f"removed {dropped} citation(s) of passages that were not given")
    return PartDraft(question, tuple(claims), bool(claims), 1.0 if claims else 0.0), tuple(notes)


def _split_reply(text: str) -> list[str]:
    """A reply's sentences, each keeping the markers that follow its full stop."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append(text[start:m.end()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def render_claims(draft: Draft, spans: Sequence[Span]) -> str:
    """A draft as the text a prompt shows the model, its markers numbering `spans` (1-based)."""
    index = {s.id: i for i, s in enumerate(spans, 1)}
    sentences = []
    for claim in draft.claims:
        marks = "".join(f"[{index[s.span.id]}]" for s in claim.sources if s.span.id in index)
        sentences.append(f"{claim.text} {marks}".strip())
    return " ".join(sentences)


def parse_verdict(text: str, max_missing: int = 3) -> tuple[bool, str, tuple[str, ...]]:
    """(draft is fine, revised answer, queries for missing evidence) from a reflection."""
    missing, kept = [], []
    for line in text.splitlines():
        m = re.match(r"^\s*MISSING\s*:\s*(.+?)\s*$", line, re.IGNORECASE)
        if m:
            missing.append(m.group(1)[:200])
        else:
            kept.append(line)
    rest = "\n".join(kept).strip()
    first = rest.splitlines()[0] if rest else ""
    ok = not rest or re.fullmatch(r"\W*ok\W*", first, re.IGNORECASE) is not None
    return ok, "" if ok else rest, tuple(missing[:max_missing])


def render_evidence(spans: Sequence[tuple[str, str]]) -> str:
    """Passages numbered [1]..[n] from (title, text) pairs."""
    if not spans:
        return "(no passages)"
    return "\n".join(f"[{i}] {title}: {text}" if title else f"[{i}] {text}"
                     for i, (title, text) in enumerate(spans, 1))
