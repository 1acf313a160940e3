"""Markdown-aware sentence splitting: what counts as a sentence, its rendered text, and exact
offsets into the original."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from rag_rlm.ingest.sentences import entry_term, split_sentences


def texts(text: str) -> list[str]:
    return [s.text for s in split_sentences(text)]


def words(s: str) -> list[str]:
    return re.findall(r"[^\W_]+", s)


def assert_offsets(text: str, base: int = 0) -> None:
    """Every sentence's words appear in the original range it names."""
    for s in split_sentences(text, "doc", base):
        original = text[s.start - base:s.end - base]
        assert original == original.strip() and original
        shown = s.text
        if s.kind == "row":  # "Header: cell; ...": the headers are in the header row, not here
            shown = " ".join(part.split(": ", 1)[-1] for part in s.text.split("; "))
        for w in words(shown):
            assert w in original, (w, s, original)


def test_plain_sentences_and_offsets():
    text = "The cat sat. The dog ran! Did it? Yes, it did."
    out = split_sentences(text, "d")
    assert [s.text for s in out] == ["The cat sat.", "The dog ran!", "Did it?", "Yes, it did."]
    assert [text[s.start:s.end] for s in out] == [s.text for s in out]
    assert [s.index for s in out] == [0, 1, 2, 3]
    assert {s.document_id for s in out} == {"d"} and {s.kind for s in out} == {"text"}


def test_atx_heading_sets_heading_of_following_sentences():
    text = "# Travel policy\n\nFlights are booked early. Hotels too.\n\n## Hotels ##\n\nThe cap is 120 EUR."
    out = split_sentences(text)
    assert [(s.kind, s.text, s.heading) for s in out] == [
        ("heading", "Travel policy", ""),
        ("text", "Flights are booked early.", "Travel policy"),
        ("text", "Hotels too.", "Travel policy"),
        ("heading", "Hotels", "Travel policy"),  # a subsection sits under its parent
        ("text", "The cap is 120 EUR.", "Hotels"),
    ]
    assert text[out[0].start:out[0].end] == "Travel policy"
    assert text[out[3].start:out[3].end] == "Hotels"


def test_a_higher_level_heading_closes_the_subsection():
    out = split_sentences("# A title\n\n## Part one\n\nText one here.\n\n# Next title\n\nText two here.")
    assert [(s.text, s.heading) for s in out if s.kind == "text"] == [
        ("Text one here.", "Part one"), ("Text two here.", "Next title")]
    assert out[-2].heading == ""


def test_a_definition_block_lends_its_term_to_its_later_sentences():
    # an HTML <dt>/<dd> pair reaches the splitter as "term: description" (see parsers)
    text = ("# Connection Settings\n\nmax_connections (integer): Determines the maximum number of connections. "
            "The default is typically 100 connections.\n\nThe server reads this file. Then: it starts.\n\n"
            "PostgreSQL provides several index types: B-tree and Hash. Each type uses its own algorithm.")
    out = split_sentences(text)
    assert [(s.text, s.heading) for s in out if s.kind == "text"] == [
        ("max_connections (integer): Determines the maximum number of connections.", "Connection Settings"),
        ("The default is typically 100 connections.", "Connection Settings — max_connections (integer)"),
        ("The server reads this file.", "Connection Settings"),  # no term: the block's first sentence has none
        ("Then: it starts.", "Connection Settings"),
        ("PostgreSQL provides several index types: B-tree and Hash.", "Connection Settings"),
        ("Each type uses its own algorithm.", "Connection Settings"),  # a clause before a list is no term
    ]


def test_an_api_entry_lends_its_name_without_its_arguments():
    # Sphinx and Node manuals: "<dt>signature</dt><dd>description</dd>" reaches the splitter as "signature: ..."
    text = ("# tempfile\n\ntempfile.NamedTemporaryFile(mode='w+b', dir=None, delete=True, *, errors=None): This "
            "function operates exactly as TemporaryFile() does. If delete is true (the default), the file is "
            "deleted as soon as it is closed.\n\nclass pathlib.PurePath(*pathsegments): A generic class. It "
            "represents the system's path flavour.\n\nbuf.length: The number of bytes in buf. It is read-only."
            "\n\nPurePath.with_suffix(suffix) -> PurePath: Return a new path. Its suffix is changed.")
    out = split_sentences(text)
    assert [s.heading for s in out if s.kind == "text"][::2] == ["tempfile"] * 4  # each entry's first sentence
    assert [(s.text, s.heading) for s in out if s.kind == "text"][1::2] == [
        ("If delete is true (the default), the file is deleted as soon as it is closed.",
         "tempfile — tempfile.NamedTemporaryFile"),
        ("It represents the system's path flavour.", "tempfile — pathlib.PurePath"),
        ("It is read-only.", "tempfile — buf.length"),
        ("Its suffix is changed.", "tempfile — PurePath.with_suffix"),
    ]


