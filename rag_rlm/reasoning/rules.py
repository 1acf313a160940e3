"""The hand-written rules that remain beside the reader, as one ordered table.

The reader decides which sentence answers, whether the collection answers at all, and whether a
claim is supported. What is left to rules is what no (question, sentence) score can say: how a
question splits into parts or sides, which entity a bridge goes through, how a list or a sentence
that refers back is said whole, and how a comparison is stated. Each rule has a name (switch it
off with `RAG_RLM_RULES_OFF=name,name`), what it matches, what it does, why, and the test that
protects it. Steps record the rules that fired in the trace (`TraceNode.rules`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class Rule:
    name: str
    stage: str  # plan | answer | merge | reflect | condense
    matches: str
    does: str
    why: str
    test: str


RULES: tuple[Rule, ...] = (
    Rule("several_questions", "plan", "two or more questions, each ending in '?'",
         "one part per question, answered in order (a statement after the last '?' is no part: it says why "
         "the asker asks)", "each question has its own evidence",
         "tests/test_reasoning_forms.py::test_several_questions"),
    Rule("conjoined_questions", "plan", "'<wh> ... and <wh> ...'", "one part per question",
         "a conjunction of two asks is two questions", "tests/test_reasoning_forms.py::test_conjoined_questions"),
    Rule("answer_subject", "plan", "'Which <kind> ..., and what is its ...?': a later part's pronoun after a first part "
         "that asks for a thing by its kind", "the later part waits for the first part's answer and names it",
         "the pronoun is the thing asked for, not a thing the first part names",
         "tests/test_reasoning_forms.py::test_answer_subject"),
    Rule("shared_subject", "plan", "a later part's pronoun, when the first part names one thing (a name; "
         "for 'it', also a code name or the subject of 'does a date use')",
         "the pronoun replaced by that name", "each part is retrieved on its own",
         "tests/test_reasoning_forms.py::test_shared_subject"),
    Rule("entity_comparison", "plan", "a comparison that names two or three things ('..., X or Y?')",
         "one side per thing, its name as the focus", "one retrieval per thing finds each one's document",
         "tests/test_reasoning_forms.py::test_entity_comparison"),
    Rule("both_comparison", "plan", "'Are X and Y both ...?'", "one side per thing",
         "each side is checked against its own document", "tests/test_reasoning_forms.py::test_both_comparison"),
    Rule("either_or_comparison", "plan", "'Which ..., X or Y?' with lower-case options",
         "one side per option", "options need not be names", "tests/test_reasoning_forms.py::test_either_or"),
    Rule("bridge_entities", "plan", "entities the best sentences name that the question does not",
         "a hop per entity: a retrieval focused on it", "a multi-hop question names its subject through another thing",
         "tests/test_reasoning_extractive.py::test_a_bridge_is_taken_from_the_document_of_the_thing_the_question_names"),
    Rule("long_question", "answer", "a question of 12 words or more told as a story (sentences, then one "
         "that asks) or with clauses set off by commas",
         "the reader also reads its core (the asking sentence; else opening + asking clause) and keeps the better "
         "score; only the asking sentence's names must be said by a passage (rule unnamed_thing)",
         "the reader learned from short questions; a scene or a descriptive clause draws it to sentences repeating it",
         "tests/test_reasoning_forms.py::test_long_question"),
    Rule("side_own_page", "answer", "a side of a comparison whose thing has its own page among the evidence",
         "the side is answered from that page's sentences", "a mention of the thing on another page says little of it",
         "tests/test_reasoning_extractive.py::test_a_side_or_a_hop_is_answered_from_its_things_own_page"),
    Rule("hop_own_page", "answer", "a hop whose thing has its own page among the evidence",
         "the hop's sentences come from that page", "a bridge goes to its thing's page; the answer is what it says",
         "tests/test_reasoning_extractive.py::test_a_side_or_a_hop_is_answered_from_its_things_own_page"),
    Rule("list_lead_in", "answer", "a sentence ending in ':' followed by list items",
         "said with its items or its short code block, quoted as one range; before a longer example, alone when it makes a statement", "a lead-in alone says nothing",
         "tests/test_reasoning_extractive.py::test_a_lead_in_is_said_with_the_items_of_its_list"),
    Rule("other_entry", "answer", "a question that names a code identifier (max_connections, os.path.splitext, "
         "--leak-check; a command's options are its own entries for a question that names no option) and a "
         "sentence of a manual entry named for another identifier or a keyword (COSTS), which does not name the "
         "asked one itself, or does but the asked one's own entry is read too",
         "the sentence is no candidate", "the reader reads temp_buffers' 'The default value is 100 buffers' as nearly "
         "as good an answer about shared_buffers (0.82 against 0.84): what an entry says is said of its own name",
         "tests/test_reasoning_extractive.py::test_a_sentence_of_another_manual_entry_does_not_answer_for_the_asked_one"),
    Rule("entry_row", "answer", "an option's entry written as a one-row table of its name and labelled cells "
         "(Exim's 'timeout_frozen_after; Use: main; Type: time; Default: 0s'), and a question that names none of "
         "its columns", "the row is no candidate", "the reader reads the row, which names the option, as the best "
         "answer to 'What does the timeout_frozen_after option do?': without a column asked it is the entry's heading",
         "tests/test_reasoning_extractive.py::test_an_entry_row_answers_only_for_a_column_the_question_names"),
    Rule("other_row", "answer", "a question that says the name of a retrieved table row (the first cell: bigint, "
         "varchar) and a row named for another thing", "the row is no candidate", "the reader reads the bigserial row "
         "('Storage Size: 8 bytes') as an answer about bigint: a row is about its first cell",
         "tests/test_reasoning_extractive.py::test_a_table_row_of_another_thing_does_not_answer_for_the_asked_one"),
    Rule("asked_cell", "answer", "a question that names a retrieved table row (its first cell), and one of its "
         "columns ('What is the date's highest value?' of 'Name: date; ...; High Value: 5874897 AD')",
         "no hop is planned (the row answers); with a column named, the row leads, the part is found, and the row "
         "is said by its first cell and the named cells ('Name: date; High Value: 5874897 AD')",
         "a row read against the question scores low (0.28 for the date row: the reader learned from prose), and a "
         "hop then brought another row; the row and the column named are a lookup, not a judgement",
         "tests/test_reasoning_extractive.py::test_a_table_row_and_column_the_question_names_answer_it"),
    Rule("term_default", "answer", "a question that asks for a default and names a manual entry whose term gives it "
         "(Vim's \"'tabstop' 'ts' number (default 8)\", Valgrind's '--leak-check=<no|summary|yes|full> [default: summary]', "
         "an entry row's Default cell: Exim's 'timeout_frozen_after; ...; Default: 0s'), "
         "when the entry's first sentence is a candidate and no thing the question names is unnamed",
         "the entry's first sentence leads, said as its default ('Default of tabstop: 8')",
         "the default is written in the term alone: the reader reads the entry's sentences as the answer, and the asker "
         "reads 'Also see the :retab command' without the 8",
         "tests/test_reasoning_extractive.py::test_a_default_written_in_an_entry_term_is_said"),
    Rule("entry_opening", "answer", "a lead of a manual entry and an earlier sentence of the same entry (the same "
         "document and section, a shared entry name) that the reader scores within `tie_logit` logits of it",
         "the earliest such sentence leads", "the reader cannot tell an entry's sentences apart when they all name "
         "it (0.906, 0.898, 0.890 for Exim's timeout_frozen_after); the first says what the entry is, the later ones "
         "qualify it", "tests/test_reasoning_extractive.py::test_an_entrys_opening_leads_when_the_reader_cannot_tell_its_sentences_apart"),
    Rule("denied_ask", "answer", "a wh-question and a sentence that denies a word the question asks for ('not the "
         "schema', 'without X', 'except X')", "the sentence is no candidate", "the reader reads pg_dump's '-a "
         "--data-only: Dump only the data, not the schema' as the best answer to 'Which option dumps only the schema?' "
         "(word order is what it reads worst); a yes/no question is answered by a denial, so it is left alone",
         "tests/test_reasoning_extractive.py::test_a_sentence_that_denies_what_a_wh_question_asks_is_no_answer"),
    Rule("bridge_chain", "merge", "a hop's sentence read after the sentence that named the hop, when it goes on from "
         "it: in the link's document, on a page the link names or the hop thing's own page, or naming that thing",
         "the chain is scored as one text; when it answers best, the hop's sentence leads, then the link",
         "the answer of a bridge question sits in the second document; a sentence of another page that says "
         "nothing of the thing only shares the question's words",
         "tests/test_reasoning_extractive.py::test_a_bridge_leads_with_the_hops_sentence_read_after_the_sentence_that_named_it"),
    Rule("figure_comparison", "merge", "a comparison cue ('first', 'larger', 'more') and a figure in each side's sentence",
         "states which side wins, with both figures, when the figures measure the same thing (a table row's: the "
         "column the question names) and each comes from a sentence about its side",
         "the reader picks sentences; it does not compare numbers", "tests/test_reasoning_extractive.py::test_a_comparison_refuses_figures_that_measure_something_else"),
    Rule("yes_no_comparison", "merge", "'Are X and Y both ...?' / 'the same ...?'",
         "yes or no, when both sentences say (or contradict) what is asked", "a verdict in the question's words",
         "tests/test_reasoning_compose.py::test_yes_no_comparison_is_settled_when_both_sentences_say_it_or_one_contradicts"),
    Rule("refers_back", "reflect", "a lead that opens by referring back ('This', 'Such indexes', 'But it')",
         "said after the sentence it refers to", "alone it does not say what it is about",
         "tests/test_reasoning_extractive.py::test_a_lead_that_refers_back_is_said_after_the_sentence_it_refers_to"),
    Rule("unnamed_thing", "answer", "a question that names a thing (a capitalised word not opening a sentence, an "
         "acronym, a code name, a command-line option said whole) that no retrieved passage says, answered without hops",
         "not found", "the reader reads a same-topic sentence as an answer about Kubernetes or WebSockets (0.34-0.64 "
         "on the Celery and Flask pages): what the collection never names it cannot answer about",
         "tests/test_reasoning_extractive.py::test_a_question_about_a_thing_no_passage_names_is_not_found"),
    Rule("short_answer", "answer", "a question asking for a date, a figure, a name, or a thing of code by its kind "
         "('Which tool/option/setting ...?')",
         "the span of that type in the lead, when exactly one stands out; for a thing of code, the name of the lead's "
         "entry or the first code name it writes that the question does not ('pg_restore', not the 'PostgreSQL' it "
         "also names)", "a number or a name reads at a glance",
         "tests/test_reasoning_compose.py::test_short_answer_is_the_one_span_of_the_asked_type"),
    Rule("followup", "condense", "a follow-up with ellipsis, a pronoun without antecedent, or a definite 'the plan'",
         "the subject of the earlier question put back", "a follow-up must stand alone to be retrieved",
         "tests/test_followup.py"),
)

NAMES = tuple(r.name for r in RULES)


class RuleSet:
    """The rules switched on, in table order."""

    def __init__(self, off: Iterable[str] = ()):
        off = {name.strip() for name in off if name.strip()}
        unknown = sorted(off - set(NAMES))
        if unknown:
            raise ConfigError("rules_off", f"unknown rule(s) {', '.join(unknown)}; the rules are: {', '.join(NAMES)}")
        self.off = frozenset(off)

    def __contains__(self, name: str) -> bool:
        if name not in NAMES:
            raise KeyError(f"no rule named {name!r}")
        return name not in self.off

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n in NAMES if n not in self.off)

    @classmethod
    def from_setting(cls, value: str) -> RuleSet:
        return cls(value.split(","))
