"""The extractive reasoner on hand-made evidence and drafts (real embedder): what the answer leads
with."""

from __future__ import annotations

import pytest

from rag_rlm.reasoning.base import (
    HOP,
    SIDE,
    Claim,
    Draft,
    Evidence,
    EvidenceSentence,
    Part,
    PartDraft,
    Plan,
    Source,
    SubQuestion,
)
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


def test_a_lead_that_refers_back_is_said_after_the_sentence_it_refers_to(reasoner, embedder):
    ev = evidence(embedder, "Index Types", [
        "Hash indexes store a 32-bit hash code derived from the value of the indexed column.",
        "Hence, such indexes can only handle simple equality comparisons.",
        "B-tree indexes can also be used to retrieve data in sorted order."])
    q = "Which index type can handle equality comparisons only?"
    draft = reasoner.answer([SubQuestion(q)], [ev], 4000)[0]
    assert draft.claims[0].text == "Hence, such indexes can only handle simple equality comparisons."
    part = reasoner.reflect(q, draft, ev, 4000).parts[0]  # what the answer says, not what it is judged on
    lead = part.claims[0]
    assert lead.text == ("Hash indexes store a 32-bit hash code derived from the value of the indexed column. "
                         "Hence, such indexes can only handle simple equality comparisons.")
    (source,) = lead.sources  # one quote from the start of the first sentence to the end of the second
    assert (source.start, source.end) == (0, ev.sentences[1].sentence.end)
    assert not any(c.text == ev.sentences[0].sentence.text for c in part.claims[1:])  # not said twice


def side(question: str, name: str, text: str) -> Part:
    span = Span(name.lower(), 0, name, f"{name}.txt", text, 0, len(text), 1.0)
    claim = Claim(text, (Source(span, 0, len(text)),), 0.9)
    return Part(SubQuestion(question, focus=name, kind=SIDE), Draft((PartDraft(question, (claim,), True, 0.9, name),)))


def test_a_yes_no_comparison_leads_with_its_verdict_citing_both_sides(reasoner):
    q = "Are Medici and Senet both board games?"
    sides = [side(q, "Medici", "Medici is a German-style board game by Reiner Knizia."),
             side(q, "Senet", "Senet is a board game from ancient Egypt.")]
    draft = reasoner.merge(q, Draft((PartDraft(q),)), sides, Plan(tuple(s.sub_question for s in sides)), 4000)
    lead = draft.parts[0].claims[0]
    assert lead.text == "Yes: Medici and Senet are both board games."
    assert lead.answer == "Yes" and {s.span.title for s in lead.sources} == {"Medici", "Senet"}
    assert [c.text for c in draft.parts[0].claims[1:]] == [p.draft.claims[0].text for p in sides]


def test_a_yes_no_comparison_the_sentences_do_not_settle_is_not_guessed(reasoner):
    q = "Are Frozen and Escape both animated features?"
    sides = [side(q, "Frozen", "Frozen is the 53rd Disney animated feature film."),
             side(q, "Escape", "Escape is a 1976 family drama film.")]
    draft = reasoner.merge(q, Draft((PartDraft(q),)), sides, Plan(), 4000)
    assert not any(c.text.startswith(("Yes", "No")) for c in draft.claims)


def test_a_figure_comparison_that_one_sentence_or_a_tie_answers_states_no_winner(reasoner):
    # Python's manual: one sentence answers both sides, and its only figure is the "1" of "O(1)"
    q = "Which is faster for appending on the left, a deque or a list?"
    text = "Deques support thread-safe, memory efficient appends and pops from either side with O(1) performance."
    same = [side(q, "a deque", text), side(q, "a list", text)]
    plan = Plan(tuple(s.sub_question for s in same), comparison="faster")
    part = reasoner.merge(q, Draft((PartDraft(q),)), same, plan, 4000).parts[0]
    assert [c.text for c in part.claims] == [text]  # said once, and no "a deque: 1, against a list 1"
    tie = [side(q, "Alpha", "Alpha was founded in 1990."), side(q, "Beta", "Beta was founded in 1990.")]
    part = reasoner.merge("Which was founded first, Alpha or Beta?", Draft((PartDraft(q),)), tie,
                          Plan(tuple(s.sub_question for s in tie), comparison="first"), 4000).parts[0]
    assert [c.text for c in part.claims] == ["Alpha was founded in 1990.", "Beta was founded in 1990."]


