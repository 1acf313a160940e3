"""The extractive reasoner: answers with sentences of the evidence itself, so every word it says is
grounded and cited by construction. No generative model.

    candidates  the stored sentences of the retrieved spans (sentence memory; the slow path splits
                and encodes spans that have none)
    prerank     the bi-encoder's cosine and word overlap keep the best `reader_candidates`
    read        the sentence scorer (the trained reader) scores (question, sentence) pairs: the best
                one leads, a second one follows when it scores nearly as well, and the part is
                found when the best reaches the threshold
    merge       parts stay parts; a bridge is read as a chain (the sentence that named the hop,
                then the hop's sentence); sides become a comparison
    reflect     every claim is re-read against its sentence and dropped when unsupported

Rules (`rules.RULES`) only split questions, pick bridge entities, say lists and sentences that
refer back, and state comparisons; each one is switchable and recorded in the trace.

Token accounting uses the embedder's tokenizer: what a step reads (question + evidence) is
`tokens_in`, what it writes (its claims) is `tokens_out`, and both fit the step's allowance.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import chain

import numpy as np

from ..embed import Embedder, cached
from ..ingest.sentences import split_sentences
from ..ingest.sentvec import context_text
from ..reader.data import reader_text
from ..types import Sentence, Span
from . import compose
from .base import (
    HOP,
    PART,
    SIDE,
    Candidate,
    Claim,
    Draft,
    Evidence,
    Part,
    PartDraft,
    Plan,
    Rewrite,
    SentenceScorer,
    Source,
    SubQuestion,
    Turn,
)
from .claims import (
    answers_alone,
    asked_default,
    asked_rows,
    asks_default,
    bare_thing_named,
    continues_past_block,
    default_term,
    denies_the_ask,
    distinct,
    entry_names,
    entry_of,
    entry_row_unasked,
    entry_section,
    identifiers,
    names_cell,
    of_another_entry,
    of_another_row,
    past,
    repeats,
    said,
    same,
    self_contained,
    states_default,
    unnamed_things,
    with_lists,
)
from .english import content_words
from .figures import asked_figures, comparable, figures_in, predicate, winner
from .forms import LONG_QUESTION, asking_sentence, novel_entities, plan_by_form, residual_question
from .rules import RuleSet
from .scoring import CoreQuestionScorer, EmbeddingScorer, ThresholdAnswerability, candidate_text
from .thresholds import Thresholds
from .verify import verify


class ExtractiveReasoner:
    def __init__(self, embedder: Embedder, scorer: SentenceScorer | None = None, *,
                 thresholds: Thresholds | None = None, rules: RuleSet | None = None):
        """`scorer`: what reads (question, sentence) pairs (the reader); None: the bi-encoder's
        similarity, with `thresholds.found` on its scale."""
        self.embedder = cached(embedder)  # questions and slow-path sentences come back across steps
        self.thresholds = thresholds or Thresholds()
        self.prerank = EmbeddingScorer(self.embedder, self.thresholds.lexical_weight)
        self.rules = rules or RuleSet()
        self.scorer: SentenceScorer = scorer or self.prerank
        if scorer is not None and "long_question" in self.rules:
            self.scorer = CoreQuestionScorer(scorer)
        self.answerability = ThresholdAnswerability(self.thresholds.found)
        self.supports = ThresholdAnswerability(self.support)  # reflection keeps a claim scoring this

    @property
    def identity(self) -> str:
        """What the memo key records of this reasoner: a new reader, threshold or rule switch
        never serves old answers."""
        return f"extractive/{self.scorer.identity}/{self.thresholds.fingerprint}/{','.join(sorted(self.rules.off))}"

    @property
    def support(self) -> float:
        return self.thresholds.support_share * self.thresholds.found

    # --- plan -------------------------------------------------------------------------------
    def plan(self, question: str, evidence: Evidence, allowance: int) -> Plan:
        read = self._count(question)
        by_form = plan_by_form(question, self.rules)
        if by_form.sub_questions:
            return replace(by_form, tokens_in=read)
        if "bridge_entities" not in self.rules:
            return Plan(note="single question", tokens_in=read)
        # the first hits, and the document of a thing the question names wherever it ranks: the
        # bridge is what that document says about it ("the country where <a named town> is")
        t = self.thresholds
        spans = [*evidence.spans[: t.bridge_from], *(s for s in evidence.spans[t.bridge_from:] if _named_in(question, s.title))]
        if self._answered_by(question, evidence, allowance - read):  # its scores are remembered for answering
            return Plan(note="single question: the first hits answer it", tokens_in=read)
        top = Evidence(tuple(spans), evidence.sentences, evidence.query_vector)
        cands, cost = self._candidates(top, allowance - read)
        read = min(allowance, read + cost)
        read_here = chain((c.sentence for c in cands), (e.sentence for e in evidence.sentences))
        if (asked := identifiers(question)) and any(entry_names(s) & asked for s in read_here):
            # "What does StopWatch.split do?": the entry of the name it asks about was retrieved (at
            # any rank), and the names in its notes ("Throws: IllegalStateException", "Returns") are
            # no hop to another document
            return Plan(note="single question: the entry it names is read", tokens_in=read)
        links = self._bridge_links(question, evidence, cands)
        if not links:
            return Plan(note="single question", tokens_in=read)
        ask = residual_question(question)
        subs = tuple(SubQuestion(question, focus=e, kind=HOP, query_text=ask) for e, _ in links)
        return Plan(subs, note="rule: bridge entities " + ", ".join(e for e, _ in links), rules=("bridge_entities",),
                    links=tuple(links), tokens_in=read)

    def _answered_by(self, question: str, evidence: Evidence, allowance: int) -> bool:
        """Whether the reader is sure a sentence of the evidence answers the question: then no
        hop is worth its retrievals (a bi-encoder is never that sure). It reads the candidates
        the answer step reads, so the answer step finds their scores remembered."""
        if self.scorer is self.prerank:
            return False
        if "asked_cell" in self.rules and asked_rows(question, [e.sentence for e in evidence.sentences]):
            return True  # a lookup in a table the evidence holds (a match of words, no reading)
        terms = (default_term(e.sentence) or entry_of(e.sentence) for e in evidence.sentences)
        if self._looks_up_default(question) and any(asked_default(question, term) for term in terms):
            return True  # the default of an entry the question names, written in the entry's term
        cands, _ = self._candidates(evidence, allowance - min(96, allowance // 3))
        cands, _ = self._answerable(cands, question)
        return bool(cands) and float(self._read(question, evidence, cands).max()) >= self.thresholds.hop_unless

    def _looks_up_default(self, question: str) -> bool:
        """Whether rule `term_default` may read entry terms for this question (one that asks for a default)."""
        return "term_default" in self.rules and asks_default(question)

    def _unnamed(self, question: str, evidence: Evidence) -> list[str]:
        """What the question names that no passage read says: a same-topic sentence reads as an
        answer about it ("How do I run Celery workers on Kubernetes?"), which it never is."""
        if "unnamed_thing" not in self.rules:
            return []
        if len(question.split()) >= LONG_QUESTION:
            # a long question names what it passes through, which the passages need not say; a story's
            # asking sentence names what it asks about
            question = asking_sentence(question)
            if not question:
                return []
        # the sentences read too: one that overlaps a span may reach past its end ("'tabpagemax' 'tpm' ...")
        return unnamed_things(question, [*(f"{s.title} {s.text}" for s in evidence.spans),
                                         *(e.sentence.text for e in evidence.sentences)])

    def _answerable(self, cands: list[Candidate], question: str) -> tuple[list[Candidate], tuple[str, ...]]:
        """The candidates that can be said: a list's lead-in with its items, no fragment, and
        no sentence of a manual entry or a table row named for another thing than the question names."""
        fired: tuple[str, ...] = ()
        if "list_lead_in" in self.rules:
            listed = with_lists(cands, self.thresholds)
            fired = ("list_lead_in",) if [c.sentence for c in listed] != [c.sentence for c in cands] else ()
            cands = listed
        # the names a story's asking sentence gives: its scene names the asker's own files and
        # commands ("settings.py", "recipes.json"), which no manual entry is named for
        if "other_entry" in self.rules and (asked := identifiers(asking_sentence(question) or question)):
            own_read = any(entry_names(c.sentence) & asked for c in cands)
            cands, fired = _without(cands, fired, "other_entry", lambda s: of_another_entry(asked, s, own_read))
        if "other_row" in self.rules and (rows := asked_rows(question, [c.sentence for c in cands])):
            cands, fired = _without(cands, fired, "other_row", lambda s: of_another_row(rows, s))
        if "entry_row" in self.rules:
            cands, fired = _without(cands, fired, "entry_row", lambda s: entry_row_unasked(question, s))
        if "denied_ask" in self.rules:
            cands, fired = _without(cands, fired, "denied_ask", lambda s: denies_the_ask(question, s))
        return [c for c in cands if answers_alone(c.sentence) and not continues_past_block(c)], fired

    def _bridge_links(self, question: str, evidence: Evidence, cands: list[Candidate]) -> list[tuple[str, Claim]]:
        """Entities named in the best sentences of the first hits but not in the question (the
        likely hop to the next document), each with the sentence that names it. An entity whose
        document was retrieved already is a hop too: the hop reads that document's sentences after
        the sentence that named it, a chain the first retrieval never offers."""
        cands = [c for c in cands if answers_alone(c.sentence)]  # a heading or a page's own question links nothing
        if not cands:
            return []
        scores = self.prerank.score(question, cands, evidence.query_vector)
        # the named thing's own document first: its best sentence links it to the next thing,
        # where the best sentence overall may be about something else the question's words match
        subject = np.array([_named_in(question, c.span.title) for c in cands])
        picked: list[tuple[str, Claim]] = []
        for i in np.lexsort((-scores, ~subject)):
            for ent in novel_entities(question, cands[i].sentence.text):
                if ent not in (e for e, _ in picked):
                    picked.append((ent, self._claim(question, cands[i], float(scores[i]))))
            if len(picked) >= self.thresholds.bridge_entities:
                break
        return picked[: self.thresholds.bridge_entities]

    # --- answer -----------------------------------------------------------------------------
    def answer(self, questions: Sequence[SubQuestion], evidence: Sequence[Evidence], allowance: int) -> list[Draft]:
        share = allowance // max(len(questions), 1)
        return [self._answer_one(q, e, share) for q, e in zip(questions, evidence, strict=True)]

    def _answer_one(self, sub: SubQuestion, evidence: Evidence, allowance: int) -> Draft:
        read = self._count(sub.text)
        cands, cost = self._candidates(evidence, allowance - read - min(96, allowance // 3))
        read += cost
        if read > allowance:
            return Draft((PartDraft(sub.text, focus=sub.focus),), error="budget")
        part, fired = self._part(sub, evidence, cands)
        spent = sum(self._count(c.text) for c in part.claims)
        if spent > allowance - read:  # keep one sentence: the best, which the part was judged on
            part = replace(part, claims=part.claims[:1])
            spent = sum(self._count(c.text) for c in part.claims)
            if spent > allowance - read:
                part = replace(part, claims=(), found=False)
                spent = 0
        notes = () if cands else ("no evidence retrieved",)
        return Draft((part,), tokens_in=read, tokens_out=spent, notes=notes, rules=fired)

    def _part(self, sub: SubQuestion, evidence: Evidence, cands: list[Candidate]) -> tuple[PartDraft, tuple[str, ...]]:
        """The sentence the scorer reads as the answer, one more when it scores nearly as well
        and says something else, and whether the best one answers at all. A hop's sentences are
        only preranked: merge reads them in a chain with the sentence that named the hop."""
        asked = sub.text if sub.kind == PART else sub.query
        cands, fired = self._answerable(cands, asked)
        # a side or a hop is about its thing: what its own page says of it, not a mention elsewhere
        own_page = _OWN_PAGE_RULES.get(sub.kind)
        if own_page is not None and own_page in self.rules:
            own = [c for c in cands if _about(sub.focus, c.span.title)]
            if own:
                cands, fired = own, (*fired, own_page)
        if not cands:
            return PartDraft(sub.text, focus=sub.focus), fired
        scores = (self.prerank.score(asked, cands, evidence.query_vector) if sub.kind == HOP
                  else self._read(asked, evidence, cands))
        # a side only has to be about its thing (the comparison settles the question), so it is
        # judged at the support level, not the found threshold
        found, confidence = (self.supports if sub.kind == SIDE else self.answerability).judge(scores)
        if found and sub.kind not in (SIDE, HOP) and self._unnamed(asked, evidence):
            found, fired = False, (*fired, "unnamed_thing")
        elif not found and sub.kind == PART and "asked_cell" in self.rules:
            cells = [i for i, c in enumerate(cands) if scores[i] > -1.0 and names_cell(asked, c.sentence)]
            if cells:  # the row and the column the question names: a lookup, whatever the reader reads
                scores = _led_by(scores, max(cells, key=lambda i: scores[i]))
                found, fired = True, (*fired, "asked_cell")
        if (sub.kind == PART and "entry_opening" in self.rules
                and (first := self._opening(scores, cands, asks_default(asked))) is not None):
            scores, fired = _led_by(scores, first), (*fired, "entry_opening")
        if sub.kind == PART and self._looks_up_default(asked) and "unnamed_thing" not in fired:
            scores, looked_up = _term_default_leads(asked, cands, scores)
            found, fired = (True, (*fired, "term_default")) if looked_up else (found, fired)
        # a hop offers merge its best sentences, each read after the link: the chain is what answers
        chosen = (self._choose(scores, cands, figures=sub.kind == SIDE or self._compares(sub)) if sub.kind != HOP
                  else [int(i) for i in np.argsort(-scores, kind="stable")[: self.thresholds.hop_claims]])
        claims = tuple(self._claim(asked, cands[i], float(scores[i])) for i in chosen)
        if "short_answer" in self.rules and claims and claims[0].answer:
            fired += ("short_answer",)
        # a part not found keeps its sentences (it renders as "not found"): merge may still read
        # them in a chain with a hop, where they answer together
        return PartDraft(sub.text, claims, found, confidence, sub.focus), fired

    def _compares(self, sub: SubQuestion) -> bool:
        """Whether `sub` is a question that compares named things: its own answer then also keeps
        the sentences that give a figure, as a side's does. The comparison reads the question's own
        sentences for a side whose retrieval, asked of one name, missed its table row; the fused
        order may have put that row below the second sentence's share."""
        return (sub.kind == PART and "figure_comparison" in self.rules
                and bool(plan_by_form(sub.text, self.rules).comparison))

    def _opening(self, scores: np.ndarray, cands: Sequence[Candidate], default_asked: bool) -> int | None:
        """An earlier sentence of the lead's manual entry that the reader cannot tell from the lead
        (within `tie_logit` of it), when there is one: an entry's first sentences say what it is,
        its later ones qualify it. Prose is left alone: its first sentence is as often background. An
        entry's "Default: Disabled" line (Celery writes it first) says what it is only when a default is asked."""
        best = int(np.argmax(scores))
        lead = cands[best].sentence
        named = entry_names(lead)
        if not named or not 0.0 < scores[best] < 1.0:
            return None
        section = entry_section(lead)
        ties = [i for i, c in enumerate(cands) if 0.0 < scores[i] < 1.0 and c.sentence.document_id == lead.document_id
                and c.sentence.index < lead.index and entry_names(c.sentence) & named
                and entry_section(c.sentence) == section
                and (default_asked or not states_default(c.sentence))
                and _logit(scores[best]) - _logit(scores[i]) <= self.thresholds.tie_logit]
        return min(ties, key=lambda i: cands[i].sentence.index) if ties else None

    def _read(self, question: str, evidence: Evidence, cands: Sequence[Candidate]) -> np.ndarray:
        """Scores of `cands` for `question`: the scorer reads the best `reader_candidates` by the
        bi-encoder; the others score -1 (never chosen)."""
        pre = self.prerank.score(question, cands, evidence.query_vector)
        if self.scorer is self.prerank:
            return pre
        top = np.argsort(-pre, kind="stable")[: self.thresholds.reader_candidates]
        scores = np.full(len(cands), -1.0, dtype=np.float32)
        scores[top] = self.scorer.score(question, [cands[i] for i in top])
        return scores

    def _choose(self, scores: np.ndarray, cands: Sequence[Candidate], figures: bool = False) -> list[int]:
        """The best sentence, then the next ones of its document that score at least
        `second_share` of it (and the support level) and do not say what a chosen one says: a
        sentence that supports the answer sits beside it, one elsewhere is about something else
        (a question with two asks has two parts). A side of a comparison also
        keeps its next sentences that give a figure: the comparison picks the one that gives the
        compared measure."""
        t = self.thresholds
        order = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > -1.0]
        chosen = order[:1]
        for i in order[1:]:
            if len(chosen) >= t.max_claims or scores[i] < max(t.second_share * scores[order[0]], self.support):
                break
            # the same words elsewhere say nothing new: an API reference repeats each member's first
            # sentence in its summary table, whose context (and so vector) differs
            if (cands[i].span.document_id == cands[order[0]].span.document_id
                    and not any(repeats(cands[i].sentence.text, cands[i].vector, cands[j].sentence.text,
                                        cands[j].vector, t.duplicate) for j in chosen)):
                chosen.append(i)
        if figures:
            chosen += [i for i in order[1:] if i not in chosen and scores[i] >= self.support
                       and figures_in(cands[i].sentence.text)][: t.max_claims]
        return chosen

    def _claim(self, question: str, cand: Candidate, score: float) -> Claim:
        s = cand.sentence
        default = asked_default(question, default_term(s)) if self._looks_up_default(question) else None
        text = f"Default of {default[0]}: {default[1]}" if default else said(s, question)
        answer = compose.short_answer(question, text, bare_thing_named(text, question)) if "short_answer" in self.rules else ""
        return Claim(text, (Source(cand.span, s.start, s.end),), score, answer, cand.vector, cand.context,
                     read_as=(question, candidate_text(cand)))

    # --- merge ------------------------------------------------------------------------------
    def merge(self, question: str, own: Draft, parts: Sequence[Part], plan: Plan, allowance: int) -> Draft:
        """Parts stay parts, in the question's order; hops are read in their chains against the
        question; sides become a comparison."""
        hops = [p for p in parts if p.sub_question.kind == HOP]
        sides = [p for p in parts if p.sub_question.kind == SIDE]
        own_parts = [p for p in parts if p.sub_question.kind == PART]
        fired: tuple[str, ...] = ()
        if own_parts:
            merged = tuple(p.draft.parts[0] if p.draft.parts else PartDraft(p.sub_question.text) for p in own_parts)
        elif sides:
            part, fired = self._comparison(question, own, sides, plan.comparison)
            merged = (part,)
        else:
            part, fired = self._with_hops(question, own, hops, dict(plan.links))
            merged = (part,)
        draft = Draft(merged, rules=fired)
        spent = sum(self._count(c.text) for c in draft.claims)
        if spent > allowance:
            draft = Draft(tuple(replace(p, claims=p.claims[:1]) for p in merged), rules=fired)
            spent = sum(self._count(c.text) for c in draft.claims)
            if spent > allowance:
                return Draft(merged, error="budget")
        return replace(draft, tokens_out=spent)

    def _with_hops(self, question: str, own: Draft, hops: Sequence[Part],
                   links: dict[str, Claim]) -> tuple[PartDraft, tuple[str, ...]]:
        """The question's own sentences, and each hop's sentences read after the sentence that
        named the hop (a chain: a bridge question names its first document, the answer sits in
        the second), all scored against the question itself; the best leads."""
        base = own.parts[0] if own.parts else PartDraft(question)
        options: list[tuple[tuple[Claim, ...], str]] = [((c,), _read_text(c)) for c in base.claims]
        for hop in hops:
            link = links.get(hop.sub_question.focus)
            for claim in (c for p in hop.draft.parts for c in p.claims):
                if (link is not None and past(claim, link) and "bridge_chain" in self.rules
                        and _goes_on(claim, link, hop.sub_question.focus)):
                    options.append(((claim, link), f"{_read_text(link)} {_read_text(claim)}"))
                else:
                    options.append(((claim,), _read_text(claim)))
        options = [o for k, o in enumerate(options) if not any(o[0][0] is p[0][0] and o[1] == p[1] for p in options[:k])]
        if not options:
            return base, ()
        options, scores = self._chains_that_add(question, options)
        found, confidence = self.answerability.judge(scores)
        best = int(np.argmax(scores))
        claims = tuple(replace(c, read_as=(question, options[best][1])) for c in options[best][0])
        if len(claims) == 1:  # a second sentence of its document when one scores nearly as well and says more
            claims += tuple(c for k in np.argsort(-scores) for c in options[k][0][:1]
                            if k != best and len(options[k][0]) == 1 and scores[k] >= self._second(scores[best])
                            and c.sources[0].span.document_id == claims[0].sources[0].span.document_id
                            and not same(c, claims[0]))[:self.thresholds.max_claims - 1]
        fired = ("bridge_chain",) if len(options[best][0]) == 2 else ()
        return PartDraft(question, claims if found else (), found, confidence, base.focus), fired

    def _chains_that_add(self, question: str, options: list[tuple[tuple[Claim, ...], str]],
                         ) -> tuple[list[tuple[tuple[Claim, ...], str]], np.ndarray]:
        """The options scored against the question. A chain leads with its hop's sentence, so it
        must answer better than its link read alone: when the link answers by itself (the hop went
        to a stray name), the link leads, not a sentence that merely follows it. A chain that adds
        less than `chain_gain` to its link's own score is not chosen, and the link is an option of
        its own. Options and links are read in one call: a scorer that orders its candidates
        (`sentence_order = "fused"`) then puts chains and links on one scale."""
        links = list({o[0][1].text: o[0][1] for o in options if len(o[0]) == 2}.values())
        read = self.scorer.score_texts(question, [text for _, text in options] + [_read_text(c) for c in links])
        scores = read[:len(options)]
        if not links:
            return options, scores
        alone = dict(zip((c.text for c in links), read[len(options):], strict=True))
        scores = np.array([-1.0 if len(claims) == 2 and score < alone[claims[1].text] + self.thresholds.chain_gain
                           else score for (claims, _), score in zip(options, scores, strict=True)], dtype=np.float32)
        said = {o[0][0].text for o in options if len(o[0]) == 1}
        extra = [((c,), _read_text(c)) for c in links if c.text not in said]
        return options + extra, np.append(scores, [alone[c.text] for (c,), _ in extra]).astype(np.float32)

    def _second(self, best: float) -> float:
        return max(self.thresholds.second_share * best, self.support)

    def _comparison(self, question: str, own: Draft, sides: Sequence[Part], cue: str) -> tuple[PartDraft, tuple[str, ...]]:
        """Each side's best sentence, after a claim that settles the comparison when the sides
        can: which side wins, with both figures, when each side gives a figure of the compared
        measure; yes or no when the sentences say (or contradict) what a yes/no comparison asks."""
        answered = [(p.sub_question.focus, p.draft.parts[0]) for p in sides
                    if p.draft.parts and p.draft.parts[0].found and p.draft.parts[0].claims]
        confs = [p.draft.parts[0].confidence for p in sides if p.draft.parts]
        if len(answered) < 2:  # one side unanswered: no comparison to state, only what was found
            base = own.parts[0] if own.parts else PartDraft(question)
            claims = tuple(part.claims[0] for _, part in answered) or base.claims
            conf = max(confs or [base.confidence])
            found = bool(claims) and conf >= self.thresholds.found
            return PartDraft(question, claims if found else (), found, conf), ()
        leads = [part.claims[0] for _, part in answered]
        names = [name for name, _ in answered]
        if cue and "figure_comparison" in self.rules:
            # the question's own sentences about a side are that side's too, after its own: one table
            # may hold both rows while each side's retrieval, asked of one name, missed its row
            mine = own.parts[0].claims if own.parts else ()
            claims = [(*part.claims, *(c for c in mine if _states(c, name, names)
                                       and not any(same(c, k) for k in part.claims)))
                      for name, part in answered]
            settled = self._by_figures(question, cue, names, claims)
            if settled:
                return PartDraft(question, settled, True, min(confs)), ("figure_comparison",)
            return PartDraft(question, tuple(distinct(leads)), True, min(confs)), ()
        if "yes_no_comparison" in self.rules and (
                answer := compose.verdict(question, [(n, c.text) for n, c in zip(names, leads, strict=True)])) is not None:
            said = compose.yes_no(question, names, answer)
            if said:
                sources = tuple(s for c in leads for s in c.sources)
                verdict = Claim(said, sources, 1.0, "Yes" if answer else "No", kind="verdict")
                return PartDraft(question, (verdict, *distinct(leads)), True, min(confs)), ("yes_no_comparison",)
        return PartDraft(question, tuple(distinct(leads)), True, min(confs)), ()

    def _by_figures(self, question: str, cue: str, names: Sequence[str],
                    claims: Sequence[Sequence[Claim]]) -> tuple[Claim, ...]:
        """"Plan A covers more of the premium: 80%, against 50% for plan B." from each side's
        best sentence that gives a figure of the compared measure; () when a side gives none of
        the measure the other gives (a waiting period in days is no share of salary), or a tie."""
        asked = question
        for name in names:
            asked = asked.replace(name, " ")
        for per_side in _figure_choices(claims):
            if not all(_states(c, name, names) for c, name in zip(per_side, names, strict=True)):
                continue
            picked = comparable(asked, cue, [asked_figures(asked, c.text) for c in per_side])
            if picked is None:
                continue
            w = winner(cue, [f.value for f in picked])
            if w is None:
                return ()
            said = predicate(asked)
            name = names[w][:1].upper() + names[w][1:]
            others = ", ".join(f"{f.text} for {n}" for k, (n, f) in enumerate(zip(names, picked, strict=True)) if k != w)
            text = f"{name} {said}: {picked[w].text}, against {others}." if said else f"{name}: {picked[w].text}, against {others}."
            sources = tuple(s for c in per_side for s in c.sources)
            return (Claim(text, sources, 1.0, names[w], kind="verdict"), *distinct(per_side))
        return ()

    # --- reflect ----------------------------------------------------------------------------
    def reflect(self, question: str, draft: Draft, evidence: Evidence, allowance: int) -> Draft:
        """Re-read every claim against its sentence (unsupported ones go); drop claims that
        repeat an earlier part's; say a lead that refers back after the sentence it refers to;
        name the parts still unanswered, so the controller retrieves once more for them."""
        read = self._count(question) + sum(self._count(c.text) for c in draft.claims)
        if read > allowance:
            return replace(draft, error="budget", tokens_in=0, tokens_out=0, llm_calls=0)
        checked, notes = verify(draft, self.scorer, self.supports, self.answerability)
        stored = [e.sentence for e in evidence.sentences]  # where a lead that refers back finds the sentence before it
        parts, kept, dropped, wrote, fired, unnamed_parts = [], [], 0, 0, [], set()
        for part in checked.parts:
            if part.found and (unnamed := self._unnamed(part.question, evidence)):
                # a hop's passages were read too: a part judged in merge is checked here, and
                # not asked again (the same words retrieve the same passages)
                fired.append("unnamed_thing")
                unnamed_parts.add(part.question)
                notes = (*notes, f"reflect: '{part.question}' is not found: no passage names {', '.join(unnamed)}")
                part = replace(part, claims=(), found=False)
            claims = [c for c in part.claims if not any(same(c, k) for k in kept)]
            if part.claims and not claims:  # the same sentence answers this part too: keep it
                claims = list(part.claims[:1])
            dropped += len(part.claims) - len(claims)
            kept += claims
            carried = self_contained(claims[0], evidence.spans, stored) if claims and "refers_back" in self.rules else None
            if carried is not None and read + wrote + self._count(carried.text) <= allowance:
                wrote += self._count(carried.text)
                # the sentence it refers to is said once: as the lead's antecedent, not again after it
                claims = [carried, *(c for c in claims[1:] if not _within(c, carried))]
                fired.append("refers_back")
            parts.append(replace(part, claims=tuple(claims)))
        missing = tuple(p.question for p in parts if not p.found and p.question not in unnamed_parts)
        note = f"reflect: kept {len(kept)} of {len(kept) + dropped} sentences"
        return Draft(tuple(parts), tokens_in=read, tokens_out=wrote, missing=missing, notes=(*notes, note),
                     rules=tuple(dict.fromkeys(fired)))

    # --- conversation -----------------------------------------------------------------------
    def condense(self, question: str, history: Sequence[Turn], allowance: int) -> Rewrite:
        if "followup" not in self.rules:
            return Rewrite(question)
        from .followup import condense

        condensed = condense(question, history, self.embedder, self.thresholds)
        read = self._count(question) + sum(self._count(t.content) for t in history[-6:])
        return Rewrite(condensed.question, tokens_in=min(read, allowance), framed=condensed.reason == "ellipsis",
                       rules=("followup",) if condensed.question != question else ())

    # --- helpers ----------------------------------------------------------------------------
    def _candidates(self, evidence: Evidence, allowance: int) -> tuple[list[Candidate], int]:
        """The sentences of as many spans (best first) as the allowance can pay to read: fewer
        spans is how a short budget degrades. Stored sentences when sentence memory has them,
        else the spans split and encoded here."""
        read, spans = 0, []
        for span in evidence.spans:
            cost = self._count(span.text)
            if read + cost > allowance:
                break
            read += cost
            spans.append(span)
        # a stored sentence names one span, but covers every span it overlaps: a span that starts
        # inside a sentence (chunks overlap) split afresh had read "wish to protect a list, ..."
        # from "If you wish to protect a list, ..."; one that starts inside a code block, its
        # template code as prose. Only the spans of a document without sentence memory are split.
        stored = [Candidate(e.sentence, e.span, e.vector) for e in evidence.sentences
                  if e.vector is not None and any(_overlaps(e.sentence, s) for s in spans)]
        remembered = {e.sentence.document_id for e in evidence.sentences}
        fresh = [s for s in spans if s.document_id not in remembered]
        return stored + self._split_and_encode(fresh), read

    def _split_and_encode(self, spans: Sequence[Span]) -> list[Candidate]:
        """The slow path, as ingest would have done it: split, then encode with the context."""
        pieces = [(span, s) for span in spans for s in split_sentences(span.text, span.document_id, span.start)]
        if not pieces:
            return []
        vectors = self.embedder.embed([context_text(span.title, s) for span, s in pieces])
        return [Candidate(s, span, v) for (span, s), v in zip(pieces, vectors, strict=True)]

    def _count(self, text: str) -> int:
        return self.embedder.count_tokens(text) if text else 0


