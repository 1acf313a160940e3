"""The one renderer, on hand-made drafts: markers, citation numbering and quotes, "not found"."""

from __future__ import annotations

import re

import pytest

from rag_rlm.reasoning.base import Claim, Draft, PartDraft, Source
from rag_rlm.render import Numbering, indirect, not_found, render, with_markers
from rag_rlm.spacing import tight
from rag_rlm.types import Span

DOC = ("Expenses over $500 need the Finance Director. Hannah Lindqvist is the Finance Director. "
       "New hires get 22 vacation days. Unused days carry over.")


def span(doc: str, chunk: int, start: int, end: int, text: str = DOC) -> Span:
    return Span(doc, chunk, doc.title(), f"/{doc}.md", text[start:end], start, end, 0.9)


A = span("expense", 0, 0, 89)
B = span("vacation", 0, 89, len(DOC))


def quote(s: Span, sentence: str) -> Source:
    start = DOC.index(sentence)
    return Source(s, start, start + len(sentence))


def claim(sentence: str, *spans: Span, answer: str = "") -> Claim:
    return Claim(sentence, tuple(quote(s, sentence) for s in spans), answer=answer)


def found(question: str, *claims: Claim) -> PartDraft:
    return PartDraft(question, claims, True, 0.9)


@pytest.mark.parametrize("text,numbers,out", [
    ("Finance approves.", [1], "Finance approves [1]."),
    ("Finance approves!", [2, 1, 2], "Finance approves [2][1]!"),
    ("Is it Finance?..", [3], "Is it Finance [3]?.."),
    ("No closing punctuation", [1], "No closing punctuation [1]."),
    ("  Spread   over\nlines. ", [1], "Spread over lines [1]."),
    ("Uncited", [], "Uncited."),
    ("(In brackets.)", [4], "(In brackets [4].)"),
])
def test_markers_go_before_the_closing_punctuation(text, numbers, out):
    assert with_markers(text, numbers) == out


def test_numbers_follow_first_use_across_parts_one_number_per_span():
    draft = Draft((
        found("How many days?", claim("New hires get 22 vacation days.", B, answer="22 vacation days")),
        found("Who approves?", claim("Expenses over $500 need the Finance Director.", A),
              claim("Hannah Lindqvist is the Finance Director.", A, B)),
    ))
    shown = render(draft, "hr")
    assert shown.text == ("New hires get 22 vacation days [1].\n\n"
                          "Expenses over $500 need the Finance Director [2]. "
                          "Hannah Lindqvist is the Finance Director [2][1].")
    assert [(c.n, c.span.id) for c in shown.citations] == [(1, B.id), (2, A.id)]
    assert shown.numbers == {B.id: 1, A.id: 2}
    assert [p.citations for p in shown.parts] == [[1], [2, 1]]
    assert shown.parts[0].short_answer == "22 vacation days" and all(p.found for p in shown.parts)
    assert shown.lead == "New hires get 22 vacation days."


def test_quotes_are_collected_per_citation_in_document_order():
    first, second = "Hannah Lindqvist is the Finance Director.", "Expenses over $500 need the Finance Director."
    draft = Draft((found("Who?", claim(first, A), claim(second, A), claim(first, A)),))
    (citation,) = render(draft, "hr").citations
    assert citation.quotes == sorted({(DOC.index(s), DOC.index(s) + len(s)) for s in (first, second)})
    assert all(DOC[s:e] in (first, second) for s, e in citation.quotes)
    assert citation.to_dict()["quotes"] == [list(q) for q in citation.quotes]


def test_a_shared_numbering_continues_across_renders():
    numbering = Numbering()
    render(Draft((found("a?", claim("Unused days carry over.", B)),)), "hr", numbering)
    shown = render(Draft((found("b?", claim("Expenses over $500 need the Finance Director.", A),
                                claim("Unused days carry over.", B)),)), "hr", numbering)
    assert shown.text == "Expenses over $500 need the Finance Director [2]. Unused days carry over [1]."
    assert [c.n for c in shown.citations] == [1, 2]


