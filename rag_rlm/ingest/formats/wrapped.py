"""Prose wrapped at a fixed width, as a plain-text manual is written and as some HTML keeps it
(haproxy-dconv's `<pre class="text">`, a Vim help file in one `<pre>`), read as prose.

Fenced as code it would yield no sentences. Here each paragraph becomes a block: its lines,
dedented, which the sentence splitter joins; a line of help tags alone is left out. Two shapes of
such manuals are read:
- lines set further in than the text around them, which end no sentence, are an example ("    global" /
  "        stats socket ..."), kept as code;
- a hanging indent ("51degrees-cache-size <number>" over an indented description, "-c : only
  performs a check ..." over its indented rest) starts an entry, and a short first line with no
  sentence in it is the entry's term: "51degrees-cache-size <number>: Sets the size ...".
"""

from __future__ import annotations

import re
import textwrap

from .base import fenced

__all__ = ["reads_as_prose", "wrapped_text_blocks"]

_EXAMPLE_INDENT = 2  # columns further in than the text's own margin where an example may be set
_TERM_WORDS = 6  # a longer first line is the start of a sentence, not an entry's term
_PROSE_LINES = 20  # a <pre> shorter than this is an example, however wordy
_PROSE_SHARE = 0.8  # of a prose <pre>'s words that are plain words: "word", "(Word)", "word," (not "x=1", "/usr")
_WORD = re.compile(r"[(\"']?(?:[a-z]|[A-Z][a-z])[a-z']*[)\"',.;:!?]*")
_ANCHORS = re.compile(r"\s*(?:\*[^*\s]+\*\s*)+")  # "*'tabstop'* *'ts'*": a help file's tags
_ITEMS = ("- ", "* ")  # a list item's marker: the item is said as it stands, not after the entry's term
_TAGGED = re.compile(r"(?P<tag>[^\s:]+) {2,}(?P<words>\S.*)")  # a one-word tag, a gap, its description


def reads_as_prose(text: str) -> bool:
    """Whether preformatted text is a manual's prose (Vim's help files as vim2html keeps them, one
    <pre> a page) rather than code or output: it is long, and nearly all of its words are plain
    words (code and sessions, however wordy their comments, stay under 70%)."""
    if sum(1 for line in text.split("\n") if line.strip()) < _PROSE_LINES:
        return False  # a short <pre> is an example, whatever its words
    words = text.split()
    return sum(bool(_WORD.fullmatch(w)) for w in words) >= _PROSE_SHARE * len(words)


def wrapped_text_blocks(text: str, term: str = "") -> list[str]:
    """The blocks of wrapped plain text; `term` (what the text describes, when the page names it
    outside the text) opens each prose block, as a definition list's term does."""
    paragraphs = _paragraphs(text.expandtabs().split("\n"))
    if not paragraphs:
        return []
    margin = min(_indent(line) for para in paragraphs for line in para)
    blocks: list[str] = []
    code: list[str] = []  # consecutive example paragraphs, said as one piece of code

    def flush() -> None:
        if code:
            blocks.append(fenced(textwrap.dedent("\n".join(code)).strip("\n")))
            code.clear()

    for para in paragraphs:
        for is_code, lines in _segments(para, margin):
            if is_code:
                code.extend([*([""] if code else []), *lines])
                continue
            flush()
            for entry in _entries(lines):
                words = _entry_words(entry)
                blocks.append(f"{term}: {words}" if term and not words.startswith(_ITEMS) else words)
        flush()
    return blocks


def _segments(para: list[str], margin: int) -> list[tuple[bool, list[str]]]:
    """The paragraph's prose and examples, in order, each as (is_code, lines). An example is set
    further in than the text's margin ("  socat /tmp/socket ..." under "Example :"), in a
    paragraph of its own or after a line that ends with a colon, and reads as no sentence."""
    if _indent(para[0]) >= margin + _EXAMPLE_INDENT and _is_example(para):
        return [(True, para)]
    out: list[tuple[bool, list[str]]] = []
    prose: list[str] = []
    i = 0
    while i < len(para):
        line = para[i]
        prose.append(line)
        i += 1
        if not line.endswith(":"):
            continue
        end = i
        while end < len(para) and _indent(para[end]) > _indent(line):
            end += 1
        if end > i and _is_example(para[i:end]):
            out += [(False, prose), (True, para[i:end])]
            prose, i = [], end
    return out + ([(False, prose)] if prose else [])


def _is_example(lines: list[str]) -> bool:
    """Lines of code, configuration or output rather than prose: a comment or a prompt opens one
    of them, or none ends a sentence and none is a list item."""
    said = [line.strip() for line in lines]
    if any(line.startswith(("#", "$ ")) for line in said):
        return True
    return not any(line.endswith((".", "!", "?")) or line.startswith(_ITEMS) for line in said)


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """Runs of lines between blank ones; a line of anchors alone (Vim's "*'tabstop'* *'ts'*",
    set flush right over the entry it names) is no text and is left out."""
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if _ANCHORS.fullmatch(line):
            continue
        if line.strip():
            paragraphs[-1].append(line.rstrip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _entries(para: list[str]) -> list[list[str]]:
    """A paragraph cut before each line set back at its margin after lines set further in (the
    next entry of a hanging-indent list); a paragraph of even lines is one entry."""
    margin = min(_indent(line) for line in para)
    entries: list[list[str]] = [[para[0]]]
    for before, line in zip(para, para[1:], strict=False):
        if _indent(line) == margin and _indent(before) > margin:
            entries.append([])
        entries[-1].append(line)
    return entries


def _entry_words(entry: list[str]) -> str:
    """An entry's lines, dedented. Its term is a short first line over indented ones, or a
    first word set apart by a gap ("source      The source IP address is hashed ...")."""
    first, rest = entry[0].strip(), [line.strip() for line in entry[1:]]
    hanging = bool(rest) and _indent(entry[1]) > _indent(entry[0])
    if hanging and len(first.split()) <= _TERM_WORDS and not first.endswith((".", ",", ":", ";")) \
            and not first.startswith(_ITEMS):
        return f"{first}: " + "\n".join(rest)
    tagged = _TAGGED.match(first)
    if tagged and (hanging or not rest):
        first = f"{tagged['tag']}: {tagged['words']}"
    return "\n".join([first, *rest])
