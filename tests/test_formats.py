"""The formats of issue 17 part 4 on real files made here by each format's own library: xlsx
(openpyxl), csv, pptx (python-pptx), eml and mbox (email, mailbox), epub (ebooklib), odt (odfpy)
and rst (docutils). Each is parsed (its text shape), ingested into a real collection
(pgserver) and asked about, the answer citing that document; corrupt files and zip bombs of
every zipped kind are per-file errors naming the problem, and what was stored stays."""

from __future__ import annotations

import email.message
import io
import mailbox
import warnings
import zipfile
from pathlib import Path

import openpyxl
import pytest
from ebooklib import epub
from odf import table as odftable
from odf import text as odftext
from odf.opendocument import OpenDocumentText
from pptx import Presentation
from test_parsers import make_pdf, write

from rag_rlm.assistant import Assistant
from rag_rlm.config import Settings
from rag_rlm.ingest.formats import sheets
from rag_rlm.ingest.parsers import PARSERS, ZIP_FORMATS, ParseError, parse_file
from rag_rlm.ingest.pipeline import ingest_paths

ZIPPED = ("xlsx", "pptx", "odt", "epub")
LIMIT = 2_000_000  # max_document_bytes of the collection below: bombs stay small to build


# --- files made by each format's own library --------------------------------------------------

def make_xlsx(*, cached: int | None = 13) -> bytes:
    """Two sheets; the last Plans row sums the seats by a formula. openpyxl computes no formula,
    so the value a spreadsheet app caches on save is written into the cell's <v> afterwards
    (`cached`), as Excel or LibreOffice would have left it."""
    book = openpyxl.Workbook()
    plans = book.active
    plans.title = "Plans"
    plans.append(["Plan", "Price", "Seats"])
    plans.append(["Basic", "$10 per month", 3])
    plans.append(["Team", "$25 per month", 10])
    plans.append(["Total seats", None, "=SUM(C2:C3)"])
    support = book.create_sheet("Support")
    support.append(["Support hours"])  # a caption line above the header row
    support.append(["Tier", "Hours"])
    support.append(["Gold", "24/7 phone support"])
    out = io.BytesIO()
    book.save(out)
    if cached is None:
        return out.getvalue()
    return rewrite_zip(out.getvalue(), "xl/worksheets/sheet1.xml",
                       lambda xml: xml.replace(b"<f>SUM(C2:C3)</f><v></v>", b"<f>SUM(C2:C3)</f><v>%d</v>" % cached))


def rewrite_zip(data: bytes, name: str, change) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for item in src.infolist():
            body = src.read(item)
            if item.filename == name:
                changed = change(body)
                assert changed != body, f"{name} not changed"
                body = changed
            z.writestr(item, body)
    return out.getvalue()


def make_pptx() -> bytes:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    slide.shapes.title.text = "Quarterly results"
    body = slide.placeholders[1].text_frame
    body.text = "Revenue grew 12% in the third quarter."
    sub = body.add_paragraph()
    sub.text = "Churn fell to 2%."
    sub.level = 1
    slide.notes_slide.notes_text_frame.text = "Say that the Lisbon office closed the biggest deal of the quarter."
    priced = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    priced.shapes.title.text = "Pricing"
    table = priced.shapes.add_table(2, 2, 0, 0, 3_000_000, 1_000_000).table
    for (r, c), value in {(0, 0): "Plan", (0, 1): "Price", (1, 0): "Basic", (1, 1): "$10"}.items():
        table.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_eml(*, agenda: bytes | None = None) -> bytes:
    msg = email.message.EmailMessage()
    msg["Subject"] = "Offsite plan"
    msg["From"] = "Ana Silva <ana@example.com>"
    msg["To"] = "team@example.com"
    msg["Date"] = "Tue, 01 Oct 2024 09:30:00 +0000"
    msg.set_content("The offsite is in Porto on 14 November.\n")
    msg.add_alternative("<html><body><p>The offsite is in <b>Porto</b> (HTML part).</p></body></html>", subtype="html")
    if agenda is None:
        agenda = make_pdf([["Offsite agenda", "On day two the team goes hiking in the Peneda-Geres park."]])
    msg.add_attachment(agenda, maintype="application", subtype="pdf", filename="agenda.pdf")
    msg.add_attachment("Budget\n\nThe offsite budget is 9000 euros.\n", filename="budget.txt")
    msg.add_attachment(b"\x89PNG\r\n\x1a\n....", maintype="image", subtype="png", filename="logo.png")
    return msg.as_bytes()