def test_a_part_not_found_says_so_plainly_beside_the_found_one():
    draft = Draft((found("Who approves?", claim("Expenses over $500 need the Finance Director.", A)),
                   PartDraft("How many sick days do new hires get?")))
    shown = render(draft, "hr")
    assert shown.text == ("Expenses over $500 need the Finance Director [1].\n\n"
                          "The hr documents do not say how many sick days new hires get.")
    assert [p.found for p in shown.parts] == [True, False] and shown.parts[1].citations == []
    assert [c.n for c in shown.citations] == [1]


def test_a_whole_answer_not_found_is_one_message():
    one = render(Draft((PartDraft("What is the capital of France?"),)), "hr")
    assert one.text == one.lead == "The hr documents do not say what the capital of France is."
    assert one.citations == [] and not one.parts[0].found
    two = render(Draft((PartDraft("Who approves?"), PartDraft("Can I carry over days?"))), "")
    assert two.text == "The documents do not answer this question." and len(two.parts) == 2


@pytest.mark.parametrize("question,clause", [
    ("What is X?", "what X is"),
    ("What is the capital of France?", "what the capital of France is"),
    ("What are my benefits?", "what your benefits are"),
    ("How many X do Y get?", "how many X Y get"),
    ("How many vacation days do new hires get?", "how many vacation days new hires get"),
    ("Who approves X?", "who approves X"),
    ("Who approves expenses over $500?", "who approves expenses over $500"),
    ("Can I X?", "whether you can X"),
    ("Can I carry over vacation days?", "whether you can carry over vacation days"),
    ("Is it allowed?", "whether it is allowed"),
    ("Where can I park?", "where you can park"),
    ("How do I pin a package while I'm testing it?", "how you pin a package while you're testing it"),
    ("How do I keep my changes while I’ve got a rebase going?", "how you keep your changes while you've got a rebase going"),
    ("What do Mara Voss and Ilan Dupree have in common?", "what Mara Voss and Ilan Dupree have in common"),
    ("Who owns the US firm?", "who owns the US firm"),  # "US" is no "us"
])
def test_indirect_questions(question, clause):
    assert indirect(question) == clause
    assert not_found(question, "hr") == f"The hr documents do not say {clause}."


@pytest.mark.parametrize("question", [
    "When does the freeze start?", "Tell me about X", "X?",
    # question shapes that a word-order rule turned into broken English before
    "When was the Treaty of Kelbrook signed?",  # not "when the Treaty of Kelbrook signed was"
    "Who were once housed at Varn Hall?",  # not "who once housed at Varn Hall were"
    "What are old methods used to do?",
    "What was the strike in Ostrava about?",
    "What can a backup plan suffer from?",  # not "what a can backup plan suffer from"
    "How many weren't in Varn's expedition?",
    "When a board reached a verdict, what happened?",
    "What about the laptop?",  # a follow-up's fragment, not "what about the laptop"
])
def test_a_shape_it_cannot_turn_is_quoted(question):
    assert indirect(question) == ""
    assert not_found(question, "hr") == f"The hr documents do not answer “{question}”."


def test_no_markdown_or_labels_in_text():
    draft = Draft((
        found("Who approves?", Claim("Expenses over $500   need\nthe Finance Director", (quote(A, "Expenses over $500 need the Finance Director."),))),
        found("How many days?", claim("New hires get 22 vacation days.", B)),
    ))
    text = render(draft, "hr").text
    assert "Who approves" not in text and "How many days" not in text and "Q:" not in text
    assert not re.search(r"^\s*(?:[-*#]|\d+[.)])\s|\*\*|__|`", text, re.MULTILINE)
    assert text.split("\n\n") == ["Expenses over $500 need the Finance Director [1].",
                                  "New hires get 22 vacation days [2]."]


def test_a_dot_that_opens_a_word_keeps_its_space_and_a_stray_space_before_a_comma_goes():
    # inline HTML tags leave "pg_restore ," and "the .gitignore": the first is tidied, the second is a name
    marked = with_markers("Run pg_restore , relative to the location of the .gitignore file", [1])
    assert marked == "Run pg_restore, relative to the location of the .gitignore file [1]."


