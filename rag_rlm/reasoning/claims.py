"""Evidence sentences as claims: which say something on their own, which say what another
already says, and the ones that only read right with their neighbours (a lead-in with the items of
its list, a sentence that refers back with the one before it). Pure functions of sentences and
their vectors, shared by the extractive reasoner's answer, merge and reflect steps."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..ingest.sentences import entry_term, split_sentences
from ..types import Sentence, Span
from . import english
from .base import Candidate, Claim, Source
from .figures import columns_named
from .forms import TABLE_ROW
from .thresholds import Thresholds

_DEFAULTS = Thresholds()


def _asks(text: str) -> bool:
    """A question the page asks itself: it ends with "?" and opens, after at most one linking word
    ("So how do you ..."), with a question word or an auxiliary. "… debts).[unreliable source?]"
    ends with "?" and asks nothing. A short label before it is no statement either ("FAQ: Should I
    use retry or acks_late?.", a link's title with the sentence's own stop after it)."""
    text = text.rstrip(".")
    if not text.endswith("?"):
        return False
    label, colon, rest = text.partition(": ")
    if colon and len(label.split()) <= 2:
        text = rest
    words = text.lower().split()[:2]
    linking = words and (words[0] in english.CONJUNCTIONS or words[0].capitalize() in english.DISCOURSE_WORDS)
    opening = words[1:] if linking else words
    return bool(opening) and opening[0] in english.WH_WORDS | english.AUX_WORDS


def answers_alone(sentence: Sentence) -> bool:
    """Headings, lead-ins to a list ("... for several reasons:"), a page's own questions ("So how
    do you register that blueprint?") and two-word fragments say nothing on their own: they are
    context, never an answer. A labelled value under its entry ("Default: None" under
    MAX_CONTENT_LENGTH) is a statement, however short."""
    text = sentence.text.rstrip()
    if sentence.kind == "heading" or text.endswith(":") or _asks(text):
        return False
    return len(text.split()) >= 3 or _labelled_value(sentence) is not None


# the last line of a code block or a list item ("- target_sources(INTERFACE),")
_CODE_OR_ITEM_END = re.compile(r"(?:^|\n)(?:```|~~~)\s*$|(?:^|\n)[ \t]*(?:[-*+]|\d+[.)])[ \t][^\n]*$")


def continues_past_block(c: Candidate) -> bool:
    """Whether the candidate is the rest of a sentence that code or a list interrupted: it opens
    with a lower-case grammar word right after a code block or a list item of its chunk. CMake's
    "For example, the code: <code> will run someHasher after linking myPlugin" left "will run
    someHasher ..." to be said alone, and "... using the commands: <list> and then it is used as an
    argument to target_link_libraries()" its last words."""
    first = c.sentence.text.split(maxsplit=1)[:1]
    if not first or not first[0][:1].islower() or first[0] not in english.FUNCTION_WORDS:
        return False
    before = c.span.text[:max(0, c.sentence.start - c.span.start)].rstrip()
    return _CODE_OR_ITEM_END.search(before) is not None


LABELLED_VALUE_WORDS = 4  # "Default: 1024 * 1024." is a value; a longer one is a sentence of its own


def _labelled_value(sentence: Sentence) -> tuple[str, str, str] | None:
    """(label, value, entry) of a short "Label: value" sentence under a manual entry's name
    ("Default: None" under MAX_CONTENT_LENGTH, "Default: 1024 * 1024." under maxBuffer), else None."""
    words = sentence.text.split()
    entry = sentence.heading.rpartition(" — ")[2].strip()
    if not 2 <= len(words) <= LABELLED_VALUE_WORDS or not words[0].endswith(":") or not entry:
        return None
    return words[0][:-1], " ".join(words[1:]), entry


def said(sentence: Sentence, question: str = "") -> str:
    """How a claim says its sentence: as written, except under an entry named in code, which the
    asker does not see: a labelled value is said of that entry ("Default of MAX_CONTENT_LENGTH:
    None"), and a sentence that does not name it, for a question that does not either, is said
    after the entry's name ("setTimeout(): Schedules execution of a one-time callback after delay
    milliseconds." for "How do I run a function after a delay?")."""
    if question and (cells := named_cells(question, sentence)):
        return cells
    labelled = _labelled_value(sentence)
    if labelled is not None and (identifiers(labelled[2]) or _keyword(labelled[2])):
        label, value, entry = labelled
        return f"{label} of {entry}: {value}"
    entry = sentence.heading.rpartition(" — ")[2].strip()
    name = _entry_name(entry)
    names = identifiers(name) | _member(name)
    if not question or not names or any(_says(t.lower(), n) for t in (sentence.text, question) for n in names):
        return sentence.text
    return f"{name}: {sentence.text}"


# an entry's term that gives its default: Vim's "'tabstop' 'ts' number (default 8)", Valgrind's
# "--leak-check=<no|summary|yes|full> [default: summary]", a row's Default cell (Exim's "timeout_frozen_after;
# Use: main; Type: time; Default: 0s"); its name is the term's first word
_TERM_DEFAULT = re.compile(r"[\[(]default:?\s+([^\[\]()]+)[\])]|;\s+default:\s+([^;]+)", re.IGNORECASE)
_TERM_NAME = re.compile(r"['‘]?(-{0,2}[A-Za-z_][\w.-]*)")


def entry_of(sentence: Sentence) -> str:
    """The term of the manual entry a sentence belongs to: its own ("term: ...") or, for an
    entry's later sentences, the one its heading carries."""
    return entry_term(sentence.text) or (sentence.heading.rpartition(" — ")[2] if " — " in sentence.heading else "")


def default_term(sentence: Sentence) -> str:
    """Where a sentence may write its entry's default: its term, or the whole of a table row."""
    return entry_term(sentence.text) or (sentence.text if sentence.kind == "row" else "")


# "Default: Disabled", "Default value: 10": a settings entry's line that only gives its default
_DEFAULT_LINE = re.compile(r"\s*default(?: value)?\s*:", re.IGNORECASE)


def states_default(sentence: Sentence) -> bool:
    return _DEFAULT_LINE.match(sentence.text) is not None


def asks_default(question: str) -> bool:
    return "default" in question.lower()


def asked_default(question: str, term: str) -> tuple[str, str] | None:
    """(name, default) of an entry whose term gives its default, when the question asks for a
    default and says the entry's name; else None. The asker reads "Default of tabstop: 8", which
    no sentence of the entry says in words."""
    if not asks_default(question) or not (value := _TERM_DEFAULT.search(term)):
        return None
    name = _TERM_NAME.match(term)
    if not name or not _says(question.lower(), name.group(1).lower()):
        return None
    return name.group(1), (value.group(1) or value.group(2)).strip()


def _entry_name(heading: str) -> str:
    """The name a heading gives an entry, as the asker would write it: "setTimeout()" of
    "setTimeout(callback[, delay])", "try_insert()" of rustdoc's signature, "shared_buffers" of
    "shared_buffers (integer)"; "" for a section's title, even one that mentions a name ("Sometimes
    Queries Return SQLITE_BUSY In WAL Mode")."""
    if m := _MEMBER.fullmatch(heading):  # a bare name, but no English word ("where:" over a man page's list)
        return "" if heading in english.STOP else (m[1] or m[2]) + ("()" if "(" in heading else "")
    head = heading.split("(", 1)[0]
    if len(head.split()) != 1 or not identifiers(head):
        return ""
    return head + "()" if "(" in heading and not head.endswith(" ") else head.strip()


# a name in code: a path (C++'s and Rust's pqxx::connection_base::activate), dotted with parts of two
# letters or more (os.path.splitext, Path.resolve; not "e.g." or "U.S."), snake_case (max_connections)
# or camelCase (trimToEmpty, getTime: Java's and JavaScript's members), or a command's long option
# (--leak-check, not the longer --leak-check-heuristics); a path or a dotted name first, so that its
# snake_case part is not a name of its own
_IDENTIFIER = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*[A-Za-z0-9]|\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+\b|\b[A-Za-z_]\w+(?:\.[a-z_]\w+)+\b|\b[A-Za-z]\w*_\w+\b"
                         r"|\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b")
