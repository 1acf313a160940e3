"""Markdown-aware sentence splitting with exact character offsets.

Every parser reduces its format to Markdown-ish text (see parsers), so one splitter serves all:

    lines -> blocks (paragraphs, list items, headings, table rows; fenced code is skipped)
          -> sentences (a block is cut after . ! ? followed by space and a capital, a digit or
             a quote, unless the word before is an abbreviation, an initial or "e.g.")

A block is kept as the list of its lines' content ranges (list markers, quote marks and
indentation left out), joined by "\\n" for the sentence regex; a joined position maps back to the
original through those ranges, so `start`/`end` are exact while `text` is rendered for a reader
(links as their text, no emphasis marks, hard wraps as spaces). Work is per line and per sentence
end, never per character, in Python.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from dataclasses import dataclass, field

from rag_rlm.types import Sentence

from .formats.base import ESCAPED_MARKS

_FENCE = re.compile(r" {0,3}(```|~~~)")
# an HTML comment on lines of its own: Markdown renders nothing of it (Node.js's API docs keep each
# entry's version history in one, "<!-- YAML added: v0.9.1 -->"); while one is open, the "fence" is this
_COMMENT_OPEN = "<!--"
_COMMENT_LINE = re.compile(r"\s*<!--.*?-->\s*")
# an HTML table written into Markdown (Node.js's tables of OS constants): its rows are rows, not tags
_HTML_TABLE = re.compile(r" {0,3}<table\b", re.IGNORECASE)
_HTML_TABLE_END = re.compile(r"</table>", re.IGNORECASE)
_HTML_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.IGNORECASE | re.DOTALL)
_HTML_CELL = re.compile(r"<(t[hd])\b[^>]*>(.*?)</t[hd]>", re.IGNORECASE | re.DOTALL)
_INLINE_TAG = re.compile(r"</?(?:code|kbd|samp|var|b|i|em|strong|a|span|sup|sub)\b[^>]*>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
# a link reference definition ("[Android building]: https://…/BUILDING.md#android"), which Markdown does not
# render: Node.js's API pages end with dozens; a whole line of label, destination and an optional title
_LINK_DEFINITION = re.compile(r" {0,3}\[[^\]]+\]:\s*(?:<[^>]*>|\S+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|$)")
_ATX_CLOSE = re.compile(r"(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_RULE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?=\S)")
_QUOTE = re.compile(r"[ \t]{0,3}(?:>[ \t]?)+")
_TABLE_SEP = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$|[ \t]*\|[ \t]*:?-+:?[ \t]*\|[ \t]*$")
_CELL = re.compile(r"(?:^|(?<=\|))([^|]*)")

# A sentence end: . ! ? (and closing quotes/brackets/emphasis), then white space, then what can
# open a sentence: a capital, a digit, a quote or bracket, Markdown emphasis or a currency sign.
# A "?" or "!" alone after a space is a name, not an end: "The ? operator can only be used ...".
_END = re.compile(r"(?:\.|(?<!\s)[!?])[.!?]*[\"'”’)\]*_]*(?=\s+[\"'“‘(\[*_]*[A-Z0-9$€£À-ÖØ-Þ])"
                  # a manual's sentence may open with a parameter's name: "... return None. mode is a mask"
                  r"|(?:\.|(?<!\s)[!?])[.!?]*(?=\s+[a-z_][\w.]*\s+(?:is|are|must|may|can|should|defaults|specifies)\b)"
                  # or with a type's name after a figure: "... cannot exceed 10485760. character without length
                  # specifier is ..." (two digits at least: "until 4. are skipped" counts steps, "1. pointer" a list)
                  r"|(?<=\d\d)\.(?=\s+[a-z_][\w()]*\s)")
# The word before a "." that does not end a sentence: initials and dotted abbreviations ("J.",
# "U.S.", "e.g.", "i.e."), titles and other short forms.
_ABBREV = re.compile(
    r"(?<![^\s(\[\"'“])(?:[A-Za-z]\.)+$|(?<![^\s(\[\"'“])(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr|St|Mt|Ft|vs|cf|al|ca|"
    r"approx|Gen|Gov|Sen|Rep|Capt|Col|Lt|Sgt|Rev|Hon|Fig|Figs|Eq|Vol|Vols|pp|Ch|Sec|Art|Jan|Feb|Mar|Apr|Jun|Jul|"
    r"Aug|Sep|Sept|Oct|Nov|Dec)\.$"
)
_NUMBERED = re.compile(r"(?<![^\s(\[])(?:No|Nos|no|nos|p|Nr)\.$")  # "No. 5": only before a digit
_ALNUM = re.compile(r"[^\W_]")

_IMAGE = re.compile(r"!\[([^\]]*)\]\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
_CODE = re.compile(r"(`+)(.+?)\1")
# strong emphasis opens before a word and closes after one: "**/foo" in a gitignore manual's quotes is a
# glob, not a mark
_STRONG = re.compile(r"(\*\*|__)(?=[^\s/*\"'.,;:!?)\]}])(.+?)(?<=[^\s/*\"'(\[{])\1")
_EM_STAR = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*]+?)(?<=\S)\*(?![\w*])")
_EM_UNDER = re.compile(r"(?<![\w_])_(?=[^\s_])([^_]+?)(?<=\S)_(?![\w_])")
# emphasis over more than one sentence ("**Never pass unsanitized input. Any input ... execution.**"): each
# sentence keeps half of it; an opening mark before a capital and a closing one after a sentence's end go
_EMPHASIS_OPENS = re.compile(r"(\*\*|__|\*|_)(?=[A-Z0-9])")
_EMPHASIS_CLOSES = re.compile(r"(?<=[.!?:)\"'])(\*\*|__|\*|_)$")
_SPACE = re.compile(r"\s+")


@dataclass
class _Block:
    kind: str  # text | item | heading | row
    parts: list[tuple[int, int]] = field(default_factory=list)  # content ranges of its lines
    level: int = 0  # heading level
    cells: list[str] | None = None  # a table row: its rendered "Header: cell; ..." text
    quote: bool = False  # a block quote ("> ...")


def split_sentences(text: str, document_id: str = "", base: int = 0) -> list[Sentence]:
    """The sentences of `text` in order; offsets are `base` + positions in `text` (pass a chunk's
    start to split a chunk). Headings, list items and table rows come with their `kind`; every
    sentence carries the innermost heading above it."""
    return SentenceSplitter(document_id).split(text, base)


class SentenceSplitter:
    """The sentences of one document fed in consecutive pieces (a large document's segments,
    each cut after a blank line): the open sections, a code fence left open and the numbering
    carry from one piece to the next, so the sentences are those of the whole text."""

    def __init__(self, document_id: str = ""):
        self.document_id = document_id
        self.headings: list[tuple[int, str]] = []  # the open sections: (level, text)
        self.fence = ""
        self.count = 0  # sentences so far: the next one's index
        self.entry = ""  # the option an entry row opened (`_ENTRY_ROW`): its paragraphs are about it

    def split(self, text: str, base: int = 0) -> list[Sentence]:
        """The sentences of the next piece, `text`, which starts at offset `base`."""
        out: list[Sentence] = []
        headings = self.headings
        blocks, self.fence = _blocks(text, self.fence)
        for block in blocks:
            if block.kind == "row":
                assert block.cells is not None
                a, b = block.parts[0]
                self._add(out, "; ".join(block.cells), base + a, base + b, "row")
                continue
            joined, starts, origins = _join(text, block.parts)
            if block.kind == "heading":
                title = _render(joined)
                while headings and headings[-1][0] >= block.level:
                    headings.pop()
                self.entry = ""
                s, e = _trim(joined, 0, len(joined))
                if e > s:
                    self._add(out, title, base + _map(starts, origins, s), base + _map(starts, origins, e - 1) + 1,
                              "heading")
                headings.append((block.level, title))
                continue
            one_line_row = block.kind == "text" and len(block.parts) == 1 and "; " in joined  # rendered only then
            entry = _ENTRY_ROW.fullmatch(_render(joined)) if one_line_row else None
            if entry:
                s, e = _trim(joined, 0, len(joined))
                self._add(out, entry.group(0), base + _map(starts, origins, s),
                          base + _map(starts, origins, e - 1) + 1, "row")
                self.entry = entry.group(1)
                continue
            label = self.entry
            for s, e in _cut(joined):
                rendered = _render(joined[s:e])
                self._add(out, rendered, base + _map(starts, origins, s),
                          base + _map(starts, origins, e - 1) + 1, block.kind, label)
                label = label or entry_term(rendered)
        self.count += len(out)
        return out

    def _add(self, out: list[Sentence], rendered: str, start: int, end: int, kind: str, label: str = "") -> None:
        if len(_ALNUM.findall(rendered, 0, 64)) < 3 and len(_ALNUM.findall(rendered)) < 3:
            return  # "1.", "--", a lone emoji: nothing a reader would quote
        heading = self.headings[-1][1] if self.headings else ""
        if label:  # the term a definition block is about, for the sentences after its first
            heading = f"{heading} — {label}" if heading else label
        out.append(Sentence(document_id=self.document_id, index=self.count + len(out), text=rendered, start=start,
                            end=end, heading=heading, kind=kind))


# An option's entry laid out as a one-row table of its name and labelled cells, "timeout_frozen_after; Use:
# main; Type: time; Default: 0s" (Exim's specification, as the HTML parser writes a row without a header):
# a table row, and the paragraphs after it, up to the next heading or entry, are that option's.
_ENTRY_ROW = re.compile(r"([A-Za-z_][\w.-]{0,60})(?:; [A-Z][\w ]{0,30}: [^;]+){2,}")
LABEL_CHARS = 64  # a longer "...:" opens a sentence, not a term
# a term may hold a bracketed part with its own colon: "--leak-check=<no|summary|yes|full> [default: summary]:
# When enabled, ..." (Valgrind's options) is the term up to the colon after the brackets
_LABEL = re.compile(r"((?:[^.!?:;\[]|\[[^\[\]]{0,40}\]|\[(?![^\[\]]{0,40}\])){1,60}?):\s")
# An API entry's signature as manuals render a definition term: "class pathlib.PurePath(*pathsegments)",
# "tempfile.NamedTemporaryFile(mode='w+b', ..., delete=True)", "buf.length", "PurePath.stem -> str".
# Its term is the name alone: the arguments would take the reader's tokens and say nothing asked.
_SIGNATURE = re.compile(
    r"(?:(?:class|exception|async|awaitable|abstractmethod|classmethod|staticmethod|coroutine|method|function|"
    r"property|attribute|data)\s+)*"
    r"(?P<name>[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)"
    r"(?:\s*\(.{0,400}?\))?(?:\s*(?:->|→)\s*[^:]{1,60}?)?:\s")


# one name of an entry that has several: a word, an option, or a keyword with the marks of its kind ("RPS1 <S>")
_NAME_PART = re.compile(r"-{0,2}[A-Za-z_][\w.-]*(?:\s+<\w+>)*")

# a parameter as JSDoc and Node.js's API docs list it: "maxBuffer {number} Largest amount of data ..."
_TYPED_NAME = re.compile(r"([A-Za-z_$][\w$.]*)\s+\{[^{}]{1,80}\}\s")


def entry_term(sentence: str) -> str:
    """The term of a "term: description" block (a definition list's item, "Vision: 100% covered.
    Claims ..."), or of a typed parameter's ("maxBuffer {number} Largest amount ..."): what its later
    sentences are about though they do not name it ("The default is typically 100 connections"
    under "max_connections (integer): Determines ...", "Default: 1024 * 1024." under maxBuffer)."""
    typed = _TYPED_NAME.match(sentence)
    if typed:
        return typed.group(1)
    m = _LABEL.match(sentence)
    term = m.group(1).strip() if m and len(m.group(1)) <= LABEL_CHARS else ""
    # a name, not a clause: "PostgreSQL provides several index types: B-tree, ..." is a sentence
    # that introduces a list, and its later sentences are not about "provides"; or several names
    # of one entry ("RPROMPT <S>, RPS1 <S>": zsh's terms, each with the marks of its kind)
    if term and (len(term.split()) <= 3 or "(" in term or all(_NAME_PART.fullmatch(p) for p in term.split(", "))):
        return term
    api = _SIGNATURE.match(sentence)  # a dotted name or a long argument list, which the term above cannot hold
    return api["name"] if api and ("." in api["name"] or "(" in api.group(0)) else ""


# --- blocks ---------------------------------------------------------------------------------

def _blocks(text: str, fence: str = "") -> tuple[list[_Block], str]:
    """The blocks of `text`, and the fence still open at its end (`fence`: the one open at its
    start)."""
    lines = []  # (start, end) of each line, without its "\n"
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    blocks: list[_Block] = []
    current: _Block | None = None  # the paragraph or item that a next line may continue
    header: list[str] | None = None  # the header cells of the table being read
    in_table = False
    skip_to = 0  # the end of an HTML table read as a whole
    for i, (a, b) in enumerate(lines):
        line = text[a:b]
        if a < skip_to:
            continue
        if fence:
            if "-->" in line if fence == _COMMENT_OPEN else line.lstrip().startswith(fence):
                fence = ""
            continue
        m = _FENCE.match(line)
        if m:
            fence, current, in_table = m.group(1), None, False
            continue
        if current is None and _LINK_DEFINITION.fullmatch(line):  # it cannot continue a paragraph
            continue
        if _HTML_TABLE.match(line):
            end = _HTML_TABLE_END.search(text, a)
            skip_to = end.end() if end else len(text)
            blocks += _html_rows(text, a, skip_to)
            current, in_table = None, False
            continue
        if line.lstrip().startswith(_COMMENT_OPEN) and (_COMMENT_LINE.fullmatch(line) or "-->" not in line):
            fence = "" if "-->" in line else _COMMENT_OPEN
            current, in_table = None, False
            continue
        if not line.strip():
            current, in_table = None, False
            continue
        if "|" in line and (in_table or _table_starts(text, lines, i, current)):
            if _TABLE_SEP.match(line):
                in_table = True  # the separator: the row before it was the header
                continue
            cells = [_render(c) for c in _cells(line)]
            nxt = text[lines[i + 1][0]:lines[i + 1][1]] if i + 1 < len(lines) else ""
            if not in_table and _TABLE_SEP.match(nxt):
                header, in_table, current = cells, True, None
                continue
            if not in_table:
                header = None
            in_table, current = True, None
            if header and len(header) == len(cells):
                shown = [f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=True) if c]
            else:
                shown = [c for c in cells if c]
            s, e = _trim(text, a, b)
            s += line[s - a:].startswith("|")
            s, e = _trim(text, s, e - text[s:e].endswith("|"))
            blocks.append(_Block("row", [(s, e)], cells=shown))
            continue
        in_table = False
        if line[:1] == "\\" and line[1:2] in ESCAPED_MARKS:  # "\\>& word: Redirects ...": a mark escaped
            if current is None or current.quote:  # as CommonMark does, read as the text it opens
                current = _Block("text")
                blocks.append(current)
            current.parts.append((a + 1, b))
            continue
        m = _ATX.match(line)
        if m:
            end = a + _ATX_CLOSE.search(line, m.end()).start()
            blocks.append(_Block("heading", [(a + m.end(), max(end, a + m.end()))], level=len(m.group(1))))
            current = None
            continue
        m = _SETEXT.match(line)
        if m and current is not None and current.kind == "text":
            current.kind, current.level = "heading", 1 if m.group(1)[0] == "=" else 2
            current = None
            continue
        if _RULE.match(line):
            current = None
            continue
        m = _ITEM.match(line)
        if m:
            current = _Block("item", [(a + m.end(), b)])
            blocks.append(current)
            continue
        m = _QUOTE.match(line)
        start = a + (m.end() if m else 0)
        if current is None or (m is not None and not current.quote):  # a quote starts a paragraph
            current = _Block("text", quote=m is not None)
            blocks.append(current)
        current.parts.append((start, b))
    return blocks, fence


def _html_rows(text: str, start: int, end: int) -> list[_Block]:
    """The rows of an HTML table in `text[start:end]`, read as a Markdown table's are ("Constant:
    SIGHUP; Description: Sent to indicate ..."): a row of <th> cells is the header."""
    rows: list[_Block] = []
    header: list[str] | None = None
    for row in _HTML_ROW.finditer(text, start, end):
        found = [(m.group(1).lower(), " ".join(html.unescape(_TAG.sub(" ", _INLINE_TAG.sub("", m.group(2)))).split()))
                 for m in _HTML_CELL.finditer(row.group(1))]
        cells = [c for _, c in found]
        if found and all(kind == "th" for kind, _ in found):
            header = cells
            continue
        if header and len(header) == len(cells):
            shown = [f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=True) if c]
        else:
            shown = [c for c in cells if c]
        if shown:
            rows.append(_Block("row", [row.span()], cells=shown))
    return rows


