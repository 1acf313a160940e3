"""The extractive reasoner with the real embedder and the shipped reader, on hand-made evidence:
which sentence answers, whether any does, what reflection keeps, how bridges, lists, sentences that
refer back and comparisons are said, and that each rule can be switched off by name."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rag_rlm.reader import load_reader, shipped_reader_path
from rag_rlm.reasoning.base import (
    HOP,
    SIDE,
    Candidate,
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
from rag_rlm.reasoning.claims import (
    answers_alone,
    asked_default,
    continues_past_block,
    denies_the_ask,
    identifiers,
    named_cells,
    names_cell,
    of_another_entry,
    row_names,
    same,
    self_contained,
    unnamed_things,
)
from rag_rlm.reasoning.claims import said as said_as
from rag_rlm.reasoning.extractive import ExtractiveReasoner
from rag_rlm.reasoning.rules import RuleSet
from rag_rlm.reasoning.scoring import ReaderScorer
from rag_rlm.reasoning.thresholds import Thresholds
from rag_rlm.types import Sentence, Span


@pytest.fixture(scope="module")
def scorer():
    return ReaderScorer(load_reader(shipped_reader_path()))


def make(embedder, scorer, off: tuple[str, ...] = ()) -> ExtractiveReasoner:
    thresholds = Thresholds().with_values("the shipped reader's card", found=scorer.reader.threshold)
    return ExtractiveReasoner(embedder, scorer, thresholds=thresholds, rules=RuleSet(off))


@pytest.fixture(scope="module")
def reasoner(embedder, scorer):
    return make(embedder, scorer)


def evidence(embedder, title: str, sentences: list[str], kinds: list[str] | None = None, sep: str = " ",
             text: str | None = None) -> Evidence:
    """One span of `sentences` (or of `text`, which holds them), stored as sentence memory
    stores them (vectors with the title)."""
    text = sep.join(sentences) if text is None else text
    span = Span(title.lower(), 0, title, f"{title}.txt", text, 0, len(text), 1.0)
    stored, at = [], 0
    for i, s in enumerate(sentences):
        at = text.index(s, at)
        stored.append(Sentence(span.document_id, i, s, at, at + len(s), kind=(kinds or ["text"] * len(sentences))[i]))
    vectors = embedder.embed([f"{title}: {s}" for s in sentences])
    return Evidence((span,), tuple(EvidenceSentence(s, span, v) for s, v in zip(stored, vectors, strict=True)))


LIGHTHOUSE = ["The lighthouse at Cape Varn is a 40-metre stone tower on the northern headland.",
              "It was built in 1874 by the harbour authority and automated in 1961.",
              "Visitors can climb its 212 steps from May to September."]


def test_the_sentence_that_answers_leads_not_the_one_that_names_the_subject(reasoner, embedder):
    ev = evidence(embedder, "Cape Varn lighthouse", LIGHTHOUSE)
    draft = reasoner.answer([SubQuestion("How many steps does the Cape Varn lighthouse have?")], [ev], 4000)[0]
    part = draft.parts[0]
    assert part.found and part.claims[0].text == LIGHTHOUSE[2]
    assert part.answer == "212"  # the short answer of a one-figure question


def test_an_off_topic_or_same_topic_unanswerable_question_is_not_found(reasoner, embedder):
    ev = evidence(embedder, "Cape Varn lighthouse", LIGHTHOUSE)
    for question in ("What is the capital of France?", "Who designed the Cape Varn lighthouse's lens?"):
        part = reasoner.answer([SubQuestion(question)], [ev], 4000)[0].parts[0]
        assert not part.found, (question, part.confidence)
        assert part.confidence < reasoner.thresholds.found


def test_reflection_drops_a_claim_its_sentence_does_not_support(reasoner, embedder):
    ev = evidence(embedder, "Cape Varn lighthouse", LIGHTHOUSE)
    q = "When was the Cape Varn lighthouse built?"
    good = reasoner.answer([SubQuestion(q)], [ev], 4000)[0].parts[0].claims[0]
    span = ev.spans[0]
    stray = Claim(LIGHTHOUSE[2], (Source(span, ev.sentences[2].sentence.start, ev.sentences[2].sentence.end),))
    draft = Draft((PartDraft(q, (good, stray), True, 0.9),))
    checked = reasoner.reflect(q, draft, ev, 4000)
    assert len(checked.claims) == 1 and checked.claims[0].text.endswith(good.text)  # said with what "It" is
    assert any(n.startswith("reflect: dropped 'Visitors can climb") for n in checked.notes)


@pytest.mark.parametrize(("title", "sentences", "question"), [
    ("Index Types", ["Hash indexes store a 32-bit hash code derived from the value of the indexed column.",
                     "Hence, such indexes can only handle simple equality comparisons.",
                     "B-tree indexes can also be used to retrieve data in sorted order."],
     "Which comparisons can hash indexes handle?"),
    # "But it will fire ON TRUNCATE triggers" alone says neither what "it" is nor what it does not fire
    ("TRUNCATE", ["TRUNCATE will not fire any ON DELETE triggers that might exist for the tables.",
                  "But it will fire ON TRUNCATE triggers.",
                  "TRUNCATE quickly removes all rows from a set of tables."],
     "Which triggers does TRUNCATE fire?"),
])
def test_a_lead_that_refers_back_is_said_after_the_sentence_it_refers_to(reasoner, embedder, title, sentences, question):
    ev = evidence(embedder, title, sentences)
    draft = reasoner.answer([SubQuestion(question)], [ev], 4000)[0]
    assert draft.claims[0].text == sentences[1]
    reflected = reasoner.reflect(question, draft, ev, 4000)
    lead = reflected.parts[0].claims[0]
    assert lead.text == f"{sentences[0]} {sentences[1]}"
    (source,) = lead.sources  # one quote from the start of the first sentence to the end of the second
    assert (source.start, source.end) == (0, ev.sentences[1].sentence.end)
    assert "refers_back" in reflected.rules
    off = make(embedder, reasoner.scorer, ("refers_back",)).reflect(question, draft, ev, 4000)
    assert off.parts[0].claims[0].text == draft.claims[0].text and "refers_back" not in off.rules


def test_a_lead_that_refers_back_takes_the_whole_sentence_before_it_and_keeps_the_other_claims(reasoner, embedder):
    # chunks overlap, so the lead's own chunk may start inside the sentence it refers to: split afresh,
    # that chunk reads "past the end of the list." as the sentence before; the stored sentence is
    # whole, and another retrieved chunk holds it with the lead
    s0 = "The first lookup method panics when it is given an index past the end of the list."
    s1 = "This method is best used when a missing element is a bug in the program."
    s2 = "The second lookup method returns nothing instead of panicking."
    text = f"{s0} {s1} {s2}"
    ev = evidence(embedder, "Lookups", [s0, s1, s2], text=text)
    cut = text.index("past the end")
    first = Span("lookups", 0, "Lookups", "Lookups.txt", text[:len(s0) + 1 + len(s1)], 0, len(s0) + 1 + len(s1), 1.0)
    second = Span("lookups", 1, "Lookups", "Lookups.txt", text[cut:], cut, len(text), 1.0)
    stored = tuple(replace(e, span=second if e.sentence.start >= cut else first) for e in ev.sentences)
    at = [e.sentence for e in stored]
    lead = Claim(s1, (Source(second, at[1].start, at[1].end),))
    other = Claim(s2, (Source(second, at[2].start, at[2].end),))
    question = "When should I use the first lookup method?"
    draft = Draft((PartDraft(question, (lead, other), True, 0.9),))
    reflected = reasoner.reflect(question, draft, Evidence((second, first), stored), 4000)
    said = reflected.parts[0].claims
    assert said[0].text == f"{s0} {s1}" and "refers_back" in reflected.rules
    (source,) = said[0].sources  # quoted from the chunk that holds both sentences
    assert (source.span.chunk_index, source.start, source.end) == (0, 0, at[1].end)
    assert [c.text for c in said[1:]] == [s2]  # the part's other sentence is still said
    # without sentence memory the lead's own chunk is all there is, and its first words are no sentence
    alone = reasoner.reflect(question, draft, Evidence((second,)), 4000)
    assert alone.parts[0].claims[0].text == s1 and "refers_back" not in alone.rules


def test_a_lead_in_is_said_with_the_items_of_its_list(reasoner, embedder):
    lead_in = "Routine vacuuming is needed for several reasons:"
    items = ["To recover or reuse disk space occupied by updated or deleted rows.",
             "To update data statistics used by the query planner.",
             "To protect against loss of very old data due to transaction ID wraparound."]
    ev = evidence(embedder, "Routine Vacuuming", [lead_in, *items], ["text", "item", "item", "item"], sep="\n\n")
    draft = reasoner.answer([SubQuestion("Why should VACUUM be run regularly?")], [ev], 4000)[0]
    assert draft.claims[0].text.startswith(lead_in) and items[2].rstrip(".") in draft.claims[0].text
    assert "list_lead_in" in draft.rules
    (source,) = draft.claims[0].sources  # one quote, from the lead-in to the end of the last item
    assert (source.start, source.end) == (ev.sentences[0].sentence.start, ev.sentences[3].sentence.end)
    off = make(embedder, reasoner.scorer, ("list_lead_in",))
    alone = off.answer([SubQuestion("Why should VACUUM be run regularly?")], [ev], 4000)[0]
    assert not alone.claims or not alone.claims[0].text.startswith(lead_in + " To")


def test_a_list_of_entries_is_not_said_whole_each_entry_answers(reasoner, embedder):
    """A lead-in to a list of "TERM: description" entries is no list of reasons: each entry, and
    each later sentence of it (read under its term), answers for itself."""
    sentences = ["Valid arguments are as follows:", "TIMEOUT: The timeout, in seconds, to use for the store.",
                 "This argument defaults to 300 seconds.", "OPTIONS: Any options that should be passed to the store.",
                 "This argument defaults to an empty mapping."]
    kinds = ["text", "item", "item", "item", "item"]
    headings = ["", "", "TIMEOUT", "", "OPTIONS"]
    ev = evidence(embedder, "Store arguments", sentences, kinds, sep="\n\n")
    ev = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=h))
                                     for e, h in zip(ev.sentences, headings, strict=True)))
    draft = reasoner.answer([SubQuestion("What is the default timeout of the store?")], [ev], 4000)[0]
    said = [c.text for c in draft.claims]
    assert draft.parts[0].found and sentences[2] in said and not any(t.startswith(sentences[0]) for t in said)


def test_a_lead_in_is_said_with_the_short_command_after_it(reasoner, embedder):
    """A how-to gives the command after a colon, as code: the lead-in is judged by its own words
    and said with the command, quoted to the code's end. Before a longer example it is said alone,
    its colon a full stop, when it makes a statement itself; "For example:" never is."""
    lead_in = ("Whenever you make a change to the mailer.cf file, execute the following command as root "
               "in order to refresh a running mail system:")
    other = "The mailer.cf file must be owned by root."
    question = "Which command makes a running mail system pick up changes to mailer.cf?"
    long_code = "mailer stop\nmailer check\nmailer start"
    for opening, code, said in ((lead_in, "# mailer reload", f"{lead_in} # mailer reload"),
                                (lead_in, long_code, lead_in[:-1] + "."), ("For example:", long_code, None)):
        text = f"{opening}\n\n```\n{code}\n```\n\n{other}"
        ev = evidence(embedder, "Mailer configuration", [opening, other], text=text)
        draft = reasoner.answer([SubQuestion(question)], [ev], 4000)[0]
        if said is None:
            assert not any(c.text.startswith("For example") for c in draft.claims)
            continue
        assert draft.parts[0].found and draft.claims[0].text == said and "list_lead_in" in draft.rules
        (source,) = draft.claims[0].sources
        quoted = text[source.start:source.end]
        assert quoted == (f"{lead_in}\n\n```\n{code}\n```" if code != long_code else lead_in)


MEMORY_ENTRIES = [("Memory", "shared_buffers (integer): Sets the amount of memory the server uses for shared memory buffers."),
                  ("shared_buffers (integer)", "The default is typically 128 megabytes (128MB)."),
                  ("Memory", "temp_buffers (integer): Sets the maximum amount of memory used for temporary buffers."),
                  ("temp_buffers (integer)", "The default value is 100 buffers.")]


def test_a_sentence_of_another_manual_entry_does_not_answer_for_the_asked_one(reasoner, embedder):
    """A manual entry's later sentences are about the entry's name (their heading): temp_buffers'
    default is no answer about shared_buffers, and none of these entries answers about work_mem."""
    ev = evidence(embedder, "Resource Consumption", [t for _, t in MEMORY_ENTRIES])
    ev = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=h))
                                     for e, (h, _) in zip(ev.sentences, MEMORY_ENTRIES, strict=True)))
    for asked, default in (("shared_buffers", MEMORY_ENTRIES[1][1]), ("temp_buffers", MEMORY_ENTRIES[3][1])):
        draft = reasoner.answer([SubQuestion(f"What is the default value of {asked}?")], [ev], 4000)[0]
        said = [c.text for c in draft.claims]
        assert draft.parts[0].found and default in said and "other_entry" in draft.rules
        assert not {t for h, t in MEMORY_ENTRIES if asked not in h + t} & set(said)
    absent = reasoner.answer([SubQuestion("What is the default value of work_mem?")], [ev], 4000)[0]
    assert not absent.parts[0].found and "other_entry" in absent.rules
    off = make(embedder, reasoner.scorer, ("other_entry",))
    assert "other_entry" not in off.answer([SubQuestion("What is the default value of work_mem?")], [ev], 4000)[0].rules
    # a story's scene names the asker's own files: only its asking sentence's names are asked
    story = ("Our settings.py leaves the memory settings alone, and still each session gets only a few temporary "
             "buffers. What is the default value of temp_buffers?")
    told = reasoner.answer([SubQuestion(story)], [ev], 4000)[0]
    assert MEMORY_ENTRIES[3][1] in [c.text for c in told.claims] and "other_entry" in told.rules
    scene = reasoner.answer([SubQuestion(story.replace("of temp_buffers", "number of temporary buffers"))], [ev], 4000)[0]
    assert "other_entry" not in scene.rules  # no entry is named for settings.py: none is another's
    # an option named by its keyword is an entry too; a section heading is not
    option = Sentence("explain", 3, "This parameter defaults to TRUE.", 0, 9, heading="EXPLAIN — COSTS")
    assert of_another_entry({"work_mem"}, option)
    assert not of_another_entry({"work_mem"}, replace(option, heading="Resource Consumption"))
    # Java's and JavaScript's members are named in camelCase: trimToEmpty's notes are not trim's
    notes = Sentence("ledger", 4, "Returns: the trimmed line, or an empty line if null input", 0, 9, heading="trimToEmpty")
    assert of_another_entry(identifiers("What does Ledger.trim return for a null input?"), notes)
    assert not of_another_entry(identifiers("What does Ledger.trimToEmpty return for null?"), notes)
    # a C++ or Rust path names its last part; a member's heading (Doxygen's "pad()", rustdoc's
    # signature) names its entry
    assert identifiers("What does ledger_base::pad do?") == {"ledger_base::pad", "pad"}
    constructor = replace(notes, text="References ledger::internal::wait_read().", heading="ledger_base()")
    assert of_another_entry(identifiers("What does ledger_base::pad do?"), constructor)
    for heading in ("pad()", "pad() [1/2]", "pub fn pad(&self, width: usize) -> String"):
        assert not of_another_entry({"pad"}, replace(notes, heading=heading)), heading
    # a command's long option names its entry (not the longer option it begins); for a question
    # that names the command, not an option, its options' entries are its own
    assert identifiers("What does Memcheck's --leak-check default to?") == {"--leak-check"}
    heuristics = Sentence("mc", 5, "Specifies the set of leak check heuristics.", 0, 9,
                          heading="Memcheck options — --leak-check-heuristics=<set> [default: all]")
    assert of_another_entry({"--leak-check"}, heuristics)
    assert not of_another_entry({"--leak-check-heuristics"}, heuristics)
    schema_only = Sentence("pg_dump", 6, "-s --schema-only: Dump only the object definitions (schema), not data.", 0, 9,
                           heading="pg_dump — Options")
    assert not of_another_entry(identifiers("Which pg_dump option dumps only the schema?"), schema_only)
    # a shell's parameter is named by its keyword with the marks of its kind after it (zsh's "HISTSIZE <S>")
    cushion = Sentence("zsh", 7, "If you use the HIST_EXPIRE_DUPS_FIRST option, setting this value larger than the "
                       "SAVEHIST size will give you the difference as a cushion.", 0, 9, heading="Parameters — HISTSIZE <S>")
    assert of_another_entry(identifiers("What does HIST_IGNORE_DUPS do?"), cushion)
    assert not of_another_entry(identifiers("What does HIST_EXPIRE_DUPS_FIRST do?"), cushion)


def test_a_story_whose_asking_sentence_names_a_thing_no_passage_says_is_not_found(reasoner, embedder):
    """A long question names what it passes through, which no passage need say; told as a story, its
    asking sentence names what it asks about, and that the passages must say (rule unnamed_thing)."""
    ev = evidence(embedder, "KeepAlive", ["KeepAlive: Enables HTTP persistent connections.",
                                          "The default value of KeepAlive is On."])
    story = ("We moved our sites behind a new load balancer last week and idle browsers now keep their "
             "sockets open. What is the default value of KeepAliveTimeout?")
    draft = reasoner.answer([SubQuestion(story)], [ev], 4000)[0]
    assert not draft.parts[0].found and "unnamed_thing" in draft.rules
    scene = ("We moved our sites behind a new Varnish balancer last week and idle browsers now keep their "
             "sockets open. What is the default value of KeepAlive?")
    answered = reasoner.answer([SubQuestion(scene)], [ev], 4000)[0]
    assert answered.parts[0].found and "unnamed_thing" not in answered.rules  # Varnish is only the scene


def test_a_question_about_a_thing_no_passage_names_is_not_found(reasoner, embedder):
    """KeepAlive's default reads as an answer about KeepAliveTimeout (0.93); no passage names
    KeepAliveTimeout, so the collection does not answer. Checked when answering, and again on
    reflection (where a part judged with a hop's passages is), without asking again."""
    ev = evidence(embedder, "KeepAlive", ["KeepAlive: Enables HTTP persistent connections.",
                                          "The default value of KeepAlive is On."])
    q = "What is the default value of KeepAliveTimeout?"
    off = make(embedder, reasoner.scorer, ("unnamed_thing",))
    guessed = off.answer([SubQuestion(q)], [ev], 4000)[0]
    assert guessed.parts[0].found and guessed.claims  # what the reader alone says
    draft = reasoner.answer([SubQuestion(q)], [ev], 4000)[0]
    assert not draft.parts[0].found and "unnamed_thing" in draft.rules
    reflected = reasoner.reflect(q, guessed, ev, 4000)
    assert not reflected.parts[0].found and not reflected.parts[0].claims and reflected.missing == ()
    assert "unnamed_thing" in reflected.rules and any("KeepAliveTimeout" in n for n in reflected.notes)
    # named by the passages, misspelt by one letter, or by a dotted name's last part: it is said
    assert unnamed_things("What did the Kelven Report say?", ["The Kalven Report declared …"]) == []
    assert unnamed_things("What does Counter.most_common return?", ["most_common([n]): Return a list"]) == []
    assert unnamed_things("What does re.sub return?", ["The subprocess module …"]) == ["re.sub"]
    # a dotted name's part inside a hyphenated word is another word; a hyphenated name's parts are not
    assert unnamed_things("What does re.sub return?", ["A title for the sub-parser group"]) == ["re.sub"]
    assert unnamed_things("What does re.sub return?", ["Use sub() to replace."]) == []
    # a plain word that names a thing by its kind is a name too, though written in lower case
    assert unnamed_things("Which version added the walrus operator?", ["Added the | and |= operators."]) == ["walrus"]
    assert unnamed_things("What does the nullglob option do?", ["nullglob: If set, a pattern ..."]) == []
    assert unnamed_things("Is the X-Forwarded-For header added?", ["the header forwarded for X"]) == []
    # a command-line option is said whole: its words alone are any manual's
    helgrind = ["Helgrind is a thread error detector.", "--history-size=<number>: the level of history kept"]
    assert unnamed_things("What does Helgrind's --history-level option control?", helgrind) == ["--history-level"]
    assert unnamed_things("Can valgrind run a binary built with -fsanitize=address?", helgrind) == ["-fsanitize"]
    assert unnamed_things("What does --history-size control?", helgrind) == []
    # a word in quotes is a name as the asker writes one (Vim's options)
    vim = ["'tabstop' 'ts' number (default 8): Number of spaces that a <Tab> in the file counts for in Vim."]
    assert unnamed_things("What is the default value of 'inccommand' in Vim?", vim) == ["inccommand"]
    assert unnamed_things("What is the default value of 'tabstop' in Vim?", vim) == []
    assert unnamed_things("What is the default value of inccommand in Vim?", vim) == []  # a word, unquoted
    # a sentence read is a passage read, though it reaches past its span's end
    ev = evidence(embedder, "Vim options", vim)
    ev = replace(ev, spans=(replace(ev.spans[0], text="'"),))
    draft = reasoner.answer([SubQuestion("What is the default value of 'tabstop' in Vim?")], [ev], 4000)[0]
    assert draft.parts[0].found and "unnamed_thing" not in draft.rules


def test_a_pages_own_question_names_no_bridge(reasoner, embedder):
    """A bridge goes through what a statement names; a page's question ("FAQ: Should I …?", a
    link's title) states nothing, so it is no link and its words ("FAQ") are no hop."""
    ev = evidence(embedder, "Configuration", ["FAQ: Should I use retry or acks_late?.",
                                              "See also the Task Cookbook for examples of acks_late.",
                                              "The default value of acks_late is False."])
    plan = reasoner.plan("What does acks_late do?", ev, 4000)
    assert [entity for entity, _ in plan.links] == ["Task Cookbook"]


def test_a_question_whose_named_entry_is_read_is_no_hop_and_a_repeated_sentence_is_said_once(reasoner, embedder):
    """An API reference's entry answers what it is named for: the names in its notes ("Throws:
    IllegalStateException") are no hop to another document. Its summary table repeats the entry's
    first sentence under another heading (another vector): said once."""
    sentences = ["Splits the time.", "Throws: IllegalStateException - if the Ledger is not running.", "Splits the time."]
    ev = evidence(embedder, "Ledger", sentences)
    headings = ["split", "split", "Method Summary"]
    vectors = embedder.embed([f"Ledger {h}: {s}" for h, s in zip(headings, sentences, strict=True)])  # as ingest reads them
    ev = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=h), vector=v)
                                     for e, h, v in zip(ev.sentences, headings, vectors, strict=True)))
    plan = reasoner.plan("What does Ledger.split do?", ev, 4000)
    assert not plan.sub_questions and plan.note == "single question: the entry it names is read"
    unnamed = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading="Ledger")) for e in ev.sentences))
    assert reasoner.plan("What does Ledger.split do?", unnamed, 4000).sub_questions  # without its entry: a hop
    said = [c.text for c in reasoner.answer([SubQuestion("What does Ledger.split do?")], [ev], 4000)[0].claims]
    assert said.count("Splits the time.") == 1, said


