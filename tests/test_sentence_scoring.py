"""How the extractive reasoner scores candidate sentences against a question (compose.score)."""

from __future__ import annotations

import numpy as np

from rag_rlm.reasoning import compose


def test_a_sentence_under_the_identifier_asked_about_outranks_its_neighbours_default():
    # PostgreSQL's manual: each parameter's description is a <dd> under its name; word overlap
    # alone ties the two (both say "default" and "connections"), the identifier breaks the tie
    question = "What is the default value of max_connections?"
    contexts = ["Connection Settings — superuser_reserved_connections (integer) The default value is three connections.",
                "Connection Settings — max_connections (integer) The default is typically 100 connections."]
    vectors = np.eye(2, dtype=np.float32)
    question_vector = np.array([0.55, 0.5], dtype=np.float32)  # the neighbour sounds a little closer
    scored = compose.score(question, question_vector, vectors, contexts)
    assert scored.coverage[0] == scored.coverage[1]
    assert scored.scores[1] > scored.scores[0]


def test_without_identifiers_the_score_is_dense_plus_word_overlap():
    contexts = ["Vision: 100% covered.", "Medical: 75% covered."]
    scored = compose.score("What share of vision costs is covered?", np.array([0.2, 0.3], dtype=np.float32),
                           np.eye(2, dtype=np.float32), contexts)
    np.testing.assert_allclose(scored.scores, scored.dense + compose.LEXICAL_WEIGHT * scored.coverage)