_PART = re.compile(r"\.|::")


def _is_option(name: str) -> bool:
    return name.startswith("--")


def code_names(text: str) -> list[tuple[int, int]]:
    """Where `text` writes code names (start, end), in order."""
    return [m.span() for m in _IDENTIFIER.finditer(text)]


def thing_named(text: str, question: str = "") -> str:
    """The thing a sentence is about when it names one by form: its entry's term without the
    type after it ("maintenance_work_mem (integer): Specifies ..."), else its first code name
    that `question` does not say ("pg_restore is a utility ..."); "" for prose."""
    term = entry_term(text).split(" (", 1)[0].strip()
    if term:
        return term
    return first_code_name(text, question)


def first_code_name(text: str, question: str = "") -> str:
    """The first code name `text` writes that `question` does not say ("pg_restore is a utility for
    restoring ... created by pg_dump"); "" when none."""
    asked = question.lower()
    return next((name for a, b in code_names(text) if not _says(asked, (name := text[a:b]).lower())), "")


def bare_thing_named(text: str, question: str = "") -> str:
    """`thing_named` without what its term writes after the name: "--leak-check" of
    "--leak-check=<no|summary|yes|full> [default: summary]", "returncode" of "returncode: ..."."""
    return re.split(r"[=\s\[(<]", thing_named(text, question), maxsplit=1)[0]


