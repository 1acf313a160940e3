"""Scanned PDFs (issue 17 part 5) on real parts: pages drawn here with Pillow and saved as
image-only PDFs (pypdf finds no text in them), read by the real tesseract (`make install`
apt-installs it) through the real pipeline into real stores, and asked about. A mixed PDF OCRs
only its image page; OCR off, too many pages, missing language data and a tesseract command
that does not exist fail the document with a message saying so, and what was stored stays."""

from __future__ import annotations

import email.message
import io
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfReader, PdfWriter
from test_parsers import make_pdf, write
from test_server_support import LiveServer

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.errors import ConfigError
from rag_rlm.ingest.parsers import OcrOptions, ParseError, parse_file
from rag_rlm.ingest.pipeline import ingest_paths

LAMP = ["Lighthouse maintenance log", "The keeper replaced the lamp on 3 March.",
        "The foghorn is tested every Tuesday at noon."]
CELLAR = ["Stores", "Spare bulbs are kept in the north cellar of the tower."]
MISSING = "/nonexistent/bin/tesseract"


def scan(lines: list[str]) -> Image.Image:
    """A letter-size page at 150 dpi with the lines drawn in a large font, as a scanner sees it."""
    page = Image.new("L", (1275, 1650), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=40)  # Pillow's own TrueType font: no system font needed
    for n, line in enumerate(lines):
        draw.text((110, 140 + 70 * n), line, fill=0, font=font)
    return page


def image_pdf(pages: list[list[str]]) -> bytes:
    images = [scan(lines) for lines in pages]
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=150.0, save_all=True, append_images=images[1:])
    return out.getvalue()


def joined(*pdfs: bytes, stamp: dict[int, str] | None = None) -> bytes:
    """The pages of `pdfs` in order; `stamp`: a page (0-based) gets a short text layer drawn over
    it, as a scanner stamps a page number on its image."""
    writer = PdfWriter()
    for pdf in pdfs:
        writer.append(PdfReader(io.BytesIO(pdf)))
    for index, text in (stamp or {}).items():
        writer.pages[index].merge_page(PdfReader(io.BytesIO(make_pdf([[text]]))).pages[0])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def blank_page() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def layer(pdf: bytes) -> list[str]:
    return [page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages]


def parse(path: Path, **options: object):
    return parse_file(path, path.name, ocr=OcrOptions(**options))  # type: ignore[arg-type]


# --- parsing ------------------------------------------------------------------------------------

def test_an_image_only_pdf_has_no_text_layer_and_is_read_by_ocr(tmp_path):
    pdf = image_pdf([LAMP, CELLAR])
    assert layer(pdf) == ["", ""]  # nothing for pypdf: before OCR this file was "empty: no text"
    doc = parse(write(tmp_path / "log.pdf", pdf)).documents[0]
    for line in LAMP + CELLAR:
        assert line in doc.text, doc.text
    assert doc.text.index(LAMP[1]) < doc.text.index(CELLAR[1])  # in page order
    note = doc.metadata["ocr"]
    assert note["pages"] == [1, 2] and note["language"] == "eng"
    assert note["engine"].startswith("tesseract 5."), note


def test_a_mixed_pdf_ocrs_only_the_image_page_and_a_stamped_page_number_is_no_text_layer(tmp_path):
    text_page = make_pdf([["Harbour rules", "Boats must be moored by sunset."]])
    pdf = joined(text_page, image_pdf([LAMP]), blank_page(), stamp={1: "Page 2"})
    assert layer(pdf)[1] == "Page 2"  # the scan carries a stamp, too short to be its text
    doc = parse(write(tmp_path / "mixed.pdf", pdf)).documents[0]
    assert doc.metadata["ocr"]["pages"] == [2]  # not the text page, not the blank one
    assert doc.text.startswith("Harbour rules\nBoats must be moored by sunset.\n\n")  # the text layer, as before
    assert LAMP[1] in doc.text


def test_a_pdf_that_needs_no_ocr_parses_without_tesseract_and_carries_no_note(tmp_path):
    pdf = joined(make_pdf([["Harbour rules", "Boats must be moored by sunset."]]), blank_page())
    doc = parse(write(tmp_path / "rules.pdf", pdf), command=MISSING).documents[0]
    assert doc.text == "Harbour rules\nBoats must be moored by sunset." and doc.metadata == {}


