"""The eval metrics on hand-made cases, each one chosen so that a wrong formula fails it."""

from __future__ import annotations

import math

import pytest

from rag_rlm.eval import metrics


def test_normalize_answer_is_squads():
    assert metrics.normalize_answer("  The  Eiffel-Tower, (Paris)! ") == "eiffeltower paris"
    assert metrics.normalize_answer("An apple a day") == "apple day"
    # articles only as whole words: "theatre" keeps its "the"
    assert metrics.normalize_answer("Theatre an") == "theatre"


def test_exact_match_takes_any_gold_and_ignores_citations():
    assert metrics.exact_match("The Beatles [1]", ["beatles"]) == 1.0
    assert metrics.exact_match("Beatles", ["Rolling Stones", "the beatles"]) == 1.0
    assert metrics.exact_match("The Beatles band", ["Beatles"]) == 0.0


def test_token_f1_is_harmonic_mean_of_token_precision_and_recall():
    # pred tokens: barack obama was president (4); gold: barack hussein obama (3); common 2
    precision, recall = 2 / 4, 2 / 3
    assert metrics.token_f1("Barack Obama was president", ["Barack Hussein Obama"]) == pytest.approx(
        2 * precision * recall / (precision + recall))
    # repeated tokens count at most as often as in the gold (multiset intersection)
    assert metrics.token_f1("paris paris", ["paris"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    # best over golds, not the first or the mean
    assert metrics.token_f1("blue", ["red", "blue"]) == 1.0
    assert metrics.token_f1("", ["red"]) == 0.0


def test_containment_needs_whole_words():
    assert metrics.containment("It was directed by Christopher Nolan [2].", ["christopher nolan"]) == 1.0
    assert metrics.containment("Nolanville is a town.", ["Nolan"]) == 0.0  # not a word of the answer
    assert metrics.containment("The answer is yes.", ["no"]) == 0.0
    assert metrics.containment("anything", [""]) == 0.0  # an empty gold matches nothing


def test_support_recall_is_share_of_gold_found():
    assert metrics.support_recall(["a", "x", "y"], ["a", "b"]) == 0.5
    assert metrics.support_recall(["a", "a", "b"], ["a", "b", "c", "d"]) == 0.5  # duplicates count once
    assert metrics.support_recall([], ["a"]) == 0.0


def test_all_supporting_needs_every_gold_document():
    assert metrics.all_supporting(["a", "b", "z"], ["a", "b"]) == 1.0
    assert metrics.all_supporting(["a", "z"], ["a", "b"]) == 0.0


def test_percentile_interpolates_linearly_like_numpy():
    values = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    assert metrics.percentile(values, 50) == pytest.approx(2.5)
    assert metrics.percentile(values, 95) == pytest.approx(3.85)
    assert metrics.percentile(values, 0) == 1.0
    assert metrics.percentile([7.0], 95) == 7.0
    assert math.isnan(metrics.percentile([], 50))


def test_mean():
    assert metrics.mean([1.0, 2.0, 6.0]) == 3.0
    assert math.isnan(metrics.mean([]))


def test_lead_containment_looks_at_the_first_sentence_only():
    assert metrics.lead_containment("Christopher Nolan directed it.", ["christopher nolan"]) == 1.0
    assert metrics.lead_containment("It was released in 2010.", ["Christopher Nolan"]) == 0.0
    assert metrics.lead_containment("", ["Nolan"]) == 0.0


def test_word_count_skips_markers_and_punctuation():
    assert metrics.word_count("Paris [1].") == 1
    assert metrics.word_count("It has 1,200 rooms [2][3] — and a moat.") == 7  # "1,200" is one word, "—" none
    assert metrics.word_count("[1]") == 0
    assert metrics.word_count("") == 0


def test_declined_shares_split_by_kind():
    declined = [True, False, True, True, False]
    answerable = [False, False, True, False, True]  # 3 unanswerable (2 declined), 2 answerable (1 declined)
    assert metrics.declined_shares(declined, answerable) == (pytest.approx(2 / 3), 0.5)
    unans, wrongly = metrics.declined_shares([False], [True])
    assert math.isnan(unans) and wrongly == 0.0


def test_answerability_curve_declines_scores_below_the_threshold():
    scores = [0.9, 0.2, 0.5, 0.2, 0.7, 0.1]
    answerable = [True, False, True, False, False, True]  # 3 answerable: 0.9 0.5 0.1; 3 not: 0.2 0.2 0.7
    curve = metrics.answerability_curve(scores, answerable)
    assert [p["threshold"] for p in curve[:-1]] == [0.1, 0.2, 0.5, 0.7, 0.9]
    assert curve[-1]["threshold"] > 0.9
    # t=0.1 declines nothing; t=0.2 the answerable 0.1; t=0.5 also both 0.2s; ...; above 0.9 all
    assert [(round(3 * p["declined_unanswerable"]), round(3 * p["wrongly_declined"])) for p in curve] == [
        (0, 0), (0, 1), (2, 1), (2, 2), (3, 2), (3, 3)]  # in thirds
    assert metrics.answerability_curve([0.3, 0.4], [True, True]) == []  # one kind only: no trade-off
    nan_left_out = metrics.answerability_curve([math.nan, 0.5, 0.1], [True, True, False])
    assert nan_left_out[-1]["wrongly_declined"] == 1.0 and len(nan_left_out) == 3


def test_pick_threshold_declines_most_unanswerables_within_the_limit():
    curve = [{"threshold": 0.1, "declined_unanswerable": 0.0, "wrongly_declined": 0.0},
             {"threshold": 0.2, "declined_unanswerable": 0.4, "wrongly_declined": 0.05},
             {"threshold": 0.3, "declined_unanswerable": 0.6, "wrongly_declined": 0.10},  # exactly at the limit
             {"threshold": 0.4, "declined_unanswerable": 0.9, "wrongly_declined": 0.15}]
    assert metrics.pick_threshold(curve)["threshold"] == 0.3
    assert metrics.pick_threshold(curve, max_wrongly_declined=0.05)["threshold"] == 0.2
    assert metrics.pick_threshold(curve, max_wrongly_declined=0.5)["threshold"] == 0.4
    assert metrics.pick_threshold([]) is None