def test_setext_headings():
    text = "Main Title\n==========\n\nIntro text here.\n\nSub part\n--------\nBody text here."
    out = split_sentences(text)
    assert [(s.kind, s.text, s.heading) for s in out] == [
        ("heading", "Main Title", ""), ("text", "Intro text here.", "Main Title"),
        ("heading", "Sub part", "Main Title"), ("text", "Body text here.", "Sub part")]


def test_bullets_lose_their_markers_and_long_items_hold_several_sentences():
    text = "Rules:\n\n- Book early. It saves money.\n* Ask your manager\n  before you travel.\n+ Keep receipts."
    out = split_sentences(text)
    assert [(s.kind, s.text) for s in out] == [
        ("text", "Rules:"), ("item", "Book early."), ("item", "It saves money."),
        ("item", "Ask your manager before you travel."), ("item", "Keep receipts.")]
    assert text[out[1].start:out[1].end] == "Book early."
    assert text[out[3].start:out[3].end] == "Ask your manager\n  before you travel."


def test_numbered_list_items():
    text = "Steps\n\n1. Open the form.\n2) Fill it in\n10. Send it to HR."
    assert [(s.kind, s.text) for s in split_sentences(text)] == [
        ("text", "Steps"), ("item", "Open the form."), ("item", "Fill it in"), ("item", "Send it to HR.")]


def test_table_rows_read_as_header_cell_pairs():
    text = "| City | Hotel cap |\n|:---|---:|\n| Berlin | 120 EUR |\n| Paris | [150 EUR](http://x) |\n"
    out = split_sentences(text)
    assert [(s.kind, s.text) for s in out] == [
        ("row", "City: Berlin; Hotel cap: 120 EUR"), ("row", "City: Paris; Hotel cap: 150 EUR")]
    assert text[out[0].start:out[0].end] == "Berlin | 120 EUR"
    assert text[out[1].start:out[1].end] == "Paris | [150 EUR](http://x)"


def test_table_without_header_and_docx_rows():
    assert texts("| Berlin | 120 EUR |\n| Paris | 150 EUR |") == ["Berlin; 120 EUR", "Paris; 150 EUR"]
    assert [(s.kind, s.text) for s in split_sentences("Intro text here.\n\nBerlin | 120 EUR\n\nParis | 150 EUR")] == [
        ("text", "Intro text here."), ("row", "Berlin; 120 EUR"), ("row", "Paris; 150 EUR")]
    # a manual's signature with a union or an or-ed flag is prose, not a row: its sentences are split
    # a sentence that writes an operator: its pipes are no cells
    operators = "class collections.ChainMap(*maps): Changed in version 3.9: Added support for | and |= operators."
    assert [(s.kind, s.text) for s in split_sentences(operators)] == [("text", operators)]
    signature = ("shutil.which(cmd, mode=os.F_OK | os.X_OK, path=None): Return the path to an executable. "
                 "If no cmd would be called, return None.")
    assert [(s.kind, s.text) for s in split_sentences(signature)] == [
        ("text", "shutil.which(cmd, mode=os.F_OK | os.X_OK, path=None): Return the path to an executable."),
        ("text", "If no cmd would be called, return None.")]
    # a sentence of a manual that opens with a parameter's name, in lower case
    assert texts("If no cmd would be called, return None. mode is a permission mask. Use e.g. mode is fine.") == [
        "If no cmd would be called, return None.", "mode is a permission mask.", "Use e.g. mode is fine."]


