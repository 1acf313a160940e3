"""OCR of PDF pages that have no text layer (scans): PDFium renders the page, tesseract reads it.

    options = OcrOptions.from_settings(settings)
    pages = [i for i, page in enumerate(reader.pages) if scanned(texts[i], page, options)]
    scans = read_scans(pdf_bytes, pages, options)  # raises OcrError saying why it cannot
    scans.texts[i]   # the text of page i (0-based)
    scans.note       # {"engine": "tesseract 5.3.0", "language": "eng", "pages": [1, 3]} (1-based)

The libraries, and why:
- pypdfium2 renders: PDFium (Chrome's PDF engine) in a wheel, no system library; it draws what
  a viewer draws (page rotation, masks, several images on one page), where pulling the embedded
  images out of the PDF would miss all of that.
- pytesseract reads, through Debian's `tesseract-ocr` (a command, so `ocr_command` can point at
  another build and a missing one is a clear error). tesserocr (libtesseract in-process, with its
  own copy of tesseract in the wheel) read our test page in 0.6 s to pytesseract's 0.8 s (the
  process start and model load), but brings a second tesseract that Debian's updates miss.

pytesseract keeps the command in a module global and pdfium is not thread-safe, so one lock
covers a page's render and read: OCR runs one page at a time per process, which is also what
one upload worker or one `ingest` run asks of it.
"""

from __future__ import annotations

import math
import os
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag_rlm.config import Settings

INSTALL_HINT = "install it with `apt-get install tesseract-ocr tesseract-ocr-eng` (or `make install`)"
# A render larger than this is scaled down to it: a poster-sized page at 300 dpi must not take
# gigabytes (an A3 page at 300 dpi is ~17.4 million pixels; tesseract caps a side at 32767)
MAX_PIXELS = 40_000_000
_LOCK = threading.Lock()