def _table_starts(text: str, lines: list[tuple[int, int]], i: int, current: _Block | None) -> bool:
    """A line opens a table when it starts with "|", when a separator row follows it, or (rows
    from DOCX, one per paragraph) when it stands alone with " | " between its cells, outside any
    brackets, and no other pipe: "which(cmd, mode=os.F_OK | os.X_OK)" is a signature, and "Added support
    for | and |= operators" a sentence, not a row."""
    a, b = lines[i]
    line = text[a:b]
    if line.lstrip().startswith("|"):
        return True
    nxt = text[lines[i + 1][0]:lines[i + 1][1]] if i + 1 < len(lines) else ""
    if _TABLE_SEP.match(nxt):
        return True
    blanked = _bracketed_blanked(line)
    return current is None and " | " in blanked and blanked.count("|") == blanked.count(" | ") and not nxt.strip()


_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")


def _bracketed_blanked(line: str) -> str:
    """The line with what stands inside brackets blanked out (innermost first)."""
    while True:
        blanked = _BRACKETED.sub(lambda m: " " * len(m.group(0)), line)
        if blanked == line:
            return line
        line = blanked


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip() for c in body.split("|")]


# --- sentences within a block -----------------------------------------------------------------

def _join(text: str, parts: list[tuple[int, int]]) -> tuple[str, list[int], list[int]]:
    """The block's lines joined by "\\n", with where each starts in the joined and original text."""
    if len(parts) == 1:
        a, b = parts[0]
        return text[a:b], [0], [a]
    starts, origins, pieces = [], [], []
    pos = 0
    for a, b in parts:
        starts.append(pos)
        origins.append(a)
        pieces.append(text[a:b])
        pos += b - a + 1
    return "\n".join(pieces), starts, origins