# a name written as one: "DirectoryIndex", "AUTOINCREMENT", "git-clean"
_NAME_LIKE = re.compile(r"(?<![\w-])(?:[A-Z][a-z]+[A-Z]\w*|[A-Z][A-Z0-9_]{3,}|[a-z]+-[a-z][\w-]*)(?![\w-])")


def name_like(text: str, question: str = "") -> str:
    """The first word of `text` written as a name (inner capitals, all capitals, or joined by a
    hyphen) that `question` does not say; "" when none."""
    asked = question.lower()
    return next((m.group(0) for m in _NAME_LIKE.finditer(text) if not _says(asked, m.group(0).lower().removesuffix("s"))), "")


def names_by_form(text: str) -> list[tuple[int, int]]:
    """Where `text` writes code names and words written as names (inner or all capitals: a cipher
    or a class, "AESCCM", "ChaCha20Poly1305"), in order."""
    spans = code_names(text)
    spans += [m.span() for m in _NAME_LIKE.finditer(text)
              if "-" not in m.group(0) and not any(a <= m.start() < b for a, b in spans)]
    return sorted(spans)


def identifiers(text: str) -> set[str]:
    """The code names `text` writes, each also by its last part (Counter.most_common is also
    most_common, the way a manual's method entry names it), lower-cased."""
    found = {m.group(0).lower() for m in _IDENTIFIER.finditer(text)}
    return found | {_PART.split(name)[-1] for name in found}


def of_another_entry(asked: set[str], sentence: Sentence, own_entry_read: bool = False) -> bool:
    """Whether the sentence belongs to a manual entry named for another thing than the ones the
    question names (`asked`: `identifiers(question)`), without naming one of them itself: what
    temp_buffers' entry says ("The default value is 100 buffers") is not said of shared_buffers.
    Where an asked thing's own entry is read (`own_entry_read`), naming it is not enough either:
    Task.serializer's "Defaults to the task_serializer setting" is about Task.serializer.
    An entry's name is its first sentence's "name: ..." or its later sentences' heading: a code
    name, or a keyword (EXPLAIN's COSTS option, whose "This parameter defaults to TRUE" is no
    default of random_page_cost)."""
    if not asked:
        return False
    named = entry_names(sentence)
    if not any(map(_is_option, asked)):  # a command's options are its entries: pg_dump's -s --schema-only
        named = {name for name in named if not _is_option(name)}
    return bool(named) and not named & asked and (own_entry_read or not identifiers(sentence.text) & asked)


