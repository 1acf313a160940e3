"""reStructuredText through docutils: section titles as `#` lines by their depth, paragraphs,
list items as `-` bullets, definitions as "term: definition", literal blocks fenced (kept for
retrieval, never made into sentences) and table rows labelled by their header row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import Parsed, ParseError, decode_text, document, fenced, one_line
from .sheets import rows_as_lines

_SETTINGS = {
    # an uploaded file must not read the server's files (`.. include:: /etc/passwd`) or pass raw HTML
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "_disable_config": True,  # no docutils.conf of the machine changes how a file reads
    "report_level": 5,  # markup problems are not printed; the text around them is still kept
    "halt_level": 5,
    "doctitle_xform": False,  # the top section stays a `#` heading in the text
}
_SKIPPED = ("system_message", "comment", "substitution_definition", "target", "raw")


def parse_rst(path: Path, doc_id: str, data: bytes) -> Parsed:
    from docutils.core import publish_doctree

    source = decode_text(path, data)
    try:
        tree = publish_doctree(source, source_path=str(path), settings_overrides=_SETTINGS)
        blocks = list(_blocks(tree, 0))
    except Exception as e:  # docutils is lenient; what still raises (nesting too deep) is unreadable
        raise ParseError(str(path), f"malformed reStructuredText: {type(e).__name__}: {e}") from None
    title = next((b.lstrip("# ") for b in blocks if b.startswith("#")), None)
    return document(path, doc_id, data, title, "\n\n".join(blocks))


def _blocks(node: Any, depth: int, bullet: bool = False) -> Iterator[str]:
    for child in node.children:
        kind = child.tagname
        if kind in _SKIPPED or not hasattr(child, "children"):
            continue
        if kind == "section":
            yield from _blocks(child, depth + 1)
        elif kind == "title":
            yield f"{'#' * min(max(depth, 1), 6)} {one_line(child.astext())}"
        elif kind in ("paragraph", "line_block"):
            yield f"- {one_line(child.astext())}" if bullet else one_line(child.astext())
        elif kind in ("literal_block", "doctest_block"):
            yield fenced(child.astext().strip("\n"))
        elif kind == "definition_list_item":
            term = " ".join(one_line(c.astext()) for c in child.children if c.tagname == "term")
            definition = " ".join(one_line(c.astext()) for c in child.children if c.tagname == "definition")
            yield f"{term}: {definition}"
        elif kind == "field":  # ":Owner: Platform team" reads as "Owner: Platform team"
            yield f"{one_line(child.children[0].astext())}: {one_line(child.children[-1].astext())}"
        elif kind == "table":
            yield from rows_as_lines([one_line(e.astext()) for e in row.children] for row in child.findall(
                lambda n: n.tagname == "row"))
        else:  # lists, admonitions, block quotes, ...: their paragraphs in order
            yield from _blocks(child, depth, bullet or kind == "list_item")