def _map(starts: list[int], origins: list[int], j: int) -> int:
    k = bisect_right(starts, j) - 1
    return origins[k] + j - starts[k]


def _cut(block: str) -> list[tuple[int, int]]:
    """(start, end) of the sentences of one block, trimmed of white space."""
    spans = []
    start = 0
    for m in _END.finditer(block):
        dot = m.start()
        if block[dot] == "." and block[dot + 1:dot + 2] not in ".!?":  # one period: maybe "Dr."
            if _ABBREV.search(block, max(0, dot - 12), dot + 1):
                continue
            if _NUMBERED.search(block, max(0, dot - 4), dot + 1) and block[m.end():m.end() + 3].lstrip()[:1].isdigit():
                continue
        spans.append(_trim(block, start, m.end()))
        start = m.end()
    spans.append(_trim(block, start, len(block)))
    return [(s, e) for s, e in spans if e > s]


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    piece = text[s:e]
    stripped = piece.strip()
    if not stripped:
        return s, s
    s += len(piece) - len(piece.lstrip())
    return s, s + len(stripped)


def _code(m: re.Match) -> str:
    """An inline code span's text; one of punctuation alone keeps its marks ("`;` for Windows"),
    which bare would read as the sentence's own punctuation ("delimiter:; for Windows"), unless
    quotes already mark it ("'.'")."""
    code = m.group(2).strip()
    quoted = len(code) >= 2 and code[0] == code[-1] and code[0] in "'\""
    return code if quoted or any(c.isalnum() for c in code) else f"`{code}`"


