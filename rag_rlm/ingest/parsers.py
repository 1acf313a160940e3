"""One parser per file format, chosen by suffix, each turning raw bytes into Documents.

Every format is reduced to the same plain-text shape so the chunker needs one rule: blocks
separated by blank lines, and headings written as Markdown headings (`# Title`, `## Part`).
Markdown itself is kept as written (see `parse_markdown`), other formats are converted to it.
Text, HTML, PDF (scanned pages by OCR: `ocr.py`), DOCX and JSONL are read here; spreadsheets,
slides, mail, books, ODT and reStructuredText in `formats/`, one module per family. `parse_file` and `PARSERS` are the entry
points for all of them.
"""

from __future__ import annotations

import io
import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from rag_rlm.spacing import tight_brackets
from rag_rlm.types import Document

from .formats.base import Parsed, ParseError, Parser, as_text, decode_text, fenced, sha256
from .formats.base import document as _document
from .formats.books import parse_epub
from .formats.mail import parse_eml, parse_mbox
from .formats.manpage import man_page_blocks
from .formats.office import parse_odt
from .formats.rst import parse_rst
from .formats.sheets import parse_csv, parse_xlsx
from .formats.slides import parse_pptx
from .formats.wrapped import reads_as_prose, wrapped_text_blocks
from .ocr import OcrError, OcrOptions, read_scans, scanned

__all__ = ["MULTI_DOCUMENT_FORMATS", "PARSERS", "ZIP_FORMATS", "OcrOptions", "ParseError", "Parsed", "Parser",
           "check_zip", "decode_text", "parse_file", "sha256"]