_OWN_PAGE_RULES = {SIDE: "side_own_page", HOP: "hop_own_page"}


def _within(claim: Claim, lead: Claim) -> bool:
    """Whether `claim` quotes a range that the lead quotes."""
    return any(s.span.document_id == t.span.document_id and t.start <= s.start and s.end <= t.end
               for s in claim.sources for t in lead.sources)


def _overlaps(sentence: Sentence, span: Span) -> bool:
    return sentence.document_id == span.document_id and sentence.start < span.end and sentence.end > span.start


def _without(cands: list[Candidate], fired: tuple[str, ...], rule: str,
             drop: Callable[[Sentence], bool]) -> tuple[list[Candidate], tuple[str, ...]]:
    """`cands` without those whose sentence `drop` picks; `rule` is added to `fired` when one goes."""
    kept = [c for c in cands if not drop(c.sentence)]
    return kept, (*fired, rule) if len(kept) < len(cands) else fired


def _term_default_leads(question: str, cands: Sequence[Candidate], scores: np.ndarray) -> tuple[np.ndarray, bool]:
    """When the question asks for the default of an entry whose term gives it, and the entry's
    first sentence (the one that writes the term) is a candidate, it leads: a lookup, whatever
    the reader reads (it reads Vim's 'smarttab' entry, which mentions 'tabstop', as well)."""
    opening = [i for i, c in enumerate(cands) if scores[i] > -1.0 and asked_default(question, default_term(c.sentence))]
    if not opening:
        return scores, False
    return _led_by(scores, max(opening, key=lambda i: scores[i])), True


