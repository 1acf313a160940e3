"""Training questions shaped like reference documentation, from an API manual's JSON (Node.js ships
one: `doc/api/*.json`, Debian's nodejs package puts it under /usr/share/doc/nodejs/api).

SQuAD teaches reading Wikipedia prose; a manual reads otherwise. An entry is a name and its
description ("fs.rm(path[, options], callback): Asynchronously removes files and directories."),
and the same name comes back in other entries' sentences that only mention it ("…the synchronous
version of fs.rm()"). A reader trained on prose alone ranks the mention first. Each question asked
here ("What does fs.rm do?", "What is the default value of recursive in fs.rm?", "What does the
--inspect option of node do?") is written in the training files' schema (`data.read_rows`) with a
context made the way ingest reads a manual: the entry that answers, neighbouring entries of the
same page, and sentences of other entries that mention the asked name. The same context without
the answering entry is an unanswerable row: mentions and neighbours do not answer.

Entries are rendered by ingest's own HTML parser, so a candidate reads as it will at answer time.
Everything is seeded. Never build these from the manuals the product is judged on (the
PostgreSQL and Python pages of `bench/realdocs`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCE = "apidocs"
NEIGHBOURS = 3  # other entries of the same page in a context
MENTIONS = 2  # sentences of other entries that mention the asked name
DEFAULTS_PER_ENTRY = 2  # "what is the default" questions per entry at most: a few entries hold dozens


@dataclass(frozen=True)
class Entry:
    page: str  # the page's title ("File system")
    term: str  # as the manual prints it: "fs.rm(path[, options], callback)"
    name: str  # as an asker writes it: "fs.rm"
    kind: str  # method, property, event, class, option
    paragraphs: tuple[str, ...]  # the description, as ingest reads it
    defaults: tuple[tuple[str, str], ...] = ()  # (parameter, its line) for parameters with a default
    parameters: tuple[str, ...] = ()  # every parameter's line, as the page lists them
    returns: str = ""  # the "Returns: <type> what" line


def files(folder: Path) -> list[Path]:
    """The manual's pages: JSON files that say which Markdown page they come from (`all.json`, the
    whole manual in one, would repeat every entry)."""
    return [path for path, _ in _pages(folder)]


def _pages(folder: Path) -> list[tuple[Path, dict]]:
    """Each page file and its parsed JSON, each read once."""
    pages = []
    for path in sorted(folder.glob("*.json*")):
        if path.name.startswith("all."):
            continue
        try:
            page = _load(path)
        except (OSError, ValueError, EOFError):
            continue
        if isinstance(page, dict) and str(page.get("source", "")).endswith(".md"):
            pages.append((path, page))
    return pages


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def files_sha256(folder: Path) -> str:
    """One hash over every page file (names and bytes), for the card."""
    h = hashlib.sha256()
    for path in files(folder):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def rows(folder: Path, seed: int) -> list[dict]:
    """Questions in the training files' schema, answerable and not, in a seeded order."""
    rng = random.Random(seed)
    out: list[dict] = []
    for path, page in _pages(folder):
        entries = list(_entries(path, page))
        for i, entry in enumerate(entries):
            out += _questions(entry, i, entries, rng)
    rng.shuffle(out)
    return out


# --- reading a page ---------------------------------------------------------------------

_LISTS = {"methods": "method", "classMethods": "method", "properties": "property", "events": "event",
          "classes": "class"}


def _entries(path: Path, page: dict) -> Iterator[Entry]:
    title = _page_title(page) or path.name.split(".")[0]
    yield from _walk(page, title, path.name.startswith("cli."))


def _page_title(page: dict) -> str:
    for key in ("modules", "miscs", "globals"):
        for node in page.get(key, []):
            return _plain(node.get("textRaw", ""))
    return ""


def _walk(node: dict, title: str, cli: bool) -> Iterator[Entry]:
    for key, value in node.items():
        if not isinstance(value, list):
            continue
        for child in value:
            if not isinstance(child, dict) or "textRaw" not in child:
                continue
            kind = _LISTS.get(key) or ("option" if cli and _plain(child["textRaw"]).startswith("-") else "")
            entry = _entry(child, title, kind) if kind else None
            if entry is not None:
                yield entry
            yield from _walk(child, title, cli)


def _entry(node: dict, title: str, kind: str) -> Entry | None:
    term = _plain(node["textRaw"])
    paragraphs = tuple(p for p in _paragraphs(node.get("desc", "")) if len(p.split()) >= 4 and not _PARAMETER.match(p))
    if not paragraphs:
        return None
    name = _asked_name(term, kind)
    lines = [(p.get("name", ""), _plain(p.get("textRaw", ""))) for s in node.get("signatures", [])
             for p in _params(s.get("params", []))]
    returns = next((_plain(s["return"].get("textRaw", "")) for s in node.get("signatures", []) if "return" in s), "")
    return Entry(title, term, name, kind, paragraphs, tuple((n, t) for n, t in lines if n and "Default:" in t),
                 tuple(t for _, t in lines if len(t.split()) >= 3), returns if len(returns.split()) >= 4 else "")


