"""OpenDocument text (.odt) through odfpy: headings by their outline level as `#` lines,
paragraphs, list items as `-` bullets and table rows labelled by their header row."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import Parsed, ParseError, document, one_line
from .sheets import rows_as_lines

_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
# deleted text kept for change tracking, and a table of contents that repeats the headings
_SKIP = ((_TEXT, "tracked-changes"), (_TEXT, "table-of-content"))


def parse_odt(path: Path, doc_id: str, data: bytes) -> Parsed:
    from odf.opendocument import load

    try:
        doc = load(io.BytesIO(data))
        title = _meta_title(doc)
        blocks = list(_blocks(doc.text))
    except Exception as e:  # a zip that is not an ODF document, broken XML, ...: all mean "corrupt"
        raise ParseError(str(path), f"corrupt ODT: {type(e).__name__}: {e}") from None
    if title is None:
        title = next((b.lstrip("# ") for b in blocks if b.startswith("#")), None)
    return document(path, doc_id, data, title, "\n\n".join(blocks))


def _meta_title(doc: Any) -> str | None:
    from odf import dc, teletype

    found = doc.meta.getElementsByType(dc.Title)
    return one_line(teletype.extractText(found[0])) or None if found else None


def _blocks(node: Any, bullet: bool = False) -> Iterator[str]:
    from odf import teletype

    for child in node.childNodes:
        kind = getattr(child, "qname", None)
        if kind == (_TEXT, "h"):
            level = int(child.getAttribute("outlinelevel") or 1)
            words = one_line(teletype.extractText(child))
            if words:
                yield f"{'#' * min(level, 6)} {words}"
        elif kind == (_TEXT, "p"):
            words = one_line(teletype.extractText(child))
            if words:
                yield f"- {words}" if bullet else words
        elif kind == (_TABLE, "table"):
            rows = [[one_line(teletype.extractText(c)) for c in row.childNodes if c.qname[1] == "table-cell"]
                    for row in _rows(child)]
            yield from rows_as_lines(rows)
        elif kind in ((_TEXT, "list"), (_TEXT, "list-item")):
            yield from _blocks(child, bullet=True)
        elif kind is not None and kind not in _SKIP:  # sections and other containers: their paragraphs in order
            yield from _blocks(child, bullet)


def _rows(table: Any) -> Iterator[Any]:
    for child in table.childNodes:  # rows, directly or inside table-header-rows / table-rows
        name = getattr(child, "qname", (None, None))[1]
        if name == "table-row":
            yield child
        elif name in ("table-header-rows", "table-rows", "table-row-group"):
            yield from _rows(child)