def _logit(p: float) -> float:
    return float(np.log(p) - np.log1p(-p))


def _led_by(scores: np.ndarray, best: int) -> np.ndarray:
    """`scores` with candidate `best` just above every other: a lookup leads, whatever the reader reads."""
    scores = scores.copy()
    scores[best] = float(scores.max()) + 1e-3
    return scores


def _read_text(claim: Claim) -> str:
    """A claim as the scorer reads it: its sentence with its title."""
    return claim.read_as[1] or reader_text(claim.sources[0].span.title if claim.sources else "", claim.text)


def _figure_choices(claims: Sequence[Sequence[Claim]]):
    """Each combination of one claim per side, the sides' best claims first."""
    depth = max(len(c) for c in claims)
    for k in range(depth):
        yield [side[min(k, len(side) - 1)] for side in claims]
    if len(claims) == 2:
        for i in range(len(claims[0])):
            for j in range(len(claims[1])):
                if i != j:
                    yield [claims[0][i], claims[1][j]]


def _states(claim: Claim, name: str, names: Sequence[str]) -> bool:
    """Whether a side's sentence is about that side: it, or its page's title or heading, says a
    word of the side's name that the other sides' names do not ("cache" of "the default cache
    size", against "the default page size"). A figure of a sentence about the maximum page
    size is no figure of the cache size."""
    others = set().union(*(content_words(n) for n in names if n != name))
    own = content_words(name) - others
    return not own or bool(own & content_words(f"{claim.sources[0].span.title} {claim.context} {claim.text}"))


