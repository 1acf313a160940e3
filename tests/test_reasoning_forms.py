"""The question's surface forms (rules of rag_rlm.reasoning.rules): parts, sides, the residual
question a bridge follow-up asks, entities; and the rule table itself: its order and switches."""

from __future__ import annotations

import pytest

from rag_rlm.errors import ConfigError
from rag_rlm.reasoning.base import SubQuestion
from rag_rlm.reasoning.forms import (
    asking_sentence,
    core_question,
    entities,
    novel_entities,
    plan_by_form,
    remarked_after,
    residual_question,
    split_question,
)
from rag_rlm.reasoning.rules import NAMES, RULES, RuleSet


def test_entity_comparison():
    parts = split_question("Which club was founded first, The Harrow Lights or Velvet Orchard?")
    assert [p.split(": ")[0] for p in parts] == ["Harrow Lights", "Velvet Orchard"]
    assert all(p.endswith("Which club was founded first?") for p in parts)
    parts = split_question("Are Mara Voss and Ilan Dupree members of the same band?")
    assert parts == ["Mara Voss: Are members of the same band?", "Ilan Dupree: Are members of the same band?"]
    parts = split_question("Are Mara Voss and Ilan Dupree both Welsh painters?")
    assert parts == ["Mara Voss: Are both Welsh painters?", "Ilan Dupree: Are both Welsh painters?"]
    # names joined by "or" without a comparison's cue or a choice between them: either one, no comparison
    assert split_question("What output do I get with Gradle or Maven if I never set BUILD_MODE?") == []
    assert [p.split(": ")[0] for p in split_question("Which painter is Welsh, Mara Voss or Ilan Dupree?")] == [
        "Mara Voss", "Ilan Dupree"]


def test_either_or():
    plan = plan_by_form("Which replaces a larger share of salary: short-term or long-term disability insurance?")
    assert [s.focus for s in plan.sub_questions] == ["short-term disability insurance", "long-term disability insurance"]
    assert plan.rules == ("either_or_comparison",) and plan.comparison == "larger"


def test_a_yes_no_question_with_or_is_no_comparison():
    assert plan_by_form("Does the company pay for a gym or fitness membership?").sub_questions == ()


def test_both_comparison():
    plan = plan_by_form("Are brannock and quillon both card games?")
    assert [s.focus for s in plan.sub_questions] == ["brannock", "quillon"] and plan.rules == ("both_comparison",)


def test_the_same_place_as_another_thing_is_no_comparison():
    assert split_question("In which country is Harlow, in the same county as Kelbrook?") == []


def test_or_inside_a_phrase_is_no_comparison():
    assert split_question("Who painted the mural that was made in or near Kelbrook, Osterland in 1986") == []


def test_one_named_thing_is_no_comparison():
    assert split_question("Which river flows through the town where Ada Quill was born?") == []


def test_residual_question_drops_the_names_and_keeps_the_ask():
    assert residual_question("Which river flows through the town where Ada Quill was born?") == \
        "Which river flows through the town where was born?"
    assert residual_question("Who scored the first goal for Tam Oduya's team?") == \
        "Who scored the first goal for team?"
    # a question that opens with a name keeps no word of it
    assert residual_question("Kelbrook Harbour Radio belongs to a company started by whom?") == \
        "belongs to a company started by whom?"
    # too little left: the whole question
    assert residual_question("Who is Ada Quill?") == "Who is Ada Quill?"


def test_several_questions():
    assert split_question("Who approves leave? How many days do new staff get?") == [
        "Who approves leave?", "How many days do new staff get?"]
    # a "?" that a word of the same question follows names an operator, and ends nothing
    assert split_question("What does the ? operator do when the value is an error?") == []
    # what a follow-up carried from the earlier question, in parentheses after it, is no question
    assert split_question("And if I leave the number out, how many does it use? (compile jobs run)") == []
    # a statement after the question says what the asker is after: it asks nothing of its own
    assert split_question("How can a cleanup step change what my function returns? I want to report the error "
                          "that closing the file gave.") == []


def test_conjoined_questions():
    assert split_question("Who approves expenses and how many days of leave do we get?") == [
        "Who approves expenses?", "How many days of leave do we get?"]