def test_links_emphasis_and_code_are_rendered_away():
    text = ("See [the policy](https://x.org/p.html \"title\") and **bold** or _em_ or *em* words. "
            "Run `make test` now. Go to <https://example.com/a> or https://example.org/b today.")
    assert texts(text) == ["See the policy and bold or em or em words.", "Run make test now.",
                           "Go to https://example.com/a or https://example.org/b today."]
    assert texts("Use snake_case_names and 2*3*4 here.") == ["Use snake_case_names and 2*3*4 here."]
    # a glob in quotes is no emphasis: the sentence keeps its characters
    glob = 'For example, "**/foo" matches "foo" anywhere, and "**/foo/bar" matches "bar" under "foo".'
    assert texts(glob) == [glob]
    # code of punctuation alone keeps its marks, or it reads as the sentence's own ("delimiter:; for Windows")
    assert texts("The delimiter is `;` on Windows and `:` on POSIX; `'.'` is returned.") == [
        "The delimiter is `;` on Windows and `:` on POSIX; '.' is returned."]


def test_fenced_code_is_not_sentences():
    text = "Before the code.\n\n```python\nx = 1. Not prose.\n```\n\n~~~\nAlso code here.\n~~~\nAfter the code."
    assert texts(text) == ["Before the code.", "After the code."]


def test_html_comments_on_lines_of_their_own_are_not_sentences():
    """Markdown renders nothing of an HTML comment: Node.js's API docs keep each entry's version
    history in one, which had been said as an answer ("<!-- YAML added: v0.9.1 --> [1].")."""
    text = ("## `timeout.unref()`\n\n<!-- YAML\nadded: v0.9.1\n-->\n\n<!--introduced_in=v0.10.0-->\n"
            "When called, the active Timeout will not keep the event loop active.\n\n"
            "A sentence <!-- with a remark --> stays whole.")
    assert texts(text) == ["timeout.unref()", "When called, the active Timeout will not keep the event loop active.",
                           "A sentence <!-- with a remark --> stays whole."]


def test_emphasis_over_two_sentences_leaves_no_half_marks():
    """Node.js bolds a two-sentence warning; each sentence had kept half of the marks
    ("**Never pass unsanitized user input …", "… arbitrary command execution.**")."""
    text = "**Never pass unsanitized user input to this function. Any input may trigger arbitrary command execution.**"
    assert texts(text) == ["Never pass unsanitized user input to this function.",
                           "Any input may trigger arbitrary command execution."]
    # a name that starts with a mark, and a pair inside one sentence, are not halves
    assert texts("_id is unique.") == ["_id is unique."]
    assert texts("**kwargs are passed on.") == ["**kwargs are passed on."]
    assert texts("A **bold** word. And *one* more.") == ["A bold word.", "And one more."]


def test_link_reference_definitions_are_not_sentences():
    """Markdown does not render "[label]: url" lines; Node.js's API pages end with dozens of them."""
    text = ("Use os.availableParallelism() for this purpose.\n\n"
            "[Android building]: https://github.com/nodejs/node/blob/HEAD/BUILDING.md#android\n"
            "[SystemError]: errors.md#class-systemerror \"The error class\"\n\n"
            "[Note]: this line is prose, not a definition.")
    assert texts(text) == ["Use os.availableParallelism() for this purpose.",
                           "[Note]: this line is prose, not a definition."]


def test_an_html_table_in_markdown_is_read_as_rows():
    """Markdown may hold raw HTML: Node.js's tables of OS constants were read as tags ("<td><code>SIGHUP
    </code></td> <td>Sent to …") and "When is SIGHUP sent?" was declined. Each <tr> is a row, its
    <th> row the header, and a row's sentence quotes the row's source."""
    text = ("Signals:\n\n<table>\n  <tr>\n    <th>Constant</th>\n    <th>Description</th>\n  </tr>\n"
            "  <tr>\n    <td><code>SIGINT</code></td>\n    <td>Sent to interrupt a process\n"
            "    (<code>Ctrl+C</code>) &amp; more.</td>\n  </tr>\n</table>\n\nAfter the table.")
    sentences = split_sentences(text)
    assert [(s.kind, s.text) for s in sentences] == [
        ("text", "Signals:"), ("row", "Constant: SIGINT; Description: Sent to interrupt a process (Ctrl+C) & more."),
        ("text", "After the table.")]
    assert text[sentences[1].start:sentences[1].end].startswith("<tr>") and "SIGINT" in text[sentences[1].start:sentences[1].end]