SERIALIZER_ENTRIES = [("Tasks — General — Task.serializer", "Defaults to the task_serializer setting."),
                      ("Configuration — task_serializer", "A string identifying the default serialization method to use."),
                      ("Configuration — task_serializer", 'Default: "json" (since 4.0, earlier: pickle).')]


def test_where_the_asked_things_own_entry_is_read_another_entry_that_mentions_it_does_not_answer(reasoner, embedder):
    """Task.serializer's "Defaults to the task_serializer setting" names the asked setting, so it
    may answer while task_serializer's own entry is not among the evidence; once it is, the other
    entry's sentence is about Task.serializer and no candidate."""
    question = "What is the default value of task_serializer?"
    mention = SERIALIZER_ENTRIES[0][1]

    def answer(entries):
        ev = evidence(embedder, "Celery", [t for _, t in entries])
        ev = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=h))
                                         for e, (h, _) in zip(ev.sentences, entries, strict=True)))
        return reasoner.answer([SubQuestion(question)], [ev], 4000)[0]

    alone = answer(SERIALIZER_ENTRIES[:1])
    assert [c.text for c in alone.claims] == [f"Task.serializer: {mention}"]  # whose default it is, said
    both = answer(SERIALIZER_ENTRIES)
    assert both.parts[0].found and not any(c.text.endswith(mention) for c in both.claims) and "other_entry" in both.rules
    assert 'Default: "json" (since 4.0, earlier: pickle).' in [c.text for c in both.claims]