def test_shared_subject():
    plan = plan_by_form("When was Halcyon founded and who founded it?")
    assert [s.text for s in plan.sub_questions] == ["When was Halcyon founded?", "Who founded Halcyon?"]
    assert plan.rules == ("conjoined_questions", "shared_subject")
    off = plan_by_form("When was Halcyon founded and who founded it?", RuleSet(["shared_subject"]))
    assert [s.text for s in off.sub_questions] == ["When was Halcyon founded?", "Who founded it?"]
    # a code name, or the subject of "does a date use", is the thing "it" stands for
    plan = plan_by_form("What does shutil.copy2 do and what does it return?")
    assert [s.text for s in plan.sub_questions] == ["What does shutil.copy2 do?", "What does shutil.copy2 return?"]
    plan = plan_by_form("How much storage does a date use and what is its highest value?")
    assert plan.sub_questions[1].text == "What is the date's highest value?"
    # of several code names, the one the first part asks about: the subject after its auxiliary
    plan = plan_by_form("What does max_retries in make_client do, and what is it set to by default?")
    assert plan.sub_questions[1].text == "What is max_retries set to by default?"
    # ... but not "them": a thing's name says nothing of what "they" are
    plan = plan_by_form("What does pg_dump do with large objects and how do I restore them?")
    assert plan.sub_questions[1].text == "How do I restore them?" and plan.rules == ("conjoined_questions",)


def test_answer_subject():
    """A pronoun after a part that asks for a thing by its kind is that thing: the later part
    waits for the first part's answer. After a part that names its thing, it is that name."""
    plan = plan_by_form("Which setting limits the memory used by VACUUM and CREATE INDEX, and what is its default?")
    assert [(s.text, s.depends_on) for s in plan.sub_questions] == [
        ("Which setting limits the memory used by VACUUM and CREATE INDEX?", ()), ("What is #1's default?", (0,))]
    assert plan.rules == ("conjoined_questions", "answer_subject")
    plan = plan_by_form("What tool restores an archive and what does it need?")
    assert plan.sub_questions[1] == SubQuestion("What does #1 need?", (0,))
    plan = plan_by_form("Which function returns an object over and over, and how many times does it repeat it?")
    assert plan.sub_questions[1].text == "How many times does #1 repeat it?"
    # "what" and a verb asks for no thing; no pronoun, nothing to wait for
    assert plan_by_form("What happens if port 5000 is taken and how do I change it?").rules == ("conjoined_questions",)
    assert plan_by_form("Which port is the default and what is the default user?").rules == ("conjoined_questions",)
    off = plan_by_form("What tool restores an archive and what does it need?", RuleSet(["answer_subject"]))
    assert [s.depends_on for s in off.sub_questions] == [(), ()]


def test_the_rule_table_is_ordered_named_and_switchable():
    assert NAMES[:4] == ("several_questions", "conjoined_questions", "answer_subject", "shared_subject")
    assert len(set(NAMES)) == len(NAMES) and all(r.why and r.test and r.matches and r.does for r in RULES)
    stages = [r.stage for r in RULES]
    assert stages.index("plan") < stages.index("answer") < stages.index("merge") < stages.index("reflect")
    rules = RuleSet(["conjoined_questions", " bridge_entities "])
    assert "conjoined_questions" not in rules and "several_questions" in rules
    assert rules.names == tuple(n for n in NAMES if n not in {"conjoined_questions", "bridge_entities"})
    assert plan_by_form("Who approves expenses and how many days of leave do we get?", rules).sub_questions == ()
    with pytest.raises(ConfigError, match="unknown rule.*no_such_rule.*several_questions"):
        RuleSet(["no_such_rule"])
    for rule in RULES:  # the test named for each rule exists
        path, _, name = rule.test.partition("::")
        text = open(path, encoding="utf-8").read()
        assert not name or f"def {name}" in text, rule


