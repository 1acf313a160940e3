"""Parse and chunk throughput of each file format (issue 17, part 4).

    .venv/bin/python bench/bench_formats.py [--scale 1.0] [--repeat 3] [--embed]

Builds one file per format of a realistic size with each format's own library (a 4,000-row
workbook in two sheets, the same rows as CSV, a 60-slide deck with notes, a message with a DOCX
and a text attachment, a 300-message mailbox, a 30-chapter book, a 300-paragraph ODT, an RST
manual and, for comparison, the same text as HTML and Markdown), then times `parse_file` and
the chunker on it (best of --repeat) and prints chunks/s per format. Prose comes from the
HotpotQA corpus when present (/work/shared/data/hotpotqa/corpus.jsonl), generated otherwise.
--embed also times the embedder on each format's chunks (the stage ingest is bound by).
"""

from __future__ import annotations

import argparse
import email.message
import io
import json
import mailbox
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.ingest.chunker import chunk_text  # noqa: E402
from rag_rlm.ingest.parsers import parse_file  # noqa: E402

HOTPOT = Path("/work/shared/data/hotpotqa/corpus.jsonl")


def prose(n: int) -> list[tuple[str, str]]:
    """(title, paragraph) pairs."""
    if HOTPOT.is_file():
        out = []
        with HOTPOT.open() as f:
            for line in f:
                r = json.loads(line)
                if r.get("text"):
                    out.append((r["title"], r["text"]))
                if len(out) == n:
                    return out
    rng = random.Random(7)
    words = "office team policy pipeline expense approve vacation deploy incident report city night".split()
    return [(f"Topic {i}", " ".join(rng.choice(words) for _ in range(rng.randint(60, 160))) + ".") for i in range(n)]


def rows(n: int) -> list[list]:
    rng = random.Random(3)
    cities = ["Lisbon", "Porto", "Toronto", "Austin", "Berlin", "Osaka"]
    return [[f"SKU-{i:05}", f"Product {i}", rng.choice(cities), round(rng.uniform(1, 500), 2), rng.randint(0, 900),
             f"Supplier {rng.randint(1, 40)}"] for i in range(n)]


HEAD = ["SKU", "Name", "Warehouse", "Price", "Stock", "Supplier"]