CONFIG_ENTRIES = [("Builtin Configuration Values", "MAX_BODY_BYTES: Do not read more than this many bytes of a request body."),
                  ("Builtin Configuration Values — MAX_BODY_BYTES", "If not set, the whole body is read."),
                  ("Builtin Configuration Values — MAX_BODY_BYTES", "Default: None"),
                  ("Builtin Configuration Values", "So how do you limit the size of a request body?"),
                  ("Builtin Configuration Values", "Default: 3")]


def test_a_labelled_value_under_an_entry_answers_and_a_pages_own_question_does_not(reasoner, embedder):
    """A settings reference writes an entry's default as "Default: None" after its description:
    that short sentence answers for the entry and is said of it, since the asker does not see the
    entry around it. The same two words under a plain section heading stay a fragment; a question
    the page asks itself never answers one."""
    ev = evidence(embedder, "Configuration Handling", [t for _, t in CONFIG_ENTRIES])
    ev = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=h))
                                     for e, (h, _) in zip(ev.sentences, CONFIG_ENTRIES, strict=True)))
    draft = reasoner.answer([SubQuestion("What is the default value of MAX_BODY_BYTES?")], [ev], 4000)[0]
    said = [c.text for c in draft.claims]
    assert draft.parts[0].found and said[0] == "Default of MAX_BODY_BYTES: None", said
    (source,) = draft.claims[0].sources  # the quote is the page's own words
    assert ev.spans[0].text[source.start:source.end] == "Default: None"
    assert "Default: 3" not in said
    # a value of a few words is said of its entry too; a longer "Label: ..." is a sentence of its own
    typed = replace(ev, sentences=tuple(
        replace(e, sentence=replace(e.sentence, heading="exec — maxBuffer", text=t))
        for e, t in zip(ev.sentences[:2], ["Default: 1024 * 1024.", "Note: the whole output is kept in memory."],
                        strict=True)))
    assert [said_as(e.sentence) for e in typed.sentences] == ["Default of maxBuffer: 1024 * 1024.",
                                                             "Note: the whole output is kept in memory."]
    limit = reasoner.answer([SubQuestion("How do you limit the size of a request body?")], [ev], 4000)[0]
    assert not any(c.text.endswith("?") for c in limit.claims)
    # a link's title quoted as a question is still one, behind a short label and the sentence's own stop
    assert not answers_alone(Sentence("c", 0, "FAQ: Should I use retry or acks_late?.", 0, 9))
    assert answers_alone(Sentence("c", 0, "Note: the worker acknowledges the message after the task returns.", 0, 9))


