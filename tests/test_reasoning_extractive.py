"""The extractive reasoner on hand-made evidence and drafts (real embedder): what the answer leads
with."""

from __future__ import annotations

import pytest

from rag_rlm.reasoning.base import Evidence, EvidenceSentence, SubQuestion
from rag_rlm.reasoning.extractive import ExtractiveReasoner
from rag_rlm.types import Sentence, Span


@pytest.fixture(scope="module")
def reasoner(embedder):
    return ExtractiveReasoner(embedder)


def evidence(embedder, title: str, sentences: list[str]) -> Evidence:
    """One span of `sentences`, stored as sentence memory stores them (vectors with the title)."""
    text = " ".join(sentences)
    span = Span(title.lower(), 0, title, f"{title}.txt", text, 0, len(text), 1.0)
    stored, at = [], 0
    for i, s in enumerate(sentences):
        stored.append(Sentence(span.document_id, i, s, at, at + len(s)))
        at += len(s) + 1
    vectors = embedder.embed([f"{title}: {s}" for s in sentences])
    return Evidence((span,), tuple(EvidenceSentence(s, span, v) for s, v in zip(stored, vectors, strict=True)))


def test_the_answer_leads_with_the_sentence_that_says_what_is_asked(reasoner, embedder):
    q = ("Scott Andrew Buchholz, is an Australian politician, he previously served as chief of staff to which "
         "Queensland Senator Australian politician, who has served as the Deputy Prime Minister of Australia since "
         "18 February 2016?")
    ev = evidence(embedder, "Scott Buchholz", [
        "Scott Andrew Buchholz (born 27 March 1968) is an Australian politician.",  # the closest: names him
        "He previously served as chief of staff to Queensland Senator Barnaby Joyce and was a director of CQX "
        "Group of Transport Companies for 18 years.",
        "He was elected to the House of Representatives in 2010."])
    part = reasoner.answer([SubQuestion(q)], [ev], 4000)[0].parts[0]
    assert part.found
    assert part.claims[0].text.startswith("He previously served as chief of staff"), part.claims