@pytest.mark.parametrize("options,reason", [
    ({"command": MISSING}, f"page 1 has no text layer and needs OCR, but tesseract is not installed (no command "
                           f"'{MISSING}'): install it with `apt-get install tesseract-ocr tesseract-ocr-eng` "
                           f"(or `make install`), or set ocr_command"),
    ({"enabled": False}, "page 1 has no text layer and needs OCR, which is off (ocr = false)"),
    ({"language": "eng+zzz"}, "page 1 has no text layer and needs OCR, but tesseract has no language data for "
                              "zzz (ocr_language): install it with `apt-get install tesseract-ocr-zzz`"),
    ({"command": "/bin/false"}, "page 1 has no text layer and needs OCR, but '/bin/false' is not a working tesseract"),
])
def test_a_scan_that_cannot_be_read_fails_with_the_reason_never_empty(tmp_path, options, reason):
    path = write(tmp_path / "scan.pdf", image_pdf([LAMP]))
    with pytest.raises(ParseError) as info:
        parse(path, **options)
    assert info.value.reason.startswith(reason), info.value.reason


def test_a_scan_with_nothing_to_read_is_an_error_that_says_ocr_found_nothing(tmp_path):
    path = write(tmp_path / "photo.pdf", image_pdf([[]]))  # a white page: an image, no words
    with pytest.raises(ParseError) as info:
        parse(path)
    assert info.value.reason == "empty: no text (OCR read nothing on its 1 scanned page(s))"


def test_pages_to_ocr_over_the_cap_fail_before_any_is_read(tmp_path):
    path = write(tmp_path / "thick.pdf", image_pdf([LAMP, CELLAR, LAMP]))
    with pytest.raises(ParseError) as info:
        parse(path, max_pages=2, command=MISSING)  # refused on the count: tesseract is never asked
    assert info.value.reason == ("3 pages (1, 2, 3) have no text layer and need OCR, over the limit of 2 pages "
                                 "a document (ocr_max_pages)")


def test_a_scanned_attachment_is_read_with_the_settings_of_its_message(tmp_path):
    msg = email.message.EmailMessage()
    msg["Subject"], msg["From"] = "Log", "keeper@example.com"
    msg.set_content("The log is attached.")
    msg.add_attachment(image_pdf([LAMP]), maintype="application", subtype="pdf", filename="log.pdf")
    path = write(tmp_path / "m.eml", msg.as_bytes())
    read = parse(path)
    assert read.documents[1].id == "m.eml#log.pdf" and LAMP[1] in read.documents[1].text
    assert read.documents[1].metadata["ocr"]["pages"] == [1] and read.documents[1].metadata["attachment_of"] == "m.eml"
    missing = parse(path, command=MISSING)  # the message goes in, its attachment fails alone
    assert [d.id for d in missing.documents] == ["m.eml"]
    assert "tesseract is not installed" in missing.errors[0].reason


def test_ocr_settings_come_from_the_environment_and_bad_ones_are_refused():
    settings = Settings.from_env(environ={"RAG_RLM_OCR": "false", "RAG_RLM_OCR_COMMAND": MISSING,
                                          "RAG_RLM_OCR_LANGUAGE": "eng+deu", "RAG_RLM_OCR_MAX_PAGES": "7"})
    assert OcrOptions.from_settings(settings) == OcrOptions(enabled=False, command=MISSING, language="eng+deu",
                                                            max_pages=7)
    assert OcrOptions.from_settings(Settings()) == OcrOptions()  # on, tesseract on PATH, English
    for name, value in [("ocr_max_pages", 0), ("ocr_command", " "), ("ocr_language", "eng -c x=1")]:
        with pytest.raises(ConfigError) as info:
            Settings(**{name: value})
        assert info.value.setting == name


# --- ingested through the pipeline into real stores ------------------------------------------------

def corpus(root: Path) -> Path:
    write(root / "log.pdf", image_pdf([LAMP, CELLAR]))
    write(root / "canteen.txt", "Canteen\n\nThe canteen serves soup on Mondays and fish on Fridays.\n")
    write(root / "rules.pdf", make_pdf([["Harbour rules", "Boats must be moored by sunset."]]))
    return root