def test_a_sentence_of_an_api_entry_is_said_after_the_entrys_name_when_nothing_else_names_it(reasoner, embedder):
    """The asker does not see the heading a sentence sits under: "Schedules execution of a
    one-time callback" does not tell them which function does. Where the question names the
    entry, or the sentence does, it is said as written."""
    timer = Sentence("timers", 0, "Schedules execution of a one-time callback after delay milliseconds.", 0, 68,
                     heading="Timers — setTimeout(callback[, delay])")
    assert said_as(timer, "How do I run a function after a delay?") == (
        "setTimeout(): Schedules execution of a one-time callback after delay milliseconds.")
    assert said_as(timer, "What does setTimeout do?") == timer.text
    assert said_as(replace(timer, heading="Timers — Scheduling timers"), "How do I run a function after a delay?") \
        == timer.text  # a section, not an entry
    assert said_as(replace(timer, heading="WAL — Sometimes Queries Return SQLITE_BUSY In WAL Mode"),
                   "How do I run a function after a delay?") == timer.text  # nor one whose title mentions a name
    assert said_as(replace(timer, heading="Usage — where"), "How do I run a function after a delay?") == timer.text
    ev = evidence(embedder, "Timers", [timer.text, "Timers are not guaranteed to run exactly on time."])
    ev = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=timer.heading)) for e in ev.sentences))
    draft = reasoner.answer([SubQuestion("How do I run a function after a delay?")], [ev], 4000)[0]
    assert draft.claims[0].text.startswith("setTimeout(): Schedules")
    # a lead that refers back is said after the sentence before it, the entry's name first
    back = evidence(embedder, "Builtins", ["If expr is supplied, caller displays the line number and source file.",
                                           "This extra information may be used to print a stack trace."])
    back = replace(back, sentences=tuple(replace(e, sentence=replace(e.sentence, heading="Builtins — caller"))
                                         for e in back.sentences))
    lead = back.sentences[1].sentence
    claim = Claim(said_as(lead, "How do I print a stack trace?"), (Source(back.spans[0], lead.start, lead.end),))
    carried = self_contained(claim, back.spans, [e.sentence for e in back.sentences])
    assert carried.text == ("caller: If expr is supplied, caller displays the line number and source file. "
                            "This extra information may be used to print a stack trace.")
    # an entry's row before it is no sentence to say it after: the row would run into it
    row = evidence(embedder, "Main options", ["smtp_accept_max_per_host; Use: main; Type: string; Default: unset",
                                              "This option restricts the number of simultaneous connections from a host."],
                   kinds=["row", "text"])
    after_row = row.sentences[1].sentence
    claim = Claim(after_row.text, (Source(row.spans[0], after_row.start, after_row.end),))
    assert self_contained(claim, row.spans, [e.sentence for e in row.sentences]) is None


def test_the_rest_of_a_sentence_that_code_or_a_list_interrupted_is_no_answer(reasoner, embedder):
    """CMake writes "For example, the code: <code> will run someHasher after linking myPlugin": its
    last words, said alone, had led an answer about running a tool after linking."""
    rest = "will run someHasher after linking myPlugin, to produce a hash of it."
    post = "POST_BUILD: Run after all other rules within the target have been executed."
    text = f"For example, the code:\n\n```\nadd_custom_command(TARGET myPlugin POST_BUILD)\n```\n\n{rest}\n\n{post}"
    ev = evidence(embedder, "add_custom_command", ["For example, the code:", rest, post], text=text)
    cands = [Candidate(e.sentence, e.span, e.vector) for e in ev.sentences]
    assert [continues_past_block(c) for c in cands] == [False, True, False]
    listed = "using the commands:\n\n- set_property(),\n\n- target_sources(INTERFACE),\n\nand then it is used as an argument."
    items = evidence(embedder, "add_library", ["and then it is used as an argument."], text=listed)
    assert continues_past_block(Candidate(items.sentences[0].sentence, items.spans[0], items.sentences[0].vector))
    draft = reasoner.answer([SubQuestion("How do I run a tool right after linking myPlugin?")], [ev], 4000)[0]
    assert all(not c.text.startswith("will run") for c in draft.claims)


INTEGER_ROWS = ["Name: smallint; Storage Size: 2 bytes; Description: small-range integer; Range: -32768 to +32767",
                "Name: integer; Storage Size: 4 bytes; Description: typical choice for integer",
                "Name: bigint; Storage Size: 8 bytes; Description: large-range integer",
                "Name: bigserial; Storage Size: 8 bytes; Description: large autoincrementing integer",
                "Input String: infinity; Valid Types: date, timestamp, bigint; Description: later than all others"]


def test_a_table_row_of_another_thing_does_not_answer_for_the_asked_one(reasoner, embedder):
    """A row is about its first cell: the bigserial row's "8 bytes" is no answer about bigint, nor
    is a row of another table whose later cell mentions it."""
    assert row_names(Sentence("d", 0, "Name: timestamp [ (p) ] [ without time zone ]; Storage Size: 8 bytes", 0, 9)) \
        == {"timestamp"}
    assert row_names(Sentence("d", 0, "Name: character varying(n), varchar(n); Description: limit", 0, 9)) \
        == {"character varying", "varchar"}
    assert row_names(Sentence("d", 0, "The default is 5; see: below.", 0, 9)) == set()
    ev = evidence(embedder, "Numeric Types", INTEGER_ROWS)
    question = SubQuestion("How many bytes of storage does a bigint use?")
    draft = reasoner.answer([question], [ev], 4000)[0]
    said = [c.text for c in draft.claims]
    assert draft.parts[0].found and said[0] == INTEGER_ROWS[2] and "other_row" in draft.rules
    assert not {INTEGER_ROWS[3], INTEGER_ROWS[4]} & set(said)
    off = make(embedder, reasoner.scorer, ("other_row",)).answer([question], [ev], 4000)[0]
    assert "other_row" not in off.rules


