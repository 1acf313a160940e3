"""Follow-up questions made standalone (`condense`), with the real bundled MiniLM embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_rlm.embed import load_embedder
from rag_rlm.reasoning.base import Turn
from rag_rlm.reasoning.followup import condense


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


def user(text: str) -> Turn:
    return Turn("user", text)


def assistant(text: str) -> Turn:
    return Turn("assistant", text)


MEDICAL = [
    user("What share of medical costs does the company cover?"),
    assistant("The company covers 80% of medical costs for employees and their dependants."),
]
LAPTOP = [user("How do I get a new laptop?"), assistant("Request one through the IT portal; IT ships it within a week.")]
RETIREMENT = [
    user("Does the company offer a retirement plan?"),
    assistant("Yes, the company offers a 401(k) retirement plan with a 4% match."),
]


def test_ellipsis_takes_the_frame_of_the_previous_question(embedder):
    c = condense("And vision?", MEDICAL, embedder)
    assert c.question == "What share of vision costs does the company cover?"
    assert c.reason == "ellipsis"
    assert c.subject == "vision costs"


def test_pronoun_gets_the_subject_of_the_previous_question(embedder):
    c = condense("Who do I need approval from to replace it later?", LAPTOP, embedder)
    assert c.question == "Who do I need approval from to replace the new laptop later?"
    assert (c.reason, c.subject) == ("pronoun", "new laptop")


@pytest.mark.parametrize(("earlier", "question", "expected"), [
    ("Is TRUNCATE MVCC-safe?", "Does it fire ON DELETE triggers?", "Does TRUNCATE fire ON DELETE triggers?"),
    ("Is remote work paid?", "Who approves it?", "Who approves remote work?"),
    # an adverb and a comparison are no part of the thing asked about
    ("Are prepared statements always faster than plain SQL?", "Why can they be slower?",
     "Why can prepared statements be slower?"),
])
def test_the_predicate_of_an_is_question_is_not_its_subject(embedder, earlier, question, expected):
    c = condense(question, [user(earlier), assistant("No.")], embedder)
    assert (c.question, c.reason) == (expected, "pronoun")


def test_specific_subject_wins_over_the_company(embedder):
    c = condense("When do I become eligible for it?", RETIREMENT, embedder)
    assert c.question == "When do I become eligible for the retirement plan?"
    assert c.subject == "retirement plan"


def test_ellipsis_with_a_preposition_replaces_the_place(embedder):
    c = condense("How about in Toronto?", [user("How many desks does the Lisbon office have?")], embedder)
    assert c.question == "How many desks does the Toronto office have?"


def test_a_fragment_after_a_preposition_takes_the_place_after_the_same_preposition(embedder):
    """"on Windows" goes where "on POSIX" was, not into the code name's first part (the
    embedder had put it in place of "os": "What is Windows.EOL on POSIX?")."""
    c = condense("And on Windows?", [user("What is os.EOL on POSIX?")], embedder)
    assert (c.question, c.reason) == ("What is os.EOL on Windows?", "ellipsis")


def test_plural_pronoun_gets_the_phrase_with_its_attachment(embedder):
    c = condense("Who approves them?", [user("What are the rules for expenses over $500?")], embedder)
    assert c.question == "Who approves expenses over $500?"


def test_replaced_head_takes_its_modifiers_along(embedder):
    history = [user("How many vacation days do new hires get?")]
    assert condense("What about contractors?", history, embedder).question == "How many vacation days do contractors get?"
    assert condense("And for managers?", history, embedder).question == "How many vacation days do managers get?"


def test_chain_of_ellipses_is_resolved_in_order(embedder):
    history = [*MEDICAL, user("And vision?"), assistant("60% of vision costs.")]
    c = condense("What about dental?", history, embedder)
    assert c.question == "What share of dental costs does the company cover?"


def test_pronoun_after_a_pronoun_follow_up(embedder):
    history = [*RETIREMENT, user("When do I become eligible for it?"), assistant("After 90 days of employment.")]
    c = condense("How much does the company contribute to it?", history, embedder)
    assert c.question == "How much does the company contribute to the retirement plan?"


def test_turns_without_a_subject_are_skipped(embedder):
    history = [*LAPTOP, user("Thanks!"), assistant("You're welcome.")]
    assert condense("Who approves it?", history, embedder).question == "Who approves the new laptop?"


@pytest.mark.parametrize("question", [
    "Who is the CEO?",
    "How many vacation days do new hires get?",
    "How many vacation days do new hires get in their first year, and can they carry unused days over to the next year?",
    "If my laptop breaks, who repairs it?",
    "How long does it take to get a new laptop?",
    "Is there a limit on hotel costs this year?",
    "Can contractors use their own cars?",
])
def test_standalone_questions_are_unchanged(embedder, question):
    for history in (LAPTOP, RETIREMENT, [user("Who is the deputy CEO?")]):
        c = condense(question, history, embedder)
        assert (c.question, c.subject, c.reason) == (question, "", "standalone")


def test_bare_keywords_unlike_the_previous_question_stand_alone(embedder):
    assert condense("Parental leave policy?", LAPTOP, embedder).question == "Parental leave policy?"


def test_empty_history_is_unchanged(embedder):
    for question in ("And vision?", "Who approves them?", "When do I become eligible for it?"):
        assert condense(question, [], embedder) == condense(question, [assistant("Hello!")], embedder)
        assert condense(question, [], embedder).question == question


def test_unplaceable_fragment_is_appended_not_guessed(embedder):
    c = condense("What about contractors?", LAPTOP, embedder)
    assert c.question == "How do I get a new laptop? (contractors)"
    assert c.reason == "appended"


def test_those_same_things_keep_their_words_and_append_the_subject(embedder):
    # the demonstrative had been swapped for the earlier question's code name: "Some of max_upload same forms ..."
    earlier = [user("I set max_upload in the config and my upload forms still reject files over 10 MB. Why?"),
               assistant("The web server's own limit applies first.")]
    c = condense("Some of those same forms are also posted by a script. Can I lift the limit just for those?",
                 earlier, embedder)
    assert c.question.startswith("Some of those same forms are also posted by a script. Can I lift the limit just "
                                 "for those? (") and c.reason == "appended"


def test_the_same_appends_the_subject(embedder):
    c = condense("Is the same true for contractors?", [user("How many vacation days do new hires get?")], embedder)
    assert c.question.startswith("Is the same true for contractors? (")
    assert "hires" in c.question or "vacation days" in c.question


@pytest.mark.parametrize(("history", "question", "expected"), [
    ([user("Who is the CEO?")], "When did she join?", "When did the CEO join?"),
    ([user("My laptop is broken, what do I do?")], "Can I get a new one?", "Can I get a new laptop?"),
    ([user("How many desks does the Lisbon office have?")], "How many people work there?",
     "How many people work at the Lisbon office?"),
    ([user("What is the travel policy?")], "Who wrote it and when was it last updated?",
     "Who wrote the travel policy and when was the travel policy last updated?"),
    (RETIREMENT, "When does the plan start?", "When does the retirement plan start?"),
])
def test_other_references(embedder, history, question, expected):
    assert condense(question, history, embedder).question == expected


def test_a_question_with_no_subject_of_its_own_carries_the_earlier_one(embedder):
    history = [Turn("user", "Tell me about vacation days for new hires."),
               Turn("assistant", "New hires get paid vacation.")]
    out = condense("How many per year?", history, embedder)
    assert out.reason == "appended" and "vacation days for new hires" in out.question
    assert "How many per year?" in out.question


def test_a_condition_fragment_is_added_to_the_earlier_question(embedder):
    history = [Turn("user", "How many vacation days do new hires get?"),
               Turn("assistant", "New hires get 22 vacation days per calendar year.")]
    out = condense("And after three years?", history, embedder)
    assert out.question == "How many vacation days do new hires get after three years?"


def test_a_fragment_goes_into_the_one_ask_of_the_earlier_question_it_fits(embedder):
    history = [Turn("user", "Can I work from another country, and who approves expenses over $500?"),
               Turn("assistant", "Up to 20 working days per year [1]. The Finance Director [2].")]
    out = condense("What about contractors?", history, embedder)
    assert out.reason == "ellipsis" and "?" == out.question[-1] and " and who " not in out.question
    assert "contractors" in out.question


def test_an_identifier_is_carried_whole(embedder):
    history = [Turn("user", "What is the default value of shared_buffers?"),
               Turn("assistant", "The default is typically 128 megabytes.")]
    out = condense("Can I change it without a restart?", history, embedder)
    assert "shared_buffers" in out.question


@pytest.mark.parametrize(("earlier", "question", "expected"), [
    ("What is the default value of shared_buffers?", "Can it be changed without restarting the server?",
     "Can shared_buffers be changed without restarting the server?"),
    ("What is the default value of worker_prefetch_limit?", "What does it do when enabled?",
     "What does worker_prefetch_limit do when enabled?"),
    # no code name after "of": the property itself is what "it" refers to
    ("What is the maximum size of a file?", "Can it be increased?", "Can the maximum size of a file be increased?"),
])
def test_it_after_a_property_of_a_named_thing_is_the_thing(embedder, earlier, question, expected):
    out = condense(question, [user(earlier), assistant("")], embedder)
    assert out.question == expected, out


@pytest.mark.parametrize(("earlier", "question", "expected"), [
    ("What key length does XTEA accept?", "And what about ChaCha8Mac?", "What key length does ChaCha8Mac accept?"),
    ("Which tag size does GcmBox use?", "And AESOCB3?", "Which tag size does AESOCB3 use?"),
])
def test_a_name_written_in_capitals_takes_the_place_of_the_one_asked_about(embedder, earlier, question, expected):
    out = condense(question, [user(earlier), assistant("")], embedder)
    assert (out.question, out.reason) == (expected, "name"), out


def test_an_adverb_after_a_phrase_is_no_part_of_it(embedder):
    """ "instead" and "back" are no things: "it" is the document, not "instead of <br"."""
    out = condense("Can it keep the attributes in their order?",
                   [user("How do I get <br> instead of <br/> when writing the document back out?"), assistant("")],
                   embedder)
    assert out.subject == "document" and out.question.startswith("Can the document keep"), out


@pytest.mark.parametrize(("earlier", "option"), [
    ("What does the --vgdb option do?", "--vgdb"),
    ("What does pg_dump's -a option do?", "-a"),
])
def test_a_command_option_is_carried_with_its_dashes(embedder, earlier, option):
    out = condense("What is its default?", [user(earlier), assistant("")], embedder)
    assert f"{option} option" in out.question, out


@pytest.mark.parametrize(("earlier", "answer", "question", "expected"), [
    ("Is there a setting that gets rid of frozen messages after some time?",
     "timeout_frozen_after: If set to a time greater than zero, a frozen message is cancelled [1].",
     "What is its default?", "What is timeout_frozen_after's default?"),
    ("Which pg_dump option dumps only the schema?", "-s --schema-only: Dump only the object definitions [1].",
     "Can it be combined with --clean?", "Can --schema-only be combined with --clean?"),
    # "that option" after a verb is no relative "that" ("the laptop that broke"): it is the option named
    ("When I run the build, which option sets how many jobs run at once?",
     "-j [<jobs>], --parallel [<jobs>]: The maximum number of concurrent processes to use when building [1].",
     "And if I give that option without a number after it, how many jobs does it use?",
     "And if I give --parallel without a number after it, how many jobs does it use?"),
])
def test_it_after_a_question_for_a_kind_of_thing_is_the_name_the_answer_gave(embedder, earlier, answer, question,
                                                                            expected):
    out = condense(question, [user(earlier), assistant(answer)], embedder)
    assert out.question == expected, out


def test_it_after_a_question_that_named_its_thing_stays_that_thing(embedder):
    history = [user("What does the --vgdb option do?"),
               assistant("--vgdb-error=<number> [default: 999999999]: Use this option when ... [1].")]
    assert condense("What is its default?", history, embedder).question == "What is the --vgdb option's default?"


@pytest.mark.parametrize(("earlier", "question", "subject"), [
    # do-support puts a bare verb after the subject: "listen" and "fire" are not part of it
    ("Which TCP port does the server listen on by default?", "Can it be changed while the server is running?",
     "TCP port"),
    ("Where does the Finance Director sign expense reports?", "Who replaces him when he is away?",
     "Finance Director"),
])
def test_the_verb_after_a_do_question_subject_is_not_carried(embedder, earlier, question, subject):
    out = condense(question, [user(earlier), assistant("")], embedder)
    assert out.subject == subject, out
    assert subject in out.question


# -- the rewrite checked by the reader, through the whole assistant -------------------------------

@pytest.fixture(scope="module")
def sample_assistant(pg_url, tmp_path_factory):
    from rag_rlm.assistant import Assistant
    from rag_rlm.config import Settings

    data = tmp_path_factory.mktemp("followup")
    assistant = Assistant(Settings(store=pg_url, data_dir=str(data)))
    assistant.ingest_files([Path(__file__).resolve().parent.parent / "examples" / "sample"], "followup_sample")
    yield assistant
    assistant.close()


def test_a_rewrite_the_reader_does_not_find_better_supported_keeps_the_askers_words(sample_assistant):
    history = [{"role": "user", "content": "Can I work from another country, and who approves expenses over $500?"},
               {"role": "assistant", "content": "Up to 20 working days per year [1]. The Finance Director [2]."}]
    result = sample_assistant.ask("What about the laptop?", "followup_sample", history=history)
    assert result.resolved_question == "What about the laptop?"
    note = next(n for n in sample_assistant.trace(result.trace_id)["nodes"] if n["kind"] == "condense")["note"]
    assert note.startswith("kept the question as asked"), note
    assert "laptop" in result.answer.lower()


def test_a_rewrite_that_reads_better_is_kept(sample_assistant):
    history = [{"role": "user", "content": "How many vacation days do new hires get?"},
               {"role": "assistant", "content": "22 vacation days per calendar year [1]."}]
    result = sample_assistant.ask("How do I request them?", "followup_sample", history=history)
    assert result.resolved_question == "How do I request vacation days?"
    assert "Tempo" in result.answer


def test_a_code_name_asked_after_one_takes_its_place(embedder):
    """ "And path.normalize?" asks the earlier question of another function: word slots split a
    dotted name, and its parts embed too poorly to be matched, so the phrase had been appended."""
    earlier = "What does path.isAbsolute return for an empty string?"
    out = condense("And path.normalize?", [user(earlier), assistant("false [1].")], embedder)
    assert out.question == "What does path.normalize return for an empty string?", out
    # two code names asked about: which one the new one replaces is not known, so not this rule
    both = "Does path.join call path.normalize on its result?"
    out = condense("And path.resolve?", [user(both), assistant("Yes [1].")], embedder)
    assert out.question != "Does path.resolve call path.normalize on its result?"
