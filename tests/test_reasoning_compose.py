"""What the extractive reasoner says besides quoted sentences, on hand-made sentences: the short
answer, the verdict of a yes/no comparison, figures and the measures they are compared on."""

from __future__ import annotations

from rag_rlm.reasoning.claims import bare_thing_named
from rag_rlm.reasoning.compose import asks_for_a_kind, short_answer, typed_candidates, verdict, yes_no
from rag_rlm.reasoning.english import content_words, words_of
from rag_rlm.reasoning.figures import asked_measures, comparable, figures_in, predicate, winner

SIDES_DIRECTORS = [("Mara Voss", "Mara Voss is a film director and screenwriter."),
                   ("Ilan Dupree", "Ilan Dupree is an Indian film director.")]


def test_short_answer_is_the_one_span_of_the_asked_type():
    assert short_answer("How many steps does the tower have?", "Visitors climb its 212 steps.") == "212"
    assert short_answer("When was the tower built?", "It was built in 1874 and automated in 1961.") == ""  # two dates
    assert short_answer("Who approves expenses?", "Expenses are approved by the Finance Director.") == "Finance Director"
    assert short_answer("Why is the tower red?", "It is red to be seen in fog.") == ""  # no type to look for


def test_a_thing_of_code_asked_for_by_its_kind_is_its_code_name():
    # "PostgreSQL" had been the short answer to which tool restores pg_dump's archives
    sentence = "pg_restore is a utility for restoring a PostgreSQL database from an archive created by pg_dump."
    question = "Which tool restores the archive formats produced by pg_dump?"
    assert short_answer(question, sentence, code_name="pg_restore") == "pg_restore"
    assert short_answer(question, sentence) == "PostgreSQL"  # without the code name the sentence writes
    assert short_answer("Who maintains pg_restore?", sentence, code_name="pg_restore") == "PostgreSQL"  # not a kind
    assert short_answer("What does Option::ok_or do?", "Transforms it, see ok_or_else.", code_name="ok_or_else") == ""
    # asked for after what the asker sees, in another wording (the same test reads a follow-up's "its default")
    assert short_answer("Frozen messages pile up. Is there a setting that removes them?",
                        "timeout_frozen_after: frozen messages are cancelled.", code_name="timeout_frozen_after") \
        == "timeout_frozen_after"
    assert not asks_for_a_kind("What does the timeout_frozen_after option do?")
    # the name an entry's term gives, without its value and type
    assert bare_thing_named("--error-exitcode=<number> [default: 0]: Specifies an alternative exit code.") == \
        "--error-exitcode"
    assert bare_thing_named(sentence, question) == "pg_restore"


def test_a_word_set_off_by_a_comma_at_a_sentences_start_is_no_name():
    # "First" had been the short answer to which tool creates a password file
    assert short_answer("What tool creates a password file?", "First, you need to create a password file.") == ""
    assert short_answer("Who approves expenses?", "First, the Finance Director approves them.") == "Finance Director"


def test_a_count_is_not_the_day_of_a_date():
    assert typed_candidates("How many people live there?", "Tam (born 2 June 1961) is a walker.") == []
    assert "6,960" in typed_candidates("How many people live there?", "Ardmore had a population of 6,960.")


def test_where_a_file_is_kept_is_its_path_not_a_name_the_sentence_also_says():
    # "Linux" had been the short answer to where the hostname is stored
    sentence = "The name is stored in the /etc/hostname file and given to the Linux kernel at boot."
    assert short_answer("Where is the machine's hostname stored?", sentence) == "/etc/hostname"
    assert short_answer("Where was Ada born?", "Ada was born in Paris in 1815.") == "Paris"
    assert short_answer("Where is the queue?", "Mail waits in /var/spool/postfix or ~/.cache/mail.") == ""  # two paths
    assert not any("/" in c for c in typed_candidates("Where is it documented?", "See http://example.com/docs/a."))  # no path


def test_a_number_inside_a_name_is_no_figure():
    # "UTF-16BE" twice had been one unique figure, 16, said as the answer to "how many bytes"
    assert typed_candidates("How many bytes does a value take?", "It is stored as UTF-16BE or UTF-16LE.") == []
    assert typed_candidates("How many cores does it use?", "The x86 build uses 12 cores on AArch64.") == ["12"]