DATE_ROWS = ["Name: timestamp [ (p) ] [ without time zone ]; Storage Size: 8 bytes; Description: both date and time "
             "(no time zone); Low Value: 4713 BC; High Value: 294276 AD; Resolution: 1 microsecond",
             "Name: date; Storage Size: 4 bytes; Description: date (no time of day); Low Value: 4713 BC; "
             "High Value: 5874897 AD; Resolution: 1 day",
             "Dates are counted according to the Gregorian calendar, even in years before that calendar was introduced."]


def test_a_table_row_and_column_the_question_names_answer_it(reasoner, embedder):
    """The reader learned from prose and reads a table row low; the row and the column a question
    names are a lookup: the row leads, the part is found, and no hop is planned."""
    def row(text: str) -> Sentence:
        return Sentence("d", 0, text, 0, len(text), kind="row")

    assert names_cell("What is the date's highest value?", row(DATE_ROWS[1]))
    assert names_cell("What is the storage size of a date?", row(DATE_ROWS[1]))
    assert not names_cell("What does a date store?", row(DATE_ROWS[1]))  # no column named
    assert not names_cell("What is the highest value of an interval?", row(DATE_ROWS[1]))  # another row
    ev = evidence(embedder, "8.5. Date/Time Types", DATE_ROWS, kinds=["row", "row", "text"])
    question = "What is the date's highest value?"
    assert reasoner.plan(question, ev, 4000).sub_questions == ()
    # a row named is what answers: no hop to "Gregorian", whose page held another row
    assert reasoner.plan("How much storage does a date use?", ev, 4000).sub_questions == ()
    assert make(embedder, reasoner.scorer, ("asked_cell",)).plan("How much storage does a date use?", ev, 4000) \
        .sub_questions != ()
    draft = reasoner.answer([SubQuestion(question)], [ev], 4000)[0]
    assert draft.parts[0].found and "asked_cell" in draft.rules
    # the asker reads the value asked for, cited to the whole row
    assert draft.claims[0].text == "Name: date; High Value: 5874897 AD"
    source = draft.claims[0].sources[0]
    assert source.span.text[source.start:source.end] == DATE_ROWS[1]
    assert named_cells("What is the lowest value and the resolution of a date?", row(DATE_ROWS[1])) \
        == "Name: date; Low Value: 4713 BC; Resolution: 1 day"
    assert named_cells("How much storage does a date use?", row(DATE_ROWS[1])) == ""  # "Storage Size" not said
    off = make(embedder, reasoner.scorer, ("asked_cell",)).answer([SubQuestion(question)], [ev], 4000)[0]
    assert not off.parts[0].found and "asked_cell" not in off.rules


VIM_OPTIONS = [("Options", "'smarttab' 'sta' boolean (default off): When on, a <Tab> in front of a line inserts blanks "
                            "according to 'shiftwidth', and 'tabstop' is used in other places."),
               ("Options", "'tabstop' 'ts' number (default 8): Number of spaces that a <Tab> in the file counts for."),
               ("Options — 'tabstop' 'ts' number (default 8)", "Also see the :retab command, and the 'softtabstop' option.")]


def test_a_default_written_in_an_entry_term_is_said(reasoner, embedder):
    """Vim and Valgrind write an option's default in its term alone ("'tabstop' 'ts' number
    (default 8): ..."). Asked for it by name, the entry's first sentence leads, said as the
    default, and no hop is planned: a lookup, not a judgement."""
    assert asked_default("What is the default value of tabstop?", VIM_OPTIONS[1][1].split(":")[0]) == ("tabstop", "8")
    valgrind = "--leak-check=<no|summary|yes|full> [default: summary]"
    assert asked_default("What does Memcheck's --leak-check default to?", valgrind) == ("--leak-check", "summary")
    assert asked_default("What does --leak-check do?", valgrind) is None  # no default asked
    assert asked_default("What is the default value of shiftwidth?", VIM_OPTIONS[1][1].split(":")[0]) is None
    ev = evidence(embedder, "Vim documentation: options", [t for _, t in VIM_OPTIONS])
    ev = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=h))
                                     for e, (h, _) in zip(ev.sentences, VIM_OPTIONS, strict=True)))
    question = "What is the default value of tabstop?"
    assert reasoner.plan(question, ev, 4000).sub_questions == ()
    draft = reasoner.answer([SubQuestion(question)], [ev], 4000)[0]
    assert draft.parts[0].found and "term_default" in draft.rules
    assert draft.claims[0].text == "Default of tabstop: 8"
    source = draft.claims[0].sources[0]
    assert source.span.text[source.start:source.end] == VIM_OPTIONS[1][1]
    # a thing no passage names still makes the part not found: the entry's default is not Neovim's
    neovim = reasoner.answer([SubQuestion("What is the default value of tabstop in Neovim?")], [ev], 4000)[0]
    assert not neovim.parts[0].found and "unnamed_thing" in neovim.rules
    off = make(embedder, reasoner.scorer, ("term_default",)).answer([SubQuestion(question)], [ev], 4000)[0]
    assert "term_default" not in off.rules and all("Default of" not in c.text for c in off.claims)


EXIM_ENTRIES = [("Main options", "timeout_frozen_after; Use: main; Type: time; Default: 0s"),
                ("Main options — timeout_frozen_after", "If timeout_frozen_after is set to a time greater than zero, "
                 "a frozen message of any kind that has been in the queue for longer than the given time is "
                 "automatically cancelled at the next queue run."),
                ("Main options — timeout_frozen_after", "If the frozen message is a bounce message, it is just "
                 "discarded; otherwise, a bounce is sent to the sender.")]


def exim_evidence(embedder) -> Evidence:
    ev = evidence(embedder, "Main configuration", [t for _, t in EXIM_ENTRIES], kinds=["row", "text", "text"])
    return replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=h))
                                       for e, (h, _) in zip(ev.sentences, EXIM_ENTRIES, strict=True)))


def test_an_entry_row_answers_only_for_a_column_the_question_names(reasoner, embedder):
    """Exim writes an option's entry as a one-row table (name, Use, Type, Default) before its paragraphs.
    Asked what the option does, the row is its heading, not an answer; asked its default, the Default cell
    is a lookup, said as the default."""
    ev = exim_evidence(embedder)
    does = reasoner.answer([SubQuestion("What does the timeout_frozen_after option do?")], [ev], 4000)[0]
    assert "entry_row" in does.rules and all("Use: main" not in c.text for c in does.claims)
    off = make(embedder, reasoner.scorer, ("entry_row",))
    assert "entry_row" not in off.answer([SubQuestion("What does the timeout_frozen_after option do?")], [ev],
                                         4000)[0].rules
    default = reasoner.answer([SubQuestion("What is the default of timeout_frozen_after?")], [ev], 4000)[0]
    assert default.parts[0].found and "term_default" in default.rules and "entry_row" not in default.rules
    assert default.claims[0].text == "Default of timeout_frozen_after: 0s"
    assert asked_default("What is the default of message_size_limit?", EXIM_ENTRIES[0][1]) is None  # another option


class ScriptedScores:
    """A scripted scorer (not the reader): fixed scores by sentence text, for ties the reader makes
    on real pages but not on three test sentences."""

    identity = "scripted"

    def __init__(self, scores: dict[str, float]):
        self.scores = scores

    def score(self, question, candidates, question_vector=None):
        return np.array([self.scores.get(c.sentence.text, 0.0) for c in candidates], dtype=np.float32)

    def score_texts(self, question, texts):
        return np.array([max((v for k, v in self.scores.items() if k in t), default=0.0) for t in texts],
                        dtype=np.float32)


