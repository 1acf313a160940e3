"""How the extractive reasoner picks what to say, on hand-made sentences: the clause a question
asks with, the sentence that answers it rather than the one that introduces its subject, and the
verdict of a yes/no comparison."""

from __future__ import annotations

import numpy as np

from rag_rlm.reasoning.compose import (
    FOUND_THRESHOLD,
    Scored,
    answer_fit,
    asked_clause,
    asked_words,
    confidence,
    content_words,
    key_terms,
    typed_candidates,
    verdict,
    words_of,
    yes_no,
)

BUCHHOLZ = ("Scott Andrew Buchholz, is an Australian politician, he previously served as chief of staff to "
            "which Queensland Senator, who has served as the Deputy Prime Minister since 2016?")


def test_the_asking_clause_of_a_statement_shaped_question():
    assert asked_clause(BUCHHOLZ)[0] == "he previously served as chief of staff to which Queensland Senator"
    assert asked_words("Indian film photographer Jagdish Mali, known for taking images of celebrities, "
                       "is father to which Bollywood actress?") == {"father", "actres"}
    # the relative clause says which city is meant; the question asks for its population
    assert asked_clause("At the 2011 census, what was the population of the city where Kerry Saxby was born?") \
        == ("what was the population of the city", "what was the population of the city")
    assert asked_clause("Thumb Wrestling Federation is on a network founded by who?")[1] == "who"
    assert asked_clause("Which index type can handle equality comparisons only?")[0] \
        == "Which index type can handle equality comparisons only"


def test_the_sentence_that_answers_fits_better_than_the_one_that_introduces():
    intro = "Scott Andrew Buchholz (born 27 March 1968) is an Australian politician."
    answer = "He previously served as chief of staff to Queensland Senator Barnaby Joyce."
    assert answer_fit(BUCHHOLZ, answer) > answer_fit(BUCHHOLZ, intro)
    q = "At the 2011 census, what was the population of the city where Kerry Saxby was born?"
    assert answer_fit(q, "At the 2011 census, Young had a population of 6,960.") \
        > answer_fit(q, "Kerry Saxby (born 2 June 1961) is a retired Australian race walker.")


def test_a_count_is_not_the_day_of_a_date():
    assert typed_candidates("How many people live there?", "Kerry (born 2 June 1961) is a walker.") == []
    assert "6,960" in typed_candidates("How many people live there?", "Young had a population of 6,960.")


def test_the_asked_type_is_read_from_the_clause_that_asks():
    assert typed_candidates(BUCHHOLZ, "He served Queensland Senator Barnaby Joyce.") is None  # "Scott ..." opens it
    assert typed_candidates(BUCHHOLZ, "He served Queensland Senator Barnaby Joyce.",
                            asked_clause(BUCHHOLZ)[1]) == ["Queensland Senator Barnaby Joyce"]


def test_a_sentence_far_from_the_question_never_leads_however_well_it_fits():
    scores = np.array([0.80, 0.70, 0.40], dtype=np.float32)
    fit = np.array([-0.5, 1.0, 1.5], dtype=np.float32)
    ranked = Scored(scores, scores, np.zeros(3, dtype=np.float32), fit)
    assert ranked.best == 0
    assert ranked.order() == [1, 0, 2]  # the close one that answers, the closest, then the far one


SIDES_DIRECTORS = [("Christopher Nolan", "Christopher Nolan (born 1970) is an English-American film director."),
                   ("Sathish Kalathil", "Sathish Kalathil is an Indian film and documentary Director.")]


def test_yes_no_comparison_is_settled_when_both_sentences_say_it_or_one_contradicts():
    q = "Are Christopher Nolan and Sathish Kalathil both film directors?"
    assert verdict(q, SIDES_DIRECTORS) is True
    assert yes_no(q, ["Christopher Nolan", "Sathish Kalathil"], True) \
        == "Yes: Christopher Nolan and Sathish Kalathil are both film directors."
    q = "Are King Vidor and Géza von Cziffra both American directors?"
    sides = [("King Vidor", "King Vidor was an American film director."),
             ("Géza von Cziffra", "Géza von Cziffra was a Hungarian and Austrian film director.")]
    assert verdict(q, sides) is False
    assert yes_no(q, [n for n, _ in sides], False) == "No: King Vidor and Géza von Cziffra are not both American directors."
    q = "Are Nantong and Jingdezhen situated in the same province?"
    assert verdict(q, [("Nantong", "Nantong is a city in Jiangsu province, China."),
                       ("Jingdezhen", "Jingdezhen is a city in Jiangxi province.")]) is False
    assert verdict("Were Ann Lee and Bo Chan of the same nationality?",
                   [("Ann Lee", "Ann Lee is a Canadian actress."), ("Bo Chan", "Bo Chan is a Canadian singer.")]) is True


