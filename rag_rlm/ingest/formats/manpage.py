"""Manual pages as a terminal shows them (man(1), `groff -Tascii`, the <pre> of man2html and of
Postfix's HTML pages), read as prose.

Such a page is one preformatted block: a header line "POSTQUEUE(1) ... POSTQUEUE(1)", section
names flush left, paragraphs indented, a tagged paragraph's description set further in ("-f
Flush the queue: ..."), and words hyphenated where a line breaks ("delet-" / "ing"). Kept as
code it yields no sentences, and its words read broken; here it becomes the blocks every parser
returns: Markdown headings, one line per paragraph, "term: description" for a tagged one.
"""

from __future__ import annotations

import re

__all__ = ["man_page_blocks"]

# "POSTQUEUE(1)     POSTQUEUE(1)": the page's name and section, at both ends of the first line
_HEADER = re.compile(r"\s*(?P<page>[A-Za-z_][\w.:+-]*\([0-9][a-z]*\))\s.*(?P=page)\s*$")
_SECTION = re.compile(r"[A-Z][A-Z0-9()/&,' -]*")  # "DESCRIPTION", "SEE ALSO", "AUTHOR(S)"
_TAGGED = re.compile(r"( *)(\S(?:\S| (?! ))*) {2,}(\S.*)")  # "-f     Flush the queue: ..."
_SHORT_OPTION = re.compile(r"( *)(-\S+) (\S.*)")
_TAG_WIDTH = 7  # where groff sets a tagged paragraph's description, from the tag's column
_TAG_GAP = 4  # a description set at least this far in from its tag's column (justified prose is not)
_SHORT_LINE = 55  # lines this short, one after another, are a list (SEE ALSO, an address), not prose
_TERM_LENGTH = 24  # a tag longer than this on its description's line is justified prose
_CODE_SECTIONS = frozenset({"SYNOPSIS"})
_SUBSECTION_INDENT = 4  # a subsection's name is set in 3 columns; paragraphs and tags in 7
_BULLETS = frozenset({"o", "\u2022", "\u00b7"})  # groff's list bullets in ASCII and UTF-8


def man_page_blocks(text: str) -> list[str] | None:
    """The blocks of a manual page formatted for a terminal, or None when `text` is not one."""
    lines = text.split("\n")
    first = next((line for line in lines if line.strip()), "")
    header = _HEADER.match(first)
    if header is None or not any(line.rstrip() == "NAME" for line in lines):
        return None
    page = header["page"]
    lines = [line.rstrip() for line in lines if not _running_head(line, page)]
    blocks: list[str] = []
    section = ""
    for group in _groups(lines):
        if not group[0].startswith(" ") and _SECTION.fullmatch(group[0]):
            section, group = group[0], group[1:]  # its first paragraph follows on the next line
            blocks.append(f"## {section}")
        if group and 0 < _indent(group[0]) <= _SUBSECTION_INDENT and section not in _CODE_SECTIONS:
            blocks.append(f"### {group[0].strip().rstrip(':')}")  # "   Generic Program Information"
            group = group[1:]
        if not group:
            continue
        if section in _CODE_SECTIONS:
            _add_code(blocks, group)
        else:
            blocks.extend(_paragraph(group))
    return blocks


def _running_head(line: str, page: str) -> bool:
    """The header or footer line: it ends with the page's name after a wide gap."""
    stripped = line.strip()
    return stripped == page or (stripped.endswith(page) and "   " in line.rstrip()[: -len(page)])


def _groups(lines: list[str]) -> list[list[str]]:
    """Runs of non-blank lines."""
    groups: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            groups[-1].append(line)
        elif groups[-1]:
            groups.append([])
    return [g for g in groups if g]


def _paragraph(group: list[str]) -> list[str]:
    """One group of lines as blocks: "term: description", a list of short lines, or prose."""
    term, description = _tag(group)
    if term in _BULLETS:
        return [f"- {_join(description)}"]
    if term:
        return [f"{term}: {_join(description)}"]
    if len(group) > 1 and all(len(line.strip()) < _SHORT_LINE for line in group[:-1]):
        return [f"- {line.strip()}" for line in group]
    return [_join(group)]


def _tag(group: list[str]) -> tuple[str, list[str]]:
    """The tag of a tagged paragraph and its description's lines, or ("", []) for other text.
    A tag stands before its description on the same line, the description's further lines
    starting where it starts ("-f     Flush the queue: ..."), or on its own line above a
    description set further in ("-c config_dir")."""
    indent, rest = _indent(group[0]), group[1:]
    m = _TAGGED.fullmatch(group[0])
    if (m is not None and len(m[2]) <= _TERM_LENGTH and m.start(3) - indent >= _TAG_GAP
            and not m[2].endswith((".", ",", ";", ":")) and all(_indent(line) >= m.start(3) for line in rest)):
        return m[2], [m[3], *rest]  # (justified prose fails the last test: its lines go back to its indent)
    m = _SHORT_OPTION.fullmatch(group[0])  # "--help Output a usage message": a 6-letter tag leaves one space
    if m is not None and m.start(3) == indent + _TAG_WIDTH and all(_indent(line) >= m.start(3) for line in rest):
        return m[2], [m[3], *rest]
    if rest and all(_indent(line) >= indent + _TAG_GAP for line in rest) and len(group[0].strip()) <= 2 * _TERM_LENGTH:
        return _join(group[:1]), rest
    return "", []


def _add_code(blocks: list[str], group: list[str]) -> None:
    """Lines kept as code, in one fence with the code block right before them."""
    code = "\n".join(line.strip() for line in group)
    if blocks and blocks[-1].startswith("```"):
        blocks[-1] = f"{blocks[-1][:-4]}\n{code}\n```"
    else:
        blocks.append(f"```\n{code}\n```")


def _join(lines: list[str]) -> str:
    """Lines as one: a word hyphenated at a line's end is whole again, justified gaps closed."""
    parts: list[str] = []  # the lines and the spaces between them: each part is at most one line
    for line in lines:
        line = line.strip()
        if parts and _broken(parts[-1]) and line[:1].islower():
            parts[-1] = parts[-1][:-1]  # "delet-" + "ing"
        elif parts:
            parts.append(" ")
        parts.append(line)
    return re.sub(r" {2,}", " ", "".join(parts))


def _broken(line: str) -> bool:
    """Whether groff broke a word at the line's end (U+2010 is its hyphen in UTF-8 output)."""
    return len(line) > 1 and line[-1] in "-\u2010" and line[-2].islower()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