def test_an_entrys_opening_leads_when_the_reader_cannot_tell_its_sentences_apart(embedder):
    """On Exim's pages the reader scores timeout_frozen_after's sentences 0.906 (a bounce is discarded),
    0.898 and 0.890 (what the option does, the entry's first sentence): a tie, which the entry's opening
    wins. A later sentence that clearly scores better still leads, and prose is left alone."""
    ev = exim_evidence(embedder)
    opening, later = EXIM_ENTRIES[1][1], EXIM_ENTRIES[2][1]
    question = [SubQuestion("What does the timeout_frozen_after option do?")]
    thresholds = Thresholds().with_values("test", found=0.3)

    def lead(scores: dict[str, float], off: tuple[str, ...] = (), ev: Evidence = ev) -> tuple[str, tuple[str, ...]]:
        reasoner = ExtractiveReasoner(embedder, ScriptedScores(scores), thresholds=thresholds, rules=RuleSet(off))
        draft = reasoner.answer(question, [ev], 4000)[0]
        return draft.claims[0].text, draft.rules

    text, fired = lead({opening: 0.890, later: 0.906})
    assert text == opening and "entry_opening" in fired
    assert lead({opening: 0.890, later: 0.906}, off=("entry_opening",))[0] == later
    assert lead({opening: 0.60, later: 0.906})[0] == later  # the reader reads the later one better: it leads
    prose = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading="Frozen messages"))
                                        for e in ev.sentences))
    assert lead({opening: 0.890, later: 0.906}, ev=prose)[0] == later
    # a summary list's line in another section shares the entry's name, not the entry: it does not lead
    summary = "timeout_frozen_after: frozen messages cancelled"
    listed = evidence(embedder, "Main configuration", [summary, *(t for _, t in EXIM_ENTRIES)],
                      kinds=["text", "row", "text", "text"])
    listed = replace(listed, sentences=tuple(replace(e, sentence=replace(e.sentence, heading=h)) for e, h in zip(
        listed.sentences, ["Resource control", *(h for h, _ in EXIM_ENTRIES)], strict=True)))
    assert lead({summary: 0.900, opening: 0.890, later: 0.906}, ev=listed)[0] == opening
    # an entry's "Default: Disabled" line, which Celery writes first, does not say what the setting does
    celery = ["Default: Disabled.", "If True the task will report its status as 'started' when a worker runs it.",
              "Having a 'started' state can be useful for long running tasks."]
    ev = evidence(embedder, "Configuration", celery)
    ev = replace(ev, sentences=tuple(replace(e, sentence=replace(e.sentence, heading="Settings — task_track_started"))
                                     for e in ev.sentences))
    question = [SubQuestion("What does the task_track_started setting do?")]
    assert lead({celery[0]: 0.905, celery[1]: 0.895, celery[2]: 0.91}, ev=ev)[0] == celery[1]


DUMP_OPTIONS = ["-a --data-only: Dump only the data, not the schema (data definitions).",
                "-s --schema-only: Dump only the object definitions (schema), not data."]


def test_a_sentence_that_denies_what_a_wh_question_asks_is_no_answer(reasoner, embedder):
    """Word order is what the reader reads worst: "only the data, not the schema" reads as an answer
    about the schema. A sentence that denies a word the question asks for is no candidate; one that
    denies what the question denies too is, and a yes/no question is answered by a denial."""
    def sentence(text: str) -> Sentence:
        return Sentence("d", 0, text, 0, len(text))

    assert denies_the_ask("Which option dumps only the schema?", sentence(DUMP_OPTIONS[0]))
    assert not denies_the_ask("Which option dumps only the schema, not the data?", sentence(DUMP_OPTIONS[1]))
    assert not denies_the_ask("Is TRUNCATE MVCC-safe?", sentence("TRUNCATE is not MVCC-safe."))
    # the head of the denied phrase: a character without a length specifier has a length
    assert not denies_the_ask("What is the maximum length of a varchar(n)?",
                              sentence("character without length specifier is equivalent to character(1)."))
    ev = evidence(embedder, "pg_dump Options", DUMP_OPTIONS)
    question = SubQuestion("Which option makes pg_dump dump only the schema?")
    draft = reasoner.answer([question], [ev], 4000)[0]
    assert draft.parts[0].found and [c.text for c in draft.claims] == [DUMP_OPTIONS[1]]
    assert "denied_ask" in draft.rules
    off = make(embedder, reasoner.scorer, ("denied_ask",)).answer([question], [ev], 4000)[0]
    assert "denied_ask" not in off.rules and DUMP_OPTIONS[0] in [c.text for c in off.claims]


def test_rows_of_one_table_that_give_other_figures_are_no_repeats(reasoner, embedder):
    """Rows of one table read alike to the embedder, but each states its own figures: a two-part
    question answered by two rows keeps both; a sentence that gives the same figures again is a
    repeat."""
    ev = evidence(embedder, "Numeric Types", INTEGER_ROWS[:2])
    # sentence memory pools a sentence's vector from its chunk's tokens: one table's rows come out
    # near-identical (0.97 in the PostgreSQL manual); here both take the table's vector
    table = embedder.embed(["Numeric Types: " + " ".join(INTEGER_ROWS[:2])])[0]
    ev = replace(ev, sentences=tuple(replace(e, vector=table) for e in ev.sentences))
    parts = [SubQuestion("What is the range of smallint?"), SubQuestion("How many bytes does an integer use?")]
    drafts = reasoner.answer(parts, [ev, ev], 4000)
    merged = reasoner.merge("What is the range of smallint and how many bytes does an integer use?",
                            Draft((PartDraft("q"),)), [Part(q, d) for q, d in zip(parts, drafts, strict=True)], Plan(parts), 4000)
    checked = reasoner.reflect("What is the range of smallint and how many bytes does an integer use?", merged, ev, 4000)
    # the range asked for is said with its row's name; the integer row whole (no column named)
    assert [p.claims[0].text for p in checked.parts] == ["Name: smallint; Range: -32768 to +32767", INTEGER_ROWS[1]]
    row = replace(quoted("Numeric Types", INTEGER_ROWS[1]), vector=table)
    assert not same(row, replace(quoted("Numeric Types", INTEGER_ROWS[0]), vector=table))
    assert same(row, replace(quoted("Types", INTEGER_ROWS[1] + "."), vector=table))


def quoted(title: str, text: str) -> Claim:
    span = Span(title.lower(), 0, title, f"{title}.txt", text, 0, len(text), 1.0)
    return Claim(text, (Source(span, 0, len(text)),), 0.9)


def side(question: str, name: str, *texts: str) -> Part:
    claims = tuple(quoted(name, t) for t in texts)
    return Part(SubQuestion(question, focus=name, kind=SIDE), Draft((PartDraft(question, claims, True, 0.9, name),)))


def compare(reasoner, question: str, cue: str, *sides: Part):
    plan = Plan(tuple(s.sub_question for s in sides), comparison=cue)
    return reasoner.merge(question, Draft((PartDraft(question),)), list(sides), plan, 4000)


def test_a_figure_comparison_says_which_side_wins_with_both_figures_and_units(reasoner):
    q = "Which plan covers more of the premium, plan A or plan B?"
    draft = compare(reasoner, q, "more", side(q, "plan A", "Plan A covers 80% of the monthly premium."),
                    side(q, "plan B", "Plan B covers 50% of the monthly premium."))
    lead = draft.parts[0].claims[0]
    assert lead.text == "Plan A covers more of the premium: 80%, against 50% for plan B."
    assert lead.kind == "verdict" and {s.span.title for s in lead.sources} == {"plan A", "plan B"}
    assert "figure_comparison" in draft.rules


def test_a_finer_resolution_is_the_smaller_duration(reasoner):
    """"finer" asks for the smaller figure; a microsecond and a day are one measure on one scale."""
    q = "Which has a finer resolution, timestamp or date?"
    draft = compare(reasoner, q, "finer", side(q, "timestamp", "Name: timestamp; Resolution: 1 microsecond"),
                    side(q, "date", "Name: date; Resolution: 1 day"))
    assert draft.parts[0].claims[0].text == "Timestamp has a finer resolution: 1 microsecond, against 1 day for date."