def test_a_typed_parameters_later_sentences_are_read_under_its_name():
    """An options list as JSDoc and Node.js write it ("maxBuffer {number} Largest amount …
    **Default:** `1024 * 1024`."): the default sentence, cut off, is about maxBuffer."""
    text = ("## exec\n\n* `maxBuffer` {number} Largest amount of data allowed on stdout.\n"
            "  **Default:** `1024 * 1024`.\n* `cwd` {string|URL} Current working directory. **Default:** `process.cwd()`.")
    assert [(s.heading, s.text) for s in split_sentences(text)][1:] == [
        ("exec", "maxBuffer {number} Largest amount of data allowed on stdout."),
        ("exec — maxBuffer", "Default: 1024 * 1024."),
        ("exec", "cwd {string|URL} Current working directory."),
        ("exec — cwd", "Default: process.cwd().")]


@pytest.mark.parametrize("sentence", [
    "Pay with a card, e.g. Visa or Mastercard, at the desk.",
    "Book the hotel, i.e. The Grand, for the night.",
    "Dr. Smith and Mr. Jones met Mrs. Brown at noon.",
    "The book by J. K. Rowling sold well.",
    "He served in the U.S. Army for years.",
    "Room No. 5 is free on Monday.",
    "It costs $1.50 or 3.5 EUR per unit.",
    "The train leaves at 14:00 and arrives at 16:30 sharp.",
    "Upgrade to version 2.1.3 before Friday.",
    "Pi is about 3.14159 in value.",
    "She paused... then went on talking.",
    "Bring pens, paper, etc. to the meeting.",
    "The ? operator can only be used in functions that return a result.",  # an operator's name, not an end
    "Bash implements the ! Keyword to negate a pipeline.",
])
def test_no_false_sentence_ends(sentence):
    assert texts(f"{sentence} Second one here.") == [sentence, "Second one here."]


