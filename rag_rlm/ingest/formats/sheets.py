"""Spreadsheets (XLSX through openpyxl, CSV through the standard library): every row one line
with its column headers, "Plan: Basic; Price: $10 per month", the shape HTML table rows are
stored in, so a row is a sentence that says what each of its values is."""

from __future__ import annotations

import csv
import datetime as dt
import io
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .base import Parsed, ParseError, decode_text, document, labelled, one_line

# Cells read, empty ones included: a sheet can declare a row a million rows down or a cell in
# the last column, and openpyxl fills the gap with empty cells; real sheets stay far below this.
MAX_XLSX_CELLS = 10_000_000


def parse_xlsx(path: Path, doc_id: str, data: bytes) -> Parsed:
    """Each sheet under a `## Sheet` heading. Formulas are read as the value the spreadsheet app
    cached when it saved the file (`data_only=True`); a file written by a program that does not
    compute formulas (openpyxl itself) has no cached value, and such a cell reads as empty."""
    from openpyxl import load_workbook

    try:
        with warnings.catch_warnings():  # "unsupported extension" chatter about features we do not read
            warnings.simplefilter("ignore")
            book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
            try:
                title = book.properties.title
                blocks = _sheets(path, book.worksheets)
            finally:
                book.close()
    except ParseError:
        raise
    except Exception as e:  # a zip that is not a workbook, a broken part, ...: all mean "corrupt"
        raise ParseError(str(path), f"corrupt XLSX: {type(e).__name__}: {e}") from None
    return document(path, doc_id, data, title, "\n\n".join(blocks))


def _sheets(path: Path, sheets: Sequence[Any]) -> list[str]:
    blocks: list[str] = []
    budget = [MAX_XLSX_CELLS]
    for sheet in sheets:
        sheet.reset_dimensions()  # the declared size may lie; read only the rows the file holds
        lines = rows_as_lines(_counted(path, sheet.iter_rows(values_only=True), budget))
        if lines:
            blocks += [f"## {one_line(sheet.title)}", *lines]
    return blocks


def _counted(path: Path, rows: Iterable[tuple], budget: list[int]) -> Iterable[tuple]:
    for row in rows:
        budget[0] -= len(row)
        if budget[0] < 0:
            raise ParseError(str(path), f"the xlsx spans over {MAX_XLSX_CELLS} cells (rows x columns), "
                                        f"over the limit")
        yield row


def parse_csv(path: Path, doc_id: str, data: bytes) -> Parsed:
    """The first row holds the headers (the CSV convention); the delimiter is sniffed among
    comma, semicolon, tab and bar (spreadsheets in many locales save with ';')."""
    text = decode_text(path, data)
    try:
        dialect: Any = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:  # one column, or nothing to tell by: the standard comma
        dialect = csv.excel
    # strict: an unclosed quote is an error, not the rest of the file swallowed into one cell
    reader = csv.reader(io.StringIO(text), dialect, strict=True)
    try:
        lines = rows_as_lines(reader)
    except csv.Error as e:
        raise ParseError(str(path), f"malformed CSV at line {reader.line_num}: {e}") from None
    return document(path, doc_id, data, None, "\n\n".join(lines))


def rows_as_lines(rows: Iterable[Sequence[Any]]) -> list[str]:
    """The first row with two or more values, all text, is the header row; a lone value above
    it is a caption (a sheet's title line), kept as a line of its own. With no such row the
    values stay unlabelled."""
    headers: list[str] | None = None
    lines: list[str] = []
    for row in rows:
        cells = [cell_text(v) for v in row]
        filled = sum(1 for c in cells if c)
        if not filled:
            continue
        if headers is None:
            if filled == 1:
                lines.append(next(c for c in cells if c))
                continue
            if all(v is None or isinstance(v, str) for v in row):
                headers = cells
                continue
            headers = []
        lines.append(labelled(headers, cells))
    if headers and not lines:  # a lone row of text is data, not headers
        lines.append(labelled([], headers))
    return lines


def cell_text(value: Any) -> str:
    """A cell as a person reads it: 10.0 is "10", a date without a time is "2024-05-01"."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return one_line(str(value))