def test_a_comparison_refuses_figures_that_measure_something_else(reasoner):
    q = "Which replaces a larger share of salary: short-term or long-term disability insurance?"
    short = side(q, "short-term disability insurance",
                 "Short-term disability insurance replaces 70% of base salary for up to 12 weeks.")
    long_ = side(q, "long-term disability insurance",
                 "Long-term disability insurance starts after a 90-day waiting period.",
                 "It replaces 60% of base salary until retirement age.")
    lead = compare(reasoner, q, "larger", short, long_).parts[0].claims[0]
    assert lead.text == ("Short-term disability insurance replaces a larger share of salary: 70%, against 60% for "
                         "long-term disability insurance.")  # the 90 days of waiting is no share of salary
    only_days = side(q, "long-term disability insurance", "Long-term disability insurance starts after a 90-day waiting period.")
    part = compare(reasoner, q, "larger", short, only_days).parts[0]
    assert not any(c.kind == "verdict" for c in part.claims)  # a duration is never weighed against a share
    assert [c.text for c in part.claims] == [short.draft.claims[0].text, only_days.draft.claims[0].text]


def test_a_comparison_weighs_the_asked_column_and_each_sides_own_figure(reasoner):
    """A table row's first figure is its storage size: "a larger range" is read in the Range
    cell, whose bounds are no size. A side's figure comes from a sentence about that side: the
    maximum page size says nothing of the cache size."""
    q = "Which has a larger range, integer or smallint?"
    rows = side(q, "integer", "Name: integer; Storage Size: 4 bytes; Range: -2147483648 to +2147483647"), \
        side(q, "smallint", "Name: smallint; Storage Size: 2 bytes; Range: -32768 to +32767")
    assert not any(c.kind == "verdict" for c in compare(reasoner, q, "larger", *rows).parts[0].claims)
    q = "Which uses more storage, integer or smallint?"  # no column is named: the first figures
    assert compare(reasoner, q, "more", *rows).parts[0].claims[0].text == \
        "Integer uses more storage: 4 bytes, against 2 bytes for smallint."
    q = "Which is larger, the default page size or the default cache size?"
    page = side(q, "the default page size", "The default page size is 4096 bytes.")
    stray = Part(SubQuestion(q, focus="the default cache size", kind=SIDE), Draft((PartDraft(
        q, (quoted("Limits", "At the maximum page size of 65536 bytes, a database holds 281 terabytes."),), True, 0.9),)))
    assert not any(c.kind == "verdict" for c in compare(reasoner, q, "larger", page, stray).parts[0].claims)
    cache = side(q, "the default cache size", "The default suggested cache size is 2000 KiB.")
    assert compare(reasoner, q, "larger", page, cache).parts[0].claims[0].kind == "verdict"


def test_a_comparison_reads_the_questions_own_sentences_about_each_side(reasoner):
    """Each side's retrieval, asked of one name, may miss its row ("a bigint: Which uses more
    storage?" finds a sentence on shared memory) where the question's own retrieval holds both
    rows of the table: those are the sides' figures."""
    q = "Which uses more storage, a bigint or a smallint?"
    stray = "Memory allocated at startup is affected by the huge_pages setting."
    sides = [Part(SubQuestion(q, focus=name, kind=SIDE), Draft((PartDraft(q, (quoted("Resource Consumption", stray),),
                                                                          True, 0.5, name),)))
             for name in ("a bigint", "a smallint")]
    own = Draft((PartDraft(q, (quoted("Numeric Types", "Name: bigint; Storage Size: 8 bytes"),
                               quoted("Numeric Types", "Name: smallint; Storage Size: 2 bytes")), True, 0.5),))
    plan = Plan(tuple(p.sub_question for p in sides), comparison="more")
    lead = reasoner.merge(q, own, sides, plan, 4000).parts[0].claims[0]
    assert lead.text == "A bigint uses more storage: 8 bytes, against 2 bytes for a smallint."
    assert not any(c.kind == "verdict" for c in reasoner.merge(q, Draft((PartDraft(q),)), sides, plan, 4000).parts[0].claims)


def test_a_comparisons_own_answer_keeps_the_rows_that_give_a_figure(embedder, scorer):
    """The question's own answer is where a side's missed row is found, so a comparison's own answer
    keeps the sentences that give a figure, as a side's does, even below the second sentence's
    share: here the bigint row scores under it, and without it no side states a storage size."""
    q = "Which uses more storage, a bigint or a smallint?"
    ev = evidence(embedder, "8.1. Numeric Types", [
        "The types smallint, integer, and bigint store whole numbers, that is, numbers without fractional "
        "components, of various ranges.", "The smallint type is generally only used if disk space is at a premium.",
        *INTEGER_ROWS[:3], "The bigint type is designed to be used when the range of the integer type is insufficient."])
    stray = "Memory allocated at startup is affected by the huge_pages setting."
    sides = [Part(SubQuestion(q, focus=name, kind=SIDE), Draft((PartDraft(q, (quoted("Resource Consumption", stray),),
                                                                          True, 0.5, name),)))
             for name in ("a bigint", "a smallint")]
    plan = Plan(tuple(p.sub_question for p in sides), comparison="more")
    leads = {}
    for off in ((), ("figure_comparison",)):
        judge = make(embedder, scorer, off)
        own = judge.answer([SubQuestion(q)], [ev], 4000)[0]
        leads[off] = judge.merge(q, own, sides, plan, 4000).parts[0].claims[0].text
        assert (INTEGER_ROWS[2] in [c.text for c in own.claims]) == (off == ())
    assert leads[()] == "A bigint uses more storage: 8 bytes, against 2 bytes for a smallint."
    assert leads[("figure_comparison",)] == stray


def test_a_tie_or_one_sentence_for_both_sides_states_no_winner(reasoner):
    q = "Which was founded first, Alpha or Beta?"
    part = compare(reasoner, q, "first", side(q, "Alpha", "Alpha was founded in 1990."),
                   side(q, "Beta", "Beta was founded in 1990.")).parts[0]
    assert [c.text for c in part.claims] == ["Alpha was founded in 1990.", "Beta was founded in 1990."]


def test_a_yes_no_comparison_leads_with_its_verdict_citing_both_sides(reasoner):
    q = "Are Brannock and Quillon both card games?"
    sides = [side(q, "Brannock", "Brannock is a card game for four players."),
             side(q, "Quillon", "Quillon is a card game played with a 32-card deck.")]
    draft = compare(reasoner, q, "", *sides)
    lead = draft.parts[0].claims[0]
    assert lead.text == "Yes: Brannock and Quillon are both card games."
    assert lead.answer == "Yes" and {s.span.title for s in lead.sources} == {"Brannock", "Quillon"}
    off = make(reasoner.embedder, reasoner.scorer, ("yes_no_comparison",))
    assert not compare(off, q, "", *sides).parts[0].claims[0].text.startswith("Yes")


def test_a_bridge_leads_with_the_hops_sentence_read_after_the_sentence_that_named_it(reasoner):
    q = "Which river flows through the city where the Varnholt Observatory stands?"
    link = quoted("Varnholt Observatory", "The Varnholt Observatory stands on a hill above the city of Ostrava.")
    river = quoted("Ostrava", "The Oder river flows through Ostrava and meets the Ostravice there.")
    stray = quoted("Ostrava", "Ostrava hosts an annual music festival in July.")
    own = Draft((PartDraft(q, (link,), True, 0.6),))
    hop = Part(SubQuestion(q, focus="Ostrava", kind=HOP), Draft((PartDraft(q, (stray, river), False, 0.1, "Ostrava"),)))
    draft = reasoner.merge(q, own, [hop], Plan((hop.sub_question,), links=(("Ostrava", link),)), 4000)
    assert [c.text for c in draft.parts[0].claims[:2]] == [river.text, link.text]
    assert "bridge_chain" in draft.rules


def test_a_hops_sentence_on_a_page_of_something_else_that_does_not_name_the_thing_is_no_chain(reasoner):
    q = "Which river flows through the city where the Varnholt Observatory stands?"
    link = quoted("Varnholt Observatory", "The Varnholt Observatory stands on a hill above the city of Ostrava.")
    said = "The Oder river flows through the city and meets the Ostravice there."
    hop = Part(SubQuestion(q, focus="Ostrava", kind=HOP),
               Draft((PartDraft(q, (quoted("Rivers of Europe", said),), False, 0.1, "Ostrava"),)))
    plan = Plan((hop.sub_question,), links=(("Ostrava", link),))
    draft = reasoner.merge(q, Draft((PartDraft(q, (link,), True, 0.6),)), [hop], plan, 4000)
    # a page about other things, a sentence that names neither the hop's thing nor that page in
    # the link: it only shares the question's words, so it is not read as the link's sequel
    assert "bridge_chain" not in draft.rules
    assert [c.text for c in draft.parts[0].claims[:2]] != [said, link.text]
    # the same sentence on the thing's own page goes on from the link
    hop = Part(hop.sub_question, Draft((PartDraft(q, (quoted("Ostrava", said),), False, 0.1, "Ostrava"),)))
    draft = reasoner.merge(q, Draft((PartDraft(q, (link,), True, 0.6),)), [hop], plan, 4000)
    assert "bridge_chain" in draft.rules and [c.text for c in draft.parts[0].claims[:2]] == [said, link.text]