def test_a_merge_ranks_sentences_with_the_heading_they_were_stored_under(reasoner, embedder):
    # the PostgreSQL manual: a parameter's name heads its description, not each of its sentences
    q = "What is the default value of max_connections?"
    texts = ["The default value is three connections.", "The default is typically 100 connections."]
    headings = ["superuser_reserved_connections (integer)", "max_connections (integer)"]
    vectors = embedder.embed(texts)
    span = Span("conn", 0, "Connection Settings", "conn.html", " ".join(texts), 0, 80, 1.0)
    own, hop = (Claim(t, (Source(span, 0, len(t)),), 1.0, "", v, f"Connection Settings {h} {t}")
                for t, h, v in zip(texts, headings, vectors, strict=True))
    parts = [Part(SubQuestion(q, focus="TCP", kind=HOP), Draft((PartDraft(q, (hop,), True, 0.9, "TCP"),)))]
    merged = reasoner.merge(q, Draft((PartDraft(q, (own,), True, 0.9),)), parts, Plan(), 4000).parts[0]
    assert merged.claims[0].text == "The default is typically 100 connections.", merged.claims


def hop(question: str, focus: str, confidence: float, *claims: Claim) -> Part:
    return Part(SubQuestion(question, focus=focus, kind=HOP),
                Draft((PartDraft(question, claims, True, confidence, focus),)))


def claim(embedder, title: str, text: str) -> Claim:
    span = Span(title.lower(), 0, title, f"{title}.txt", text, 0, len(text), 1.0)
    return Claim(text, (Source(span, 0, len(text)),), 0.9, "", embedder.embed([text])[0], f"{title} {text}")


def test_a_bridge_leads_with_the_sentence_a_hop_found_past_the_link(reasoner, embedder):
    # HotpotQA: the surest hop (on Gillian Chung) finds the link again; the hop on Edison Chen finds the answer
    q = "What actresses were involved in the scandal that temporarily separated the Hong Kong duo Twins in 2008?"
    link = claim(embedder, "Twins (group)", "In February 2008 the duo temporarily separated after the Edison Chen "
                 "photo scandal involving Gillian Chung.")
    answer = claim(embedder, "Edison Chen photo scandal", "The actresses involved in the 2008 photo scandal of Hong "
                   "Kong actor Edison Chen were Gillian Chung, Bobo Chan, Rachel Ngan and Cecilia Cheung.")
    own = Draft((PartDraft(q, (link,), True, 0.9),))
    hops = [hop(q, "Gillian Chung", 1.0, link, answer), hop(q, "Edison Chen", 0.9, answer, link)]
    merged = reasoner.merge(q, own, hops, Plan(tuple(h.sub_question for h in hops)), 4000).parts[0]
    assert [c.text for c in merged.claims] == [answer.text, link.text]
    # a hop's sentence far from the question never leads in place of the link
    stray = claim(embedder, "Wonder Woman (2017 film)", "Diana then leaves her home in order to end the conflict.")
    hops = [hop(q, "Gillian Chung", 1.0, link), hop(q, "Edison Chen", 0.9, stray)]
    merged = reasoner.merge(q, own, hops, Plan(tuple(h.sub_question for h in hops)), 4000).parts[0]
    assert merged.claims[0].text == link.text


def test_a_hop_sentence_from_the_focus_page_leads_unless_the_link_names_what_is_asked(reasoner, embedder):
    # HotpotQA: the hop on the Eagles finds the link first, then the Eagles' own page says the state
    q = "From 1945-1949 Dick Humbert played for an NFL team based in what state?"
    link = claim(embedder, "Dick Humbert", "He played for the Philadelphia Eagles (1941, 1945–1949).")
    state = claim(embedder, "Philadelphia Eagles", "The Philadelphia Eagles are a professional American football "
                  "franchise based in Philadelphia, Pennsylvania.")
    hops = [hop(q, "Philadelphia Eagles", 1.0, link, state)]
    merged = reasoner.merge(q, Draft((PartDraft(q, (link,), True, 0.9),)), hops, Plan(), 4000).parts[0]
    assert [c.text for c in merged.claims] == [state.text, link.text]
    # the link that names the Senator asked for answers itself: the Senator's own page does not lead
    q = "Scott Buchholz previously served as chief of staff to which Queensland Senator of the National Party?"
    link = claim(embedder, "Scott Buchholz", "He previously served as chief of staff to Queensland Senator "
                 "Barnaby Joyce.")
    bio = claim(embedder, "Barnaby Joyce", "Barnaby Thomas Gerard Joyce (born 17 April 1967) is an Australian "
                "politician who has served as the Leader of the National Party.")
    hops = [hop(q, "Barnaby Joyce", 1.0, link, bio)]
    merged = reasoner.merge(q, Draft((PartDraft(q, (link,), True, 0.9),)), hops, Plan(), 4000).parts[0]
    assert merged.claims[0].text == link.text


def test_a_hop_sentence_from_the_links_own_document_is_no_bridge(reasoner, embedder):
    # HotpotQA: both hops found another sentence of the film's own page, which says nothing asked
    q = "Do Lafzon Ki Kahani is a remake of Always, released in which year, a film directed by Song Il-gon?"
    link = claim(embedder, "Do Lafzon Ki Kahani (film)", "It is a remake of the 2011 Korean movie \"Always\".")
    same_page = claim(embedder, "Do Lafzon Ki Kahani (film)", "The film released worldwide on 10 June 2016.")
    hops = [hop(q, "Always", 1.0, same_page, link)]
    merged = reasoner.merge(q, Draft((PartDraft(q, (link,), True, 0.9),)), hops, Plan(), 4000).parts[0]
    assert merged.claims[0].text == link.text