def make_mbox(path: Path) -> Path:
    box = mailbox.mbox(path)
    for subject, body, attachment in [
            ("Coffee machine", "The coffee machine on floor 2 is being replaced on Friday.", None),
            ("Printer", "The printer on floor 3 is fixed and prints in colour again.", "Toner\n\nToner is in cabinet 7.\n")]:
        msg = email.message.EmailMessage()
        msg["Subject"], msg["From"], msg["Date"] = subject, "facilities@example.com", "Mon, 07 Oct 2024 08:00:00 +0000"
        msg.set_content(body)
        if attachment:
            msg.add_attachment(attachment, filename="toner.txt")
        box.add(msg)
    box.flush()
    box.close()
    return path


def make_epub() -> bytes:
    book = epub.EpubBook()
    book.set_identifier("field-guide-1")
    book.set_title("Field guide")
    book.set_language("en")
    birds = epub.EpubHtml(title="Birds", file_name="birds.xhtml")
    birds.content = "<h1>Birds</h1><p>The robin builds its nest in March.</p>"
    trees = epub.EpubHtml(title="Trees", file_name="trees.xhtml")
    trees.content = "<h1>Trees</h1><p>An oak can live for 500 years.</p>"
    for item in (birds, trees, epub.EpubNcx(), epub.EpubNav()):
        book.add_item(item)
    book.toc = [birds, trees]
    book.spine = ["nav", birds, trees]  # the navigation page has no text of its own
    out = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        epub.write_epub(out, book)
    return out.getvalue()


def make_odt() -> bytes:
    doc = OpenDocumentText()
    doc.text.addElement(odftext.H(outlinelevel=1, text="Office handbook"))
    doc.text.addElement(odftext.P(text="Visitor badges are issued at the reception desk."))
    doc.text.addElement(odftext.H(outlinelevel=2, text="Parking"))
    items = odftext.List()
    item = odftext.ListItem()
    item.addElement(odftext.P(text="Bicycles go in the basement."))
    items.addElement(item)
    doc.text.addElement(items)
    table = odftable.Table()
    for values in (["Floor", "Team"], ["3", "Finance"]):
        row = odftable.TableRow()
        for value in values:
            cell = odftable.TableCell()
            cell.addElement(odftext.P(text=value))
            row.addElement(cell)
        table.addElement(row)
    doc.text.addElement(table)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


RST = """Queue runbook
=============

:Owner: Platform team

Restarts
--------

Restart the **ingest queue** with ``make restart-queue`` after a deploy.

* Check the dashboard first.
* Page the on-call engineer.

::

   make restart-queue

.. include:: /etc/passwd

+------+-------+
| Plan | Price |
+======+=======+
| Pro  | $20   |
+------+-------+
"""

CSV = "Plan;Support;Price\nBasic;email only;$10\nGold;24/7 phone support;$40\n"


def corpus(root: Path) -> Path:
    write(root / "plans.xlsx", make_xlsx())
    write(root / "prices.csv", CSV)
    write(root / "deck.pptx", make_pptx())
    write(root / "offsite.eml", make_eml())
    make_mbox(root / "inbox.mbox")
    write(root / "guide.epub", make_epub())
    write(root / "handbook.odt", make_odt())
    write(root / "runbook.rst", RST)
    return root


def docs(path: Path, doc_id: str | None = None) -> dict:
    parsed = parse_file(path, doc_id or path.name)
    assert not parsed.errors
    return {d.id: d for d in parsed.documents}


# --- parsing: the text shape of each format ---------------------------------------------------

def test_xlsx_rows_are_labelled_lines_under_sheet_headings_and_formulas_read_their_cached_value(tmp_path):
    doc = docs(write(tmp_path / "plans.xlsx", make_xlsx()))["plans.xlsx"]
    assert doc.text == ("## Plans\n\nPlan: Basic; Price: $10 per month; Seats: 3\n\n"
                        "Plan: Team; Price: $25 per month; Seats: 10\n\nPlan: Total seats; Seats: 13\n\n"
                        "## Support\n\nSupport hours\n\nTier: Gold; Hours: 24/7 phone support")
    assert doc.title == "plans"
    # written by a program that computes no formula (openpyxl): there is no value, the cell reads empty
    uncached = docs(write(tmp_path / "raw.xlsx", make_xlsx(cached=None)))["raw.xlsx"]
    assert "Plan: Total seats\n" in uncached.text and "SUM" not in uncached.text