def test_a_chain_that_reads_no_better_than_its_link_alone_does_not_lead(reasoner):
    q = "How high is the lighthouse at Cape Varn?"
    link = quoted("Cape Varn", "The lighthouse at Cape Varn, built by the Harbour Board, is 38 metres high.")
    stray = quoted("Harbour Board", "The Harbour Board meets on the first Monday of each month.")
    own = Draft((PartDraft(q, (link,), True, 0.6),))
    hop = Part(SubQuestion(q, focus="Harbour Board", kind=HOP), Draft((PartDraft(q, (stray,), False, 0.1, "Harbour Board"),)))
    plan = Plan((hop.sub_question,), links=(("Harbour Board", link),))
    draft = reasoner.merge(q, own, [hop], plan, 4000)
    assert draft.parts[0].claims[0].text == link.text and "bridge_chain" not in draft.rules
    # with the link's own sentence not among the question's own answers, the link still leads
    draft = reasoner.merge(q, Draft((PartDraft(q),)), [hop], plan, 4000)
    assert draft.parts[0].claims[0].text == link.text


def documents(embedder, docs: list[tuple[str, str]]) -> Evidence:
    """One span per (title, sentence), ranked in the order given, with sentence memory."""
    spans = [Span(title.lower(), 0, title, f"{title}.txt", text, 0, len(text), 1.0) for title, text in docs]
    vectors = embedder.embed([f"{title}: {text}" for title, text in docs])
    stored = [EvidenceSentence(Sentence(s.document_id, 0, s.text, 0, len(s.text)), s, v)
              for s, v in zip(spans, vectors, strict=True)]
    return Evidence(tuple(spans), tuple(stored))


def test_a_bridge_is_taken_from_the_document_of_the_thing_the_question_names(reasoner, embedder):
    q = "Who was the first mayor of Kelbrook's county?"
    ev = documents(embedder, [
        ("Ardmore County", "Lena Hoss was the first mayor of Ardmore County."),
        ("List of mayors of Fenwick", "Tom Reyes was the first mayor of Fenwick."),
        ("Kelbrook", "Kelbrook is a village in Harlow County.")])
    plan = reasoner.plan(q, ev, 4000)
    assert plan.sub_questions and plan.sub_questions[0].focus == "Harlow County", plan
    assert plan.sub_questions[0].kind == HOP and plan.rules == ("bridge_entities",)
    assert dict(plan.links)["Harlow County"].text == "Kelbrook is a village in Harlow County."
    assert not make(embedder, reasoner.scorer, ("bridge_entities",)).plan(q, ev, 4000).sub_questions


OWN_PAGE_CASES = [
    # a side: the thing's own page says what it is, a mention elsewhere does not
    ("side_own_page", SIDE, "Are Mara Voss and Ilan Dupree both film directors?", "Mara Voss", "Are both film directors?",
     [("Orla Kemp", "Leading directors, including Mara Voss and Tam Oduya, have cited Kemp as an inspiration."),
      ("Mara Voss", "Mara Voss (born 1970) is a British film director and screenwriter.")]),
    # a hop: the answer is on its thing's page (merge reads it after the sentence that named the hop)
    ("hop_own_page", HOP, "Dara Lind played for a team based in what state?", "Harbor Gulls",
     "played for a team based in what state?",
     [("Dara Lind", "Dara Lind played for the Harbor Gulls from 1990 to 1994, and the Gulls were her only team."),
      ("Harbor Gulls", "The Harbor Gulls are a football team based in Portland, Maine.")]),
]


@pytest.mark.parametrize("rule, kind, q, focus, asked, docs", OWN_PAGE_CASES, ids=["side", "hop"])
def test_a_side_or_a_hop_is_answered_from_its_things_own_page(reasoner, embedder, rule, kind, q, focus, asked, docs):
    ev = documents(embedder, docs)
    sub = SubQuestion(q, focus=focus, kind=kind, query_text=asked)
    draft = reasoner.answer([sub], [ev], 4000)[0]
    assert draft.claims[0].text == docs[-1][1] and rule in draft.rules
    if kind == HOP:  # a hop offers one sentence: the chain merge reads
        assert len(draft.claims) == 1
    off = make(embedder, reasoner.scorer, (rule,)).answer([sub], [ev], 4000)[0]
    assert rule not in off.rules


def test_a_span_that_starts_inside_a_stored_sentence_reads_the_whole_sentence(reasoner, embedder):
    """Chunks overlap, so a retrieved span can start inside a sentence or a code block. Sentence
    memory names each stored sentence with one span (the first it overlaps); a span all of whose
    sentences are named with other spans is still covered by them, and is not split afresh into
    "wish to protect ...", nor is a span inside code read as prose."""
    sentences = ["Signing lives in the signing module.",
                 "If you wish to protect a list, tuple, or dictionary you can do so using the sign_object() method.",
                 "The signature is appended to the end of the string."]
    code = "\n\n```\n{% if signed %}\n  To protect a list, call <b>sign_object()</b> on it.\n{% endif %}\n```"
    whole = evidence(embedder, "Cryptographic signing", sentences, text=" ".join(sentences) + code)
    text = whole.spans[0].text
    cut = text.index("wish")

    def span(chunk: int, start: int, end: int) -> Span:
        return replace(whole.spans[0], chunk_index=chunk, start=start, end=end, text=text[start:end])

    end = text.index("\n\n```")
    first, inside, last = span(0, 0, text.index(" The signature")), span(1, cut, end), span(2, text.index("The"), end)
    in_code = span(3, text.index("  To protect"), len(text))  # no sentence of the page is in it
    stored = tuple(replace(e, span=last if e.sentence.index == 2 else first) for e in whole.sentences)
    ev = Evidence((in_code, last, inside, first), stored)
    draft = reasoner.answer([SubQuestion("How do I protect a list with a signature?")], [ev], 4000)[0]
    assert draft.claims and draft.claims[0].text == sentences[1]
    assert not any(c.text.startswith("wish") or "sign_object() on it" in c.text for c in draft.claims)


def test_a_named_entry_retrieved_below_the_first_hits_still_means_no_hop(reasoner, embedder):
    """A big class page is many chunks: the entry a question names may come back only at the tenth
    rank (its notes' chunk), under the class's overview. Its notes ("Returns: …") are still that
    entry's, and the names the overview mentions are no hop."""
    overview = [evidence(embedder, f"Ledger {n}", [f"The Ledger {n} section mentions the Timer class.",
                                                    "See Timer for how intervals are measured."])
                for n in ("overview", "fields", "constructors")]
    entry = evidence(embedder, "Ledger methods", ["Parameters: cs - the ledger to check, may be null",
                                                  "Returns: true if only balanced entries, and is non-null", "Since: 3.0"])
    vectors = embedder.embed([f"Ledger isBalanced: {e.sentence.text}" for e in entry.sentences])
    entry = replace(entry, sentences=tuple(replace(e, sentence=replace(e.sentence, heading="isBalanced"), vector=v)
                                           for e, v in zip(entry.sentences, vectors, strict=True)))

    def combined(last: Evidence) -> Evidence:
        parts = [*overview, last]
        return Evidence(tuple(s for p in parts for s in p.spans), tuple(e for p in parts for e in p.sentences))

    asked = "What does Ledger.isBalanced return for an empty ledger?"
    plan = reasoner.plan(asked, combined(entry), 4000)
    assert not plan.sub_questions and plan.note == "single question: the entry it names is read"
    unnamed = replace(entry, sentences=tuple(replace(e, sentence=replace(e.sentence, heading="Ledger")) for e in entry.sentences))
    assert reasoner.plan(asked, combined(unnamed), 4000).sub_questions  # a hop via Timer