# a word of the question that names a thing: a capitalised or code word, an acronym, a dotted or
# hyphenated name ("Kubernetes", "WebSockets", "re.sub", "KeepAliveTimeout", "SHA-256")
_NAME = re.compile(r"[A-Za-z][\w.+#-]*[A-Za-z0-9+#]")


_QUOTES = "'`‘’\""  # the marks a name is quoted in
_OPTION = re.compile(r"(?<![\w-])--?([A-Za-z][\w-]*[A-Za-z0-9])")


# "the walrus operator", "the nullglob option": a plain word that names a thing of code by its kind
_NAMED_KIND = re.compile(rf"\bthe\s+([a-z][a-z]{{3,}})\s+(?:{'|'.join(sorted(english.THING_KINDS))})s?\b")


def unnamed_things(question: str, texts: Sequence[str]) -> list[str]:
    """The things the question names that none of `texts` says: a capitalised word that does not
    open a sentence, an acronym or a code name, looked for case-insensitively, also without a
    plural "s", by a dotted name's last part and by each part of a hyphenated one, and a long
    name also misspelt by one letter ("Kelven" for Kelvin, "Zeria" for Zeira); and a command-line
    option, said whole."""
    said = _plain(" ".join(texts).lower())
    words = set(re.findall(r"\w+", said))
    # a command-line option ("--history-level", "-fsanitize") is said whole or not at all: its
    # words alone ("history", "level") are any manual's
    missing = [m.group(0) for m in _OPTION.finditer(question)
               if not re.search(rf"(?<![\w-])-*{re.escape(m.group(1).lower())}(?![\w-])", said)]
    # a plain word naming a thing of code by its kind ("the walrus operator", "the frobnicate option"):
    # a name as much as a capitalised one, though the asker writes it in lower case
    missing += [m.group(1) for m in _NAMED_KIND.finditer(question) if not _says(said, _plain(m.group(1).lower()))]
    for m in _NAME.finditer(question):
        word = m.group(0)
        if question[:m.start()].endswith("-"):
            continue  # an option's name, read above
        opens = not question[:m.start()].strip() or question[:m.start()].rstrip()[-1:] in ".?!"
        # a word in quotes is a name as the asker writes one: Vim's options ("'inccommand'")
        before, after = question[m.start() - 1:m.start()], question[m.end():m.end() + 1]
        quoted = bool(before and after) and before in _QUOTES and after in _QUOTES
        if opens or not (quoted or any(c.isupper() for c in word[1:]) or word[0].isupper() or "_" in word
                         or "." in word):
            continue
        low = _plain(word.lower())
        parts = [p for p in re.split(r"[-.]", low) if len(p) >= 3]
        dotted = "-" not in low  # a dotted name's part is a word of its own: "sub-parser" does not say re.sub
        if not any(_says(said, form) for form in (low, low.removesuffix("s"))) \
                and not _says(said, low.rsplit(".", 1)[-1], alone=True) \
                and not (parts and all(_says(said, p, alone=dotted) or _misspelt(p, words) for p in parts)):
            missing.append(word)
    return missing


MISSPELT_FROM = 5  # letters: a shorter name one letter off is another name (URL, URI)


def _misspelt(word: str, words: set[str]) -> bool:
    """One letter added, dropped, changed or two swapped, in a word of `MISSPELT_FROM` letters or more."""
    return len(word) >= MISSPELT_FROM and any(abs(len(w) - len(word)) <= 1 and _one_edit(word, w) for w in words)