def documents(embedder, docs: list[tuple[str, str]]) -> Evidence:
    """One span per (title, sentence), ranked in the order given, with sentence memory."""
    spans = [Span(title.lower(), 0, title, f"{title}.txt", text, 0, len(text), 1.0) for title, text in docs]
    vectors = embedder.embed([f"{title}: {text}" for title, text in docs])
    stored = [EvidenceSentence(Sentence(s.document_id, 0, s.text, 0, len(s.text)), s, v)
              for s, v in zip(spans, vectors, strict=True)]
    return Evidence(tuple(spans), tuple(stored))


def test_a_bridge_is_taken_from_the_document_of_the_thing_the_question_names(reasoner, embedder):
    # the sentences that match "first president" best are about other countries; the hop to the
    # answer's document is what Damerjog's own document says, ranked last by retrieval
    q = "Who was the first president of Damerjog's country?"
    ev = documents(embedder, [
        ("Republic of the Congo", "Fulbert Youlou was the first president of the Republic of the Congo."),
        ("List of presidents of Freedonia", "Rufus Firefly was the first president of Freedonia."),
        ("Martin Van Buren", "Martin Van Buren was the eighth president of the United States."),
        ("Damerjog", "Damerjog is a town in the southern Djibouti.")])
    plan = reasoner.plan(q, ev, 4000)
    assert plan.sub_questions and plan.sub_questions[0].focus == "Djibouti", plan
    assert plan.sub_questions[0].kind == HOP


def test_a_lead_in_is_said_with_the_items_of_its_list(reasoner, embedder):
    # the PostgreSQL manual: the reasons are list items under a lead-in that says nothing alone
    lead_in = "PostgreSQL's VACUUM command has to process each table on a regular basis for several reasons:"
    items = ["To recover or reuse disk space occupied by updated or deleted rows.",
             "To update data statistics used by the PostgreSQL query planner.",
             "To protect against loss of very old data due to transaction ID wraparound."]
    after = "Each of these reasons dictates performing VACUUM operations of varying frequency and scope."
    texts = [lead_in, *items, after]
    text = "\n\n".join([lead_in, *(f"- {i}" for i in items), after])
    span = Span("vacuum", 0, "Routine Vacuuming", "vacuum.html", text, 0, len(text), 1.0)
    stored, at = [], 0
    for i, (t, kind) in enumerate(zip(texts, ["text", "item", "item", "item", "text"], strict=True)):
        at = text.index(t, at)
        stored.append(Sentence(span.document_id, i, t, at, at + len(t), kind=kind))
    vectors = embedder.embed([f"Routine Vacuuming: {t}" for t in texts])
    ev = Evidence((span,), tuple(EvidenceSentence(s, span, v) for s, v in zip(stored, vectors, strict=True)))
    lead = reasoner.answer([SubQuestion("Why should VACUUM be run regularly?")], [ev], 4000)[0].claims[0]
    assert lead.text == (f"{lead_in} To recover or reuse disk space occupied by updated or deleted rows; To update "
                         "data statistics used by the PostgreSQL query planner; To protect against loss of very old "
                         "data due to transaction ID wraparound.")
    (source,) = lead.sources  # one quote, from the lead-in to the end of the last item
    assert (source.start, source.end) == (stored[0].start, stored[3].end)


def test_a_figure_comparison_is_settled_on_each_sides_table_row(reasoner, embedder):
    # the PostgreSQL manual: prose about each type is closer to the question, the figures are in its table row
    q = "Which is larger, a bigint or an integer?"
    rows = {"a bigint": "Name: bigint; Storage Size: 8 bytes; Description: large-range integer",
            "an integer": "Name: integer; Storage Size: 4 bytes; Description: typical choice for integer"}
    prose = ["The bigint type is designed to be used when the range of the integer type is insufficient.",
             "The types smallint, integer, and bigint store whole numbers of various ranges."]
    sides = []
    for name, row in rows.items():
        sub = SubQuestion(q, focus=name, kind=SIDE)
        ev = evidence(embedder, "8.1. Numeric Types", [*prose, row])
        draft = reasoner.answer([sub], [ev], 4000)[0]
        assert draft.claims[0].text == row, draft.claims  # the row leads the side: it gives the figure
        sides.append(Part(sub, draft))
    plan = Plan(tuple(s.sub_question for s in sides), comparison="larger")
    part = reasoner.merge(q, Draft((PartDraft(q),)), sides, plan, 4000).parts[0]
    assert part.found
    assert [c.text for c in part.claims[:3]] == ["A bigint: 8, against an integer 4.", *rows.values()]
