"""Questions asked in other words, from WordNet: what teaches the reader that an answer need not
repeat the question's words.

SQuAD's askers wrote their questions looking at the paragraph, so a question shares its words with
its answer sentence, and a reader trained on them learns to match words: "How many days of paid
leave do employees get?" picks "Expenses submitted more than 90 days after the purchase are not
reimbursed" over "New hires get 22 vacation days per calendar year" (bench/eval_results.md,
thirtieth round). An asker of a handbook uses their own words. So a share of the SQuAD questions is
also asked with the words it shares with its answer sentence changed for a WordNet synonym or a
broader word (its most common sense's hypernym: the question says "leave" where the page says
"vacation"); the answer sentence still answers, its neighbours still do not.

WordNet 3.0 (Princeton University; a BSD-style licence) is read from its database files, as
Debian's `wordnet-base` installs them (/usr/share/wordnet). Nothing here runs at answer time.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path

from ..reasoning.english import STOP, words_of

WORDNET = Path("/usr/share/wordnet")
PARTS = ("noun", "verb", "adj", "adv")
FILES = tuple(f"{kind}.{part}" for part in PARTS for kind in ("index", "data"))
INSTALL_HINT = "apt-get install wordnet-base"
SYNONYM = re.compile(r"[a-z]+(?: [a-z]+)?")  # one or two plain lower-case words: no names, no codes
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
MOST_CHANGED = 2  # more changed words make a question nobody would ask
SYNONYM_FIRST = 0.6  # a synonym keeps the question's meaning more often than a broader word


class ThesaurusError(ValueError):
    """The WordNet folder is missing or unreadable; the message names the path."""


@dataclass(frozen=True)
class Sense:
    synonyms: tuple[str, ...]  # the other words of the lemma's most common sense
    broader: tuple[str, ...]  # the words of that sense's hypernyms


def folder_problem(folder: Path) -> str:
    """What makes `folder` no WordNet database folder, naming it, or ""."""
    missing = [name for name in FILES if not (folder / name).is_file()]
    return (f"{folder} is not a WordNet 3.0 database folder (no {missing[0]}; on Debian: {INSTALL_HINT})"
            if missing else "")


class Thesaurus:
    """Each lemma's most common sense, over the part of speech it is most often tagged as."""

    def __init__(self, folder: Path = WORDNET):
        problem = folder_problem(folder)
        if problem:
            raise ThesaurusError(problem)
        self.folder = folder
        self._senses: dict[str, Sense] = {}
        self._tagged: dict[str, int] = {}  # how often each lemma's kept part is tagged in WordNet's corpus
        for part in PARTS:
            self._read_part(part)

    def sense(self, lemma: str) -> Sense | None:
        return self._senses.get(lemma)

    def _read_part(self, part: str) -> None:
        """Each lemma's first (most common) sense in this part, kept where this part has more
        tagged senses of it than the parts read before."""
        firsts: dict[str, tuple[int, int]] = {}  # lemma -> (tagged senses, first synset's offset)
        for line in _lines(self.folder / f"index.{part}"):
            fields = line.split()
            pointers = int(fields[3])
            tagged, offset = int(fields[5 + pointers]), int(fields[6 + pointers])
            if tagged > self._tagged.get(fields[0], -1):
                firsts[fields[0]] = (tagged, offset)
        synsets = self._synsets(part, {offset for _, offset in firsts.values()})
        for lemma, (tagged, offset) in firsts.items():
            words, hypernyms = synsets.get(offset, ((), ()))
            broader = tuple(w for h in hypernyms for w in synsets.get(h, ((), ()))[0])
            self._senses[lemma] = Sense(tuple(w for w in words if w != lemma), broader)
            self._tagged[lemma] = tagged

    def _synsets(self, part: str, wanted: set[int]) -> dict[int, tuple[tuple[str, ...], tuple[int, ...]]]:
        """The words and hypernym offsets of the synsets wanted, and of their hypernyms."""
        out: dict[int, tuple[tuple[str, ...], tuple[int, ...]]] = {}
        rows: dict[int, list[str]] = {}
        for line in _lines(self.folder / f"data.{part}"):
            fields = line.split()
            rows[int(fields[0])] = fields
        for offset in list(wanted):
            fields = rows.get(offset)
            if fields is None:
                continue
            words, hypernyms = _parse_synset(fields)
            out[offset] = (words, hypernyms)
            for h in hypernyms:
                if h in rows and h not in out:
                    out[h] = (_parse_synset(rows[h])[0], ())
        return out


def files_sha256(folder: Path) -> dict[str, str]:
    """sha256 of each database file read (for a reader's card)."""
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in FILES}


def _parse_synset(fields: list[str]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    count = int(fields[3], 16)
    words = tuple(fields[4 + 2 * i].split("(")[0].replace("_", " ").lower() for i in range(count))
    at = 4 + 2 * count
    pointers = int(fields[at])
    hypernyms = tuple(int(fields[at + 2 + 4 * i]) for i in range(pointers) if fields[at + 1 + 4 * i] in ("@", "@i"))
    return words, hypernyms


def _lines(path: Path):
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith(" "):  # the licence header is indented
                yield line


def reworded(question: str, sentence: str, thesaurus: Thesaurus, rng: random.Random) -> str | None:
    """The question with one or two of the words it shares with `sentence` changed for a synonym
    or a broader word that the sentence does not say; None when none could be. Capitalised words
    (names) and short words are kept."""
    said = words_of(sentence)
    shared = [m for m in WORD.finditer(question)
              if m.group().islower() and len(m.group()) > 3 and m.group() not in STOP and words_of(m.group()) & said]
    changes, wanted = [], rng.randint(1, MOST_CHANGED)
    for m in rng.sample(shared, len(shared)):
        other = _other_word(m.group(), said, thesaurus, rng)
        if other:
            changes.append((m.start(), m.end(), other))
        if len(changes) == wanted:
            break
    if not changes:
        return None
    out, last = [], 0
    for start, end, other in sorted(changes):
        out += [question[last:start], other]
        last = end
    return "".join([*out, question[last:]])


def _other_word(word: str, said: frozenset[str], thesaurus: Thesaurus, rng: random.Random) -> str | None:
    """A synonym or broader word for `word` (a plural noun gets a plural), not said by the sentence
    and not the same word by its stem."""
    plural = word.endswith("s") and thesaurus.sense(word[:-1]) is not None  # "days" is a lemma too: "life"
    sense = thesaurus.sense(word[:-1] if plural else word)
    if sense is None:
        return None
    own = words_of(word)
    options = [w for w in (*sense.synonyms, *sense.broader)
               if SYNONYM.fullmatch(w) and not words_of(w) & (own | said)]
    if not options:
        return None
    synonyms = [w for w in options if w in sense.synonyms]
    choice = rng.choice(synonyms if synonyms and rng.random() < SYNONYM_FIRST else options)
    return _plural(choice) if plural else choice


def _plural(word: str) -> str:
    if word.endswith("s"):
        return word
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
