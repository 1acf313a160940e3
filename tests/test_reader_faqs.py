"""Training questions in askers' words (`rag_rlm.reader.faqs`) from FAQ pages written here (an invented
tool, `quill`, in HTML and in Perl's POD), read by ingest's own parser and grouped with the bundled
bi-encoder; and `train-reader --faqs` writing what it trained on into the card."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rag_rlm.embed import load_embedder
from rag_rlm.reader import faqs
from rag_rlm.reader.data import Mix, build_pairs

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT.parent / "shared" / "data" / "train"

HTML = """<html><head><title>Quill FAQ — Quill 2.1 documentation</title></head><body><h1>Quill FAQ</h1>
<h2>General</h2><p>Quill is a note-taking tool for the terminal.</p>
<h3>1.1. How do I make quill start in the notes folder of my project?</h3>
<p>Set the QUILL_HOME environment variable to the folder and quill always starts there.</p>
<p>Without it, quill opens whatever folder you were in when you started it.</p>
<h3>1.2. Why does quill refuse to save a note with a colon in its name?</h3>
<p>Windows file systems reserve the colon character.</p><p>Quill keeps names portable across systems.</p>
<h3>1.3. Can quill encrypt my notes at rest?</h3><p>No, quill stores notes as plain text files.</p>
<p>Use an encrypted file system if you need that.</p>
<h3>1.4. How do I export every note as one PDF file?</h3><p>Run quill export with the pdf format flag.</p>
<p>Each note starts on a new page of the document.</p>
<h2>Installation notes</h2><p>Quill needs Python 3.9 or newer to run.</p>
</body></html>"""

POD = """=head1 NAME

quillfaq2 - Syncing notes

=head2 How do I keep notes in sync between two laptops?

Put the notes folder in any synced directory and point QUILL_HOME at it.

    export QUILL_HOME=~/Sync/notes

Quill notices changed files when it starts.

=head2 Does quill merge two edits of the same note?

No. The later save wins and the earlier one is kept as a backup copy.