_PARAMETER = re.compile(r"[\w.\[\]]+ <|Returns: <")  # the parameter list printed before a description
_CODE = re.compile(r"//|/\*|(const|let|var|import) |.*;$|.*=>")


def _asked_name(term: str, kind: str) -> str:
    term = re.sub(r"^(Class|Event|Static method):\s*", "", term)
    if kind == "option":
        return term.split(",")[0].split("=")[0].strip()
    return term.split("(")[0].strip()


def _paragraphs(html: str) -> list[str]:
    from ..ingest.parsers import ParseError, parse_html

    if not html.strip():
        return []
    try:
        text = parse_html(Path("entry.html"), "entry", html.encode()).documents[0].text
    except ParseError:
        return []
    blocks = [b for b in text.split("\n\n") if "\n" not in b and not b.startswith("#") and not _CODE.match(b)]
    return [b[2:] if b.startswith("- ") else b for b in blocks]


def _params(params: list[dict]) -> Iterator[dict]:
    for param in params:
        yield param
        yield from _params(param.get("options", []))


def _plain(raw: str) -> str:
    """A JSON `textRaw` (Markdown) as the HTML page reads: no backticks or emphasis, `{type}` as
    `<type>`, link labels without their targets."""
    text = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", raw)
    text = re.sub(r"\{([^}]*)\}", lambda m: "<" + m.group(1).replace("\\", "") + ">", text)
    text = text.replace("**", "").replace("`", "").replace("\\", "")
    return " ".join(text.split())


# --- asking -----------------------------------------------------------------------------

_ASK = {
    "method": ("What does {name} do?", "What is {name} for?", "What does {name}() do?"),
    "property": ("What is {name}?", "What does {name} hold?"),
    "event": ("When is the {name} event emitted?", "What does the {name} event signal?"),
    "class": ("What is {name}?", "What is the {name} class for?"),
    "option": ("What does the {name} option of node do?", "What does node {name} do?"),
}
_ASK_DEFAULT = ("What is the default value of {param} in {name}?", "What is the default {param} of {name}?")
_ASK_RETURNS = ("What does {name} return?", "What is returned by {name}?")


def _questions(entry: Entry, index: int, entries: list[Entry], rng: random.Random) -> list[dict]:
    others = _others(entry, index, entries, rng)
    target = f"{entry.term}: {entry.paragraphs[0]}"
    asked = rng.choice(_ASK[entry.kind]).format(name=entry.name)
    out = _rows_of(entry, asked, target, others, rng, "")
    # the lines under an entry answer without naming it: so must the reader learn to read them
    for param, line in rng.sample(entry.defaults, min(DEFAULTS_PER_ENTRY, len(entry.defaults))):
        asked_default = rng.choice(_ASK_DEFAULT).format(param=param, name=entry.name)
        near = [t for t in entry.parameters if t != line] + ([entry.returns] if entry.returns else [])
        out += _rows_of(entry, asked_default, line, near + others[:1], rng, ":default")
    if entry.returns and entry.kind == "method":
        asked_returns = rng.choice(_ASK_RETURNS).format(name=entry.name)
        out += _rows_of(entry, asked_returns, entry.returns, list(entry.parameters) + others[:2], rng, ":returns")
    return out


def _others(entry: Entry, index: int, entries: list[Entry], rng: random.Random) -> list[str]:
    """Neighbouring entries (not ones of the same short name: those would answer) and sentences
    of other entries that mention the asked name."""
    short = entry.name.rsplit(".", 1)[-1]
    apart = [(j, e) for j, e in enumerate(entries) if e.name.rsplit(".", 1)[-1] != short]
    near = [e for j, e in apart if abs(j - index) <= 6]
    picked = rng.sample(near, min(NEIGHBOURS, len(near)))
    said = re.compile(rf"(?<![\w.-]){re.escape(entry.name)}\b|\.{re.escape(short)}\(")  # the name, not the word
    mentions = [p for _, e in apart for p in e.paragraphs[1:] if said.search(p)]  # a first paragraph defines its own
    return [f"{e.term}: {e.paragraphs[0]}" for e in picked] + rng.sample(mentions, min(MENTIONS, len(mentions)))


def _rows_of(entry: Entry, question: str, answer: str, others: list[str], rng: random.Random, tag: str) -> list[dict]:
    """One answerable row (the answering block among the others, at a random place) and, half the
    time, the same context without it as an unanswerable row."""
    blocks = list(others)
    at = rng.randrange(len(blocks) + 1)
    blocks.insert(at, answer)
    context = "\n\n".join(blocks)
    start = sum(len(b) + 2 for b in blocks[:at])
    ident = hashlib.sha1(f"{entry.page}|{question}".encode()).hexdigest()[:16]
    row = {"id": ident, "source": f"{SOURCE}{tag}", "title": entry.page, "question": question,
           "context": context, "answers": [{"text": answer[:80], "start": start}], "is_impossible": False}
    if not others or rng.random() < 0.5:
        return [row]
    return [row, {**row, "id": f"{ident}-absent", "source": f"{SOURCE}{tag}:absent", "context": "\n\n".join(others),
                  "answers": [], "is_impossible": True}]
