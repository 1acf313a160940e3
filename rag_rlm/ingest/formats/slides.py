"""PowerPoint decks through python-pptx: each slide under its title as a `##` heading, then its
text boxes and tables in the slide's order, then its speaker notes (often the only full
sentences of a deck, so they matter most for answers)."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .base import Parsed, ParseError, document, one_line
from .sheets import rows_as_lines


def parse_pptx(path: Path, doc_id: str, data: bytes) -> Parsed:
    from pptx import Presentation

    try:
        deck = Presentation(io.BytesIO(data))
        title = (deck.core_properties.title or "").strip() or None
        blocks: list[str] = []
        for number, slide in enumerate(deck.slides, start=1):
            blocks += _slide(number, slide)
    except Exception as e:  # a zip that is not a deck, a broken part, ...: all mean "corrupt"
        raise ParseError(str(path), f"corrupt PPTX: {type(e).__name__}: {e}") from None
    if title is None or title == "PowerPoint Presentation":  # python-pptx's template default
        title = next((b[3:] for b in blocks if b.startswith("## ") and not b.startswith("## Slide ")), None)
    return document(path, doc_id, data, title, "\n\n".join(blocks))


def _slide(number: int, slide: Any) -> list[str]:
    heading = slide.shapes.title
    title = one_line(heading.text_frame.text) if heading is not None and heading.has_text_frame else ""
    skip = heading.shape_id if heading is not None else None  # proxies are new objects: compare ids
    body = [b for shape in slide.shapes if shape.shape_id != skip for b in _shape(shape)]
    notes = ""
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        notes = " ".join(slide.notes_slide.notes_text_frame.text.split())
    if not (title or body or notes):
        return []
    return [f"## {title or f'Slide {number}'}", *body, *([f"Notes: {notes}"] if notes else [])]


def _shape(shape: Any) -> Iterable[str]:
    if getattr(shape, "shapes", None) is not None:  # a group: its shapes in order
        for inner in shape.shapes:
            yield from _shape(inner)
    elif getattr(shape, "has_table", False) and shape.has_table:
        yield from rows_as_lines([c.text for c in row.cells] for row in shape.table.rows)
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            text = one_line(paragraph.text)
            if text:  # indented paragraphs are bullet points of the line above
                yield f"- {text}" if paragraph.level > 0 else text