def test_csv_rows_are_labelled_by_the_header_row_with_a_sniffed_delimiter(tmp_path):
    doc = docs(write(tmp_path / "prices.csv", CSV))["prices.csv"]
    assert doc.text == ("Plan: Basic; Support: email only; Price: $10\n\n"
                        "Plan: Gold; Support: 24/7 phone support; Price: $40")
    comma = docs(write(tmp_path / "c.csv", 'Name,Note\n"Lindqvist, H.","says ""hi"""\n'))["c.csv"]
    assert comma.text == 'Name: Lindqvist, H.; Note: says "hi"'


def test_pptx_slide_titles_are_headings_with_body_bullets_tables_and_speaker_notes(tmp_path):
    doc = docs(write(tmp_path / "deck.pptx", make_pptx()))["deck.pptx"]
    assert doc.title == "Quarterly results"
    assert doc.text == ("## Quarterly results\n\nRevenue grew 12% in the third quarter.\n\n- Churn fell to 2%.\n\n"
                        "Notes: Say that the Lisbon office closed the biggest deal of the quarter.\n\n"
                        "## Pricing\n\nPlan: Basic; Price: $10")


def test_eml_is_titled_by_its_subject_prefers_plain_text_and_attachments_are_linked_documents(tmp_path):
    path = write(tmp_path / "mail" / "offsite.eml", make_eml())
    found = docs(path, "mail/offsite.eml")
    assert list(found) == ["mail/offsite.eml", "mail/offsite.eml#agenda.pdf", "mail/offsite.eml#budget.txt"]
    msg = found["mail/offsite.eml"]
    assert msg.title == "Offsite plan"
    assert msg.text == ("# Offsite plan\n\nFrom: Ana Silva <ana@example.com>; To: team@example.com; "
                        "Date: Tue, 01 Oct 2024 09:30:00 +0000; Attachments: agenda.pdf, budget.txt, logo.png\n\n"
                        "The offsite is in Porto on 14 November.")  # the plain part, not the HTML one
    assert msg.metadata["from"] == "Ana Silva <ana@example.com>" and msg.metadata["date"].startswith("Tue, 01 Oct")
    agenda = found["mail/offsite.eml#agenda.pdf"]
    assert agenda.text == "Offsite agenda\nOn day two the team goes hiking in the Peneda-Geres park."
    assert (agenda.title, agenda.source) == ("agenda.pdf", str(path))  # the message file is its source
    assert agenda.metadata == {"attachment_of": "mail/offsite.eml"}
    assert found["mail/offsite.eml#budget.txt"].title == "Budget"


def test_eml_with_only_an_html_body_reads_it_through_the_html_parser(tmp_path):
    msg = email.message.EmailMessage()
    msg["Subject"], msg["From"] = "Canteen", "canteen@example.com"
    # the declared charset is stale (the email package re-encodes the text): the parser must not trust it
    msg.set_content("<html><head><meta charset='iso-8859-1'><script>x()</script></head><body><h1>Café</h1>"
                    "<p>Lunch is served from noon.</p></body></html>", subtype="html")
    doc = docs(write(tmp_path / "c.eml", msg.as_bytes()))["c.eml"]
    assert doc.text == "# Canteen\n\nFrom: canteen@example.com\n\n# Café\n\nLunch is served from noon."


def test_a_forwarded_message_is_parsed_as_an_eml_with_its_own_attachments(tmp_path):
    inner = email.message.EmailMessage()
    inner["Subject"], inner["From"] = "Parking", "facilities@example.com"
    inner.set_content("Level -2 is reserved for visitors.")
    inner.add_attachment("Map\n\nThe entrance is on Rua Augusta.\n", filename="map.txt")
    outer = email.message.EmailMessage()
    outer["Subject"] = "Fwd: Parking"  # no From, To or Date: the heading and the body alone
    outer.set_content("See below.")
    outer.add_attachment(inner)
    found = docs(write(tmp_path / "fwd.eml", outer.as_bytes()))
    assert list(found) == ["fwd.eml", "fwd.eml#attachment-1.eml", "fwd.eml#attachment-1.eml#map.txt"]
    assert found["fwd.eml"].text == "# Fwd: Parking\n\nAttachments: attachment-1.eml\n\nSee below."
    forwarded = found["fwd.eml#attachment-1.eml"]
    assert forwarded.title == "Parking" and forwarded.text.endswith("Level -2 is reserved for visitors.")
    assert forwarded.metadata["attachment_of"] == "fwd.eml"
    assert found["fwd.eml#attachment-1.eml#map.txt"].metadata == {"attachment_of": "fwd.eml#attachment-1.eml"}
    assert {d.source for d in found.values()} == {str(tmp_path / "fwd.eml")}