class OcrError(Exception):
    """Why the scanned pages of a PDF cannot be read; `reason` is the whole sentence."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class OcrOptions:
    """How scanned pages are read; the first four are settings (`ocr`, `ocr_command`,
    `ocr_language`, `ocr_max_pages`), the rest thresholds with measured defaults."""

    enabled: bool = True
    command: str = "tesseract"
    language: str = "eng"
    max_pages: int = 100
    dpi: int = 300  # tesseract's own advice: its accuracy drops on images under 300 dpi
    page_timeout: float = 120.0  # seconds for one page; a page ~1 s normally
    # a text layer with fewer characters than this (not counting spaces) is no text layer: a
    # scanner's stamped page number or date on an image page
    min_text_chars: int = 16

    @classmethod
    def from_settings(cls, settings: Settings) -> OcrOptions:
        return cls(enabled=settings.ocr, command=settings.ocr_command, language=settings.ocr_language,
                   max_pages=settings.ocr_max_pages)


@dataclass(frozen=True)
class Scans:
    texts: dict[int, str]  # page index (0-based) -> its OCR text
    note: dict[str, Any] = field(default_factory=dict)  # for Document.metadata["ocr"]


def scanned(text: str, page: Any, options: OcrOptions) -> bool:  # noqa: ANN401 - a pypdf PageObject
    """A page needs OCR when its text layer is (nearly) empty and it shows an image. A blank page,
    or one drawn only with lines and shapes, has nothing to read and is passed over as before."""
    if len("".join(text.split())) >= options.min_text_chars:
        return False
    try:
        return len(page.images) > 0
    except Exception:  # noqa: BLE001 - pypdf cannot list them (a damaged resource): let PDFium look
        return True


def read_scans(data: bytes, pages: Sequence[int], options: OcrOptions) -> Scans:
    """OCR the given pages (0-based) of the PDF `data`. Raises OcrError when OCR is off, the
    pages are over `max_pages`, tesseract is missing or fails, or a page cannot be rendered."""
    if not pages:
        return Scans({})
    needs = _needs(pages)
    if not options.enabled:
        raise OcrError(f"{needs}, which is off (ocr = false)")
    if len(pages) > options.max_pages:
        raise OcrError(f"{needs}, over the limit of {options.max_pages} pages a document (ocr_max_pages)")
    engine = _engine(options, needs)
    texts = {}
    import pypdfium2 as pdfium
    import pytesseract

    with _LOCK:
        pytesseract.pytesseract.tesseract_cmd = options.command
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as e:
            raise OcrError(f"{needs}, but PDFium cannot open the file: {e}") from None
        try:
            for index in pages:
                texts[index] = _read(pdf, index, options)
        finally:
            pdf.close()
    return Scans(texts, {"engine": engine, "language": options.language, "pages": [i + 1 for i in pages]})


def _needs(pages: Sequence[int]) -> str:
    numbers = [str(i + 1) for i in pages[:10]] + (["..."] if len(pages) > 10 else [])
    if len(pages) == 1:
        return f"page {numbers[0]} has no text layer and needs OCR"
    return f"{len(pages)} pages ({', '.join(numbers)}) have no text layer and need OCR"


def _engine(options: OcrOptions, needs: str) -> str:
    """The engine's name and version, asked of the command itself: proves it runs, and names
    the engine in the document's note. Also checks the language data is there, which otherwise
    fails on the first page with a less helpful message."""
    import pytesseract

    with _LOCK:
        pytesseract.pytesseract.tesseract_cmd = options.command
        try:
            version = pytesseract.get_tesseract_version()
            languages = set(pytesseract.get_languages())
        except pytesseract.TesseractNotFoundError:
            raise OcrError(f"{needs}, but tesseract is not installed (no command {options.command!r}): "
                           f"{INSTALL_HINT}, or set ocr_command") from None
        # pytesseract exits on a version it cannot parse; a command that fails on --version raises
        except (SystemExit, OSError, ValueError, subprocess.SubprocessError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise OcrError(f"{needs}, but {options.command!r} is not a working tesseract ({first}): "
                           f"{INSTALL_HINT}, or set ocr_command") from None
    missing = [code for code in options.language.split("+") if code not in languages]
    if missing:
        packages = " ".join(f"tesseract-ocr-{code.lower()}" for code in missing)
        raise OcrError(f"{needs}, but tesseract has no language data for {', '.join(missing)} "
                       f"(ocr_language): install it with `apt-get install {packages}`")
    return f"tesseract {version}"


def _read(pdf: Any, index: int, options: OcrOptions) -> str:  # noqa: ANN401 - a pypdfium2 PdfDocument
    import pypdfium2 as pdfium
    import pytesseract

    try:
        page = pdf[index]
        try:
            width, height = page.get_size()  # points: 1/72 inch
            scale = min(options.dpi / 72, math.sqrt(MAX_PIXELS / max(width * height, 1.0)))
            image = page.render(scale=scale, grayscale=True).to_pil()
        finally:
            page.close()
    except pdfium.PdfiumError as e:
        raise OcrError(f"page {index + 1} has no text layer and needs OCR, but PDFium cannot render it: {e}") from None
    # tesseract's OpenMP threads spin against each other on a busy machine: on 2 shared cores one
    # thread read a dense page in 2.4 s where two took 23.5 s (bench/bench_ocr.py); OCRmyPDF sets
    # the same. Only tesseract's own process reads it; a value the user set is kept.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    # pytesseract hands the image over as a temporary file in the image's format, PNG when it has
    # none: BMP is written in ~5 ms where PNG's compression took 0.12-0.22 s of a ~1 s page
    image.format = "BMP"
    try:
        text = pytesseract.image_to_string(image, lang=options.language, timeout=options.page_timeout)
    except pytesseract.TesseractNotFoundError:
        raise OcrError(f"tesseract is not installed (no command {options.command!r}): {INSTALL_HINT}") from None
    except pytesseract.TesseractError as e:
        raise OcrError(f"tesseract failed on page {index + 1}: {e.message or e.status}") from None
    except RuntimeError as e:  # pytesseract's timeout (it kills the process)
        raise OcrError(f"OCR of page {index + 1} took over {options.page_timeout:g} s ({e})") from None
    return text.replace("\f", "").strip()
