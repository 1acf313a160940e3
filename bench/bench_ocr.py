"""OCR of scanned PDFs (issue 17, part 5): pages/s of reading scans, and chunks/s of ingesting one.

    .venv/bin/python bench/bench_ocr.py [--pages 8] [--threads 1,2] [--store pgserver://...]

Builds a scanned PDF: --pages letter-size pages at 200 dpi, each ~45 lines of prose (HotpotQA
paragraphs from /work/shared/data/hotpotqa/corpus.jsonl when present, generated otherwise)
drawn by Pillow in an 11-point-sized font and saved as images only (pypdf finds no text). Then:
(a) PDFium's render of each page alone (300 dpi, grey), and `ocr.read_scans` on all pages (render
+ tesseract, what parse_pdf runs) once per tesseract thread count in --threads (OMP_THREAD_LIMIT),
as pages/s, with the share of the source's words found in the OCR text; (b) the real pipeline
(`ingest_paths`) ingesting that PDF into a fresh pgvector collection, chunks/s from file to stored
rows, next to the same text as a Markdown file.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.ingest.ocr import OcrOptions, read_scans  # noqa: E402
from rag_rlm.ingest.pipeline import ingest_paths  # noqa: E402
from rag_rlm.memory import open_store  # noqa: E402

HOTPOT = Path("/work/shared/data/hotpotqa/corpus.jsonl")
DPI, FONT_PX, LINES_PER_PAGE = 200, 30, 45  # 30 px at 200 dpi is 10.8 pt


def paragraphs(n: int) -> list[str]:
    if HOTPOT.is_file():
        out = []
        with HOTPOT.open() as f:
            for line in f:
                text = json.loads(line).get("text") or ""
                if len(text) > 200:
                    out.append(text)
                if len(out) == n:
                    return out
    rng = random.Random(5)
    words = "the keeper lamp harbour tower north cellar boat sunset report office night policy storm".split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(60, 140))).capitalize() + "." for _ in range(n)]


def scanned_pdf(pages: int) -> tuple[bytes, list[str]]:
    """The PDF and each page's source text."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=FONT_PX)
    lines: list[str] = []
    for para in paragraphs(pages * 8):
        lines += textwrap.wrap(para, 78) + [""]
        if len(lines) >= pages * LINES_PER_PAGE:
            break
    images, sources = [], []
    for p in range(pages):
        page_lines = lines[p * LINES_PER_PAGE:(p + 1) * LINES_PER_PAGE]
        image = Image.new("L", (int(8.5 * DPI), 11 * DPI), 255)
        draw = ImageDraw.Draw(image)
        for n, line in enumerate(page_lines):
            draw.text((150, 150 + int(FONT_PX * 1.45) * n), line, fill=0, font=font)
        images.append(image)
        sources.append("\n".join(page_lines))
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=float(DPI), save_all=True, append_images=images[1:])
    return out.getvalue(), sources


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def recall(source: str, read: str) -> float:
    """Share of the source's words that the OCR text has (as a multiset)."""
    have: dict[str, int] = {}
    for w in words(read):
        have[w] = have.get(w, 0) + 1
    hit = 0
    for w in words(source):
        if have.get(w, 0) > 0:
            have[w] -= 1
            hit += 1
    return hit / max(len(words(source)), 1)


def render_only(data: bytes, pages: int) -> float:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    started = time.perf_counter()
    for i in range(pages):
        page = pdf[i]
        page.render(scale=300 / 72, grayscale=True).to_pil()
        page.close()
    pdf.close()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=8)
    ap.add_argument("--threads", default="1", help="tesseract's OpenMP thread limits to time, comma-separated")
    ap.add_argument("--store", help="default: a fresh pgserver in a temporary folder")
    args = ap.parse_args()
    data, sources = scanned_pdf(args.pages)
    options = OcrOptions()
    print(f"scanned PDF: {args.pages} pages, {len(data)} bytes, {sum(len(s) for s in sources)} characters of source text")
    seconds = render_only(data, args.pages)
    print(f"render only (PDFium, 300 dpi, grey): {seconds / args.pages:.3f} s/page, {args.pages / seconds:.1f} pages/s")
    print(f"{'OMP threads':>11} {'s/page':>7} {'pages/s':>8} {'word recall':>12}  engine")
    for threads in args.threads.split(","):
        os.environ["OMP_THREAD_LIMIT"] = threads.strip()
        started = time.perf_counter()
        scans = read_scans(data, list(range(args.pages)), options)
        seconds = time.perf_counter() - started
        found = sum(recall(s, scans.texts[i]) * len(words(s)) for i, s in enumerate(sources))
        share = found / sum(len(words(s)) for s in sources)
        print(f"{threads:>11} {seconds / args.pages:>7.2f} {args.pages / seconds:>8.2f} {share:>12.3f}  "
              f"{scans.note['engine']}", flush=True)
    os.environ["OMP_THREAD_LIMIT"] = "1"  # what ocr.py sets when the user has not

    settings = Settings()
    embedder = load_embedder(settings.embed_model, settings.embed_device, settings.batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        settings = settings.replace(store=args.store or f"pgserver://{tmp}/pgdata", data_dir=str(folder / "data"))
        store = open_store(settings.store)
        (folder / "scan").mkdir()
        (folder / "scan" / "scan.pdf").write_bytes(data)
        (folder / "text").mkdir()
        (folder / "text" / "scan.md").write_text("\n\n".join(sources))
        embedder.embed(["warm up the model"])
        print(f"{'ingest':<15} {'chunks':>6} {'seconds':>8} {'chunks/s':>9} {'pages/s':>8}")
        try:
            for name, kind in (("scanned PDF", "scan"), ("same text, .md", "text")):
                summary = ingest_paths([folder / kind], collection=f"bench_ocr_{kind}", store=store,
                                       embedder=embedder, settings=settings, progress=False)
                assert not summary.failed, summary.failed
                print(f"{name:<15} {summary.chunks_written:>6} {summary.seconds:>8.2f} "
                      f"{summary.chunks_per_second:>9.1f} {args.pages / summary.seconds:>8.2f}", flush=True)
        finally:
            store.close()


if __name__ == "__main__":
    main()