def test_mbox_gives_one_document_per_message_and_its_attachments_link_to_the_message(tmp_path):
    found = docs(make_mbox(tmp_path / "inbox.mbox"))
    assert list(found) == ["inbox.mbox#1", "inbox.mbox#2", "inbox.mbox#2#toner.txt"]
    assert [found[i].title for i in ("inbox.mbox#1", "inbox.mbox#2")] == ["Coffee machine", "Printer"]
    assert found["inbox.mbox#2"].text.endswith("Attachments: toner.txt\n\n"
                                               "The printer on floor 3 is fixed and prints in colour again.")
    assert found["inbox.mbox#2#toner.txt"].text == "Toner\n\nToner is in cabinet 7.\n"
    assert len({d.content_hash for d in found.values()}) == 3  # each message hashed on its own


def test_epub_chapters_in_reading_order_through_the_html_parser(tmp_path):
    doc = docs(write(tmp_path / "guide.epub", make_epub()))["guide.epub"]
    assert doc.title == "Field guide"
    assert doc.text == "# Birds\n\nThe robin builds its nest in March.\n\n# Trees\n\nAn oak can live for 500 years."


def test_odt_headings_by_outline_level_paragraphs_lists_and_tables(tmp_path):
    doc = docs(write(tmp_path / "handbook.odt", make_odt()))["handbook.odt"]
    assert doc.title == "Office handbook"
    assert doc.text == ("# Office handbook\n\nVisitor badges are issued at the reception desk.\n\n## Parking\n\n"
                        "- Bicycles go in the basement.\n\nFloor: 3; Team: Finance")


def test_rst_section_titles_are_headings_and_includes_are_not_followed(tmp_path):
    doc = docs(write(tmp_path / "runbook.rst", RST))["runbook.rst"]
    assert doc.title == "Queue runbook"
    assert doc.text == ("# Queue runbook\n\nOwner: Platform team\n\n## Restarts\n\n"
                        "Restart the ingest queue with make restart-queue after a deploy.\n\n"
                        "- Check the dashboard first.\n\n- Page the on-call engineer.\n\n"
                        "```\nmake restart-queue\n```\n\nPlan: Pro; Price: $20")
    assert "root:" not in doc.text


def test_every_new_format_is_registered_and_every_zipped_one_is_under_the_zip_limits():
    assert {".xlsx", ".csv", ".pptx", ".eml", ".mbox", ".epub", ".odt", ".rst"} <= set(PARSERS)
    assert {f".{k}" for k in ZIPPED} | {".docx"} == set(ZIP_FORMATS)


# --- bad input ----------------------------------------------------------------------------------

