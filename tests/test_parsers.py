"""Parsers and discovery on real files of every format (PDF and DOCX made here)."""

from __future__ import annotations

import hashlib
import io
import json
import time
from pathlib import Path

import docx
import pytest

from rag_rlm.ingest.discover import discover
from rag_rlm.ingest.parsers import PARSERS, ParseError, parse_file


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF with one text line per string (Helvetica), xref offsets exact."""
    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    n = len(pages)
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            f"<< /Type /Pages /Kids [{' '.join(f'{4 + 2 * i} 0 R' for i in range(n))}] /Count {n} >>".encode(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for i, lines in enumerate(pages):
        body = " T* ".join(f"({esc(line)}) Tj" for line in lines)
        content = f"BT /F1 11 Tf 14 TL 72 720 Td {body} ET".encode()
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources "
                    f"<< /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode())
        objs.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    out = b"%PDF-1.4\n"
    offsets = []
    for i, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return out


def make_docx(title: str, paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    document = docx.Document()
    document.add_heading(title, level=1)
    for p in paragraphs:
        document.add_paragraph(p)
    if table:
        t = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                t.cell(r, c).text = cell
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def one(path: Path, doc_id: str = "doc"):
    parsed = parse_file(path, doc_id)
    assert len(parsed.documents) == 1 and not parsed.errors
    return parsed.documents[0]


def test_text_file_keeps_text_hashes_raw_bytes_and_takes_a_standalone_first_line_as_title(tmp_path):
    raw = b"Remote work\r\n\r\nWork remotely up to 3 days per week.\r\n"
    doc = one(write(tmp_path / "remote.txt", raw), "policies/remote.txt")
    assert doc.id == "policies/remote.txt"
    assert doc.title == "Remote work"
    assert doc.text == "Remote work\n\nWork remotely up to 3 days per week.\n"
    assert doc.content_hash == hashlib.sha256(raw).hexdigest()
    assert doc.source == str(tmp_path / "remote.txt")
    untitled = one(write(tmp_path / "notes.txt", "a long first line that runs on\nand on"))
    assert untitled.title == "notes"


def test_an_html_title_written_over_several_lines_is_one_line(tmp_path):
    """Sphinx breaks its <title> over lines; a citation names the page on one line."""
    page = ("<html><head><title>Engine Configuration\n —\n    SQLAlchemy 1.4 Documentation</title></head>"
            "<body><h1>Engine\n  Configuration</h1><p>The engine is the starting point.</p></body></html>")
    assert one(write(tmp_path / "engines.html", page)).title == "Engine Configuration — SQLAlchemy 1.4 Documentation"
    untitled = page.replace("<title>Engine Configuration\n —\n    SQLAlchemy 1.4 Documentation</title>", "")
    assert one(write(tmp_path / "bare.html", untitled)).title == "Engine Configuration"


def test_markdown_is_kept_as_written_and_titled_by_its_first_real_heading(tmp_path):
    md = "```\n# not a heading, code\n```\n\nPolicy\n======\n\n## Limits\n\nUp to $500.\n"
    doc = one(write(tmp_path / "p.md", md))
    assert doc.title == "Policy"
    assert doc.text == md


def test_html_drops_scripts_styles_and_nav_and_keeps_headings_and_paragraphs(tmp_path):
    html = """<html><head><title>Travel policy</title><style>p{color:red}</style></head><body>
    <nav>Home | Policies</nav><script>var tracking = 1;</script>
    <h1>Travel</h1><p>Fly economy on flights
    shorter than 6 hours.</p><h2>Hotels</h2><ul><li>Limit $220 per night.</li></ul></body></html>"""
    doc = one(write(tmp_path / "t.html", html))
    assert doc.title == "Travel policy"
    assert doc.text == ("# Travel\n\nFly economy on flights shorter than 6 hours.\n\n## Hotels\n\n"
                        "- Limit $220 per night.")  # a list item reads as a Markdown bullet
    no_title = one(write(tmp_path / "u.htm", "<body><h1>Offices</h1><p>Lisbon.</p></body>"))
    assert no_title.title == "Offices"


def test_html_bold_titles_head_what_follows_but_a_tables_title_and_a_bold_item_do_not(tmp_path):
    html = """<html><body><h2>Limits</h2>
    <ol><li><p><b>Maximum Attached Databases</b></p><p>The default is 10.</p><p>It can be lowered.</p></li>
    <li><p><b>Maximum Columns</b></p><p>The default is 2000.</p></li></ol>
    <p><strong>Can I raise a limit?</strong></p><p>Yes, at compile time.</p>
    <p><b>Warning:</b></p><p>Bold with a colon is a label.</p>
    <ul><li><p><b>only bold words</b></p></li></ul>
    <div class="table"><p class="title"><strong>Table 1. Sizes</strong></p><div><table>
    <tr><th>Name</th><th>Size</th></tr><tr><td>int</td><td>4 bytes</td></tr></table></div></div>
    <h3>Other</h3><p><b>Footnote</b></p><p>Text.</p></body></html>"""
    doc = one(write(tmp_path / "limits.html", html))
    assert doc.text == ("## Limits\n\n### Maximum Attached Databases\n\n- The default is 10. It can be lowered.\n\n"
                        "### Maximum Columns\n\n- The default is 2000.\n\n### Can I raise a limit?\n\n"
                        "Yes, at compile time.\n\nWarning:\n\nBold with a colon is a label.\n\n- only bold words\n\n"
                        "Table 1. Sizes\n\nName: int; Size: 4 bytes\n\n### Other\n\n#### Footnote\n\nText.")


def test_a_bold_title_heads_only_its_sidebar_and_the_section_goes_on_after_it(tmp_path):
    # DocBook (the Debian Administrator's Handbook): the sidebar's title had headed the rest of the
    # section, so "The creation of an account ..." read as part of "BACK TO BASICS Quota"
    html = """<html><body><h2>Creating Accounts</h2><p>Use adduser.</p>
    <div class="sidebar"><div class="titlepage"><div><p class="title"><strong><em>BACK TO BASICS</em> Quota</strong></p>
    </div></div><div class="para">A quota limits disk space.</div></div>
    <div class="para">The creation of an account copies /etc/skel/.</div>
    <div class="sidebar"><div class="titlepage"><p class="title"><strong>NOTE Groups</strong></p></div>
    <div class="para">Groups grant permissions.</div></div><h3>Next</h3><p>Text.</p></body></html>"""
    assert one(write(tmp_path / "accounts.html", html)).text == (
        "## Creating Accounts\n\nUse adduser.\n\n### BACK TO BASICS Quota\n\nA quota limits disk space.\n\n"
        "## Creating Accounts\n\nThe creation of an account copies /etc/skel/.\n\n### NOTE Groups\n\n"
        "Groups grant permissions.\n\n### Next\n\nText.")


def test_html_text_set_directly_in_a_container_keeps_its_inline_words_and_rows_say_their_names(tmp_path):
    html = """<html><body><h2>Overrides <a class="permalink" href="#o">&para;</a></h2>
    <div class="note">The default value of <code><a href="core.html">AllowOverride</a></code> is <code>None</code>.
    This means <code>.htaccess</code> files are ignored.<p>A paragraph of its own.</p></div>
    <div class="toc"><a href="#a">1. Overview</a></div><div>Card: <span class="c"><p>Said once.</p></span></div>
    <table><tr><th>Default:</th><td>DirectoryIndex index.html</td></tr></table>
    <table><tr><td>Windows</td><td>mpm_winnt</td></tr><tr><td>a</td><td>b</td><td>c</td></tr></table>
    </body></html>"""
    doc = one(write(tmp_path / "o.html", html))
    assert doc.text == ("## Overrides\n\nThe default value of AllowOverride is None. This means .htaccess files are "
                        "ignored.\n\nA paragraph of its own.\n\nCard:\n\nSaid once.\n\nDefault: DirectoryIndex index.html\n\n"
                        "Windows: mpm_winnt\n\na; b; c")


def test_a_docutils_field_whose_long_name_has_a_row_of_its_own_keeps_its_name(tmp_path):
    # Docutils' HTML writer puts a field name over 14 characters in a row of one spanning header cell and
    # its value in the next row under an empty cell: read row by row, "Depend on data being included"
    # no longer said what it was
    html = """<html><body><table class="docutils field-list"><tbody>
    <tr class="field"><th class="field-name">Directive Type:</th><td class="field-body">"include"</td></tr>
    <tr class="field"><th class="field-name" colspan="2">Doctree Elements:</th></tr>
    <tr class="field"><td>&nbsp;</td><td class="field-body">Depend on data being included.</td></tr>
    </tbody></table>
    <table><tr><th>Name</th><th>Size</th></tr><tr><td></td><td>2 bytes</td></tr></table></body></html>"""
    doc = one(write(tmp_path / "directives.html", html))
    assert doc.text == ('Directive Type: "include"\n\nDoctree Elements: Depend on data being included.\n\n'
                        "Size: 2 bytes")


def test_the_labelled_fields_a_description_opens_with_are_lines_of_their_own(tmp_path):
    # BIND's reference opens each statement's description with "Grammar:", "Blocks:" and "Tags:"
    # paragraphs, none ending in a full stop: on the description's one line they made one sentence
    # with the definition that follows them
    html = """<html><body><dl><dt>allow-widgets</dt><dd>
    <p><strong>Grammar: </strong><code>allow-widgets { &lt;address&gt;; ... };</code></p>
    <p><strong>Blocks: </strong>options, view</p>
    <p><p>Lists the hosts that may fetch widgets. The default is none.</p></p></dd>
    <dt>Note:</dt><dd><p><strong>Tip:</strong> see below.</p><p>Widgets are small.</p></dd></dl></body></html>"""
    doc = one(write(tmp_path / "reference.html", html))
    assert doc.text == ("allow-widgets: Grammar: allow-widgets { <address>;... };\n\n"
                        "allow-widgets: Blocks: options, view\n\n"
                        "allow-widgets: Lists the hosts that may fetch widgets. The default is none.\n\n"
                        "Note: Tip: see below. Widgets are small.")


def test_a_description_with_several_terms_is_said_after_all_of_them(tmp_path):
    # Asciidoc (Git's manual) writes an option's names as one <dt> each before their one <dd>
    html = """<html><body><dl><dt>-n</dt><dt>--dry-run</dt><dd><p>Show what would be removed.</p></dd>
    <dt>-q</dt><dd><p>Be quiet.</p></dd></dl></body></html>"""
    doc = one(write(tmp_path / "clean.html", html))
    assert doc.text == "-n, --dry-run: Show what would be removed.\n\n-q: Be quiet."


def test_an_anchor_between_a_term_and_its_description_keeps_the_term(tmp_path):
    # Exim's DocBook (and texi2any's zsh manual, between a <dt> and the next) put an empty anchor after
    # a term: the description had lost its term, and every command-line option its name
    html = """<html><body><dl><dt><span>-Mrm</span> &lt;message id&gt;</dt><a id="vi78"></a>
    <dd><p>This option requests Exim to remove the given messages from the queue.</p></dd>
    <dt>RPROMPT &lt;S&gt;</dt><a id="i1"></a><dt>RPS1 &lt;S&gt;</dt><a id="i2"></a><dd><p>The right prompt.</p></dd>
    </dl></body></html>"""
    doc = one(write(tmp_path / "exim.html", html))
    assert doc.text == ("-Mrm <message id>: This option requests Exim to remove the given messages from the queue.\n\n"
                        "RPROMPT <S>, RPS1 <S>: The right prompt.")


def test_a_blockquote_around_blocks_is_indentation_but_a_quotation_stays_one_paragraph(tmp_path):
    # Postfix's READMEs indent every list and example with <blockquote>: read whole, a <dl> in one
    # had become one paragraph of all its terms and descriptions
    html = """<html><body><p>The meaning of the classes is as follows:</p><blockquote><dl>
    <dt> bounce </dt> <dd> Inform the postmaster of undeliverable mail. </dd>
    <dt> delay </dt> <dd> Inform the postmaster of delayed mail. </dd></dl></blockquote>
    <blockquote>To be, or <em>not</em> to be.</blockquote></body></html>"""
    assert one(write(tmp_path / "q.html", html)).text == (
        "The meaning of the classes is as follows:\n\nbounce: Inform the postmaster of undeliverable mail.\n\n"
        "delay: Inform the postmaster of delayed mail.\n\nTo be, or not to be.")


MAN_PAGE = """QUEUECTL(1)                                                        QUEUECTL(1)

