"""Training pairs for the reader, from the public QA sets in `shared/data/train/` (one JSONL schema:
id, source, title, question, context, answers [{text, start}], is_impossible).

A pair is (question, candidate text) with a label (1: the sentence answers the question) and a
weight (how much its label is trusted). Sentences come from the same splitter ingest uses, and a
candidate reads as the reader sees it at answer time (`reader_text`: title, then the sentence):

- the sentence holding an answer's `start` answers; the other sentences of the same context that
  do not contain the answer text are same-topic negatives (the ones sharing most words with the
  question first: those are the ones a reader confuses);
- every sentence of an `is_impossible` context is a negative (SQuAD 2.0's are written by people
  to look answerable: the most trusted negatives we have);
- constructed negatives (`perturb`): an answerable question changed in one detail so that its
  own sentence no longer answers it, weighted by how sure the change is.

Everything is seeded: the same files, settings and seed give the same pairs in the same order.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..ingest.sentences import split_sentences
from ..reasoning.english import content_words, words_of
from . import apidocs
from .perturb import perturb
from .thesaurus import Thesaurus, reworded

# What each source is and how much its labels are trusted (the README of the data folder).
SQUAD1 = "squad1.0_train_explorer.jsonl.gz"
SQUAD2 = "squad2.0_train_partial.jsonl.gz"
SAME_ARTICLE = "squad1.0_train_samearticle_negative.jsonl.gz"
SELQA = "selqa_ass.jsonl.gz"
AMBIGUOUS = "squad1.0_ambiguous_start_ids.txt"
FILES = (SQUAD1, SQUAD2, SAME_ARTICLE, SELQA, AMBIGUOUS)

HUMAN_UNANSWERABLE_WEIGHT = 2.0  # SQuAD 2.0's written-to-fool negatives: rare and exactly the hard case
SAME_ARTICLE_WEIGHT = 0.5  # "a few percent may answer the question in other words" (data README)


@dataclass(frozen=True)
class Pair:
    question: str
    text: str
    label: float
    weight: float
    source: str  # which file or construction it comes from, for the card's counts
    group: int = -1  # pairs of one question and one context share a group (the listwise loss reads them together)


@dataclass(frozen=True)
class Mix:
    """How many questions of each source go into training (0: all there are)."""

    squad1: int = 20_000
    squad2: int = 0
    same_article: int = 8_000
    selqa: int = 0
    negatives_per_question: int = 2  # same-topic negatives per answerable question
    constructed: float = 0.8  # share of the squad1 questions that also give a constructed negative
    chained: float = 0.0  # share of answerable questions that also give two-sentence candidates (a chain)
    premised: float = 0.0  # share of answerable questions also asked after a premise from their own context
    storied: float = 0.0  # share of squad1 questions also told as a story: other sentences of their context first
    swapped: float = 0.0  # share of squad1 questions whose answer sentence is also read under another article's title
    echoed: float = 0.0  # share of squad1 questions whose candidates are also read under a heading that echoes the question
    reworded: float = 0.0  # share of squad1 questions also asked in other words (`thesaurus`: WordNet synonyms, broader words)
    api_docs: int = 0  # questions asked of an API manual (`apidocs`), when one is given
    faq_repeats: int = 1  # times each FAQ entry (`faqs`) is asked, each with its own random negatives


def reader_text(title: str, sentence: str, heading: str = "") -> str:
    """A candidate as the reader reads it: what it is about (title, heading), then the sentence."""
    about = " — ".join(p for p in (title, heading) if p and p != sentence)
    return f"{about}: {sentence}" if about else sentence


def read_rows(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of each training file there is (for the card)."""
    out = {}
    for name in FILES:
        path = folder / name
        if path.is_file():
            out[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


API_DOC_NEGATIVES = 3  # a manual's neighbours and mentions are the confusions it is there to teach


def build_pairs(folder: Path, mix: Mix, seed: int, api_docs: Path | None = None, faqs: Path | None = None,
                thesaurus: Thesaurus | None = None) -> list[Pair]:
    """The training pairs of every source in `folder` (and of the API manual in `api_docs`, and of
    the FAQ pages the manifest `faqs` lists), a question's candidates together (the trainer
    shuffles whole groups with the same seed). `thesaurus` is needed when `mix.reworded` > 0."""
    rng = random.Random(seed)
    reword_rng = random.Random(f"{seed}:reworded")  # its own stream: the other pairs stay those of the same seed without it
    ambiguous = _lines(folder / AMBIGUOUS)
    pairs: list[Pair] = []
    squad1 = [r for r in _rows(folder / SQUAD1) if r["id"] not in ambiguous]
    entities = _article_names(squad1)
    near = _near_titles(sorted({_title(r) for r in squad1})) if mix.swapped else {}
    for row in _sample(squad1, mix.squad1, rng):
        pairs += _answerable(row, mix.negatives_per_question, rng, 1.0, mix.chained)
        if rng.random() < mix.swapped:
            pairs += _swapped(row, near.get(_title(row), ()), rng)
        if rng.random() < mix.premised:
            pairs += _premised(row, rng)
        if rng.random() < mix.storied:
            pairs += _storied(row, rng)
        if rng.random() < mix.echoed:
            pairs += _echoed(row, mix.negatives_per_question, rng)
        if thesaurus is not None and reword_rng.random() < mix.reworded:
            pairs += _reworded(row, thesaurus, mix.negatives_per_question, reword_rng)
        if rng.random() < mix.constructed:
            pairs += _constructed(row, entities.get(row["title"], ()), rng)
    for row in _sample(list(_rows(folder / SQUAD2)), mix.squad2, rng):
        if row["is_impossible"]:
            pairs += _unanswerable(row, 3, HUMAN_UNANSWERABLE_WEIGHT)
        else:
            pairs += _answerable(row, 1, rng, 1.0)
    for row in _sample(list(_rows(folder / SAME_ARTICLE)), mix.same_article, rng):
        pairs += _unanswerable(row, 1, SAME_ARTICLE_WEIGHT)
    for row in _sample(list(_rows(folder / SELQA)), mix.selqa, rng):
        pairs += _answerable(row, mix.negatives_per_question, rng, 1.0)
    for row in _sample(apidocs.rows(api_docs, seed) if api_docs else [], mix.api_docs, rng):
        if row["is_impossible"]:
            pairs += _unanswerable(row, API_DOC_NEGATIVES - 1, 1.0)
        else:
            pairs += _answerable(row, API_DOC_NEGATIVES, rng, 1.0, mix.chained)
    if faqs is not None:
        pairs += _faq_pairs(faqs, mix.faq_repeats, seed)
    return _grouped(pairs, rng)


def _faq_pairs(manifest: Path, repeats: int, seed: int) -> list[Pair]:
    """Each FAQ entry's group (`faqs.groups`) `repeats` times, each time with its own random negatives."""
    from ..embed import load_embedder
    from .faqs import SOURCE, groups

    embed = load_embedder().embed
    out: list[Pair] = []
    for g in groups(manifest, seed, embed, repeats):
        out.append(Pair(g.question, g.positive, 1.0, 1.0, SOURCE))
        out += [Pair(g.question, t, 0.0, 1.0, SOURCE) for t in g.negatives]
    return out


def _grouped(pairs: list[Pair], rng: random.Random) -> list[Pair]:
    """Each run of pairs with the same question (as built: one context's candidates) as a group,
    the groups in a seeded random order."""
    groups: list[list[Pair]] = []
    last = None
    for p in pairs:
        if p.question != last or p.source.startswith("constructed"):
            groups.append([])
            last = p.question
        groups[-1].append(p)
    rng.shuffle(groups)
    return [replace(p, group=g) for g, members in enumerate(groups) for p in members]


def _rows(path: Path) -> Iterator[dict]:
    return read_rows(path) if path.is_file() else iter(())


def _lines(path: Path) -> set[str]:
    return set(path.read_text(encoding="utf-8").split()) if path.is_file() else set()


def _sample(rows: list[dict], n: int, rng: random.Random) -> list[dict]:
    return rows if n <= 0 or n >= len(rows) else rng.sample(rows, n)


def _title(row: dict) -> str:
    return row.get("title", "").replace("_", " ")


def _sentences(row: dict) -> list[tuple[int, int, str]]:
    return [(s.start, s.end, s.text) for s in split_sentences(row["context"]) if len(s.text.split()) >= 3]


def answer_sentence(row: dict) -> tuple[str, list[str]] | None:
    """The sentence that holds the first answer's start, and the other sentences that do not say
    the answer text (safe negatives); None when the answer falls outside every sentence."""
    answer = row["answers"][0]
    sentences = _sentences(row)
    hit = next((t for s, e, t in sentences if s <= answer["start"] < e), None)
    if hit is None:
        return None
    needle = answer["text"].strip().lower()
    others = [t for _, _, t in sentences if t != hit and needle not in t.lower()]
    return hit, others


def _answerable(row: dict, negatives: int, rng: random.Random, weight: float, chained: float = 0.0) -> list[Pair]:
    found = answer_sentence(row) if row["answers"] else None
    if found is None:
        return []
    hit, others = found
    title, q, source = _title(row), row["question"], row["source"]
    out = [Pair(q, reader_text(title, hit), 1.0, weight, source)]
    out += [Pair(q, reader_text(title, t), 0.0, weight, source) for t in _hardest(q, others, negatives, rng)]
    if others and rng.random() < chained:  # answering reads a bridge as two sentences: so does training
        before, wrong = rng.choice(others), rng.choice(others)
        out += [Pair(q, f"{reader_text(title, before)} {reader_text(title, hit)}", 1.0, weight, f"{source}:chain"),
                Pair(q, f"{reader_text(title, before)} {reader_text(title, wrong)}", 0.0, weight, f"{source}:chain")]
    return out


PREMISE_WORDS = 30  # a premise longer than this would crowd the sentence out of the reader's tokens


def _premised(row: dict, rng: random.Random) -> list[Pair]:
    """The question asked after a premise taken from its own context ("Kate Ramsay is a character
    of Neighbours, created by whom?" asks what the premise does not say): the premise sentence
    alone does not answer it, the answer sentence does, alone or read after the premise (a
    chain). Without these a reader takes a sentence that repeats the question for its answer."""
    found = answer_sentence(row)
    if found is None:
        return []
    hit, others = found
    premises = [t for t in others if 6 <= len(t.split()) <= PREMISE_WORDS]
    if not premises:
        return []
    premise, q, title = rng.choice(premises), row["question"].strip(), _title(row)
    if rng.random() < 0.5:
        asked = f"{premise} {q}"
    else:
        asked = f"{premise.rstrip(' .')}, {q[:1].lower()}{q[1:]}"
    source = f"{row['source']}:premise"
    return [Pair(asked, reader_text(title, hit), 1.0, 1.0, source),
            Pair(asked, reader_text(title, premise), 0.0, 1.0, source),
            Pair(asked, f"{reader_text(title, premise)} {reader_text(title, hit)}", 1.0, 1.0, source)]


STORY_WORDS = (5, 20, 36)  # a scene sentence's least and most words, the scene's most: the ask must fit the tokens


def _storied(row: dict, rng: random.Random) -> list[Pair]:
    """The question told as a story, as askers of a manual tell theirs ("My export shows \\u00e9 instead
    of é, while the CSV looks fine. How do I get real UTF-8 in the JSON file?"): two or three other
    sentences of its own context said first, then the question. The answer sentence still answers;
    the scene's sentences, which share the most words with what is asked, do not. A reader that
    learned from short questions picks the sentence that repeats the scene."""
    found = answer_sentence(row)
    if found is None:
        return []
    hit, others = found
    least, most, scene_most = STORY_WORDS
    scene = [t for t in others if least <= len(t.split()) <= most]
    if len(scene) < 2:
        return []
    told = rng.sample(scene, min(len(scene), rng.choice((2, 3))))
    while len(told) > 1 and sum(len(t.split()) for t in told) > scene_most:
        told.pop()
    title, source = _title(row), f"{row['source']}:story"
    asked = " ".join([*told, row["question"].strip()])
    return ([Pair(asked, reader_text(title, hit), 1.0, 1.0, source)]
            + [Pair(asked, reader_text(title, t), 0.0, 1.0, source) for t in told])


SWAPPED_WEIGHT = 0.7  # a sentence that names nobody may still fit another subject now and then
NEAR_TITLES = 12  # a swapped title is one of the articles nearest to the question's own


def _near_titles(titles: Sequence[str]) -> dict[str, list[str]]:
    """Each article title's nearest other titles by the bundled embedder: a neighbouring title is
    the confusion a manual's neighbouring entry makes; a random one would be too easy to tell."""
    from ..embed import load_embedder

    vectors = load_embedder().embed(list(titles))
    similar = vectors @ vectors.T
    return {t: [titles[j] for j in np.argsort(-similar[i], kind="stable") if j != i][:NEAR_TITLES]
            for i, t in enumerate(titles)}


def _swapped(row: dict, titles: Sequence[str], rng: random.Random) -> list[Pair]:
    """The answer sentence read under a neighbouring article's title, when the question names its
    subject and the sentence does not (it says "it", "the club", "the default"): then what the
    sentence is about comes from its title or heading alone, and under another one it does not
    answer. A manual's "The default value is 100 buffers" under temp_buffers does not answer the
    question about shared_buffers. Kept in the question's group, beside the pair it contrasts."""
    found = answer_sentence(row)
    if found is None:
        return []
    hit, title, q = found[0], _title(row), row["question"]
    named, own = content_words(title), content_words(hit)
    if not named & content_words(q) or named & own:
        return []
    usable = [t for t in titles if not content_words(t) & (content_words(q) | own | named)]
    if not usable:
        return []
    return [Pair(q, reader_text(rng.choice(usable), hit), 0.0, SWAPPED_WEIGHT, f"{row['source']}:swapped")]


ECHO_WORDS = 4  # a section heading is a few words


def _echoed(row: dict, negatives: int, rng: random.Random) -> list[Pair]:
    """The answer sentence and its hardest neighbours again, each read under a heading made of the
    question's own words ("JSON Object Format" for "How do I list the queue in JSON format?"): in
    a manual the heading over a sentence often repeats the asked words while the sentence says
    something else. Under one heading for all, only the sentence tells them apart."""
    found = answer_sentence(row)
    if found is None:
        return []
    hit, others = found
    q, title = row["question"], _title(row)
    asked = content_words(q)
    words = [w for w in re.findall(r"[\w'-]+", q) if words_of(w) & asked]
    if len(words) < 2:
        return []
    start = rng.randrange(max(1, len(words) - ECHO_WORDS + 1))
    heading = " ".join(w[:1].upper() + w[1:] for w in words[start:start + ECHO_WORDS])
    source = f"{row['source']}:echoed"
    return ([Pair(q, reader_text(title, hit, heading), 1.0, 1.0, source)]
            + [Pair(q, reader_text(title, t, heading), 0.0, 1.0, source) for t in _hardest(q, others, negatives, rng)])


REWORDED_WEIGHT = 0.5  # a word's most common sense is not always the sense the question meant


def _reworded(row: dict, thesaurus: Thesaurus, negatives: int, rng: random.Random) -> list[Pair]:
    """The question asked in other words (`thesaurus.reworded`): its answer sentence still answers,
    its hardest neighbours still do not, though none repeats the changed words."""
    found = answer_sentence(row)
    if found is None:
        return []
    hit, others = found
    asked = reworded(row["question"], hit, thesaurus, rng)
    if asked is None:
        return []
    title, source = _title(row), f"{row['source']}:reworded"
    return ([Pair(asked, reader_text(title, hit), 1.0, REWORDED_WEIGHT, source)]
            + [Pair(asked, reader_text(title, t), 0.0, REWORDED_WEIGHT, source)
               for t in _hardest(asked, others, negatives, rng)])


def _unanswerable(row: dict, negatives: int, weight: float) -> list[Pair]:
    title, q = _title(row), row["question"]
    texts = [t for _, _, t in _sentences(row)]
    return [Pair(q, reader_text(title, t), 0.0, weight, row["source"]) for t in _hardest(q, texts, negatives, None)]


def _hardest(question: str, texts: list[str], n: int, rng: random.Random | None) -> list[str]:
    """The `n` texts sharing most content words with the question (ties in random order), except
    that one of every two picks is random when `rng` is given: a reader must also learn that a
    sentence with few shared words is no answer."""
    words = content_words(question)
    ranked = sorted(texts, key=lambda t: -len(words & content_words(t)))
    if rng is None or n < 2:
        return ranked[:n]
    hard = ranked[: (n + 1) // 2]
    rest = [t for t in texts if t not in hard]
    return hard + rng.sample(rest, min(len(rest), n - len(hard)))


def _constructed(row: dict, names: tuple[str, ...], rng: random.Random) -> list[Pair]:
    found = answer_sentence(row)
    if found is None:
        return []
    hit = found[0]
    changed = perturb(row["question"], hit, row["context"], names, rng)
    if changed is None:
        return []
    return [Pair(changed.question, reader_text(_title(row), hit), 0.0, changed.weight, f"constructed:{changed.kind}")]


def _article_names(rows: list[dict]) -> dict[str, tuple[str, ...]]:
    """The capitalised names each article's contexts use: what an entity swap draws from."""
    from .perturb import names_in

    seen: dict[str, dict[str, None]] = {}
    done: set[str] = set()
    for row in rows:
        key = row["context"][:80]
        if key in done:
            continue
        done.add(key)
        bucket = seen.setdefault(row["title"], {})
        for name in names_in(row["context"]):
            bucket.setdefault(name, None)
    return {title: tuple(names) for title, names in seen.items()}
