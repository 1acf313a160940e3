"""Training questions in askers' own words: the FAQ pages that manuals ship.

SQuAD's questions were written by people looking at the paragraph, so they share its words; a
user of a manual asks "How do I copy an object?" or "Why are Python strings immutable?", and a
reader trained on SQuAD alone takes the sentence that repeats the question's words for the one
that answers (bench/eval_results.md, the rounds on real manuals). A FAQ is what users did ask,
answered by the people who wrote the manual.

A FAQ entry is a heading that asks and the sentences under it. Each entry gives one listwise
group: its question; the answer's first sentence, which answers it (a FAQ answers up front: "Use
a hash.", "The atexit module provides a register function that is similar to C's onexit()"; read
on 25 entries, about one in five opens with a premise instead); and sentences of other entries of
the same page as negatives, the `HARD` closest to the question by the bundled bi-encoder and
`RANDOM` others. Those answer other questions of the same topic, often in the question's own
words: the confusion a manual's neighbouring sections make. The answer's later sentences are no
negatives (they may answer too) and no positives (most are examples and asides).
Candidates read as answering reads them, under the page's title, but not under their own heading:
that heading is the question itself.

Pages are HTML (read by ingest's own parser) or Perl's POD (`perlfaq*.pod`), listed one path or
glob per line in a manifest (`bench/faq_train.txt`). Never list a FAQ of a manual the product is
judged on (`bench/realdocs`). Everything is seeded.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from glob import glob
from pathlib import Path

import numpy as np

SOURCE = "faq"
ANSWER_SENTENCES = 6  # sentences of another entry's answer that may be its negatives
HARD = 4  # negatives closest to the question by the bi-encoder
RANDOM = 2  # other negatives of the page
MIN_WORDS = 3  # a shorter line is a fragment, not an answer
MIN_ENTRIES = 4  # a page with fewer entries gives too few negatives; its project's other pages lend theirs


@dataclass(frozen=True)
class Entry:
    page: str  # the page's path: negatives come from the same page
    title: str  # the page's title, as the reader reads it before a sentence
    question: str
    answer: tuple[str, ...]  # the sentences under the question, in order


@dataclass(frozen=True)
class Group:
    question: str
    positive: str  # reader text of the answering sentence
    negatives: tuple[str, ...]  # reader texts of other entries' sentences
    page: str


def pages(manifest: Path) -> list[Path]:
    """The FAQ pages a manifest lists (one path or glob per line; '#' starts a comment), in order.
    A line that names no file is an error that names the line."""
    out: list[Path] = []
    for number, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        found = sorted(glob(line)) if any(c in line for c in "*?[") else ([line] if Path(line).is_file() else [])
        if not found:
            raise ValueError(f"{manifest}:{number}: no FAQ page at {line}")
        out += [Path(p) for p in found if Path(p) not in out]
    return out


def files_sha256(manifest: Path) -> dict[str, str]:
    """sha256 of each listed page, for the card."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in pages(manifest)}


def entries(path: Path) -> list[Entry]:
    """The entries of one FAQ page: each heading that ends with '?' and its sentences."""
    from ..ingest.parsers import parse_file
    from ..ingest.sentences import split_sentences

    if path.suffix == ".pod":
        title, text = _pod_markdown(path.read_text(encoding="utf-8", errors="replace"))
    else:
        doc = parse_file(path, "faq").documents[0]
        title, text = doc.title or path.stem, doc.text
    title = title.split(" — ")[0].strip()  # "Programming FAQ — Python 3.11 documentation": the page, not the site
    found: list[Entry] = []
    asked, heading, answer = "", "", []
    for s in [*split_sentences(text), None]:
        if s is None or s.kind == "heading":
            if asked and answer:
                found.append(Entry(str(path), title, asked, tuple(answer)))
            asked, heading, answer = (_question(s.text), s.text, []) if s is not None else ("", "", [])
        elif asked and s.heading == heading and len(s.text.split()) >= MIN_WORDS:
            answer.append(s.text)
    return found


def _question(heading: str) -> str:
    """A heading that asks, without its numbering ("G3. Where can I …?", "4.1. Why …?"); "" for another heading."""
    text = re.sub(r"^\s*(?:[A-Z]?\d+(?:\.\d+)*\.?)\s+", "", heading).strip()
    return text if text.endswith("?") else ""


_POD_CODE = re.compile(r"[A-Z]<+\s?(.*?)\s?>+")


def _pod_markdown(pod: str) -> tuple[str, str]:
    """Perl's POD as Markdown that ingest's splitter reads: =head1/=head2 as headings, verbatim
    (indented) paragraphs as code, formatting codes (C<…>, L<…>, I<…>) as their text."""
    title, out = "", []
    for para in re.split(r"\n\s*\n", pod):
        if para.startswith("=head"):
            level = int(para[5]) if para[5:6].isdigit() else 2
            heading = " ".join(_POD_CODE.sub(r"\1", para[6:]).split())
            out.append(f"{'#' * level} {heading}")
        elif para.startswith("="):
            continue
        elif para[:1] in (" ", "\t"):
            out.append(f"```\n{para}\n```")
        else:
            out.append(" ".join(_POD_CODE.sub(r"\1", _POD_CODE.sub(r"\1", para)).split()))
            if not title and out[-2:-1] == ["# NAME"]:
                title = out[-1].split(" - ", 1)[-1]
    return title or "perlfaq", "\n\n".join(out)


def groups(manifest: Path, seed: int, embed: Callable[[list[str]], np.ndarray], repeats: int = 1) -> list[Group]:
    """One listwise group per FAQ entry of the listed pages (`embed`: the bundled bi-encoder), `repeats`
    times, the n-th time with random negatives seeded `seed + n`. Pages are read and embedded once."""
    from .data import reader_text

    listed = [entries(p) for p in pages(manifest)]
    texts = {e: [reader_text(e.title, s) for s in e.answer] for page in listed for e in page}
    vectors = _vectors(embed, [t for ts in texts.values() for t in ts[:ANSWER_SENTENCES]])
    ranked: list[tuple[Entry, list[str], list[str]]] = []  # each entry's hard negatives and the rest
    for page in (p for p in listed if p):  # an index page asks nothing
        pool = page if len(page) >= MIN_ENTRIES else [e for p in listed for e in p if _project(e) == _project(page[0])]
        for entry in page:
            own = set(texts[entry])
            others = list(dict.fromkeys(t for e in pool if e is not entry for t in texts[e][:ANSWER_SENTENCES]))
            others = [t for t in others if t not in own]
            if len(others) < HARD + RANDOM:
                continue
            closeness = np.stack([vectors[t] for t in others]) @ embed([entry.question])[0]
            order = np.argsort(-closeness, kind="stable")
            ranked.append((entry, [others[k] for k in order[:HARD]], [others[k] for k in order[HARD:]]))
    out: list[Group] = []
    for n in range(repeats):
        rng = random.Random(seed + n)
        out += [Group(entry.question, texts[entry][0], tuple(hard + rng.sample(rest, min(RANDOM, len(rest)))), entry.page)
                for entry, hard, rest in ranked]
    return out


def _vectors(embed: Callable[[list[str]], np.ndarray], texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Each distinct text's vector, embedded once."""
    distinct = list(dict.fromkeys(texts))
    return dict(zip(distinct, embed(distinct), strict=True)) if distinct else {}


def _project(entry: Entry) -> str:
    """Pages of one manual share a folder (Python's faq/*.html, Debian's FAQ/*.html)."""
    return str(Path(entry.page).parent)
