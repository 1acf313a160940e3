"""Questions asked in other words (`rag_rlm.reader.thesaurus`): WordNet read from its database
files, a question's shared words changed, and the pairs `train-reader --reworded` adds.

The WordNet folder is written here in WordNet 3.0's own file format (byte offsets included), a few
synsets of it, so the test needs no installed WordNet."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from rag_rlm.reader.data import Mix, build_pairs
from rag_rlm.reader.thesaurus import FILES, Thesaurus, ThesaurusError, reworded
from rag_rlm.reasoning.english import words_of

ROOT = Path(__file__).resolve().parent.parent

# (key, words, hypernym keys) of each noun synset; index lines list a lemma's senses, most common first
NOUN_SYNSETS = {
    "leave": (["leave", "leave_of_absence"], []),
    "vacation": (["vacation", "holiday"], ["leave"]),
    "worker": (["worker"], []),
    "employee": (["employee"], ["worker"]),
    "hire": (["hire"], ["employee"]),
    "day": (["day", "twenty-four_hours"], []),
    "vacation_place": (["vacation_spot"], []),
}
NOUN_INDEX = {  # lemma -> (senses, most common first; how many are tagged)
    "leave": (["leave"], 2), "leave_of_absence": (["leave"], 1), "vacation": (["vacation", "vacation_place"], 1),
    "holiday": (["vacation"], 1), "worker": (["worker"], 3), "employee": (["employee"], 1), "hire": (["hire"], 1),
    "day": (["day"], 9), "twenty-four_hours": (["day"], 0), "vacation_spot": (["vacation_place"], 0),
}
VERB_INDEX = {"hire": 4}  # "hire" is more often a verb: its verb sense (no synonyms here) is the one kept


def _data_file(synsets: dict, letter: str) -> tuple[str, dict[str, int]]:
    """data.<part> with each synset at its true byte offset (the licence header first)."""
    header = "  1 This software and database is being provided to you, the LICENSEE, by Princeton University\n"
    offsets, at = {}, len(header)
    for key in synsets:  # every line below has the same length whatever the offsets are: 8 digits
        offsets[key] = at
        at += len(_data_line(key, synsets, {k: 0 for k in synsets}, letter))
    return header + "".join(_data_line(k, synsets, offsets, letter) for k in synsets), offsets


def _data_line(key: str, synsets: dict, offsets: dict[str, int], letter: str) -> str:
    words, hypernyms = synsets[key]
    said = " ".join(f"{w} 0" for w in words)
    pointers = " ".join(f"@ {offsets[h]:08d} {letter} 0000" for h in hypernyms)
    return f"{offsets[key]:08d} 03 {letter} {len(words):02x} {said} {len(hypernyms):03d} {pointers} | a gloss\n"


@pytest.fixture(scope="module")
def wordnet(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wordnet")
    for name in FILES:
        (folder / name).write_text("  1 licence header\n", encoding="utf-8")
    text, offsets = _data_file(NOUN_SYNSETS, "n")
    (folder / "data.noun").write_text(text, encoding="utf-8")
    lines = [f"{lemma} n {len(senses)} 1 @ {len(senses)} {tagged} " + " ".join(f"{offsets[s]:08d}" for s in senses)
             for lemma, (senses, tagged) in sorted(NOUN_INDEX.items())]
    (folder / "index.noun").write_text("  1 licence header\n" + "\n".join(lines) + "\n", encoding="utf-8")
    verb_text, verb_offsets = _data_file({"hire_verb": (["hire", "engage"], [])}, "v")
    (folder / "data.verb").write_text(verb_text, encoding="utf-8")
    (folder / "index.verb").write_text(
        "  1 licence header\n" + f"hire v 1 0 1 {VERB_INDEX['hire']} {verb_offsets['hire_verb']:08d}\n", encoding="utf-8")
    return folder


def test_each_lemma_reads_its_most_common_sense_and_that_senses_broader_words(wordnet):
    words = Thesaurus(wordnet)
    vacation = words.sense("vacation")
    assert vacation.synonyms == ("holiday",)  # the first sense, not "vacation spot"
    assert vacation.broader == ("leave", "leave of absence")  # underscores read as spaces
    assert words.sense("employee").synonyms == () and words.sense("employee").broader == ("worker",)
    assert words.sense("hire").synonyms == ("engage",)  # tagged 4 times as a verb, once as a noun
    assert words.sense("nonesuch") is None


def test_a_folder_that_is_not_wordnet_is_an_error_naming_it(tmp_path):
    with pytest.raises(ThesaurusError, match=str(tmp_path)) as caught:
        Thesaurus(tmp_path)
    assert "wordnet-base" in str(caught.value)


def test_a_question_is_reworded_only_where_it_shares_words_with_its_sentence(wordnet):
    words = Thesaurus(wordnet)
    sentence = "Halcyon employees get 22 vacation days per calendar year."
    question = "How many vacation days do Halcyon employees get?"
    seen = Counter(reworded(question, sentence, words, random.Random(seed)) for seed in range(40))
    assert None not in seen and len(seen) > 1
    for asked in seen:
        changed = words_of(question) - words_of(asked)
        assert 1 <= len(changed) <= 2 and changed <= words_of(sentence)  # only shared words change
        assert not (words_of(asked) - words_of(question)) & words_of(sentence)  # into words the sentence does not say
        assert "Halcyon" in asked and asked.endswith(" get?")  # names and unshared words are kept
    assert any("workers" in a for a in seen)  # a plural noun's broader word is plural too
    assert reworded("Who founded the company?", sentence, words, random.Random(1)) is None


def _training_folder(tmp_path: Path) -> Path:
    context = ("Halcyon Labs is a software company in Lisbon. New employees get 22 vacation days per calendar year. "
               "Employees may work remotely up to 3 days per week. Expenses over $500 need the director's approval.")
    rows = [{"id": f"q{i}", "source": "squad1.0_train_explorer", "title": "Halcyon Labs", "question": q,
             "context": context, "answers": [{"text": a, "start": context.index(a)}], "is_impossible": False}
            for i, (q, a) in enumerate([("How many vacation days do new employees get?", "22"),
                                        ("How many days per week can employees work remotely?", "3"),
                                        ("Where is Halcyon Labs based?", "Lisbon")])]
    folder = tmp_path / "train"
    folder.mkdir()
    with gzip.open(folder / "squad1.0_train_explorer.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return folder


def test_reworded_pairs_are_added_beside_the_same_pairs_as_without_them(tmp_path, wordnet):
    data, words = _training_folder(tmp_path), Thesaurus(wordnet)
    mix = Mix(squad1=0, same_article=0, constructed=0.0)
    plain = build_pairs(data, mix, 7)
    both = build_pairs(data, replace(mix, reworded=1.0), 7, thesaurus=words)
    assert both == build_pairs(data, replace(mix, reworded=1.0), 7, thesaurus=words)  # seeded
    ungrouped = Counter(replace(p, group=-1) for p in both if not p.source.endswith(":reworded"))
    assert ungrouped == Counter(replace(p, group=-1) for p in plain)
    added = [p for p in both if p.source.endswith(":reworded")]
    asked = {p.question for p in added}
    assert asked and not asked & {p.question for p in plain}
    for question in asked:
        group = [p for p in added if p.question == question]
        assert len({p.group for p in group}) == 1 and [p.label for p in group].count(1.0) == 1
        positive = next(p for p in group if p.label == 1.0)
        assert "vacation days" in positive.text or "remotely" in positive.text
        assert all(p.weight < 1.0 for p in group)  # a word's common sense may not be the one meant


def test_train_reader_refuses_a_missing_thesaurus_and_a_share_out_of_range(tmp_path):
    data = _training_folder(tmp_path)
    base = [sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(data), "--out", str(tmp_path / "r")]
    done = subprocess.run([*base, "--reworded", "0.5", "--thesaurus", str(tmp_path / "nowhere")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and "--thesaurus" in done.stderr and str(tmp_path / "nowhere") in done.stderr
    done = subprocess.run([*base, "--reworded", "1.5"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and "--reworded" in done.stderr
    assert not (tmp_path / "r").exists()