@pytest.mark.parametrize(("text", "names"), [
    # capitalised only because they open a sentence or a manual's description: no names, no hops
    ("max_connections (integer): Determines the maximum number of concurrent connections.", []),
    ("Otherwise, the server listens on Unix sockets only.", ["Unix"]),
    ("port (integer): Specifies the TCP port the server listens on.", ["TCP"]),
    ("Generally the Board decides.", ["Board"]),
    # an imperative description and a program's literals ("strict=False")
    ("Path.resolve(strict=False): Make the path absolute, resolving any symlinks.", ["Path.resolve"]),
    ("Return a new object; None if the key is missing and True otherwise.", []),
    # names that open a sentence stay names
    ("Paris is the capital of France.", ["Paris", "France"]),
    ("Smith, who founded Acme, left.", ["Smith", "Acme"]),
    ("Jones was born in Wales. Athens is older.", ["Jones", "Wales", "Athens"]),
    ("Shelly Beach lies north of Sgt. James Doakes Park.", ["Shelly Beach", "Sgt. James Doakes Park"]),
    ("Originally, it began in the Iron Age, in August.", ["Iron Age"]),
    # a conjunction, preposition or participle opening a sentence is no part of the name after it
    ("Born in Salt Lake City, he moved. Even so, Though Britain won.", ["Salt Lake City", "Britain"]),
    ("Following the war, he left for Tulsa.", ["Tulsa"]),
    # a possessive names its owner: "Tam Oduya", not "Tam Oduya's"
    ("Who scored for Tam Oduya's team on Earth’s orbit?", ["Tam Oduya", "Earth"]),
])
def test_words_capitalised_for_opening_a_sentence_are_no_entities(text, names):
    assert entities(text) == names


def test_a_table_rows_column_names_are_labels_not_entities():
    # the PostgreSQL manual's numeric types table, as a row is stored
    row = "Name: bigint; Storage Size: 8 bytes; Description: large-range integer; Range: -9223372036854775808 to +9223372036854775807"
    assert entities(row) == []
    assert entities("Country: France; Capital: Paris") == ["France", "Paris"]
    assert "Natural Born Killers" in entities("Natural Born Killers: A Soundtrack for an Oliver Stone Film is a record.")


def test_a_name_that_is_a_word_the_question_says_is_no_bridge():
    """"Dates are counted according to the Gregorian calendar" names no other thing to look up for a
    question about "the date's highest value": "Dates" is the question's own word, capitalised."""
    text = "Dates are counted according to the Gregorian calendar (see Section B.6 for more information)."
    assert novel_entities("What is the date's highest value?", text) == ["Gregorian", "Section B.6"]
    assert novel_entities("Which calendar counts dates?", text) == ["Gregorian", "Section B.6"]
    assert novel_entities("Who wrote the Gregorian reform?", text) == ["Dates", "Section B.6"]


def test_long_question():
    q = "Dutch painter Ann Lee, known for her portraits of various sailors including Tam Oduya, is mother to which actress?"
    assert core_question(q) == "Dutch painter Ann Lee is mother to which actress?"
    assert core_question("At the 2001 count of every household in the land, what was the population of the town "
                         "where Ann Lee was born?") == "what was the population of the town where Ann Lee was born?"
    assert core_question("Who approves expenses, leave and travel?") == ""  # short: read as asked
    assert core_question("Which river flows through the town where Ada Quill was born in the year of the flood?") == ""


def test_a_question_told_as_a_story_is_read_by_its_asking_sentence():
    """The scene names what is meant; the reader reads the sentence that asks better alone. A
    parenthesis is no sentence's end, and an asking sentence that says nothing alone is no core."""
    story = ("Our nightly job writes the report twice and the second copy comes out empty. "
             "Does the scheduler retry a job that timed out?")
    assert core_question(story) == "Does the scheduler retry a job that timed out?"
    assert asking_sentence(story) == "Does the scheduler retry a job that timed out?"
    aside = ("How do I write an upsert (INSERT ... ON CONFLICT DO UPDATE) for the database in this library, "
             "and how do I say which columns conflict?")
    assert asking_sentence(aside) == ""  # one sentence: the comma rule reads it
    assert core_question(aside) == "How do I write an upsert (INSERT ... ON CONFLICT DO UPDATE) for the database in this library?"
    assert asking_sentence("Our nightly job writes the report twice and the second copy comes out empty. Why does it?") == ""
    # asked first, remarked on after: the asked sentence was written to be read alone
    remark = "Which setting replaces a worker whose memory grows past a limit? We load a leaky C extension."
    assert remarked_after(remark) and core_question(remark) == "Which setting replaces a worker whose memory grows past a limit?"
    assert not remarked_after(story) and not remarked_after("Which setting replaces a worker whose memory grows?")


def test_a_comma_inside_code_or_a_parenthesis_sets_off_no_clause():
    """`for i, r := range s` and f(a, b) are one thing each: the core keeps them whole."""
    q = "When I loop with `for i, r := range s` over a string holding broken bytes, which rune do I get for them?"
    assert core_question(q) == "When I loop with `for i, r := range s` over a string holding broken bytes?"
    q = "What does the helper merge(left, right) return, when both lists are empty, for the caller?"
    assert core_question(q) == "What does the helper merge(left, right) return?"