def _one_edit(a: str, b: str) -> bool:
    if a == b:
        return True
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def _plain(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _says(text: str, word: str, alone: bool = False) -> bool:
    """`word` in `text` as a whole word, or with a plural "s" ("re.sub" is not in "subprocess");
    `alone`: not as a part of a hyphenated word either."""
    edge = r"[\w-]" if alone else r"\w"
    return re.search(rf"(?<!{edge}){re.escape(word)}s?(?!{edge})", text) is not None


def entry_names(sentence: Sentence) -> set[str]:
    """What the manual entry a sentence belongs to is named for (lower-cased; empty for prose)."""
    term = entry_term(sentence.text)
    label = sentence.heading.rpartition(" — ")[2]  # the entry term a block's later sentences are read under
    return (identifiers(term) | identifiers(sentence.heading) | _keyword(term) | _keyword(label) | _member(label)
            | identifiers(_entry_row_name(sentence)))


def entry_section(sentence: Sentence) -> str:
    """The heading a sentence's manual entry sits under: an entry's later sentences are read under
    "<section> — <entry>", its opening ("name: ...") or its row under the section itself. Exim's
    "smtp_accept_max_per_host: connections from one host" in a summary list shares the entry's name,
    not its section."""
    if " — " in sentence.heading and sentence.kind != "row" and not entry_term(sentence.text):
        return sentence.heading.rpartition(" — ")[0]
    return sentence.heading


def entry_row_unasked(question: str, sentence: Sentence) -> bool:
    """Whether the sentence is an option's entry row ("timeout_frozen_after; Use: main; Type: time; Default:
    0s") and the question names none of its columns: then it is the entry's heading, no description."""
    return bool(_entry_row_name(sentence)) and not columns_named(_letter_words(question), sentence.text)


def _letter_words(question: str) -> set[str]:
    """The question's words as a row's column labels are matched against them: letters only, lower-cased."""
    return set(re.findall(r"[a-z]+", question.lower()))


def _entry_row_name(sentence: Sentence) -> str:
    """The name an option's entry row opens with ("timeout_frozen_after; Use: main; ..."), "" for another
    sentence, or for a row whose first cell is labelled too ("Name: date; ...")."""
    first = sentence.text.partition("; ")[0] if sentence.kind == "row" else ""
    return "" if ": " in first else first


# a member's heading in an API reference: Javadoc's bare name ("split"), Doxygen's ("activate()",
# "await_notification() [1/2]"), rustdoc's signature ("pub fn new() -> HashMap<K, V>")
_MEMBER = re.compile(r"(?:(?:pub(?:\([\w:]+\))?|const|async|unsafe|extern\s+\S+)\s+)*fn\s+(\w+)\b.*"
                     r"|([a-z_][A-Za-z0-9_]*)(?:\(\))?(?:\s*\[\d+/\d+\])?")


def _member(heading: str) -> set[str]:
    m = _MEMBER.fullmatch(heading.strip())
    return {(m[1] or m[2]).lower()} if m else set()


# a command's option named by its keyword (COSTS, VERBOSE), or a shell's parameter with the marks of
# its kind after it (zsh's "HISTSIZE <S>", "PS1 <S> <Z>"; an option's flag: "(-J)")
_KEYWORD = re.compile(r"([A-Z][A-Z0-9_]{2,})(?:\s+(?:<\w+>|\([-+]?\w+\)))*")


def _keyword(term: str) -> set[str]:
    """An entry named by a keyword alone ("COSTS: Include information on ..."), or by several
    ("RPROMPT <S>, RPS1 <S>"), lower-cased."""
    found = [_KEYWORD.fullmatch(part.strip()) for part in term.split(", ")]
    return {m.group(1).lower() for m in found if m} if all(found) else set()


# a row's name without its optional syntax: "timestamp [ (p) ] [ without time zone ]" is timestamp
_OPTIONAL_SYNTAX = re.compile(r"\[[^\]]*\]|\([^)]*\)")
_ROW_NAME_CHARS = 40  # a first cell longer than this is a description, not a name


def row_names(sentence: Sentence) -> set[str]:
    """What a table row is about: its first cell's value, each of its comma-separated names
    without optional syntax, lower-cased ("Name: character varying(n), varchar(n); ..." is about
    "character varying" and "varchar")."""
    if sentence.kind != "row" and not TABLE_ROW.fullmatch(sentence.text):
        return set()
    first = sentence.text.split("; ", 1)[0]
    value = first.split(": ", 1)[-1]
    if len(value) > _ROW_NAME_CHARS:
        return set()
    names = (" ".join(_OPTIONAL_SYNTAX.sub(" ", name).split()).lower() for name in value.split(","))
    return {name for name in names if name}


def asked_rows(question: str, sentences: Sequence[Sentence]) -> set[str]:
    """The names of `sentences`' table rows that the question says, as whole words."""
    said = " ".join(question.lower().split())
    return {name for s in sentences for name in row_names(s)
            if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", said)}


def names_cell(question: str, sentence: Sentence) -> bool:
    """Whether the question names a table row and one of its columns: "What is the date's highest
    value?" of "Name: date; ...; High Value: 5874897 AD" (a column's words said by the question,
    or their comparative or superlative)."""
    return bool(named_cells(question, sentence))


def named_cells(question: str, sentence: Sentence) -> str:
    """The row's first cell and the cells of the columns the question names ("Name: date; High
    Value: 5874897 AD"), when it names the row and a column; else "". The asker reads the value
    asked for, not the whole row."""
    if not asked_rows(question, [sentence]):
        return ""
    said = _letter_words(question)
    forms = said | {w[:-3] for w in said if w.endswith("est")} | {w[:-2] for w in said if w.endswith("er")}
    named = columns_named(forms, sentence.text)
    first = sentence.text.split("; ", 1)[0]
    return "; ".join([first, *(f"{label}: {value}" for label, value in named)]) if named else ""


def of_another_row(asked: set[str], sentence: Sentence) -> bool:
    """Whether the sentence is a table row about another thing than the rows the question names
    (`asked`: `asked_rows`): the bigserial row ("Storage Size: 8 bytes") says nothing of bigint.
    A row is about its first cell only; a later cell that mentions the asked thing does not make
    it about it ("Input String: infinity; Valid Types: date, timestamp")."""
    names = row_names(sentence)
    return bool(asked) and bool(names) and not names & asked


def with_lists(cands: list[Candidate], thresholds: Thresholds = _DEFAULTS) -> list[Candidate]:
    """`cands` with each lead-in to a list ("VACUUM has to process each table for several
    reasons:") said together with the items that follow it in its chunk, as one sentence quoted
    from the lead-in to the last item: on its own a lead-in says nothing, and an item alone says
    one reason of several. The items are said by the list, not again on their own; a list of
    entries ("TIMEOUT: ...", "OPTIONS: ...") is not said whole, each entry stands. A lead-in to
    code is said with it when the code is short ("execute the following command: # postfix
    reload"), else alone when it makes a statement itself (`_with_code`)."""
    by_place = {(c.span.id, c.sentence.index): c for c in cands}
    out, absorbed = [], set()
    for c in cands:
        if not c.sentence.text.rstrip().endswith(":") or c.sentence.kind == "heading":
            out.append(c)
            continue
        items = []
        while len(items) < thresholds.max_items:
            nxt = by_place.get((c.span.id, c.sentence.index + len(items) + 1))
            if nxt is None or nxt.sentence.kind != "item":
                break
            items.append(nxt)
        if not items:
            out.append(_with_code(c, thresholds))
            continue
        if entry_term(items[0].sentence.text):
            # a list of entries ("TIMEOUT: The default timeout ... This argument defaults to 300
            # seconds"; "OPTIONS: ..."): each entry answers for itself, as a definition list's do
            out.append(c)
            continue
        absorbed |= {id(i) for i in items}
        said = "; ".join(i.sentence.text.rstrip(" .;") for i in items)
        listed = replace(c.sentence, text=f"{c.sentence.text.rstrip()} {said}.", end=items[-1].sentence.end)
        out.append(Candidate(listed, c.span, c.vector))
    return [c for c in out if id(c) not in absorbed]


_CODE_AFTER = re.compile(r"\s*(```|~~~)[^\n]*\n(.*?)\n[ \t]*\1", re.DOTALL)


def _with_code(c: Candidate, thresholds: Thresholds) -> Candidate:
    """A lead-in with the fenced code right after it in its chunk: said with the code, its lines
    joined by "; ", when the code is a command or a setting (two lines, `max_code_chars`); said
    alone, its colon a full stop, before a longer example when it has `statement_words` ("The DNS
    servers to be used are indicated in /etc/resolv.conf, ..., as in the following example:"),
    where "For example:" says nothing. Either way the reader judges the lead-in's own words."""
    span, sentence = c.span, c.sentence
    m = _CODE_AFTER.match(span.text, sentence.end - span.start)
    if m is None or not re.search(r"[A-Za-z]{2}", m[2]):
        return c  # no code, or only symbols ("<< &< &>"): nothing to read
    lines = [line.strip() for line in m[2].splitlines() if line.strip()]
    code = "; ".join(lines)
    if len(lines) <= 2 and len(code) <= thresholds.max_code_chars:
        said = replace(sentence, text=f"{sentence.text.rstrip()} {code}", end=span.start + m.end())
    elif len(sentence.text.split()) >= thresholds.statement_words:
        said = replace(sentence, text=sentence.text.rstrip().removesuffix(":").rstrip() + ".")
    else:
        return c
    return Candidate(said, span, c.vector, judged_as=sentence.text)


# A sentence that opens by referring back ("Hence, such indexes", "This", "They", "But it") does not
# say on its own what it is about: the sentence before it does.
_ANAPHOR = re.compile(r"^(?:(?:hence|thus|therefore|so|also|however|instead|otherwise|then|but|and|yet)\b,?\s*)?"
                      r"(?:this|these|those|that|it|its|they|their|such)\b", re.IGNORECASE)


def self_contained(claim: Claim, spans: Sequence[Span] = (), stored: Sequence[Sentence] = ()) -> Claim | None:
    """`claim` said after the sentence before it, when it opens by referring back to it ("Hash
    indexes store a hash code. Hence, such indexes ..."), quoted as one range of a retrieved chunk
    (its own, or another of `spans` that holds both); None when it stands alone or no chunk holds
    the sentence before it. That sentence is the document's stored one (`stored`) where sentence
    memory has it: chunks overlap, so a chunk may start inside a sentence or a code block, and
    split afresh it reads "element." or code as the sentence before. A heading or a table row before
    it is no such sentence: Exim's "This option restricts ..." after its entry's row had read
    "...; Default: unset This option restricts ..."; its entry's name is said instead (`said`)."""
    if not claim.sources:
        return None
    source = claim.sources[0]
    own = source.span
    # what is said before the sentence itself (the name of the entry it sits in) stays first
    itself = next((s.text for s in stored if s.document_id == own.document_id and s.start == source.start), "")
    lead = claim.text[:-len(itself)] if itself and claim.text.endswith(itself) else ""
    if not _ANAPHOR.match(claim.text[len(lead):]):
        return None
    mine = [s for s in stored if s.document_id == own.document_id and s.end <= source.start]
    if mine:
        prev = max(mine, key=lambda s: s.end)
    else:
        split = [s for s in split_sentences(own.text, own.document_id, own.start) if s.end <= source.start]
        if not split or (split[-1].start == own.start and own.chunk_index > 0):
            return None  # perhaps the tail of a sentence the chunk cut
        prev = split[-1]
    if prev.kind in ("heading", "row"):
        return None  # a heading or an entry's row names what the sentence is about; quoted, it runs into it
    for span in (own, *(s for s in spans if s.document_id == own.document_id and s.id != own.id)):
        if (span.start <= prev.start and source.end <= span.end
                and not span.text[prev.end - span.start:source.start - span.start].strip()):
            return replace(claim, text=f"{lead}{prev.text} {claim.text[len(lead):]}",
                           sources=(Source(span, prev.start, source.end), *claim.sources[1:]))
    return None


def past(claim: Claim, link: Claim) -> bool:
    """Whether a hop's `claim` is past the `link`: in another document (a bridge reaches one)."""
    return not same(claim, link) and claim.sources[0].span.document_id != link.sources[0].span.document_id


def distinct(claims: Sequence[Claim]) -> list[Claim]:
    """`claims` without those that say what an earlier one says."""
    return [c for i, c in enumerate(claims) if not any(same(c, d) for d in claims[:i])]


def same(a: Claim, b: Claim) -> bool:
    return repeats(a.text, a.vector, b.text, b.vector)


def repeats(a: str, a_vector: np.ndarray | None, b: str, b_vector: np.ndarray | None,
            duplicate: float = _DEFAULTS.duplicate) -> bool:
    """Whether sentence `a` says what `b` says: the same words, or vectors that agree and the same
    numbers (`same_figures`)."""
    return a == b or (similar(a_vector, b_vector, duplicate) and same_figures(a, b))


_DIGITS = re.compile(r"\d[\d,.]*\d|\d")


def same_figures(a: str, b: str) -> bool:
    """Whether two texts give the same numbers: the rows of one table ("Name: smallint; Storage
    Size: 2 bytes", "Name: integer; Storage Size: 4 bytes") read alike to the embedder but state
    different facts, so near-identical vectors alone do not make them one claim."""
    return set(_DIGITS.findall(a)) == set(_DIGITS.findall(b))


def similar(a: np.ndarray | None, b: np.ndarray | None, duplicate: float = _DEFAULTS.duplicate) -> bool:
    """Whether two sentence vectors say the same thing (cosine above `duplicate`)."""
    return a is not None and b is not None and float(a @ b) > duplicate


# "not the schema", "without a password", "except NULL": what a sentence denies
_DENIAL = re.compile(r"\b(?:not|without|except|excluding)\s+(?:(?:the|a|an|any|its|their|only)\s+)?"
                     r"([A-Za-z][\w-]*(?:[ ][A-Za-z][\w-]*){0,2})", re.IGNORECASE)


def denied(text: str) -> frozenset[str]:
    """The heads of the phrases `text` denies, stemmed as `english.content_words` stems them: the
    last word of the run of content words after the denial ("without length specifier" denies a
    specifier, not a length)."""
    out = set()
    for m in _DENIAL.finditer(text):
        run = []
        for word in m.group(1).split():
            if word.lower() in english.FUNCTION_WORDS:
                break
            run.append(word)
        out |= english.words_of(run[-1]) if run else set()
    return frozenset(out)


def denies_the_ask(question: str, sentence: Sentence) -> bool:
    """Whether the sentence denies a word a wh-question asks for: "Dump only the data, not the
    schema" is no answer to "Which option dumps only the schema?". A yes/no question is answered by
    a denial ("TRUNCATE is not MVCC-safe"), so it is never one."""
    asked = _asked_not_denied(question)
    return bool(asked) and bool(denied(sentence.text) & asked)


@lru_cache(maxsize=english.QUESTION_CACHE)  # read once per question, not once per candidate
def _asked_not_denied(question: str) -> frozenset[str]:
    """The content words a wh-question asks for and does not deny itself; none for another question."""
    first = question.split(maxsplit=1)[0].lower() if question.split() else ""
    if first not in english.WH_WORDS:
        return frozenset()
    return english.content_words(question) - denied(question)
