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