def test_sentence_ends_before_digits_and_quotes():
    assert texts('It ended in 1999. 2000 was next. "Who knows?" she asked. (Maybe.) Done now.') == [
        "It ended in 1999.", "2000 was next.", '"Who knows?" she asked.', "(Maybe.)", "Done now."]
    assert texts('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]


def test_lower_case_after_a_period_does_not_end_a_sentence():
    assert texts("The fee is approx. ten euros. Then pay.") == ["The fee is approx. ten euros.", "Then pay."]


def test_a_figure_of_two_digits_or_more_ends_a_sentence_before_a_lower_case_name():
    """PostgreSQL's "... cannot exceed 10485760. character without length specifier is ..." is two
    sentences (the second opens with a type's name); a step's or a list's single digit is none."""
    assert texts("The length cannot exceed 10485760. character without length specifier is character(1).") == [
        "The length cannot exceed 10485760.", "character without length specifier is character(1)."]
    assert texts("All following initializations until 4. are skipped.") == [
        "All following initializations until 4. are skipped."]


def test_a_backslash_keeps_a_lines_first_mark_from_opening_a_quote_or_a_heading():
    text = "\\> word: Open file word for writing.\n\n\\# <S>: The number of positional parameters.\n\n> A quote."
    sentences = split_sentences(text)
    assert [(s.kind, s.text) for s in sentences] == [
        ("text", "> word: Open file word for writing."), ("text", "# <S>: The number of positional parameters."),
        ("text", "A quote.")]
    assert [text[s.start:s.end] for s in sentences[:2]] == [s.text for s in sentences[:2]]


def test_an_entry_term_may_hold_a_bracketed_default_with_its_own_colon():
    """Valgrind's options: "--leak-check=<no|summary|yes|full> [default: summary]: When enabled, ...".
    The entry's later sentences are read under the whole term, default included, not under
    "--leak-check=<no|summary|yes|full> [default"."""
    text = ("## Memcheck options\n\n--leak-check=<no|summary|yes|full> [default: summary]: When enabled, search "
            "for memory leaks. If set to summary, it says how many leaks occurred.")
    assert [(s.heading, s.text) for s in split_sentences(text)][1:] == [
        ("Memcheck options", "--leak-check=<no|summary|yes|full> [default: summary]: When enabled, search for memory leaks."),
        ("Memcheck options — --leak-check=<no|summary|yes|full> [default: summary]",
         "If set to summary, it says how many leaks occurred.")]
    assert entry_term("[[ expression ]]: Return a status of 0 or 1.") == "[[ expression ]]"
    assert entry_term("PostgreSQL provides several index types: B-tree, hash.") == ""
    assert entry_term("a" * 70 + " [x]: too long for a term.") == ""


def test_an_entry_term_may_be_several_names():
    """zsh names one parameter twice, each with the marks of its kind; Python's json CLI lists an
    option's spellings. A clause with a comma is still no term."""
    assert entry_term("RPROMPT <S>, RPS1 <S>: This prompt is displayed on the right.") == "RPROMPT <S>, RPS1 <S>"
    assert entry_term("--indent, --tab, --no-indent, --compact: Mutually exclusive options.") == (
        "--indent, --tab, --no-indent, --compact")
    assert entry_term("In this case, the options are: a, b and c.") == ""


def test_hard_wrapped_lines_join_with_a_space():
    text = "This sentence is wrapped\nover three lines\nof text. And another\none here."
    out = split_sentences(text)
    assert [s.text for s in out] == ["This sentence is wrapped over three lines of text.", "And another one here."]
    assert text[out[0].start:out[0].end] == "This sentence is wrapped\nover three lines\nof text."


def test_blank_lines_end_sentences_without_punctuation():
    assert texts("A title line\n\nThe body text here\n\nMore body text") == [
        "A title line", "The body text here", "More body text"]


def test_block_quotes_lose_their_marks():
    text = "Intro text here.\n> Quoted text spans\n> two lines."
    out = split_sentences(text)
    assert [s.text for s in out] == ["Intro text here.", "Quoted text spans two lines."]
    assert text[out[1].start:out[1].end] == "Quoted text spans\n> two lines."


def test_short_fragments_are_dropped():
    assert texts("Ok. No. Fine then.\n\n- a\n- --\n\n# 1") == ["Fine then."]


def test_base_shifts_offsets():
    doc = "# Head\n\nOne sentence here. Two sentence here."
    start = doc.index("Two")
    out = split_sentences(doc[start:], "d", base=start)
    assert out[0].text == "Two sentence here." and doc[out[0].start:out[0].end] == "Two sentence here."
    whole = split_sentences(doc, "d")
    assert (whole[-1].start, whole[-1].end) == (out[0].start, out[0].end)


def test_offsets_on_a_mixed_document():
    text = ("# Expense policy\n\nEmployees e.g. contractors may claim costs. Claims go to\nHR by 14:00.\n\n"
            "## Limits\n\n- Meals: $25.50 a day. Drinks are excluded.\n- Hotels: see [the table](t.md).\n\n"
            "| Item | Cap |\n|---|---|\n| Taxi | 40 EUR |\n\n```\nignored. Code.\n```\n\nQuestions? Ask Dr. Lee.")
    out = split_sentences(text)
    assert len(out) == 10
    assert_offsets(text)
    assert_offsets(text, base=1000)
    starts = [s.start for s in out]
    assert starts == sorted(starts) and all(a.end <= b.start for a, b in zip(out, out[1:], strict=False))


@hyp_settings(max_examples=400)
@example("11`1`")
@example("| a | b |\n|---|---|\n| 1 | 2 |")
@given(st.text(alphabet=st.sampled_from(list("ab. \n#-|*_[]()1!?AZ`>:$")), max_size=120))
def test_offsets_hold_for_any_text(text):
    """Rendering only takes marks away: a sentence's letters and digits are, in order, among those
    of the range it names (a table row's header names excepted)."""
    for s in split_sentences(text, "d", 7):
        original = text[s.start - 7:s.end - 7]
        assert original and original == original.strip()
        shown = s.text
        if s.kind == "row":
            shown = " ".join(part.split(": ", 1)[-1] for part in s.text.split("; "))
        source = iter("".join(words(original)))
        assert all(ch in source for ch in "".join(words(shown))), (s, original)


def test_pooled_sentence_vectors_come_from_the_chunk_pass(embedder):
    """`pool_sentences` over chunks that overlap: one unit vector per sentence, nearest to its
    own sentence's encoding, and the chunk vectors of the same pass equal `embed`'s."""
    import numpy as np

    from rag_rlm.ingest.chunker import chunk_text
    from rag_rlm.ingest.sentvec import context_text, pool_sentences

    text = ("Volcanoes erupt when magma rises through the crust. Bread is baked from flour, water and yeast. "
            "Python functions are defined with the def keyword. The Lisbon office is on Rua da Prata.")
    chunks = chunk_text("d", text, embedder, chunk_tokens=24, overlap=8)
    assert len(chunks) >= 2 and chunks[1].start < chunks[0].end  # they overlap
    sentences = split_sentences(text, "d")
    vectors, tokens = embedder.embed_with_tokens([c.text for c in chunks])
    np.testing.assert_allclose(vectors, embedder.embed([c.text for c in chunks]), atol=1e-4)
    pooled = pool_sentences(chunks, tokens, sentences)
    assert pooled.shape == (4, embedder.dimension) and pooled.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(pooled, axis=1), 1.0, atol=1e-5)
    own = embedder.embed([s.text for s in sentences])
    assert list(np.argmax(pooled @ own.T, axis=1)) == [0, 1, 2, 3]
    assert context_text("Guide", sentences[0]) == "Guide: " + sentences[0].text