def _about(focus: str, title: str) -> bool:
    """Whether a document titled `title` is the page of the thing `focus` names ("the Cotula" and
    "Cotula"; "Lilu" and "Lilu (mythology)")."""
    name = _bare_name(focus)
    return bool(name) and (_bare_title(title) == name or _named_in(name, title))


def _goes_on(claim: Claim, link: Claim, focus: str) -> bool:
    """Whether a hop's sentence goes on from the sentence that named the hop: it reads on in the
    link's document, is on the page of a thing the link names, or names the hop's thing. A
    sentence of another thing's page that says nothing of either only shares the question's words."""
    span = claim.sources[0].span
    return (span.document_id == link.sources[0].span.document_id or _about(focus, span.title)
            or _named_in(_read_text(link), span.title) or _named_in(claim.text, _bare_name(focus)))


def _bare_name(focus: str) -> str:
    """"the Cotula" -> "cotula"."""
    return re.sub(r"^(?:the|a|an)\s+", "", focus.strip(), flags=re.IGNORECASE).lower()


def _named_in(question: str, title: str) -> bool:
    """Does the question name the thing `title` is about? ("Kelbrook, Harlow County" in "the
    county where Kelbrook is"; "Zürich" as "Zurich")."""
    name = _plain(_bare_title(title).split(",")[0]).strip()
    return len(name) >= 4 and re.search(rf"\b{re.escape(name)}\b", _plain(question.lower())) is not None


def _plain(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _bare_title(title: str) -> str:
    """"Lilu (mythology)" and "lilu" are the same document for the bridge check."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip().lower()