def zip_of(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in entries.items():
            z.writestr(name, body)
    return out.getvalue()


def bomb(real: bytes, inflated: int) -> bytes:
    """A real file of its kind with one more entry of `inflated` zeros (~1000:1 compressed)."""
    out = io.BytesIO(real)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo("pad/zeros.xml")
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as f:
            for _ in range(inflated // 1_000_000):
                f.write(b"0" * 1_000_000)
    return out.getvalue()


REAL = {"xlsx": make_xlsx, "pptx": make_pptx, "odt": make_odt, "epub": make_epub}


@pytest.mark.parametrize("kind", ZIPPED)
def test_a_corrupt_zipped_file_names_its_kind_and_the_problem(tmp_path, kind):
    truncated = REAL[kind]()[:600]
    path = write(tmp_path / f"cut.{kind}", truncated)
    with pytest.raises(ParseError) as info:
        parse_file(path, "x")
    assert info.value.reason.startswith(f"corrupt {kind.upper()}: not a zip file")
    other = write(tmp_path / f"other.{kind}", zip_of({"notes.txt": b"a zip, but not this kind of file"}))
    with pytest.raises(ParseError) as info:
        parse_file(other, "x")
    assert info.value.reason.startswith(f"corrupt {kind.upper()}: KeyError")  # the missing part is named
    assert ".xml" in info.value.reason


@pytest.mark.parametrize("kind", ZIPPED)
def test_a_zip_bomb_of_every_zipped_kind_is_refused_before_inflating(tmp_path, kind):
    data = bomb(REAL[kind](), 5_000_000)
    assert len(data) < 100_000
    path = write(tmp_path / f"bomb.{kind}", data)
    with pytest.raises(ParseError) as info:
        parse_file(path, "x", max_bytes=1_000_000)
    assert info.value.reason.startswith(f"the {kind} inflates to ") and "over the limit of 1000000" in info.value.reason
    with pytest.raises(ParseError) as info:  # under the size cap, but one entry compressed ~1000:1
        parse_file(path, "x", max_bytes=10_000_000)
    assert "'pad/zeros.xml' inflates" in info.value.reason and "over the limit of 100:1" in info.value.reason


@pytest.mark.parametrize("name,data,reason", [
    ("words.eml", b"just some words\nand no headers at all\n", "not an e-mail message: no From, To, Subject or Date"),
    ("empty.mbox", b"no From line starts this file\n", "not an mbox: no message starts with a 'From ' line"),
    ("quote.csv", b'Plan,Price\n"Basic,$10\n', "malformed CSV at line 2: unexpected end of data"),
    ("nul.csv", b"Plan,Price\nBasic\x00,$10\n", "binary file (NUL bytes)"),
    ("latin.rst", "Café\n====\n".encode("latin-1"), "not valid UTF-8"),
    ("blank.rst", b".. just a comment\n", "empty: no text"),
])
def test_unreadable_text_and_mail_files_say_why(tmp_path, name, data, reason):
    with pytest.raises(ParseError) as info:
        parse_file(write(tmp_path / name, data), name)
    assert info.value.reason.startswith(reason)


def test_a_sheet_declaring_more_cells_than_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(sheets, "MAX_XLSX_CELLS", 10)  # the plans sheet alone has 12 cells
    with pytest.raises(ParseError) as info:
        parse_file(write(tmp_path / "plans.xlsx", make_xlsx()), "x")
    assert info.value.reason == "the xlsx spans over 10 cells (rows x columns), over the limit"


def test_a_corrupt_attachment_fails_alone_and_the_message_goes_in(tmp_path):
    path = write(tmp_path / "m.eml", make_eml(agenda=b"%PDF-1.4\nnot really a pdf"))
    parsed = parse_file(path, "m.eml")
    assert [d.id for d in parsed.documents] == ["m.eml", "m.eml#budget.txt"]
    assert [(e.path, e.reason.split(":")[0]) for e in parsed.errors] == [(f"{path}#agenda.pdf", "corrupt PDF")]


def test_a_zipped_attachment_is_held_to_the_zip_limits_of_the_message(tmp_path):
    msg = email.message.EmailMessage()
    msg["Subject"], msg["From"] = "Slides", "ana@example.com"
    msg.set_content("The deck is attached.")
    msg.add_attachment(bomb(make_pptx(), 3_000_000), maintype="application", subtype="octet-stream",
                       filename="deck.pptx")
    parsed = parse_file(write(tmp_path / "s.eml", msg.as_bytes()), "s.eml", max_bytes=1_000_000)
    assert [d.id for d in parsed.documents] == ["s.eml"]
    assert parsed.errors[0].path.endswith("s.eml#deck.pptx")
    assert "inflates to" in parsed.errors[0].reason and "over the limit of 1000000" in parsed.errors[0].reason


# --- ingested into a real collection and asked about ----------------------------------------------

@pytest.fixture(scope="module")
def handbook(pg_url, embedder, tmp_path_factory):
    root = corpus(tmp_path_factory.mktemp("formats") / "corpus")
    settings = Settings(store=pg_url, data_dir=str(root.parent / "data"), max_document_bytes=LIMIT)
    assistant = Assistant(settings, embedder=embedder)
    summary = assistant.ingest_files([root], "formats")
    assert not summary.failed, summary.failed
    # 8 files: the message and its 2 readable attachments, the mailbox's 2 messages and 1 attachment
    assert summary.documents_new == 12
    yield assistant, root
    assistant.close()


@pytest.mark.parametrize("question,document,fact", [
    ("How much does the Team plan cost?", "plans.xlsx", "$25 per month"),
    ("How many seats are there in total?", "plans.xlsx", "13"),
    ("What support does the Gold plan include?", "prices.csv", "24/7 phone support"),
    ("Which office closed the biggest deal of the quarter?", "deck.pptx", "Lisbon"),
    ("Where does the team go hiking on day two of the offsite?", "offsite.eml#agenda.pdf", "Peneda-Geres"),
    ("In which city is the offsite held, and when?", "offsite.eml", "Porto on 14 November"),
    ("Which floor's printer was fixed?", "inbox.mbox#2", "floor 3"),
    ("When does the robin build its nest?", "guide.epub", "March"),
    ("Where are visitor badges issued?", "handbook.odt", "reception desk"),
    ("How do I restart the ingest queue?", "runbook.rst", "make restart-queue"),
])
def test_a_question_is_answered_with_a_citation_into_the_format(handbook, question, document, fact):
    assistant, _ = handbook
    result = assistant.ask(question, "formats")
    assert fact in result.answer, result.answer
    assert document in [c.span.document_id for c in result.citations], result.citations


def test_reingest_skips_unchanged_files_and_messages_and_prune_keeps_attachments(handbook):
    assistant, root = handbook
    totals: set[int | None] = set()

    def again():
        return ingest_paths([root], collection="formats", store=assistant.store, embedder=assistant.embedder,
                            settings=assistant.settings, progress=lambda done, total, chunks: totals.add(total),
                            prune=True)

    summary = again()
    assert (summary.documents_new, summary.documents_updated, summary.failed) == (0, 0, [])
    assert summary.documents_pruned == 0 and summary.documents_unchanged == 10  # 7 files, 3 mailbox documents
    assert totals == {None}  # mail files hold an unknown number of documents: no false "12 of 8"
    stored = {d.id for d in assistant.documents("formats")}
    assert {"offsite.eml#agenda.pdf", "offsite.eml#budget.txt", "inbox.mbox#2#toner.txt"} <= stored
    box = mailbox.mbox(root / "inbox.mbox")  # a new message: only it is new, the others are unchanged
    note = email.message.EmailMessage()
    note["Subject"], note["From"] = "Keys", "facilities@example.com"
    note.set_content("Spare keys are kept at the security desk.")
    box.add(note)
    box.flush()
    box.close()
    summary = again()
    assert (summary.documents_new, summary.documents_updated, summary.documents_pruned) == (1, 0, 0)
    assert "inbox.mbox#3" in {d.id for d in assistant.documents("formats")}


def test_corrupt_and_bomb_files_fail_alone_and_their_stored_versions_survive(pg_url, embedder, tmp_path):
    root = corpus(tmp_path / "corpus")
    settings = Settings(store=pg_url, data_dir=str(tmp_path / "data"), max_document_bytes=LIMIT)
    assistant = Assistant(settings, embedder=embedder)
    try:
        assistant.ingest_files([root], "formats_bad")
        before = {d.id: d.chunk_count for d in assistant.documents("formats_bad")}
        write(root / "plans.xlsx", make_xlsx()[:700])
        write(root / "deck.pptx", bomb(make_pptx(), 3 * LIMIT))
        write(root / "handbook.odt", zip_of({"content.xml": b"<not-odf/>"}))
        write(root / "guide.epub", bomb(make_epub(), 3 * LIMIT))
        summary = assistant.ingest_files([root], "formats_bad")
        reasons = {Path(f["path"]).name: f["reason"] for f in summary.failed}
        assert reasons.keys() == {"plans.xlsx", "deck.pptx", "handbook.odt", "guide.epub"}
        assert reasons["plans.xlsx"].startswith("corrupt XLSX: not a zip file")
        assert reasons["handbook.odt"].startswith("corrupt ODT: KeyError")
        for name in ("deck.pptx", "guide.epub"):
            assert "inflates to" in reasons[name] and f"over the limit of {LIMIT}" in reasons[name]
        assert {d.id: d.chunk_count for d in assistant.documents("formats_bad")} == before
        result = assistant.ask("Which office closed the biggest deal of the quarter?", "formats_bad")
        assert "Lisbon" in result.answer and "deck.pptx" in [c.span.document_id for c in result.citations]
    finally:
        assistant.close()