def _render(piece: str) -> str:
    """What a reader sees of a piece of Markdown: link and image texts, no emphasis or code
    marks, one space for every run of white space (hard wraps included)."""
    if "[" in piece:
        piece = _IMAGE.sub(r"\1", piece)
        piece = _LINK.sub(r"\1", piece)
        piece = _REF_LINK.sub(r"\1", piece)
    if "<" in piece:
        piece = _AUTOLINK.sub(r"\1", piece)
    if "`" in piece:
        piece = _CODE.sub(_code, piece)
    if "*" in piece or "_" in piece:
        piece = _STRONG.sub(r"\2", piece)
        piece = _EM_STAR.sub(r"\1", piece)
        piece = _EM_UNDER.sub(r"\1", piece)
        piece = _unpaired_emphasis(piece.strip())
    return _SPACE.sub(" ", piece).strip()


def _unpaired_emphasis(piece: str) -> str:
    """A sentence without the half of an emphasis that lies in another sentence."""
    opens = _EMPHASIS_OPENS.match(piece)
    if opens and opens.group(1) not in piece[opens.end():]:
        piece = piece[opens.end():]
    closes = _EMPHASIS_CLOSES.search(piece)
    if closes and closes.group(1) not in piece[:closes.start()]:
        piece = piece[:closes.start()]
    return piece