NAME
       queuectl - mail queue control

SYNOPSIS
       queuectl [-v] -f

DESCRIPTION
       The  queuectl(1)  command  lists and flushes the queue.  See the queue-
       admin(1) command for operations that require super-user privileges such
       as deleting a message.

       -c config_dir
              The configuration file is in the named directory instead of the
              default one.

       -f     Flush the queue: attempt to deliver all queued mail.

   Output control
       --json Print the queue as JSON.

       The queue ID is followed by a status character:

              !      The message is in the hold queue, i.e. no further deliv-
                     ery attempt is made.

SEE ALSO
       queueadmin(1), privileged queue operations
       syslogd(8), system logging

                                                                   QUEUECTL(1)
"""
MAN_TEXT = ("## NAME\n\nqueuectl - mail queue control\n\n## SYNOPSIS\n\n```\nqueuectl [-v] -f\n```\n\n"
            "## DESCRIPTION\n\nThe queuectl(1) command lists and flushes the queue. See the queueadmin(1) command "
            "for operations that require super-user privileges such as deleting a message.\n\n"
            "-c config_dir: The configuration file is in the named directory instead of the default one.\n\n"
            "-f: Flush the queue: attempt to deliver all queued mail.\n\n### Output control\n\n--json: Print the queue as JSON.\n\n"
            "The queue ID is followed by a status character:\n\n"
            "!: The message is in the hold queue, i.e. no further delivery attempt is made.\n\n"
            "## SEE ALSO\n\n- queueadmin(1), privileged queue operations\n\n- syslogd(8), system logging")


def test_a_manual_page_as_a_terminal_shows_it_is_read_as_prose(tmp_path):
    """man2html's <pre> (Postfix's pages) and `man queuectl > queuectl.txt`: section and
    subsection names are headings, a word hyphenated at a line's end is whole, a tag is said
    before its description, the running head and foot are dropped; any other <pre> stays code."""
    import html as html_lib

    page = f"<html><head><title>queuectl(1)</title></head><body><pre>{html_lib.escape(MAN_PAGE)}</pre></body></html>"
    assert one(write(tmp_path / "queuectl.1.html", page)).text == MAN_TEXT
    text = one(write(tmp_path / "queuectl.txt", MAN_PAGE))
    assert text.text == MAN_TEXT and text.title == "queuectl - mail queue control"
    code = MAN_PAGE.replace("QUEUECTL(1)       ", "QUEUECTL       ", 1)  # no running head: not a manual page
    assert one(write(tmp_path / "code.html", f"<html><body><pre>{html_lib.escape(code)}</pre></body></html>")).text == (
        f"```\n{code.strip(chr(10))}\n```")


def test_a_huge_manual_page_is_read_in_linear_time(tmp_path):
    # 12 MB in one paragraph: joining its lines one by one onto the text so far had taken 82 s
    page = "HUGE(1)     HUGE(1)\n\nNAME\n" + ("       " + "word " * 1200 + "\n") * 2000
    started = time.perf_counter()
    text = one(write(tmp_path / "huge.txt", page)).text
    assert time.perf_counter() - started < 5 and text.startswith("## NAME\n\nword word")


def test_pdf_pages_become_paragraphs(tmp_path):
    data = make_pdf([["Security incident response", "Report in #sec-incidents."], ["SEV1 within 1 hour."]])
    doc = one(write(tmp_path / "sec.pdf", data))
    assert doc.text == "Security incident response\nReport in #sec-incidents.\n\nSEV1 within 1 hour."
    assert doc.title == "sec"
    assert doc.content_hash == hashlib.sha256(data).hexdigest()


def test_docx_headings_by_style_and_tables_as_rows(tmp_path):
    data = make_docx("Expense policy", ["Over $500: the Finance Director approves."], [["Limit", "Approver"]])
    doc = one(write(tmp_path / "exp.docx", data))
    assert doc.title == "Expense policy"
    assert doc.text == "# Expense policy\n\nOver $500: the Finance Director approves.\n\nLimit | Approver"


def test_jsonl_records_keep_their_ids_and_metadata_and_a_bad_line_fails_alone(tmp_path):
    lines = [json.dumps({"id": "hp-1", "title": "Lisbon", "text": "Lisbon is in Portugal.", "lang": "en"}),
             "{not json",
             "",
             json.dumps({"id": 7, "text": "Toronto is in Canada."}),
             json.dumps({"id": "hp-1", "text": "duplicate"}),
             json.dumps({"id": "x", "text": "  "})]
    parsed = parse_file(write(tmp_path / "c.jsonl", "\n".join(lines)), "ignored")
    assert [(d.id, d.title, d.metadata) for d in parsed.documents] == [
        ("hp-1", "Lisbon", {"lang": "en"}), ("7", "7", {})]
    assert [e.path for e in parsed.errors] == [f"{tmp_path / 'c.jsonl'}:{n}" for n in (2, 5, 6)]
    assert "line 5: duplicate id 'hp-1'" in parsed.errors[1].reason
    # the hash is of the canonical record: key order and spacing do not change it
    again = parse_file(write(tmp_path / "d.jsonl", '{"lang":"en", "text":"Lisbon is in Portugal.",'
                                                   '"title":"Lisbon","id":"hp-1"}'), "x")
    assert again.documents[0].content_hash == parsed.documents[0].content_hash


@pytest.mark.parametrize("name,data,reason", [
    ("bin.txt", b"abc\x00\x01\x02def", "binary file (NUL bytes)"),
    ("latin.md", "café".encode("latin-1"), "not valid UTF-8 (byte 3)"),
    ("empty.txt", b"  \n\n ", "empty: no text"),
    ("empty.html", b"<html><body><script>x()</script></body></html>", "empty: no text"),
    ("fake.pdf", b"%PDF-1.4\nthis is not a pdf at all", "corrupt PDF"),
    ("fake.docx", b"PK\x03\x04 not really a zip", "corrupt DOCX"),
    ("image.png", b"\x89PNG....", "unsupported file type '.png'"),
])
def test_bad_files_raise_parse_error_with_path_and_reason(tmp_path, name, data, reason):
    path = write(tmp_path / name, data)
    with pytest.raises(ParseError) as info:
        parse_file(path, name)
    assert info.value.path == str(path)
    assert info.value.reason.startswith(reason)


def test_discover_recurses_in_order_skipping_hidden_data_dir_and_unknown_types(tmp_path):
    for rel in ["b.md", "a/z.txt", "a/y.html", ".hidden/x.md", "a/.secret.txt", "data/pg.txt", "pic.png"]:
        write(tmp_path / "root" / rel, "x")
    direct = write(tmp_path / "direct.png", "x")
    found = discover([tmp_path / "root", direct, tmp_path / "root" / "b.md"],
                     suffixes=PARSERS, exclude=[tmp_path / "root" / "data"])
    assert [(s.doc_id, s.direct) for s in found] == [
        ("b.md", False), ("a/y.html", False), ("a/z.txt", False), ("direct.png", True)]
    only_md = discover([tmp_path / "root"], glob="*.txt", suffixes=PARSERS)
    assert [s.doc_id for s in only_md] == ["a/z.txt", "data/pg.txt"]
    with pytest.raises(FileNotFoundError, match="nope"):
        discover([tmp_path / "nope"])


def test_html_code_inside_a_list_item_parts_its_words(tmp_path):
    """A step of a procedure that shows its command: the words before the code end with it, and the
    words after it start a sentence of their own (PostgreSQL's "issue the command: where label is
    any string ..." had read as one sentence)."""
    html = """<html><body><h1>Backups</h1><ol><li><p>Connect to the server and issue the command:</p>
    <pre>SELECT pg_backup_start(label);</pre><p>where label is any string that names this backup.</p></li>
    <li><p>Copy the files.</p></li></ol></body></html>"""
    text = one(write(tmp_path / "b.html", html)).text
    assert ("- Connect to the server and issue the command:\n\n```\nSELECT pg_backup_start(label);\n```\n\n"
            "where label is any string that names this backup.\n\n- Copy the files.") in text
    assert text.count("pg_backup_start") == 1  # the code is said once, where it stands


def test_html_a_definition_list_inside_a_description_says_each_entry_on_its_own(tmp_path):
    """A Sphinx class's methods and Bash's shopt options are a <dl> inside a <dd>: each entry is
    "term: description", its own block, not words glued into the outer description ("… by
    default. lastpipe If set, …"); code inside an inner entry stays that entry's."""
    html = """<html><body><h1>Builtins</h1><dl><dt><code>shopt</code></dt><dd><p>Toggle shell options.</p>
    <dl><dt><span><code>lastpipe</code></span></dt><dd><p>If set, the last command of a pipeline runs in the shell.</p></dd>
    <dt><span><code>nullglob</code></span></dt><dd><p>If set, patterns that match no files expand to nothing.</p>
    <pre>shopt -s nullglob</pre></dd></dl></dd>
    <dt><code>type</code></dt><dd><p>Say how a name would be read as a command.</p></dd></dl></body></html>"""
    text = one(write(tmp_path / "b.html", html)).text
    assert text == ("# Builtins\n\nshopt: Toggle shell options.\n\n"
                    "lastpipe: If set, the last command of a pipeline runs in the shell.\n\n"
                    "nullglob: If set, patterns that match no files expand to nothing.\n\n"
                    "```\nshopt -s nullglob\n```\n\ntype: Say how a name would be read as a command.")


def test_html_a_permalinks_pilcrow_is_no_word_of_a_term(tmp_path):
    # texinfo's manuals (Bash's) put "¶" after every term, in a link of another class than Sphinx's
    html = """<html><body><dl><dt id='index-HISTSIZE'><span><code>HISTSIZE</code><a href='#index-HISTSIZE'
    class='copiable-anchor'> &para;</a></span></dt><dd><p>The maximum number of commands to remember.</p></dd></dl>
    <p>See <a href="#index-HISTSIZE">HISTSIZE</a> and the paragraph sign (¶) itself.</p></body></html>"""
    text = one(write(tmp_path / "h.html", html)).text
    assert text == "HISTSIZE: The maximum number of commands to remember.\n\nSee HISTSIZE and the paragraph sign (¶) itself."


def test_html_words_that_open_with_a_markdown_mark_stay_text(tmp_path):
    """zsh's redirections are terms that open with ">" ("&gt;&amp; word, &amp;&gt; word"), and prose may
    open with "#": escaped as CommonMark escapes a mark, they are no quote and no heading, and the
    entry's later sentences are read under its term."""
    html = """<html><body><h2>7 Redirection</h2><dl><dt>&gt;&amp; <var>word</var></dt><dd><p>Redirects both
    standard output and standard error. Note that this differs from a pipe.</p></dd></dl>
    <p>#include lines are not redirections.</p></body></html>"""
    text = one(write(tmp_path / "z.html", html)).text
    from rag_rlm.ingest.sentences import split_sentences
    assert [(s.kind, s.heading, s.text) for s in split_sentences(text)] == [
        ("heading", "", "7 Redirection"),
        ("text", "7 Redirection", ">& word: Redirects both standard output and standard error."),
        ("text", "7 Redirection — >& word", "Note that this differs from a pipe."),
        ("text", "7 Redirection", "#include lines are not redirections.")]
    first = split_sentences(text)[1]
    assert text[first.start:first.end] == first.text  # the escape is no part of what is cited


def test_html_rustdoc_and_mdbook_chrome_is_left_out_and_examples_show_what_the_page_shows(tmp_path):
    # rustdoc: a version and source line beside the title and each method, a notable-traits tooltip in
    # a signature, a summary's "Read more"; mdBook: a theme menu, the book's title bar, hidden lines
    rustdoc = """<html><body><div class="main-heading"><h1 class="fqn"><span class="in-band">Struct
    <a href="#">Ledger</a></span></h1><span class="out-of-band"><span class="since">1.2.0</span> ·
    <a class="srclink" href="#">source</a> · <a id="toggle-all-docs">[<span class="inner">&#x2212;</span>]</a></span></div>
    <details><summary><section id="method.entries" class="method"><div class="rightside"><span class="since">1.4.0</span>
    · <a class="srclink" href="#">source</a></div><h4 class="code-header">pub fn entries(&amp;self) -&gt; Entries<span
    class="notable-traits"><span class="notable-traits-tooltip">ⓘ<span class="notable-traits-tooltiptext">Notable traits
    for Entries</span></span></span></h4></section></summary><div class="docblock"><p>Visits every entry in
    the order it was booked. <a href="#">Read more</a></p><p>The <code>?</code> operator works on its result.</p></div></details></body></html>"""
    text = one(write(tmp_path / "r.html", rustdoc)).text
    assert text == ("# Struct Ledger\n\n#### pub fn entries(&self) -> Entries\n\n"
                    "Visits every entry in the order it was booked.\n\nThe ? operator works on its result.")
    mdbook = """<html><body><ul id="theme-list" class="theme-popup"><li>Light (default)</li><li>Coal</li></ul>
    <h1 class="menu-title">The Ledger Book</h1><main><h2>Booking</h2><p>Every entry is booked once:</p>
    <pre class="playground"><code class="language-rust"><span class="boring">fn main() {
</span>let entry = ledger.book(12);
<span class="boring">}
</span></code></pre></main></body></html>"""
    text = one(write(tmp_path / "b.html", mdbook)).text
    assert text == "## Booking\n\nEvery entry is booked once:\n\n```\nlet entry = ledger.book(12);\n```"


def test_html_javadocs_member_details_are_entries_not_one_list_item(tmp_path):
    # Javadoc puts each member's heading, signature, paragraphs and notes in a section inside a list
    # item: read as one item they had run together, the notes of one member into the next one's name
    html = """<html><body><section class="details"><ul class="details-list"><li><section class="method-details">
    <h2>Method Details</h2><ul class="member-list">
    <li><section class="detail" id="pad(int)"><h3>pad</h3>
    <div class="member-signature"><span class="modifiers">public static</span>&nbsp;<span class="return-type">String</span>&nbsp;<span
    class="element-name">pad</span>(int&nbsp;size)</div>
    <div class="block"><p>Pads a ledger line to <code>size</code> characters.</p>
    <pre>Ledger.pad(3) = "   "</pre></div>
    <dl class="notes"><dt>Parameters:</dt><dd><code>size</code> - the width, not negative</dd>
    <dt>Returns:</dt><dd>the padded line</dd></dl></section></li>
    <li><section class="detail" id="trim()"><h3>trim</h3><div class="block">Trims a ledger line.</div></section></li>
    </ul></section></li></ul></section></body></html>"""
    text = one(write(tmp_path / "j.html", html)).text
    assert text == ("## Method Details\n\n### pad\n\n```\npublic static String pad(int size)\n```\n\n"
                    "Pads a ledger line to size characters.\n\n```\nLedger.pad(3) = \"   \"\n```\n\n"
                    "Parameters: size - the width, not negative\n\nReturns: the padded line\n\n"
                    "### trim\n\nTrims a ledger line.")


def test_html_doxygens_member_is_named_without_its_permalink_and_its_prototype_is_code(tmp_path):
    # Doxygen: "◆" links each member's title; its prototype is a layout table, which read as a row
    html = """<html><body><h2 class="memtitle"><span class="permalink"><a href="#a1">&#9670;&nbsp;</a></span>pad()</h2>
    <div class="memitem"><div class="memproto"><table class="memname"><tr>
      <td class="memname">std::string ledger::pad</td>
      <td>(</td><td class="paramtype">int&#160;</td><td class="paramname"><em>size</em></td><td>)</td>
    </tr></table></div><div class="memdoc"><p>Pads a ledger line. </p></div></div></body></html>"""
    text = one(write(tmp_path / "d.html", html)).text
    assert text == "## pad()\n\n```\nstd::string ledger::pad (int size)\n```\n\nPads a ledger line."


def test_html_code_is_fenced_and_inline_tags_join_as_written(tmp_path):
    # the shapes of a Sphinx page (Python's manual): a signature in <dt>, prose and an example in <dd>
    html = """<html><body><div class="sphinxsidebar" role="navigation"><ul><li>functools<ul><li>lru_cache()</li>
    </ul></li></ul></div><h1>functools<a class="headerlink" href="#f">¶</a></h1><dl>
    <dt><em>@</em><span class="pre">functools.</span><span class="pre">lru_cache</span>(<em>maxsize=128</em>)<a class="headerlink" href="#l">¶</a></dt>
    <dd><p>Decorator to wrap a function; see <code><span class="pre">cache_info()</span></code>.</p>
    <div class="highlight"><pre>@lru_cache
def count(s):
    return len(s)</pre></div><p>It is threadsafe.<!-- a comment --></p></dd></dl></body></html>"""
    text = one(write(tmp_path / "f.html", html)).text
    assert "¶" not in text and "a comment" not in text
    # the code sits between the description's words, as on the page; the words after it are the
    # entry's too (said after its term), not glued onto the sentence before the code
    assert text.startswith("# functools\n\n@functools.lru_cache(maxsize=128): Decorator to wrap a function; "
                           "see cache_info().\n\n```\n@lru_cache\ndef count(s):\n    return len(s)\n```\n\n"
                           "@functools.lru_cache(maxsize=128): It is threadsafe.")
    from rag_rlm.ingest.sentences import split_sentences
    assert not any("count(s)" in s.text for s in split_sentences(text))  # no sentence quotes code


def test_html_a_sites_footer_is_no_text_of_the_page(tmp_path):
    # Sphinx's footer (class "footer", role "contentinfo"), Apache's (id "footer"): a copyright line on every page
    text = one(Path(__file__).parent / "data" / "pydocs" / "json.html").text
    assert "json.dumps" in text and "Copyright" not in text and "Python Software Foundation License" not in text
    html = """<html><body><p>DirectoryIndex sets the resources to look for.</p><div id="footer"><p>Copyright 2026 The
    Apache Software Foundation.</p></div><div class="footer-note"><p>Kept: a class that only starts so.</p></div>
    <footer role="contentinfo"><p>Copyright 2001-2022 The Apache Software Foundation.</p></footer></body></html>"""
    text = one(write(tmp_path / "a.html", html)).text
    assert "Copyright" not in text and "DirectoryIndex sets" in text and "Kept:" in text


def test_html_a_read_the_docs_page_keeps_its_body_and_drops_its_sidebar_and_footer():
    # the theme's body is <div class="wy-nav-content">, named like navigation: it had been dropped
    # with the sidebar, and every page of such a manual failed as "empty: no text"
    doc = one(Path(__file__).parent / "data" / "rtddocs" / "overview.html")
    assert doc.title == "Overview — attrs 22.2.0 documentation"
    assert doc.text.startswith("# Overview\n\nIn order to fulfill its ambitious goal of bringing back the joy")
    assert "It does nothing dynamic at runtime, hence zero runtime overhead." in doc.text
    assert "Built with Sphinx" not in doc.text  # its <footer>
    assert "API Reference" not in doc.text and "Search docs" not in doc.text  # the sidebar's table of contents


def test_html_wrapped_prose_in_a_pre_reads_as_paragraphs_of_its_entry(tmp_path):
    # haproxy-dconv's manuals: the plain-text manual kept in <pre class="text">, each keyword on a
    # line of its own before it, a Bootstrap dropdown in each keyword's link, examples with a caption
    html = """<html><body><h2>5.2. Server options</h2><div><pre class="text">These settings apply to
servers. Some of them are
set in milliseconds :

    backend www
        server s1 10.0.0.1:80 check

  -c : only performs a check of the configuration files and exits before trying
    to bind.

Example :
  # check it, then start
  haproxy -c -f /etc/haproxy.cfg
</pre><a class="anchor" name="inter"></a><div class="keyword"><b><a href="#inter">inter</a></b>
<span>&lt;delay&gt;</span></div><a class="anchor" name="fastinter"></a><div class="keyword"><b>fastinter</b>
<span>&lt;delay&gt;</span></div><pre class="text">The "<span class="dropdown"><a class="dropdown-toggle"
href="#">inter<span class="caret"></span></a><ul class="dropdown-menu"><li class="dropdown-header">This keyword is
available in sections :</li><li><a href="#x">Bind options</a></li></ul></span>" parameter sets the interval
between two health checks. It defaults to 2000 ms.
</pre><div class="separator"><span class="label">Arguments :</span><pre class="prettyprint arguments">&lt;delay&gt; is a time.

  source      The source IP address is hashed and divided by the total
              weight of the running servers.
</pre></div><pre class="text">Just as with every other time-based parameter, it may be entered in any
other explicit unit.
</pre><div class="separator"><span class="label">Example:</span><pre class="prettyprint">
<div class="example-desc">Redirect all HTTP traffic to HTTPS.</div><code>redirect scheme https if !{ ssl_fc }
</code></pre></div></div></body></html>"""
    text = one(write(tmp_path / "configuration.html", html)).text
    assert text == (
        "## 5.2. Server options\n\n"
        "These settings apply to\nservers. Some of them are\nset in milliseconds :\n\n"
        "```\nbackend www\n    server s1 10.0.0.1:80 check\n```\n\n"
        "-c : only performs a check of the configuration files and exits before trying\nto bind.\n\n"
        "Example :\n\n```\n# check it, then start\nhaproxy -c -f /etc/haproxy.cfg\n```\n\n"
        "```\ninter <delay>\nfastinter <delay>\n```\n\n"
        'inter, fastinter: The "inter" parameter sets the interval\n'
        "between two health checks. It defaults to 2000 ms.\n\n"
        "Arguments:\n\n"
        "<delay> is a time.\n\n"
        "source: The source IP address is hashed and divided by the total\nweight of the running servers.\n\n"
        "inter, fastinter: Just as with every other time-based parameter, it may be entered in any\n"
        "other explicit unit.\n\n"
        "Example:\n\n"
        "Redirect all HTTP traffic to HTTPS:\n\n```\nredirect scheme https if !{ ssl_fc }\n```")
    from rag_rlm.ingest.sentences import split_sentences
    said = [s.text for s in split_sentences(text)]
    assert 'inter, fastinter: The "inter" parameter sets the interval between two health checks.' in said
    assert "It defaults to 2000 ms." in said


def test_html_a_long_pre_of_plain_words_is_prose_and_code_stays_code(tmp_path):
    # vim2html keeps a whole help file in one <pre>: help tags flush right over an option's header,
    # its description indented, an example set further in; a <pre> of code as long stays fenced
    entry = """
\t\t\t\t\t\t*'tabstop'* *'ts'*
'tabstop' 'ts'\t\tnumber\t(default 8)
\t\t\tlocal to buffer
\tNumber of spaces that a &lt;Tab&gt; in the file counts for.  Also see
\tthe |:retab| command, and the 'softtabstop' option.

\tNote: Setting 'tabstop' to any other value than 8 can make your file
\tappear wrong in many places, e.g., when printing it.
"""
    names = {"tabstop": "ts", "shiftwidth": "sw", "textwidth": "tw", "wrapmargin": "wm"}
    prose = "".join(entry.replace("tabstop", name).replace("'ts'", f"'{short}'") for name, short in names.items())
    code = "\n".join(f"def f{i}(x):\n    return x * {i}  # times {i}" for i in range(12))
    html = f"<html><body><h1>Vim documentation: options</h1><pre>{prose}</pre><pre>{code}</pre></body></html>"
    text = one(write(tmp_path / "options.html", html)).text
    assert "*'tabstop'*" not in text  # the tags are anchors, not words
    assert ("'tabstop' 'ts'          number  (default 8): local to buffer\nNumber of spaces that a <Tab> in the file "
            "counts for.  Also see\nthe |:retab| command, and the 'softtabstop' option.") in text
    assert text.endswith(f"```\n{code}\n```")
    from rag_rlm.ingest.sentences import split_sentences
    said = [s.text for s in split_sentences(text)]
    assert "Note: Setting 'shiftwidth' to any other value than 8 can make your file appear wrong in many places, " \
           "e.g., when printing it." in said
    assert not any("return x" in s for s in said)


def test_html_an_entrys_later_paragraphs_keep_its_keyword_not_a_label(tmp_path):
    # "resolve-opts <option>,..." ends in an ellipsis, not a full stop; "Arguments : none" is a label and
    # its value, not the next entry's keyword
    html = """<html><body><h2>5.2. Server options</h2><div><pre class="text">Intro of the section.
</pre><div class="keyword"><b>rise</b> <span>&lt;count&gt;</span></div><pre class="text">The "rise" parameter.
</pre><div class="keyword"><b>resolve-opts</b> <span>&lt;option&gt;,&lt;option&gt;,...</span></div><pre
class="text">Comma separated list of options.
</pre><div class="separator"><span class="label">Arguments :</span> none</div><pre class="text">Available
options are these.
</pre></div></body></html>"""
    text = one(write(tmp_path / "configuration.html", html)).text
    assert text == ("## 5.2. Server options\n\nIntro of the section.\n\n```\nrise <count>\n```\n\nrise: The \"rise\" parameter.\n\n"
                    "```\nresolve-opts <option>,<option>,...\n```\n\nresolve-opts: Comma separated list of options.\n\n"
                    "Arguments: none\n\nresolve-opts: Available\noptions are these.")