def test_a_scanned_pdf_is_ingested_and_answers_with_a_citation_and_its_ocr_note(settings, embedder, collection,
                                                                                 tmp_path):
    assistant = Assistant(settings, embedder=embedder)
    try:
        summary = assistant.ingest_files([corpus(tmp_path / "corpus")], collection)
        assert summary.failed == [] and summary.documents_new == 3
        result = assistant.ask("When did the keeper replace the lamp?", collection)
        assert "3 March" in result.answer, result.answer
        assert "log.pdf" in [c.span.document_id for c in result.citations], result.citations
        records = {r.id: r for r in assistant.documents(collection)}
        assert records["log.pdf"].metadata["ocr"]["pages"] == [1, 2]
        assert "ocr" not in records["rules.pdf"].metadata  # a text PDF is read as before
    finally:
        assistant.close()


def test_without_tesseract_the_scan_fails_in_the_summary_and_its_stored_version_stays(settings, embedder,
                                                                                      collection, tmp_path):
    root = tmp_path / "corpus"
    write(root / "log.pdf", make_pdf([["Lighthouse log", "The keeper replaced the lamp on 9 January."]]))
    write(root / "canteen.txt", "Canteen\n\nThe canteen serves soup on Mondays.\n")
    assistant = Assistant(settings, embedder=embedder)
    try:
        assert assistant.ingest_files([root], collection).documents_new == 2
        before = {r.id: (r.content_hash, r.chunk_count) for r in assistant.documents(collection)}
        write(root / "log.pdf", image_pdf([LAMP]))  # the log is now a scan
        write(root / "canteen.txt", "Canteen\n\nThe canteen serves soup on Mondays and fish on Fridays.\n")
        summary = ingest_paths([root], collection=collection, store=assistant.store, embedder=embedder,
                               settings=settings.replace(ocr_command=MISSING), progress=False)
        assert summary.documents_updated == 1 and summary.documents_failed == 1  # the other file goes on
        [failed] = summary.failed
        assert Path(failed["path"]).name == "log.pdf"
        assert "page 1 has no text layer and needs OCR, but tesseract is not installed" in failed["reason"]
        assert "apt-get install tesseract-ocr" in failed["reason"] and MISSING in failed["reason"]
        after = {r.id: (r.content_hash, r.chunk_count) for r in assistant.documents(collection)}
        assert after["log.pdf"] == before["log.pdf"] and after["canteen.txt"] != before["canteen.txt"]
        result = assistant.ask("When did the keeper replace the lamp?", collection)
        assert "9 January" in result.answer and "log.pdf" in [c.span.document_id for c in result.citations]
    finally:
        assistant.close()


def test_an_uploaded_scan_lists_its_ocr_note_over_http_and_is_cited(pg_url, embedder, collection, tmp_path):
    settings = Settings(store=pg_url, data_dir=str(tmp_path / "data"), rate_limit_per_minute=100_000)
    assistant = Assistant(settings, embedder=embedder)
    try:
        with LiveServer(settings, assistant) as server, server.client() as http:
            files = [("files", ("scans/log.pdf", image_pdf([LAMP, CELLAR]), "application/pdf")),
                     ("files", ("canteen.txt", "The canteen serves soup on Mondays.\n", "text/plain"))]
            r = http.post(f"/v1/collections/{collection}/documents", files=files)
            assert r.status_code == 200 and r.json()["documents_new"] == 2, r.text
            listed = {d["id"]: d for d in http.get(f"/v1/collections/{collection}/documents").json()["documents"]}
            assert listed["scans/log.pdf"]["metadata"]["ocr"]["pages"] == [1, 2]
            assert listed["scans/log.pdf"]["metadata"]["ocr"]["engine"].startswith("tesseract ")
            body = http.post("/v1/ask", json={"question": "Where are the spare bulbs kept?",
                                              "collection": collection}).json()
            assert "north cellar" in body["answer"], body
            assert "scans/log.pdf" in {c["document_id"] for c in body["citations"]}
    finally:
        assistant.close()