def test_an_operator_or_macro_named_by_a_mark_keeps_it_and_the_markers_go_after_it():
    # "the ? operator" is a name, not a question's end; "panic!." ends with the macro panic! and a full stop
    assert with_markers("The ? operator returns early , and the ! operator negates", [1]) == (
        "The ? operator returns early, and the ! operator negates [1].")
    assert with_markers("join returns the argument given to panic!.", [2]) == "join returns the argument given to panic! [2]."
    assert with_markers("Is it ready ?", [3]) == "Is it ready [3]?"  # a question's own mark still ends it
    assert with_markers("It is done!", [4]) == "It is done [4]!"
    assert tight("A Shortcut: the ? Operator") == "A Shortcut: the ? Operator"  # a heading's title case


def test_an_api_entrys_name_is_said_once_across_its_claims():
    """The words of an API entry before and after its example are two blocks, each opened by the
    entry's name; said one after the other, the second does not repeat it. A table row's "Name:"
    is a column, and stays."""
    text = ("Path.resolve(strict=False): Make the path absolute. "
            "Path.resolve(strict=False): \u201c..\u201d components are also eliminated. "
            "Name: date; Storage Size: 4 bytes. Name: bigint; Storage Size: 8 bytes.")
    doc = span("pathlib", 0, 0, len(text), text)

    def said(sentence: str) -> Claim:
        start = text.index(sentence)
        return Claim(sentence, (Source(doc, start, start + len(sentence)),))

    entry = render(Draft((found("What does Path.resolve do?", said("Path.resolve(strict=False): Make the path absolute."),
                                said("Path.resolve(strict=False): \u201c..\u201d components are also eliminated.")),)), "docs")
    assert entry.text == ("Path.resolve(strict=False): Make the path absolute [1]. "
                          "\u201c..\u201d components are also eliminated [1].")
    rows = render(Draft((found("Which is larger?", said("Name: date; Storage Size: 4 bytes."),
                               said("Name: bigint; Storage Size: 8 bytes.")),)), "docs")
    assert rows.text.count("Name: ") == 2


def test_a_sentence_that_answers_two_parts_is_read_once():
    """"Which ..., and can I change it?": the sentence that answers both parts is said in the first
    part's paragraph only; the second part's own answer still holds it, and a part with something
    new says only that."""
    approves = claim("Expenses over $500 need the Finance Director.", A)
    who = claim("Hannah Lindqvist is the Finance Director.", A)
    days = claim("New hires get 22 vacation days.", B)
    shown = render(Draft((found("Who approves, and who is it?", approves, who),
                          found("And is it Hannah?", who),
                          found("And the days?", who, days))), "hr")
    assert shown.text == ("Expenses over $500 need the Finance Director [1]. Hannah Lindqvist is the Finance Director [1]."
                          "\n\nNew hires get 22 vacation days [2].")
    assert [p.answer for p in shown.parts[1:]] == ["Hannah Lindqvist is the Finance Director [1].",
                                                   "Hannah Lindqvist is the Finance Director [1]. "
                                                   "New hires get 22 vacation days [2]."]


def test_a_sentence_a_later_part_says_whole_with_more_is_read_there():
    """"How long does VACUUM FULL lock the table, and what extra space does it need?": the first
    part's sentence is the opening of the second part's claim; the asker reads it once, there. A
    sentence that is only a piece of a longer one stays."""
    locks = claim("Expenses over $500 need the Finance Director.", A)
    both = claim("Expenses over $500 need the Finance Director. Hannah Lindqvist is the Finance Director.", A)
    piece = claim("Hannah Lindqvist is the Finance", A)
    shown = render(Draft((found("Who approves?", locks), found("Who is it?", both))), "hr")
    assert shown.text == "Expenses over $500 need the Finance Director. Hannah Lindqvist is the Finance Director [1]."
    assert shown.parts[0].answer == "Expenses over $500 need the Finance Director [1]."
    kept = render(Draft((found("Who?", piece), found("Who is it?", both))), "hr")
    assert kept.text.startswith("Hannah Lindqvist is the Finance [1].\n\n")