MIXED = ("# Guide\n\nIntro sentence one. Intro sentence two.\n\n## Code\n\n```\nnot. A sentence.\n\n"
         "Still code. Here.\n```\n\nAfter the fence. Really.\n\n| Item | Cap |\n|---|---|\n| Taxi | 40 EUR |\n\n"
         "### Deep\n\n- First item here. Second part.\n- Another item here.\n\n# Top again\n\nLast words here.")


def test_a_document_split_in_pieces_at_blank_lines_gives_the_sentences_of_the_whole():
    """What ingest does with a large document's segments (each ends after a blank line): headings,
    a fence left open (with a blank line inside it) and the numbering carry over."""
    import re

    from rag_rlm.ingest.sentences import SentenceSplitter

    whole = split_sentences(MIXED, "d")
    cuts = [m.end() for m in re.finditer(r"\n\n", MIXED)]
    assert len(cuts) > 8
    for cut in cuts:
        splitter = SentenceSplitter("d")
        assert splitter.split(MIXED[:cut], 0) + splitter.split(MIXED[cut:], cut) == whole, cut
    splitter = SentenceSplitter("d")
    bounds = [0, *cuts, len(MIXED)]
    assert [s for a, b in zip(bounds, bounds[1:], strict=False) for s in splitter.split(MIXED[a:b], a)] == whole


def test_segments_end_after_blank_lines_and_cover_the_text():
    from rag_rlm.ingest.segments import segments

    text = "".join(f"Paragraph {i} has some words in it.\nA second line.\n\n" for i in range(200))
    assert list(segments(text, len(text))) == [(0, len(text))]  # a small document is one segment
    bounds = list(segments(text, 1000))
    assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
    assert all(a == prev_b for (_, prev_b), (a, _) in zip(bounds, bounds[1:], strict=False))
    assert all(0 < b - a <= 1000 for a, b in bounds)
    assert all(text[b - 2:b] == "\n\n" for _, b in bounds)
    lines = "word " * 300 + "\n" + "word " * 300  # no blank line: after the line break
    assert [b for _, b in segments(lines, 1600)][0] == lines.index("\n") + 1
    blob = "x" * 2500  # nothing to cut at: hard cuts
    assert list(segments(blob, 1000)) == [(0, 1000), (1000, 2000), (2000, 2500)]
    assert list(segments("", 10)) == []


EXIM_OPTIONS = """### 23. Alphabetical list of main options

smtp_accept_max; Use: main; Type: integer; Default: 20

This option specifies the maximum number of simultaneous incoming SMTP calls that Exim will accept. It applies \
only to the listening daemon.

A new SMTP connection is immediately rejected if the smtp_accept_max limit has been reached.

timeout_frozen_after; Use: main; Type: time; Default: 0s

If timeout_frozen_after is set to a time greater than zero, a frozen message is cancelled.

### 24. Another section

Text after the options is no option's.
"""


def test_an_entry_row_is_a_row_and_the_paragraphs_after_it_are_its_entry():
    """Exim's specification writes each option as a one-row table of its name and labelled cells, then
    paragraphs: they are read under the option's name up to the next entry or heading."""
    got = [(s.kind, s.heading, s.text) for s in split_sentences(EXIM_OPTIONS)]
    section = "23. Alphabetical list of main options"
    assert got[1] == ("row", section, "smtp_accept_max; Use: main; Type: integer; Default: 20")
    assert got[2][1] == got[3][1] == got[4][1] == f"{section} — smtp_accept_max"  # the first sentence too
    assert got[5][:2] == ("row", section) and got[6][1] == f"{section} — timeout_frozen_after"
    assert got[-1] == ("text", "24. Another section", "Text after the options is no option's.")
    # a row of a table with a header names its column in every cell: no entry
    table = "Name: date; Storage Size: 4 bytes; Low Value: 4713 BC\n\nThe date type stores a day."
    assert [s.heading for s in split_sentences(table)] == ["", ""]