def parse_file(path: Path, doc_id: str, data: bytes | None = None, *, max_bytes: int | None = None,
               ocr: OcrOptions | None = None) -> Parsed:
    """Parse `path` (its bytes may be passed in when already read for hashing). `max_bytes`
    caps the file and, for zip-based formats, what it would inflate to; `ocr` says how PDF pages
    without a text layer are read (None: the defaults, tesseract on PATH)."""
    parser = PARSERS.get(path.suffix.lower())
    if parser is None:
        raise ParseError(str(path), f"unsupported file type {path.suffix or '(no suffix)'!r}; "
                                    f"known: {', '.join(sorted(PARSERS))}")
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ParseError(str(path), f"unreadable: {e.strerror or e}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise ParseError(str(path), f"the file is {len(data)} bytes, over the limit of {max_bytes} (max_document_bytes)")
    if not data.strip():
        raise ParseError(str(path), "empty: no text")
    if path.suffix.lower() in ZIP_FORMATS:
        check_zip(path, data, max_bytes)
    if path.suffix.lower() in CONTAINER_FORMATS:
        return parser(path, doc_id, data, max_bytes=max_bytes, ocr=ocr)  # type: ignore[call-arg]
    if path.suffix.lower() == ".pdf":
        return parse_pdf(path, doc_id, data, ocr=ocr)
    return parser(path, doc_id, data)


# --- zip-based formats: refuse bombs before inflating -------------------------------------

ZIP_FORMATS = (".docx", ".xlsx", ".pptx", ".odt", ".epub")
# formats whose attachments are parsed as files of their own: they pass the size cap on to them
CONTAINER_FORMATS = (".eml", ".mbox")
MULTI_DOCUMENT_FORMATS = (".jsonl", *CONTAINER_FORMATS)  # one file, possibly many documents
MAX_ZIP_ENTRIES = 10_000
MAX_ZIP_RATIO = 100  # real documents compress ~3-20:1; a large entry far above that is a bomb
RATIO_CHECKED_BYTES = 256_000  # small entries may compress very well (repetitive XML)
DEFAULT_MAX_INFLATED = 50_000_000


def check_zip(path: Path, data: bytes, max_bytes: int | None) -> None:
    """Read only the zip's directory: the entry count, the total declared size and each large
    entry's compression ratio. zipfile never inflates past an entry's declared size, so a
    directory that lies is caught there (as a corrupt file)."""
    import zipfile

    limit = max_bytes or DEFAULT_MAX_INFLATED
    kind = path.suffix.lower().lstrip(".")
    try:
        entries = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise ParseError(str(path), f"corrupt {kind.upper()}: not a zip file ({e})") from None
    if len(entries) > MAX_ZIP_ENTRIES:
        raise ParseError(str(path), f"the {kind} has {len(entries)} entries, over the limit of {MAX_ZIP_ENTRIES}")
    inflated = sum(e.file_size for e in entries)
    if inflated > limit:
        raise ParseError(str(path), f"the {kind} inflates to {inflated} bytes, over the limit of {limit}")
    for e in entries:
        if e.file_size > RATIO_CHECKED_BYTES and e.file_size > MAX_ZIP_RATIO * max(e.compress_size, 1):
            ratio = e.file_size // max(e.compress_size, 1)
            raise ParseError(str(path), f"the {kind}'s entry {e.filename!r} inflates {ratio}:1 "
                                        f"({e.file_size} bytes), over the limit of {MAX_ZIP_RATIO}:1")


# --- text formats ------------------------------------------------------------------------

def parse_text(path: Path, doc_id: str, data: bytes) -> Parsed:
    text = decode_text(path, data)
    manual = man_page_blocks(text)  # `man ls > ls.txt`
    if manual is not None:
        name = manual[1] if manual[:1] == ["## NAME"] and len(manual) > 1 else None  # "ls - list directory contents"
        return _document(path, doc_id, data, name, "\n\n".join(manual))
    # plain text has no markup; a short first line standing alone reads as its heading
    first, sep, rest = text.lstrip().partition("\n")
    title = first if sep and len(first) <= 80 and rest.startswith("\n") else None
    return _document(path, doc_id, data, title, text)


def parse_markdown(path: Path, doc_id: str, data: bytes) -> Parsed:
    # The Markdown source is kept as the document text instead of rendering it: headings stay
    # visible as `#` lines (which the chunker splits on), citations can point at exact offsets
    # of the file the user wrote, and the light syntax costs the embedder nothing. markdown-it-py
    # is used only to find the title, so `#` lines inside code fences and setext headings
    # (Title / =====) are read correctly.
    text = decode_text(path, data)
    return _document(path, doc_id, data, _markdown_title(text), text)


def _markdown_title(text: str) -> str | None:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            return tokens[i + 1].content
    return None


# --- HTML --------------------------------------------------------------------------------

_DROP = ("script", "style", "nav", "noscript", "template", "svg", "head")
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = ("p", "li", "pre", "blockquote", "tr", "dt", "dd", "caption", "figcaption")
_SECTIONS = ("section", "article", *_HEADINGS)
_QUOTED_BLOCKS = ("p", "pre", "dl", "ul", "ol", "table", "div", "blockquote", *_HEADINGS)
_TERM_LINE_WORDS = 24  # a keyword and its arguments ("unix-bind [prefix <prefix>] [mode <mode>] ..."); longer is prose
_SYNTAX = re.compile(r"\s[<\[{(]")  # where a keyword line's arguments start: "timeout connect <timeout>"
_CLOSED = re.compile(r"(?<!\.\.)[.:]$")  # a full stop or a colon that ends a line; an ellipsis does not
# "Prev Up Home Next" bars of generated manuals; a Bootstrap dropdown's menu, hidden until clicked
# (haproxy-dconv puts one in each keyword's link: "This keyword is available in sections : ...")
_NAVIGATION = re.compile(r"nav(?:header|footer|bar)?\b|breadcrumb|dropdown-menu", re.IGNORECASE)
# chrome that a page shows beside its text: rustdoc's version and source links ("1.0.0 · source · [−]")
# and its tooltips of notable traits; mdBook's theme menu, its title bar, and the lines it hides in an
# example ("boring": the fn main() { around a snippet)
_CHROME = re.compile(r"^(?:out-of-band|rightside|notable-traits|theme-popup|menu-title|boring)$")
# a link that stands for what the page leaves out, not for text: a permalink's "¶" after a heading or a
# term (Sphinx, texinfo; Read the Docs' theme draws it as Font Awesome's link icon, U+F0C1) or "◆"
# before it (Doxygen), a summary's "Read more" (rustdoc's trait methods)
_STAND_IN_LINKS = {"¶", "\uf0c1", "◆", "Read more"}
# a member's signature in an API reference: Javadoc's, Doxygen's
_SIGNATURES = re.compile(r"^(?:member-signature|memproto)$")


def parse_html(path: Path, doc_id: str, data: bytes) -> Parsed:
    """BeautifulSoup with lxml: tolerant of real-world HTML, and it reads the page's declared
    encoding. Headings become `#` lines, block elements paragraphs."""
    if b"\x00" in data:
        raise ParseError(str(path), "binary file (NUL bytes)")
    from bs4 import BeautifulSoup

    with warnings.catch_warnings():  # XHTML manuals parse fine as HTML; bs4 warns about it anyway
        warnings.simplefilter("ignore")
        soup = BeautifulSoup(data, "lxml")
    # one line: Sphinx writes "Engine Configuration\n —\n    SQLAlchemy 1.4 Documentation" in <title>
    title = " ".join(soup.title.get_text(" ").split()) if soup.title else None
    h1 = soup.find("h1")
    title = title or (" ".join(h1.get_text(" ").split()) if h1 else None)
    for tag in soup.find_all(_DROP):
        tag.decompose()
    for tag in soup.find_all(class_=_NAVIGATION):
        if not _holds_main_text(tag):  # Read the Docs' theme calls the page's own body "wy-nav-content"
            tag.decompose()
    for tag in soup.find_all(class_=_CHROME):
        tag.decompose()
    for tag in soup.find_all(attrs={"role": "navigation"}):  # Sphinx's sidebar table of contents
        tag.decompose()
    for tag in soup.find_all(_is_footer):  # copyright, licence, "Created using Sphinx": said on every page
        tag.decompose()  # ("© Copyright 2000-2022 Kitware, Inc." had been said in an answer about CMAKE_CXX_STANDARD)
    for tag in soup.find_all("a"):
        if tag.get_text(strip=True) in _STAND_IN_LINKS:
            tag.decompose()
    for tag in soup.find_all("blockquote"):
        if tag.find(_QUOTED_BLOCKS) is not None:  # indentation around paragraphs and lists (Postfix's
            tag.name = "div"  # READMEs), read as a container: one block of it all had glued a <dl>'s terms
    for tag in soup.find_all("li"):
        if tag.find(_SECTIONS) is not None:  # Javadoc's member details: each a list item holding a section
            tag.name = "div"  # with its heading, signature, paragraphs and notes; read whole, all ran together
    for tag in soup.find_all(class_=_SIGNATURES):  # a member's signature is code, as rustdoc's and Sphinx's are;
        tag.string = " ".join(tag.get_text().split())  # Doxygen's is a layout table: "activate; (;)" as a row
        tag.name = "pre"
    text = "\n\n".join(_html_blocks(soup.body or soup))
    return _document(path, doc_id, data, title, text)


def _holds_main_text(tag) -> bool:  # noqa: ANN001 - a bs4 Tag
    """Whether the page's main text is inside: a class named like navigation may wrap it."""
    return tag.find(["main", "article", "h1"]) is not None or tag.find(attrs={"role": "main"}) is not None


def _is_footer(tag) -> bool:  # noqa: ANN001 - a bs4 Tag
    return (tag.get("role") == "contentinfo" or tag.get("id") == "footer" or "footer" in (tag.get("class") or ())
            or (tag.name == "footer" and not _holds_main_text(tag)))  # Read the Docs' "Built with Sphinx …"


def _html_blocks(root) -> list[str]:  # noqa: ANN001 - a bs4 Tag
    blocks: list[str] = []
    level = 0  # of the innermost heading so far: a bold title is a heading below it
    current = ""  # the heading line in force
    titles: set[int] = set()  # bold titles already said as headings
    taken: set[int] = set()  # code already said inside the description or item that holds it
    scopes = _TitleScopes()
    resumed = ""  # a heading to say again before the next text
    wrapped = root.find("pre", class_="text") is not None  # keyword lines over wrapped prose (dconv)

    def add(block: str, is_heading: bool = False) -> None:
        nonlocal resumed
        if resumed and not is_heading:
            blocks.append(resumed)
        resumed = ""
        blocks.append(block)

    for tag in root.find_all(list(_HEADINGS) + list(_BLOCKS) + ["div", "section", "article", "footer"]):
        if id(tag) in titles:
            continue
        if (back := scopes.leave(tag)) is not None:
            current, level = back  # past a sidebar with a bold title: the section goes on, said
            resumed = current  # again before its next text (not before a heading that follows)
        if tag.name in ("div", "section", "article", "footer"):
            if tag.find_parent("pre") is not None or (wrapped and _names_text(tag)):
                continue  # said with its <pre>: an example's caption, or the term its text describes
            # only the text placed directly in a container, with its inline tags ("The default
            # is <code>None</code>."); its block children are visited anyway
            own = _own_words(tag)
            if own:
                add(as_text(own))
            continue
        if tag.name != "pre" and tag.find_parent(_BLOCKS + tuple(_HEADINGS)) is not None and not _nested_entry(tag):
            continue  # nested inside a block already taken whole (e.g. <p> in <li>); code never is
        if tag.name == "dt":
            continue  # said with its description (<dd>), which reads as "term: description"
        if tag.name == "pre":
            if id(tag) not in taken:
                for block in _code_blocks(tag):
                    add(block, block.startswith("#"))
            continue
        if tag.name in ("p", "li") and (title := _bold_title(tag)) is not None:
            # "<p><b>Maximum Database Size</b></p><p>Every database ...": the bold line is the
            # heading of what follows, not the first words of its first sentence
            scopes.enter(title, current, level)
            current = f"{'#' * min(level + 1, 6)} {_words(title)}"
            add(current, is_heading=True)
            titles.add(id(title))
            if title is tag:
                continue
        inner = {id(d) for d in _nested_lists(tag)} if tag.name == "dd" else set()
        if tag.name in ("dd", "li") and any(not any(id(a) in inner for a in pre.parents) for pre in tag.find_all("pre")):
            # code inside a description or an item sits between its words, as the page shows it;
            # said after them all, it had glued "copy the output of this to your config:" to the
            # sentence after the code. Later words of a description are said after its terms too,
            # so that their sentences stay the entry's.
            term = _terms(tag) if tag.name == "dd" else ""
            opening = True
            for words in _around_code(tag, titles | inner, taken):
                if isinstance(words, str):
                    lead = f"{term}: " if term else "- " if tag.name == "li" and opening else ""
                    add(as_text(f"{lead}{words}"))
                    opening = False
                else:
                    for block in _code_blocks(words):
                        add(block, block.startswith("#"))
            continue
        fields = _leading_fields(tag) if tag.name == "dd" else []
        words = _row(tag) if tag.name == "tr" else _words(tag, without=titles | inner | {id(f) for f in fields})
        if tag.name == "dd":
            term = _terms(tag)
            for field in fields:  # each its own line, with the term: no full stop ends it
                add(as_text(f"{term}: {_words(field)}" if term else _words(field)))
            words = f"{term}: {words}" if term and words else words
        heading = _HEADINGS.get(tag.name)
        if heading:
            words = words.rstrip("¶ ")  # a permalink's pilcrow after the heading (Apache's manual)
        if words:
            level = heading or level
            mark = "#" * heading if heading else "-" if tag.name == "li" else ""  # the Markdown it reads as
            block = f"{mark} {words}" if mark else as_text(words)
            add(block, is_heading=bool(heading))
            if heading:
                current = block
    return blocks


def _code_blocks(pre) -> list[str]:  # noqa: ANN001 - a bs4 Tag
    """Code, kept for retrieval and fenced so that no sentence is made of it, after its caption
    (a block inside the <pre>: haproxy-dconv's "Redirect all HTTP traffic to HTTPS ..." over
    its example), said as the code's lead-in; or, when the <pre> is a manual page as a terminal shows it or wrapped prose
    (`class="text"`, `class="arguments"`), that text's blocks."""
    from bs4 import Comment, NavigableString

    kind = pre.get("class") or ()
    if "text" in kind or "arguments" in kind:  # an entry's text and its arguments' table, in dconv
        return _entry_blocks(pre) if "text" in kind else wrapped_text_blocks(pre.get_text())
    captions = pre.find_all(["div", "p"])
    inside = {id(c) for c in captions}
    code = "".join(str(s) for s in pre.descendants if isinstance(s, NavigableString)
                   and not isinstance(s, Comment) and not any(id(p) in inside for p in s.parents)).strip("\n")
    manual = man_page_blocks(code)
    if manual is not None:
        return manual
    if not captions and reads_as_prose(code):
        return wrapped_text_blocks(code)
    said = [w for c in captions if not any(id(p) in inside for p in c.parents)
            and (w := tight_brackets(c.get_text(" ", strip=True)))]
    if said and code.strip():  # a caption leads in to its example, as "... as follows:" does
        said[-1] = said[-1].rstrip(" .:") + ":"
    return said + ([fenced(code)] if code.strip() else [])


def _entry_lines(pre) -> tuple[list[str], bool]:  # noqa: ANN001 - a bs4 Tag
    """The keyword lines that open the entry a <pre> of wrapped prose belongs to (haproxy-dconv's
    "inter <delay>", "fastinter <delay>"), and whether they stand right before it: its later
    paragraphs, past an "Arguments :" block, are the same entry's."""
    lines: list[str] = []
    right_before = True
    for sibling in pre.find_previous_siblings(True):
        if _is_term_line(sibling):
            lines.append(_words(sibling))
        elif not sibling.get_text(strip=True):
            continue  # the empty anchors between the lines
        elif lines or _unlabelled_line(sibling) or sibling.name in _HEADINGS \
                or sibling.find(list(_HEADINGS)) is not None:
            break  # the entry's first line, another short line, or the section's start
        else:
            right_before = False  # past its "Arguments : none" or an example
    return list(reversed(lines)), right_before


def _entry_blocks(pre) -> list[str]:  # noqa: ANN001 - a bs4 Tag
    """A <pre> of wrapped prose in an entry: its keyword lines as syntax (code) before the entry's
    first paragraph, and each paragraph said after the keywords' names ("inter, fastinter: The
    "inter" parameter sets ..."), which are short enough to leave the reader the sentence."""
    lines, right_before = _entry_lines(pre)
    names = ", ".join(dict.fromkeys(_SYNTAX.split(line, 1)[0].strip(" ,") or line for line in lines))
    syntax = [fenced("\n".join(lines))] if lines and right_before else []
    return syntax + wrapped_text_blocks(pre.get_text(), names)


def _names_text(tag) -> bool:  # noqa: ANN001 - a bs4 Tag
    """Whether `tag` is one of the term lines right before a <pre> of wrapped prose."""
    if not _is_term_line(tag):
        return False
    after = tag.find_next_sibling(True)
    while after is not None and (_is_term_line(after) or not after.get_text(strip=True)):
        after = after.find_next_sibling(True)
    return after is not None and after.name == "pre" and "text" in (after.get("class") or ())


def _is_term_line(tag) -> bool:  # noqa: ANN001 - a bs4 Tag
    """A keyword and its arguments ("resolve-opts <option>,<option>,..."), not a sentence, nor a
    label and its value ("Arguments : none")."""
    return _unlabelled_line(tag) and not _CLOSED.search(_line_words(tag))


def _unlabelled_line(tag) -> bool:  # noqa: ANN001 - a bs4 Tag
    """A short line of text that is not a label and its value ("Arguments : none")."""
    words = _line_words(tag)
    return bool(words) and ": " not in words


def _line_words(tag) -> str:  # noqa: ANN001 - a bs4 Tag
    """The words of a <div> that is one short line of text, else ""."""
    words = _words(tag) if tag.name == "div" and tag.find(_BLOCKISH) is None else ""
    return words if len(words.split()) <= _TERM_LINE_WORDS else ""


def _around_code(tag, without: set[int], taken: set[int]) -> list[Any]:  # noqa: ANN001 - a bs4 Tag
    """The words of `tag` and the <pre>s inside it, in the page's order: a string for each run of
    words, the <pre> Tag for each piece of code (whose id() goes into `taken`)."""
    out: list[Any] = []
    parts: list[str] = []

    def flush() -> None:
        words = tight_brackets("".join(parts)).strip()
        if words:
            out.append(words)
        parts.clear()

    for piece in _pieces(tag, without):
        if isinstance(piece, str):
            parts.append(piece)
            continue
        flush()
        out.append(piece)
        taken.add(id(piece))
    flush()
    return out


class _TitleScopes:
    """Where a bold title's heading ends: with the smallest container that holds the title and the
    text after it (a DocBook sidebar, "BACK TO BASICS Quota"). Past that container the heading in
    force before it is said again, else the section's next paragraphs read as the sidebar's."""

    def __init__(self) -> None:
        self.open: list[tuple[Any, str, int]] = []  # (container, heading line and level before it)

    def enter(self, title, before: str, level: int) -> None:  # noqa: ANN001 - a bs4 Tag
        scope = _scope(title)
        if scope is not None and not (self.open and self.open[-1][0] is scope):
            self.open.append((scope, before, level))

    def leave(self, tag) -> tuple[str, int] | None:  # noqa: ANN001 - a bs4 Tag
        """The heading line and level to go back to when `tag` is past the open containers."""
        back = None
        while self.open and not any(p is self.open[-1][0] for p in tag.parents):
            _, before, level = self.open.pop()
            back = (before, level)  # the outermost one left wins
        return back


def _scope(title):  # noqa: ANN001, ANN202 - bs4 Tags
    """The smallest container of `title` that also holds the next text after it; None when that
    is the page itself (the title heads the rest of the page)."""
    after = title.find_next(lambda t: t.name in _BLOCKS or (t.name == "div" and bool(_own_words(t))))
    if after is None:
        return None
    holds = {id(p) for p in after.parents}
    scope = next((p for p in title.parents if id(p) in holds), None)
    return None if scope is None or scope.name in ("body", "html", "[document]") else scope


def _leading_fields(dd) -> list[Any]:  # noqa: ANN001 - a bs4 Tag
    """The labelled paragraphs a description opens with ("<p><strong>Grammar: </strong>...</p>",
    "Blocks: ...", "Tags: ..." in BIND's reference), when text follows them. No full stop ends
    such a field, so said on the description's one line it became one sentence with the
    definition after it."""
    children = dd.find_all(True, recursive=False)
    fields = []
    for child in children:
        label = child.find(True) if child.name == "p" else None
        said = label.get_text().strip() if label is not None and label.name in ("strong", "b") else ""
        if not said.endswith(":") or not child.get_text().lstrip().startswith(said) \
                or _words(child).endswith((".", "!", "?")):
            break
        fields.append(child)
    return fields if len(fields) < len(children) else []


def _nested_lists(dd) -> list[Any]:  # noqa: ANN001 - a bs4 Tag
    """The definition lists inside a description (a class's methods in Sphinx, the options of
    Bash's shopt builtin): each of their entries is said on its own, not as the description's words."""
    return [d for d in dd.find_all("dl") if d.find_parent("dd") is dd]


def _nested_entry(tag) -> bool:  # noqa: ANN001 - a bs4 Tag
    """Whether `tag` is a term or description of a definition list inside a description."""
    return tag.name in ("dt", "dd") and (outer := tag.find_parent("dl")) is not None \
        and outer.find_parent("dd") is not None


def _terms(dd) -> str:  # noqa: ANN001 - a bs4 Tag
    """The terms a description is for: every <dt> right before it ("-n", "--dry-run" for one
    <dd>, as Asciidoc writes an option's names), joined by commas, without a colon of their own
    (Javadoc's "Parameters:"), since the description is said after ": "."""
    terms = []
    for sibling in dd.find_previous_siblings(True):
        if sibling.name != "dt":
            if not sibling.get_text(strip=True):
                continue  # an anchor between a term and its description (Exim's "<dt>-Mrm ...</dt><a id=…></a><dd>")
            break
        terms.append(_words(sibling).removesuffix(":").rstrip())
    return ", ".join(t for t in reversed(terms) if t)


def _bold_title(tag):  # noqa: ANN001, ANN202 - bs4 Tags
    """The paragraph that `tag` is or opens with when all of its text is bold and it reads as a
    title (at most 12 words, no closing full stop or colon, not a table's title), else None."""
    first = tag if tag.name == "p" else tag.find(True, recursive=False)
    if first is None or first.name != "p" or first.find(["b", "strong"]) is None:
        return None  # most paragraphs: nothing bold, no words to compare
    text = _words(first)
    if first is not tag and _words(tag) == text:
        return None  # an item that is only its bold words is a list item, not a section
    bold = " ".join(_words(b) for b in first.find_all(["b", "strong"]) if b.find_parent(["b", "strong"]) is None)
    if not text or text != bold or len(text.split()) > 12 or text.endswith((".", ":")):
        return None
    after = first.find_next_sibling(True)
    if after is not None and (after.name == "table" or after.find("table") is not None):
        return None  # a table's title: its caption, said as before
    return first


def _own_words(container) -> str:  # noqa: ANN001 - a bs4 Tag
    """The words of `container` outside its block children, on one line."""
    from bs4 import Comment, NavigableString, Tag

    parts: list[str] = []
    prose = False  # a container of links only is navigation (a table of contents), not text
    for child in container.children:
        if isinstance(child, Tag):
            # an inline tag around blocks (<span><p>…</p></span>) is said by those blocks
            inline = child.name not in _BLOCKISH and child.find(_BLOCKISH) is None
            parts.append(_strings(child) if inline else " ")
            prose = prose or (inline and child.name != "a" and bool(parts[-1].strip()))
        elif isinstance(child, NavigableString) and not isinstance(child, Comment):
            parts.append(str(child))
            prose = prose or bool(child.strip())
    return tight_brackets("".join(parts)) if prose else ""


def _words(tag, without: set[int] = frozenset()) -> str:  # noqa: ANN001 - a bs4 Tag
    """The tag's text on one line. Inline tags join as written ("json.<b>dumps</b>()" is
    "json.dumps()", not "json. dumps ()"); block children and <br> are separated by a space.
    Children whose id() is in `without` (titles said as headings) are left out."""
    return tight_brackets(_strings(tag, without))


_CONTAINERS = frozenset({"pre", "article", "footer", "header", "aside", "nav", "form", "figure", "main"})
_BREAKS = frozenset(_BLOCKS) | frozenset(_HEADINGS) | {"br", "div", "ul", "ol", "dl", "table", "section", "td", "th"}
_BLOCKISH = sorted(_BREAKS | _CONTAINERS)  # what a container's own words stop at


def _strings(tag, without: set[int] = frozenset()) -> str:  # noqa: ANN001 - a bs4 Tag
    """The text of `tag` without comments, without the code (<pre>) inside it, which is a
    block of its own, and without the children in `without`."""
    return "".join(piece if isinstance(piece, str) else " " for piece in _pieces(tag, without))


def _pieces(tag, without: set[int]) -> Iterator[Any]:  # noqa: ANN001 - a bs4 Tag
    """`tag`'s text in the page's order: its strings (not a comment's, not those of the children
    in `without`), a space for each block child or <br>, and each <pre> inside it as the Tag."""
    from bs4 import CData, NavigableString

    for node in tag.descendants:
        if type(node) is NavigableString or isinstance(node, CData):
            if node.find_parent("pre") is None and not (without and any(id(p) in without for p in node.parents)):
                yield str(node)
        elif node.name == "pre":
            if not (without and any(id(p) in without for p in node.parents)):
                yield node
        elif node.name in _BREAKS:
            yield " "


def _row(tr) -> str:  # noqa: ANN001 - a bs4 Tag
    """A table row as one line, each cell with its column's header ("Name: smallint; Storage
    Size: 2 bytes") or, without a header row, after the row's name ("Default: Off"); the header
    row itself is not a sentence."""
    cells = tr.find_all(["td", "th"], recursive=False)
    if not cells or all(c.name == "th" for c in cells):
        return ""
    table = tr.find_parent("table")
    head = table.find("tr") if table is not None else None
    headers = [_words(c) for c in head.find_all(["th", "td"], recursive=False)] if head is not None and head is not tr \
        and all(c.name == "th" for c in head.find_all(["th", "td"], recursive=False)) else []
    values = [_words(c) for c in cells]
    if len(headers) == len(values):
        return "; ".join(f"{h}: {v}" if h else v for h, v in zip(headers, values, strict=True) if v)
    if not values[0] and (label := _label_row_above(tr)):
        return f"{label}: {'; '.join(v for v in values[1:] if v)}"
    if len(values) >= 2 and values[0] and (cells[0].name == "th" or len(cells) == 2) and \
            all(c.name == "td" for c in cells[1:]):
        # a row named by its first cell ("<th>Default:</th><td>DirectoryIndex index.html</td>",
        # "Windows | mpm_winnt"): the name, then what the row says of it
        return f"{values[0].rstrip(':').strip()}: {'; '.join(v for v in values[1:] if v)}"
    return "; ".join(v for v in values if v)


def _label_row_above(tr) -> str:  # noqa: ANN001 - a bs4 Tag
    """The label of a row whose first cell is empty, when the row above holds that label alone: Docutils
    writes a long field name ("Doctree Elements:") as a row of one spanning header cell and the value in
    the next row under an empty cell; read row by row, the value lost what it is."""
    above = tr.find_previous_sibling("tr")
    cells = above.find_all(["td", "th"], recursive=False) if above is not None else []
    return _words(cells[0]).rstrip(":").strip() if len(cells) == 1 and cells[0].name == "th" else ""


# --- PDF and DOCX ------------------------------------------------------------------------

def parse_pdf(path: Path, doc_id: str, data: bytes, *, ocr: OcrOptions | None = None) -> Parsed:
    """pypdf: pure Python, maintained, no system libraries. Pages are separated by a blank line
    so a page break is a paragraph break for the chunker. A page with no text layer that shows
    an image (a scan) is read by OCR (ocr.py); the document's metadata["ocr"] says which pages."""
    from pypdf import PdfReader

    options = ocr or OcrOptions()
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ParseError(str(path), "encrypted PDF (needs a password)")
        pages = [page.extract_text() or "" for page in reader.pages]
        scans = [i for i, page in enumerate(reader.pages) if scanned(pages[i], page, options)]
    except ParseError:
        raise
    except Exception as e:  # pypdf raises many types on damaged files; all mean "corrupt"
        raise ParseError(str(path), f"corrupt PDF: {type(e).__name__}: {e}") from None
    try:
        read = read_scans(data, scans, options)
    except OcrError as e:
        raise ParseError(str(path), e.reason) from None
    for i, text in read.texts.items():
        pages[i] = text
    text = "\n\n".join(_tidy(p) for p in pages if p.strip())
    if read.texts and not text.strip():
        raise ParseError(str(path), f"empty: no text (OCR read nothing on its {len(read.texts)} scanned page(s))")
    parsed = _document(path, doc_id, data, None, text)
    if read.note:
        parsed.documents[0] = replace(parsed.documents[0], metadata={"ocr": read.note})
    return parsed


def parse_docx(path: Path, doc_id: str, data: bytes) -> Parsed:
    """python-docx; paragraphs styled Title/Heading N become `#` lines, table rows `a | b`."""
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
        title = (document.core_properties.title or "").strip() or None
        blocks = []
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                blocks += [" | ".join(c.text.strip() for c in row.cells) for row in item.rows]
            elif item.text.strip():
                blocks.append(_docx_paragraph(item.style.name if item.style else "", item.text))
    except Exception as e:  # a zip that is not a docx, a broken part, ...: all mean "corrupt"
        raise ParseError(str(path), f"corrupt DOCX: {type(e).__name__}: {e}") from None
    if title is None:
        title = next((b.lstrip("# ") for b in blocks if b.startswith("#")), None)
    return _document(path, doc_id, data, title, "\n\n".join(b for b in blocks if b.strip()))


def _docx_paragraph(style: str, text: str) -> str:
    text = " ".join(text.split())
    if style == "Title":
        return f"# {text}"
    match = re.fullmatch(r"Heading (\d)", style)
    return f"{'#' * min(int(match.group(1)), 6)} {text}" if match else text


def _tidy(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\x00", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# --- JSONL -------------------------------------------------------------------------------

def parse_jsonl(path: Path, doc_id: str, data: bytes) -> Parsed:
    """One document per line: {"id", "title", "text", ...extra keys -> metadata}. The record's
    own id is the document id (so evaluation gold ids match); a bad line fails on its own."""
    text = decode_text(path, data)
    out = Parsed([])
    seen: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            document = _record(path, line)
            if document.id in seen:
                raise ValueError(f"duplicate id {document.id!r} (first on line {seen[document.id]})")
        except ValueError as e:
            out.errors.append(ParseError(f"{path}:{number}", f"line {number}: {e}"))
            continue
        seen[document.id] = number
        out.documents.append(document)
    if not out.documents and not out.errors:
        raise ParseError(str(path), "empty: no text")
    return out


def _record(path: Path, line: str) -> Document:
    record = json.loads(line)  # JSONDecodeError is a ValueError
    if not isinstance(record, dict):
        raise ValueError("expected a JSON object")
    rid, text, title = record.get("id"), record.get("text"), record.get("title")
    if isinstance(rid, bool) or not isinstance(rid, str | int) or not str(rid).strip():
        raise ValueError("missing or invalid 'id' (a non-empty string or an integer)")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("missing or empty 'text'")
    if title is not None and not isinstance(title, str):
        raise ValueError("'title' must be a string")
    if _has_nul(record):  # PostgreSQL text and jsonb cannot hold U+0000
        raise ValueError("contains a NUL character (\\u0000), which cannot be stored")
    canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    metadata = {k: v for k, v in record.items() if k not in ("id", "title", "text")}
    return Document(id=str(rid), title=title or str(rid), source=str(path), text=text,
                    content_hash=sha256(canonical.encode("utf-8")), metadata=metadata)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return isinstance(value, list) and any(_has_nul(v) for v in value)


PARSERS: dict[str, Parser] = {
    ".txt": parse_text,
    ".text": parse_text,
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".html": parse_html,
    ".htm": parse_html,
    ".pdf": parse_pdf,
    ".docx": parse_docx,
    ".jsonl": parse_jsonl,
    ".csv": parse_csv,
    ".xlsx": parse_xlsx,
    ".pptx": parse_pptx,
    ".odt": parse_odt,
    ".epub": parse_epub,
    ".eml": parse_eml,
    ".mbox": parse_mbox,
    ".rst": parse_rst,
}