def make_xlsx(n: int) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    for s, sheet in enumerate((book.active, book.create_sheet("Archive"))):
        sheet.title = ["Inventory", "Archive"][s]
        sheet.append(HEAD)
        for row in rows(n // 2):
            sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def make_csv(n: int) -> bytes:
    return "\n".join(",".join(map(str, r)) for r in [HEAD, *rows(n)]).encode()


def make_pptx(text: list[tuple[str, str]]) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for title, para in text:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        sentences = para.split(". ")
        slide.placeholders[1].text_frame.text = sentences[0]
        for s in sentences[1:4]:
            slide.placeholders[1].text_frame.add_paragraph().text = s
        slide.notes_slide.notes_text_frame.text = para
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_docx(text: list[tuple[str, str]]) -> bytes:
    import docx

    d = docx.Document()
    for title, para in text:
        d.add_heading(title, level=2)
        d.add_paragraph(para)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def message(subject: str, body: str, attachments: list[tuple[str, bytes]] = ()) -> email.message.EmailMessage:
    msg = email.message.EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = subject, "ana@example.com", "team@example.com"
    msg["Date"] = "Tue, 01 Oct 2024 09:30:00 +0000"
    msg.set_content(body)
    for name, data in attachments:
        msg.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return msg


def make_eml(text: list[tuple[str, str]]) -> bytes:
    half = len(text) // 2
    body = "\n\n".join(p for _, p in text[:half])
    notes = "\n\n".join(p for _, p in text[half:]).encode()
    return message("Quarterly notes", body, [("report.docx", make_docx(text[half:])), ("notes.txt", notes)]).as_bytes()


def make_mbox(text: list[tuple[str, str]], folder: Path) -> bytes:
    box = mailbox.mbox(folder / "b.mbox")
    for title, para in text:
        box.add(message(title, para))
    box.flush()
    box.close()
    return (folder / "b.mbox").read_bytes()


def make_epub(text: list[tuple[str, str]]) -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("bench")
    book.set_title("Bench book")
    chapters = []
    for c in range(0, len(text), 10):
        ch = epub.EpubHtml(title=f"Chapter {c}", file_name=f"c{c}.xhtml")
        ch.content = "".join(f"<h2>{t}</h2><p>{p}</p>" for t, p in text[c:c + 10])
        book.add_item(ch)
        chapters.append(ch)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.toc, book.spine = chapters, chapters
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        epub.write_epub(out, book)
    return out.getvalue()


def make_odt(text: list[tuple[str, str]]) -> bytes:
    from odf import text as odftext
    from odf.opendocument import OpenDocumentText

    doc = OpenDocumentText()
    for title, para in text:
        doc.text.addElement(odftext.H(outlinelevel=2, text=title))
        doc.text.addElement(odftext.P(text=para))
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def make_rst(text: list[tuple[str, str]]) -> bytes:
    parts = ["Manual\n======\n"]
    for title, para in text:
        title = title.replace("*", "").replace("`", "") or "Section"
        parts.append(f"{title}\n{'-' * max(len(title), 4)}\n\n{para.replace('*', '').replace('`', '')}\n")
    return "\n".join(parts).encode()


def make_html(text: list[tuple[str, str]]) -> bytes:
    return ("<html><body>" + "".join(f"<h2>{t}</h2><p>{p}</p>" for t, p in text) + "</body></html>").encode()


def make_md(text: list[tuple[str, str]]) -> bytes:
    return "\n\n".join(f"## {t}\n\n{p}" for t, p in text).encode()


def build(scale: float, folder: Path) -> dict[str, bytes]:
    def n(k: int) -> int:
        return max(2, int(k * scale))

    text = prose(n(300))
    return {"xlsx": make_xlsx(n(4000)), "csv": make_csv(n(4000)), "pptx": make_pptx(text[:n(60)]),
            "eml": make_eml(text[:n(60)]), "mbox": make_mbox(text, folder), "epub": make_epub(text[:n(300)]),
            "odt": make_odt(text), "rst": make_rst(text), "html": make_html(text), "md": make_md(text)}


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every file's size")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--embed", action="store_true", help="also time embedding each format's chunks")
    args = ap.parse_args()
    settings = Settings()
    embedder = load_embedder(settings.embed_model, settings.embed_device, settings.batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = build(args.scale, folder)
        head = f"{'format':<6} {'bytes':>9} {'docs':>5} {'chars':>8} {'chunks':>6} {'parse s':>8} {'chunk s':>8} " \
               f"{'chunks/s':>9} {'MB/s':>6}" + (f" {'embed s':>8} {'w/ embed':>9}" if args.embed else "")
        print(head)
        for kind, data in files.items():
            path = folder / f"bench.{kind}"
            path.write_bytes(data)
            parse_s, parsed = best(lambda p=path, d=data: parse_file(p, p.name, d, max_bytes=50_000_000), args.repeat)
            docs = parsed.documents  # type: ignore[attr-defined]

            def chunk(docs=docs):
                return [c for d in docs for c in chunk_text(d.id, d.text, embedder, chunk_tokens=settings.chunk_tokens,
                                                            overlap=settings.chunk_overlap)]
            chunk_s, chunks = best(chunk, args.repeat)
            total = parse_s + chunk_s
            line = (f"{kind:<6} {len(data):>9} {len(docs):>5} {sum(len(d.text) for d in docs):>8} {len(chunks):>6} "
                    f"{parse_s:>8.3f} {chunk_s:>8.3f} {len(chunks) / total:>9.0f} {len(data) / total / 1e6:>6.1f}")
            if args.embed:
                embed_s, _ = best(lambda chunks=chunks: embedder.embed([c.text for c in chunks]), 1)
                line += f" {embed_s:>8.2f} {len(chunks) / (total + embed_s):>9.0f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