def test_yes_no_is_not_guessed_from_silence():
    q = "Are Frozen and Escape from the Dark both animated features?"
    assert verdict(q, [("Frozen", "It is the 53rd Disney animated feature film."),
                       ("Escape from the Dark", "Escape from the Dark is a 1976 family drama film.")]) is None
    q = "Are Watertown Airport and Alexandria Airport both airports in the same state?"
    assert verdict(q, [("Watertown Airport", "It is located in Jefferson County, New York, United States."),
                       ("Alexandria Airport", "It is in the State of Louisiana.")]) is None  # "United States" is no state
    assert verdict("Which is older, Nolan or Kalathil?", SIDES_DIRECTORS) is None  # not a yes/no question


def test_evidence_that_never_writes_the_asked_identifier_does_not_answer():
    # PostgreSQL's resource page: another parameter's default reads just like the one asked for
    q = "What is the default value of random_page_cost?"
    neighbour = "effective_io_concurrency (integer) Sets the number of concurrent disk I/O operations. The default value is one."
    named = "random_page_cost (floating point) Sets the planner's estimate of the cost of a page. The default is 4.0."
    assert confidence(q, 0.75, 0.6, [neighbour], "The default value is one.") < FOUND_THRESHOLD
    assert confidence(q, 0.75, 0.6, [named], "The default is 4.0.") >= FOUND_THRESHOLD
    # a dotted name is written as its last part under its class: "most_common()" under "Counter objects"
    q = "What does Counter.most_common return?"
    said = "Counter objects If n is omitted or None, most_common() returns all elements in the counter."
    assert confidence(q, 0.63, 1.0, [said], said) >= FOUND_THRESHOLD


def test_remembered_word_sets_are_the_fresh_ones_and_no_caller_can_change_them():
    texts = [BUCHHOLZ, "Approvals approved: the approval of approving", "max_connections (integer) sets 100",
             "It's Ōsaka’s 2nd-largest station, isn't it?", ""]
    for text in texts:
        fresh = words_of(text)
        got = content_words(text)
        assert got == fresh and content_words(text) is got  # remembered, and equal to a fresh count
        got |= {"added by a caller"}  # what extractive._choose does with its `covered` set
        assert content_words(text) == fresh
    # what confidence() reads the evidence with: the union of its texts' sets, the words of them joined
    assert frozenset().union(*map(content_words, texts)) == words_of(" ".join(texts))
    assert content_words("Approvals approved") == {"approval", "approv"}
    keys = key_terms(BUCHHOLZ)
    assert keys == {"andrew", "buchholz", "australian", "queensland", "senator", "deputy", "prim", "minister",
                    "2016"} and key_terms(BUCHHOLZ) is keys


def test_a_default_question_is_answered_by_what_the_default_is():
    # the PostgreSQL manual: "Non-default values ..." and a starting value are not the default
    q = "What is the default value of shared_buffers?"
    assert typed_candidates(q, "The default is typically 128 megabytes (128MB), but might be less.") == [
        "typically 128 megabytes"]
    assert typed_candidates(q, "The TCP port the server listens on; 5432 by default.") == ["5432"]
    assert typed_candidates(q, "Read Committed is the default isolation level in PostgreSQL.") == ["Read Committed"]
    assert typed_candidates(q, "(Non-default values of BLCKSZ change the minimum value.)") == []
    context = "shared_buffers (integer) "
    assert (answer_fit(q, context + "The default is typically 128 megabytes (128MB).")
            > answer_fit(q, context + "(Non-default values of BLCKSZ change the minimum value.)"))


def test_a_sentence_that_says_not_of_what_is_asked_fits_worse():
    # pg_dump's options: the same words, the opposite thing
    q = "Which pg_dump option dumps only the schema, not the data?"
    schema = "-s --schema-only: Dump only the object definitions (schema), not data."
    data = "-a --data-only: Dump only the data, not the schema (data definitions)."
    assert answer_fit(q, schema) > answer_fit(q, data)
    # a "not" whose word the question does not assert opposes nothing
    q = "What can be derived for P and NP if P and co-NP are established to be unequal?"
    said = "It is believed that NP is not equal to co-NP."
    assert answer_fit(q, said) == answer_fit(q, said.replace("not equal", "different"))
