"""EPUB books through ebooklib: the chapters in reading order (the spine), each XHTML chapter
through the HTML parser, so that its headings become `#` lines as in any web page."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

from .base import Parsed, ParseError, document


def parse_epub(path: Path, doc_id: str, data: bytes) -> Parsed:
    from ebooklib import epub

    try:
        with warnings.catch_warnings():  # ebooklib warns about its own future defaults
            warnings.simplefilter("ignore")
            book = epub.read_epub(io.BytesIO(data), {"ignore_ncx": True})
        titles = book.get_metadata("DC", "title")
        chapters = [book.get_item_with_id(idref) for idref, _ in book.spine]
        pages = [item.get_content() for item in chapters if item is not None]
    except Exception as e:  # a zip that is not a book, a missing part, ...: all mean "corrupt"
        raise ParseError(str(path), f"corrupt EPUB: {type(e).__name__}: {e}") from None
    text = "\n\n".join(t for t in (_chapter(path, doc_id, page) for page in pages) if t)
    return document(path, doc_id, data, titles[0][0] if titles else None, text)


def _chapter(path: Path, doc_id: str, page: bytes) -> str:
    from ..parsers import parse_html  # parsers imports this module to register it

    try:
        return parse_html(path, doc_id, page).documents[0].text
    except ParseError:  # a cover image page or the navigation page: no text of its own
        return ""