=cut
"""


def _pages(tmp_path: Path) -> Path:
    (tmp_path / "faq.html").write_text(HTML, encoding="utf-8")
    (tmp_path / "quillfaq2.pod").write_text(POD, encoding="utf-8")
    (tmp_path / "index.html").write_text("<html><body><h1>Quill FAQ</h1><p>The questions, by topic.</p></body></html>")
    manifest = tmp_path / "faq_pages.txt"
    manifest.write_text(f"# the quill FAQ\n{tmp_path / 'faq.html'}\n{tmp_path}/quillfaq*.pod  # globs too\n"
                        f"{tmp_path / 'index.html'}\n")
    return manifest


def test_an_entry_is_a_heading_that_asks_with_the_sentences_under_it(tmp_path):
    manifest = _pages(tmp_path)
    html, pod, index = (faqs.entries(p) for p in faqs.pages(manifest))
    assert index == []  # a page that asks nothing
    assert [e.question for e in html] == [
        "How do I make quill start in the notes folder of my project?",  # its numbering is no part of the question
        "Why does quill refuse to save a note with a colon in its name?",
        "Can quill encrypt my notes at rest?", "How do I export every note as one PDF file?"]
    assert html[0].title == "Quill FAQ"  # the page, not the site
    assert html[0].answer == ("Set the QUILL_HOME environment variable to the folder and quill always starts there.",
                              "Without it, quill opens whatever folder you were in when you started it.")
    assert all("Python 3.9" not in s for e in html for s in e.answer)  # a heading that does not ask ends the entry
    assert pod[0].title == "Syncing notes" and pod[0].question == "How do I keep notes in sync between two laptops?"
    assert pod[0].answer == ("Put the notes folder in any synced directory and point QUILL_HOME at it.",
                             "Quill notices changed files when it starts.")  # the code between is no answer


def test_a_manifest_line_that_names_no_page_is_an_error_naming_the_line(tmp_path):
    bad = tmp_path / "pages.txt"
    bad.write_text(f"{tmp_path}/faq.html\n")
    with pytest.raises(ValueError, match=r"pages\.txt:1: no FAQ page at"):
        faqs.pages(bad)


def test_a_group_is_the_answers_first_sentence_against_other_entries_closest_to_the_question(tmp_path):
    manifest = _pages(tmp_path)
    embed = load_embedder().embed
    groups = faqs.groups(manifest, 3, embed)
    assert groups == faqs.groups(manifest, 3, embed)  # seeded
    first = next(g for g in groups if g.question.startswith("How do I make quill start"))
    assert first.positive == "Quill FAQ: Set the QUILL_HOME environment variable to the folder and quill always starts there."
    assert len(first.negatives) == faqs.HARD + faqs.RANDOM
    assert not any("QUILL_HOME environment" in t or "whatever folder" in t for t in first.negatives)  # its own: neither
    # the hardest negatives are the other entries' sentences the bi-encoder finds closest to the question
    others = [f"Quill FAQ: {s}" for e in faqs.entries(tmp_path / "faq.html")[1:] for s in e.answer]
    vectors = embed([first.question, *others])
    closest = [others[k] for k in (-(vectors[1:] @ vectors[0])).argsort(kind="stable")[:faqs.HARD]]
    assert list(first.negatives[:faqs.HARD]) == closest
    assert all(t.startswith("Quill FAQ: ") for t in first.negatives)  # under the page's title, never the question
    # the POD page has two entries: it borrows negatives from its manual's other pages (the same folder)
    synced = next(g for g in groups if "sync between two laptops" in g.question)
    assert any(t.startswith("Quill FAQ: ") for t in synced.negatives)


def test_faq_pairs_join_the_training_pairs_as_groups_of_one_answer(tmp_path):
    manifest = _pages(tmp_path)
    mix = Mix(squad1=1, same_article=1, selqa=1, squad2=1, faq_repeats=2)
    pairs = [p for p in build_pairs(TRAIN, mix, 3, faqs=manifest) if p.source == faqs.SOURCE]
    entries = sum(len(faqs.entries(p)) for p in faqs.pages(manifest))
    assert sum(p.label for p in pairs) == 2 * entries  # each entry asked twice, one answer each time
    by_group: dict[int, list] = {}
    for p in pairs:
        by_group.setdefault(p.group, []).append(p)
    assert all(sum(p.label for p in g) == 1 and len({p.question for p in g}) == 1 for g in by_group.values())


def test_train_reader_with_faqs_records_the_pages_and_how_to_rebuild(tmp_path):
    manifest = _pages(tmp_path)
    out = tmp_path / "reader"
    cmd = [sys.executable, "-m", "rag_rlm.cli", "train-reader", "--data", str(TRAIN), "--out", str(out), "--layers", "1",
           "--limit", "32", "--squad1", "20", "--same-article", "10", "--faqs", str(manifest), "--faq-repeats", "2",
           "--dev", str(ROOT.parent / "shared" / "data" / "squad2")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    card = json.loads((out / "reader.json").read_text())
    assert set(card["data"]["faq_pages_sha256"]) == {str(tmp_path / n) for n in ("faq.html", "quillfaq2.pod", "index.html")}
    readme = (out / "README.md").read_text()
    assert f"--faqs {manifest} --faq-repeats 2" in readme.split("```sh\n")[1].split("```")[0]
    assert f"| {tmp_path / 'faq.html'} | `{card['data']['faq_pages_sha256'][str(tmp_path / 'faq.html')]}` |" in readme
    (tmp_path / "empty.txt").write_text("# nothing listed\n")
    for manifest_arg, named in ((tmp_path / "empty.txt", "lists no FAQ pages"), (tmp_path / "none.txt", "--faqs")):
        done = subprocess.run(cmd[:cmd.index("--faqs")] + ["--faqs", str(manifest_arg)], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 2 and named in done.stderr
