"""The extractive reasoner's text rules: comparison splits on named things and the residual
question a bridge follow-up asks."""

from __future__ import annotations

import pytest

from rag_rlm.reasoning.rules import entities, residual_question, split_question


def test_comparison_of_named_things_gives_one_question_per_thing():
    parts = split_question("Which band was formed first, The Exies or Circus Diablo?")
    assert [p.split(": ")[0] for p in parts] == ["Exies", "Circus Diablo"]
    assert all(p.endswith("Which band was formed first?") for p in parts)
    parts = split_question("Are Marian Gold and Jung Eun-ji members of the same band?")
    assert parts == ["Marian Gold: Are members of the same band?", "Jung Eun-ji: Are members of the same band?"]


def test_or_inside_a_phrase_is_no_comparison():
    assert split_question("Who directed the film that was shot in or around Leland, North Carolina in 1986") == []


def test_one_named_thing_is_no_comparison():
    assert split_question("Which river flows through the town where Ada Quill was born?") == []


def test_residual_question_drops_the_names_and_keeps_the_ask():
    assert residual_question("Which river flows through the town where Ada Quill was born?") == \
        "Which river flows through the town where was born?"
    assert residual_question("Who scored the first goal for Peter Bonetti's team?") == \
        "Who scored the first goal for team?"
    # too little left: the whole question
    assert residual_question("Who is Ada Quill?") == "Who is Ada Quill?"


def test_several_and_conjoined_questions_still_split():
    assert split_question("Who approves leave? How many days do new staff get?") == [
        "Who approves leave?", "How many days do new staff get?"]
    assert split_question("Who approves expenses and how many days of leave do we get?") == [
        "Who approves expenses?", "How many days of leave do we get?"]


def test_a_later_parts_pronoun_is_the_name_the_first_part_gives():
    assert split_question("When was Halcyon founded and who founded it?") == [
        "When was Halcyon founded?", "Who founded Halcyon?"]


@pytest.mark.parametrize(("text", "names"), [
    # capitalised only because they open a sentence or a manual's description: no names, no hops
    ("max_connections (integer): Determines the maximum number of concurrent connections.", []),
    ("Otherwise, the server listens on Unix sockets only.", ["Unix"]),
    ("port (integer): Specifies the TCP port the server listens on.", ["TCP"]),
    ("Generally the Board decides.", ["Board"]),
    # names that open a sentence stay names
    ("Paris is the capital of France.", ["Paris", "France"]),
    ("Smith, who founded Acme, left.", ["Smith", "Acme"]),
    ("Jones was born in Wales. Athens is older.", ["Jones", "Wales", "Athens"]),
    ("Shelly Beach lies north of Sgt. James Doakes Park.", ["Shelly Beach", "Sgt. James Doakes Park"]),
    ("Originally, it began in the Iron Age, in August.", ["Iron Age"]),
    # a conjunction, preposition or participle opening a sentence is no part of the name after it
    ("Born in Salt Lake City, he moved. Even so, Though Britain won.", ["Salt Lake City", "Britain"]),
    ("Following the war, he left for Tulsa.", ["Tulsa"]),
    # a possessive names its owner: "Peter Bonetti", not "Peter Bonetti's"
    ("Who scored for Peter Bonetti's team on Earth’s orbit?", ["Peter Bonetti", "Earth"]),
])
def test_words_capitalised_for_opening_a_sentence_are_no_entities(text, names):
    assert entities(text) == names


def test_a_table_rows_column_names_are_labels_not_entities():
    # the PostgreSQL manual's numeric types table, as a row is stored
    row = "Name: bigint; Storage Size: 8 bytes; Description: large-range integer; Range: -9223372036854775808 to +9223372036854775807"
    assert entities(row) == []
    assert entities("Country: France; Capital: Paris") == ["France", "Paris"]
    assert "Natural Born Killers" in entities("Natural Born Killers: A Soundtrack for an Oliver Stone Film is a record.")