def test_yes_no_comparison_is_settled_when_both_sentences_say_it_or_one_contradicts():
    q = "Are Mara Voss and Ilan Dupree both film directors?"
    assert verdict(q, SIDES_DIRECTORS) is True
    assert yes_no(q, ["Mara Voss", "Ilan Dupree"], True) == "Yes: Mara Voss and Ilan Dupree are both film directors."
    q = "Are Mara Voss and Ilan Dupree both American directors?"
    sides = [("Mara Voss", "Mara Voss was an American film director."),
             ("Ilan Dupree", "Ilan Dupree was a Hungarian and Austrian film director.")]
    assert verdict(q, sides) is False
    assert yes_no(q, [n for n, _ in sides], False) == "No: Mara Voss and Ilan Dupree are not both American directors."
    assert verdict("Are Kelbrook and Fenwick situated in the same province?",
                   [("Kelbrook", "Kelbrook is a town in Osterland province."),
                    ("Fenwick", "Fenwick is a town in Westmark province.")]) is False


def test_yes_no_is_not_guessed_from_silence():
    q = "Are Brannock and Quillon both animated features?"
    assert verdict(q, [("Brannock", "It is an animated feature film."),
                       ("Quillon", "Quillon is a 1976 family drama film.")]) is None
    assert verdict("Which is older, Voss or Dupree?", SIDES_DIRECTORS) is None  # not a yes/no question


def test_remembered_word_sets_are_the_fresh_ones_and_no_caller_can_change_them():
    texts = ["Approvals approved: the approval of approving", "max_connections (integer) sets 100",
             "It's Ōsaka’s 2nd-largest station, isn't it?", ""]
    for text in texts:
        fresh = words_of(text)
        got = content_words(text)
        assert got == fresh and content_words(text) is got  # remembered, and equal to a fresh count
        got |= {"added by a caller"}
        assert content_words(text) == fresh
    assert content_words("Approvals approved") == {"approval", "approv"}


def test_figures_are_read_with_their_measure_on_one_scale():
    found = figures_in("Long-term cover replaces 60% of salary after a 90-day wait; it started on 3 March 1998.")
    assert [(f.measure, f.text) for f in found] == [("percent", "60%"), ("duration", "90-day"),
                                                    ("date", "3 March 1998")]
    small, large = figures_in("It holds 2048 bytes, the other 3.5 GB.")
    assert (small.measure, large.measure) == ("size", "size") and large.value > small.value
    assert [f.measure for f in figures_in("It costs $1,200 per year for 40 people.")] == ["money", "count"]


def test_the_compared_measure_is_the_one_the_question_names():
    assert asked_measures("Which replaces a larger share of salary", "larger") == {"percent"}
    assert asked_measures("Which club was founded first", "first") == {"date"}
    assert asked_measures("Which is larger", "larger") == frozenset()
    share = figures_in("It replaces 70% of salary for 12 weeks.")
    days = figures_in("It starts after a 90-day waiting period.")
    assert comparable("Which replaces a larger share of salary", "larger", [share, days]) is None
    both = comparable("Which replaces a larger share of salary", "larger", [share, figures_in("It pays 60%.")])
    assert [f.text for f in both] == ["70%", "60%"]
    assert winner("larger", [70.0, 60.0]) == 0 and winner("first", [1990.0, 1980.0]) == 1
    assert winner("larger", [8.0, 8.0]) is None
    # a bare number is compared only when the question asks for a count
    versions = [figures_in("New in version 3.5."), figures_in("Lists are indexed from 0.")]
    assert comparable("Which is faster for appending on the left", "faster", versions) is None
    staff = [figures_in("Acme has 120 employees."), figures_in("Bolt has 80 employees.")]
    assert [f.text for f in comparable("Which has more employees", "more", staff)] == ["120", "80"]
    # a date is compared only when the question asks when: a year is no measure of "more varied"
    careers = [figures_in("Ada Brook retired in 2013."), figures_in("Lee Marsh was born on February 27, 1913.")]
    assert comparable("Which composer wrote more varied music", "more", careers) is None
    assert [f.text for f in comparable("Which composer came first", "first", careers)] == ["2013", "February 27, 1913"]


def test_the_winner_is_said_with_the_questions_own_words():
    assert predicate("Which plan covers more of the premium, A or B?") == "covers more of the premium"
    assert predicate("Which club was founded first, X or Y?") == "was founded first"
    assert predicate("Which is larger, a bigint or an integer?") == "is larger"
    # without a comma the options' words stay in a side's question once their names are taken out
    assert predicate("Which club was founded first The or ?") == "was founded first"
    assert predicate("Are X and Y both British?") == ""
