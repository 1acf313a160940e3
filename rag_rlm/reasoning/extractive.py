"""The extractive reasoner: answers with sentences of the evidence itself, so every word it says
is grounded and cited by construction. No generative model: the question's vector ranks the
sentences, whose vectors come from sentence memory (stored at ingest), so answering encodes
nothing but the question. Collections ingested before sentence memory existed still answer: their
spans are split and encoded on the fly (the slow path).

Token accounting uses the embedder's tokenizer: what a step reads (question + evidence) is
`tokens_in`, what it writes (its claims) is `tokens_out`, and both fit the step's allowance.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..embed import Embedder, cached
from ..ingest.sentences import split_sentences
from ..ingest.sentvec import context_text
from ..types import Span
from . import compose
from .base import (
    HOP,
    PART,
    SIDE,
    Claim,
    Draft,
    Evidence,
    Part,
    PartDraft,
    Plan,
    Source,
    SubQuestion,
    Turn,
)
from .claims import Candidate, answers_alone, distinct, past, same, self_contained, similar, with_lists
from .rules import novel_entities, plan_by_form, residual_question

MAX_CLAIMS = 2  # a one-fact question reads best as its answer plus at most one sentence of support
SUPPORT_RATIO = 0.9  # a second sentence must score this close to the best one
BRIDGE_RATIO = 0.8  # a hop's sentence scoring this share of the best one is relevant to the question


class ExtractiveReasoner:
    def __init__(self, embedder: Embedder, *, found_threshold: float = compose.FOUND_THRESHOLD,
                 bridge_entities: int = 2, bridge_from: int = 3, max_claims: int = MAX_CLAIMS):
        """`found_threshold`: the answerability score under which a part is "not found";
        `bridge_entities` follow-up retrievals at most, on entities named in the best sentences
        of the first `bridge_from` hits (a bridge to a second document)."""
        self.embedder = cached(embedder)  # questions and slow-path sentences come back across steps
        self.found_threshold = found_threshold
        self.bridge_entities = bridge_entities
        self.bridge_from = bridge_from
        self.max_claims = max_claims

    # --- plan -------------------------------------------------------------------------------
    def plan(self, question: str, evidence: Evidence, allowance: int) -> Plan:
        read = self._count(question)
        by_form = plan_by_form(question)
        if by_form.sub_questions:
            return replace(by_form, tokens_in=read)
        # the first hits, and the document of a thing the question names wherever it ranks: the
        # bridge is what that document says about it ("the country where Damerjog is")
        spans = [*evidence.spans[: self.bridge_from],
                 *(s for s in evidence.spans[self.bridge_from:] if _named_in(question, s.title))]
        top = Evidence(tuple(spans), evidence.sentences, evidence.query_vector)
        cands, cost = self._candidates(top, allowance - read)
        bridges = self._bridge_entities(question, evidence, cands)
        read = min(allowance, read + cost)
        if not bridges:
            return Plan(note="rule: single question", tokens_in=read)
        ask = residual_question(question)
        subs = tuple(SubQuestion(question, focus=e, kind=HOP, query_text=ask) for e in bridges)
        return Plan(subs, note="rule: bridge entities " + ", ".join(bridges), tokens_in=read)

    def _bridge_entities(self, question: str, evidence: Evidence, cands: list[Candidate]) -> list[str]:
        """Entities named in the best sentences of the first hits but not in the question: the
        likely hop to the next document; an entity that titles a retrieved document is no hop."""
        cands = [c for c in cands if c.sentence.kind != "heading"]
        if not cands:
            return []
        ranked = self._rank(question, evidence, cands)
        retrieved = {_bare_title(s.title) for s in evidence.spans}
        # the named thing's own document first: its best sentence links it to the next thing,
        # where the best sentence overall may be about something else the question's words match
        subject = np.array([_named_in(question, c.span.title) for c in cands])
        picked: list[str] = []
        for i in np.lexsort((-ranked.scores, ~subject)):
            for ent in novel_entities(question, cands[i].sentence.text):
                if _bare_title(ent) not in retrieved and ent not in picked:
                    picked.append(ent)
            if len(picked) >= self.bridge_entities:
                break
        return picked[: self.bridge_entities]

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
        part = self._part(sub, evidence, cands)
        spent = sum(self._count(c.text) for c in part.claims)
        if spent > allowance - read:  # keep one sentence: the closest, which the part was judged on
            part = replace(part, claims=(max(part.claims, key=lambda c: c.score),))
            spent = sum(self._count(c.text) for c in part.claims)
            if spent > allowance - read:
                part = replace(part, claims=(), found=False)
                spent = 0
        notes = () if cands else ("no evidence retrieved",)
        return Draft((part,), tokens_in=read, tokens_out=spent, notes=notes)

    def _part(self, sub: SubQuestion, evidence: Evidence, cands: list[Candidate]) -> PartDraft:
        """The best sentence, one more when it scores nearly as well and says something else,
        and whether they answer the question at all."""
        cands = [c for c in with_lists(cands) if answers_alone(c.sentence)]
        if not cands:
            return PartDraft(sub.text, focus=sub.focus)
        ranked = self._rank(sub.query, evidence, cands, asked=sub.text)
        chosen = self._choose(ranked, [c.vector for c in cands], sub.query, [c.context for c in cands])
        if sub.kind == SIDE:
            chosen = _with_figure(sub, ranked, cands, chosen)
        b = ranked.best
        conf = compose.confidence(sub.query, float(ranked.dense[b]), float(ranked.coverage[b]),
                                  [c.context for c in cands], cands[b].sentence.text,
                                  names=sub.focus if sub.kind == HOP else None)
        claims = tuple(self._claim(sub.text, cands[i], float(ranked.scores[i])) for i in chosen)
        found = conf >= self.found_threshold
        return PartDraft(sub.text, claims if found else (), found, conf, sub.focus)

    def _choose(self, ranked: compose.Scored, vectors: Sequence[np.ndarray | None],
                question: str = "", contexts: Sequence[str] = ()) -> list[int]:
        """The lead (the close candidate that answers best), then the closest one when that is
        another that says something else (what the answer is judged on, kept so that a merge
        judges it too), else the next ones that score nearly as well, say something else and cover
        a word of the question the ones before did not (else the question did not ask for them:
        "$100 to $500" after the "$500" rule)."""
        order = ranked.order()
        chosen = order[:1]
        if ranked.best != chosen[0] and similar(vectors[ranked.best], vectors[chosen[0]]):
            chosen = [ranked.best]  # the two say the same: the closest says it
        elif ranked.best != chosen[0] and self.max_claims > 1:
            return [chosen[0], ranked.best]
        asked = compose.content_words(question)
        covered = compose.content_words(contexts[chosen[0]]) if contexts and chosen else set()
        for i in order[1:]:
            if len(chosen) >= self.max_claims:
                break
            if ranked.scores[i] < SUPPORT_RATIO * ranked.scores[ranked.best]:
                continue
            if any(similar(vectors[i], vectors[j]) for j in chosen):
                continue
            adds = (asked & compose.content_words(contexts[i])) - covered if contexts else {True}
            if not adds:
                continue
            covered |= compose.content_words(contexts[i]) if contexts else set()
            chosen.append(i)
        return chosen

    def _claim(self, question: str, cand: Candidate, score: float) -> Claim:
        s = cand.sentence
        return Claim(s.text, (Source(cand.span, s.start, s.end),), score,
                     compose.short_answer(question, s.text), cand.vector, cand.context)

    # --- merge ------------------------------------------------------------------------------
    def merge(self, question: str, own: Draft, parts: Sequence[Part], plan: Plan, allowance: int) -> Draft:
        """Parts stay parts, in the question's order; hops add their sentences to the question's
        own answer (ranked against the question); sides become a comparison."""
        hops = [p for p in parts if p.sub_question.kind == HOP]
        sides = [p for p in parts if p.sub_question.kind == SIDE]
        own_parts = [p for p in parts if p.sub_question.kind == PART]
        if own_parts:
            merged = tuple(p.draft.parts[0] if p.draft.parts else PartDraft(p.sub_question.text) for p in own_parts)
        elif sides:
            merged = (self._comparison(question, own, sides, plan.comparison),)
        else:
            merged = (self._with_hops(question, own, hops),)
        draft = Draft(merged)
        spent = sum(self._count(c.text) for c in draft.claims)
        if spent > allowance:
            draft = Draft(tuple(replace(p, claims=p.claims[:1]) for p in merged))
            spent = sum(self._count(c.text) for c in draft.claims)
            if spent > allowance:
                return Draft(merged, error="budget")
        return replace(draft, tokens_out=spent)

    def _with_hops(self, question: str, own: Draft, hops: Sequence[Part]) -> PartDraft:
        """The question's own sentences and those its hops found, ranked against the question
        itself and judged on all of them (a bridge question names its first document, the
        answer sits in the second)."""
        base = own.parts[0] if own.parts else PartDraft(question)
        pool = list(base.claims) + [c for h in hops for p in h.draft.parts if p.found for c in p.claims]
        pool = distinct(pool)
        if not pool or any(c.vector is None for c in pool):
            return base
        # a sentence's heading names what it is about ("max_connections (integer)" over "The
        # default is typically 100 connections"); a claim from the memo has only its title
        contexts = [c.context or f"{c.sources[0].span.title} {c.text}" for c in pool]
        ranked = compose.score(question, self.embedder.embed([question])[0], np.stack([c.vector for c in pool]), contexts,
                               asked=question)
        chosen = self._choose(ranked, [c.vector for c in pool], question, contexts)
        b = ranked.best
        conf = compose.confidence(question, float(ranked.dense[b]), float(ranked.coverage[b]),
                                  contexts, pool[b].text)
        found = conf >= self.found_threshold
        relevant = [c for c, v in zip(pool, ranked.scores, strict=True) if v >= BRIDGE_RATIO * ranked.scores[b]]
        claims = self._bridged(question, base, hops, relevant) or tuple(pool[i] for i in chosen)
        return PartDraft(question, claims if found else (), found, conf, base.focus)

    def _bridged(self, question: str, base: PartDraft, hops: Sequence[Part],
                 relevant: Sequence[Claim]) -> tuple[Claim, ...]:
        """A question that names its subject through another thing ("the film that was shot in
        Leland") is answered by the hop's document, reached through the entity the question's own
        evidence named: lead with the hop's sentence, then the sentence that links the two. When
        no hop found anything past the link, the link is ranked with the rest."""
        if not base.claims or not _looks_multi_hop(question):
            return ()
        link = base.claims[0]
        linked = sorted((p for h in hops for p in h.draft.parts if p.found and p.claims
                         and h.sub_question.focus and h.sub_question.focus in link.sources[0].span.text),
                        key=lambda p: -p.confidence)
        link_fit = compose.answer_fit(question, link.context or link.text)
        for k, part in enumerate(linked):
            for j, claim in enumerate(part.claims):
                if past(claim, link) and self._leads_past(question, claim, part.focus, k == 0, j == 0,
                                                              relevant, link_fit):
                    return (claim, link)
        return ()

    @staticmethod
    def _leads_past(question: str, claim: Claim, focus: str, surest: bool, first: bool,
                    relevant: Sequence[Claim], link_fit: float) -> bool:
        """Whether a hop's `claim` may lead in place of the link. The surest hop's first sentence
        may, however far it is from the question's words (that is what a bridge is). Another
        hop's first sentence may when it is `relevant` to the question (a hop on "the Woman" of
        "Wings and the Woman" finds Wonder Woman). A later sentence may when it comes from the
        focus's own page and says as much of what is asked as the link does ("Philadelphia,
        Pennsylvania" for the Eagles of "played for an NFL team based in what state"), and not when
        the link names what is asked itself ("chief of staff to which Senator")."""
        if first and (surest or any(claim is c for c in relevant)):
            return True
        own_page = _bare_title(claim.sources[0].span.title) == focus.lower()
        return own_page and compose.answer_fit(question, claim.context or claim.text) >= link_fit

    def _comparison(self, question: str, own: Draft, sides: Sequence[Part], cue: str) -> PartDraft:
        """Each side's best sentence, after a first claim that settles the comparison when they
        can: which side it is, with both figures, when they give the figure the question compares
        on ("formed first"); yes or no when they say (or contradict) what a yes/no comparison asks
        ("Are X and Y both film directors?")."""
        leads = [(p.sub_question.focus, p.draft.parts[0].claims[0]) for p in sides
                 if p.draft.parts and p.draft.parts[0].found and p.draft.parts[0].claims]
        confs = [p.draft.parts[0].confidence for p in sides if p.draft.parts]
        if len(leads) < 2:  # one side unanswered: no comparison to state, only what was found
            base = own.parts[0] if own.parts else PartDraft(question)
            claims = tuple(c for _, c in leads) or base.claims
            conf = max(confs or [base.confidence])
            found = bool(claims) and conf >= self.found_threshold
            return PartDraft(question, claims if found else (), found, conf)
        claims = [c for _, c in leads]
        sources = tuple(s for c in claims for s in c.sources)
        if cue:
            figures = [compose.figure(c.text, cue) for c in claims]
            if not all(f is not None for f in figures):  # "which is larger" with no sizes given
                return PartDraft(question, (), False, min(confs))
            if len(set(figures)) < len(figures) or any(a.text == b.text for a, b in itertools.pairwise(claims)):
                # one sentence for both sides, or a tie ("O(1)" for deque and list): it settles nothing
                return PartDraft(question, tuple(distinct(claims)), True, min(confs))
            w = compose.winner(cue, figures)  # type: ignore[arg-type]
            others = ", ".join(f"{name} {_fig(f)}" for k, ((name, _), f) in enumerate(zip(leads, figures, strict=True)) if k != w)
            text = f"{leads[w][0][:1].upper()}{leads[w][0][1:]}: {_fig(figures[w])}, against {others}."  # type: ignore[arg-type]
            claims.insert(0, Claim(text, sources, 1.0, leads[w][0]))
        elif (answer := compose.verdict(question, [(name, c.text) for name, c in leads])) is not None:
            said = compose.yes_no(question, [name for name, _ in leads], answer)
            if said:
                claims.insert(0, Claim(said, sources, 1.0, "Yes" if answer else "No"))
        return PartDraft(question, tuple(claims), True, min(confs))

    # --- reflect ----------------------------------------------------------------------------
    def reflect(self, question: str, draft: Draft, evidence: Evidence, allowance: int) -> Draft:
        """Drop claims that repeat an earlier one; say a part's lead that refers back after the
        sentence it refers to; name the parts the evidence did not answer, so the controller
        retrieves once more for them."""
        read = self._count(question) + sum(self._count(c.text) for c in draft.claims)
        if read > allowance:
            return replace(draft, error="budget", tokens_in=0, tokens_out=0, llm_calls=0)
        parts, kept, dropped, wrote = [], [], 0, 0
        for part in draft.parts:
            claims = [c for c in part.claims if not any(same(c, k) for k in kept)]
            if part.claims and not claims:  # the same sentence answers this part too: keep it
                claims = list(part.claims[:1])
            dropped += len(part.claims) - len(claims)
            kept += claims
            carried = self_contained(claims[0]) if claims else None
            if carried is not None and read + wrote + self._count(carried.text) <= allowance:
                wrote += self._count(carried.text)
                claims = [carried]  # the sentence it refers to is its support: the lead says two already
            parts.append(replace(part, claims=tuple(claims)))
        missing = tuple(p.question for p in parts if not p.found)
        note = f"reflect: kept {len(kept)} of {len(kept) + dropped} sentences"
        return Draft(tuple(parts), tokens_in=read, tokens_out=wrote, missing=missing, notes=(note,))

    # --- conversation -----------------------------------------------------------------------
    def condense(self, question: str, history: Sequence[Turn]) -> str:
        from .followup import condense

        return condense(question, history, self.embedder).question

    # --- helpers ----------------------------------------------------------------------------
    def _rank(self, question: str, evidence: Evidence, cands: list[Candidate], asked: str = "") -> compose.Scored:
        qv = evidence.query_vector if evidence.query_vector is not None else self.embedder.embed([question])[0]
        return compose.score(question, qv, np.stack([c.vector for c in cands]), [c.context for c in cands], asked)

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
        kept = {s.id for s in spans}
        stored = [Candidate(e.sentence, e.span, e.vector) for e in evidence.sentences
                  if e.span.id in kept and e.vector is not None]
        covered = {e.span.id for e in evidence.sentences}
        fresh = [s for s in spans if s.id not in covered]
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


_BRIDGE_SHAPE = re.compile(
    r"\b(?:that|which|who|whose|where|when)\b.+\b\w+|'s\b|\b(?:by|in|from|for|of) (?:the|an?)\b",
    re.IGNORECASE)


def _looks_multi_hop(question: str) -> bool:
    """"The film that...", "the team of ...", "X's sister": the subject is named through
    another thing, so a second document holds the answer. A plain "What is X?" is one hop."""
    body = re.sub(r"^\W*\w+\s+", "", question)  # the leading wh-word does not count
    return len(question.split()) >= 7 and bool(_BRIDGE_SHAPE.search(body))


def _with_figure(sub: SubQuestion, ranked: compose.Scored, cands: Sequence[Candidate], chosen: list[int]) -> list[int]:
    """A side of a comparison on a figure ("Which is larger, a bigint or an integer?") leads
    with its closest sentence that gives the figure about the side itself ("Name: bigint; Storage
    Size: 8 bytes") on the page of its closest sentence, when that one gives none ("The bigint
    type is designed to be used when ..."): the comparison is settled on the lead's figure."""
    cue = compose.comparison_cue(sub.text)
    if not cue or not chosen or compose.figure(cands[chosen[0]].sentence.text, cue) is not None:
        return chosen
    name = re.sub(r"^(?:the|a|an)\s+", "", sub.focus, flags=re.IGNORECASE).lower()
    page = cands[ranked.best].span.document_id
    figured = [i for i in np.argsort(-ranked.scores)
               if cands[i].span.document_id == page and compose.figure(cands[i].sentence.text, cue) is not None
               and name in " ".join(cands[i].sentence.text.lower().split()[:4])]
    return [int(figured[0]), chosen[0]] if figured else chosen


def _fig(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _named_in(question: str, title: str) -> bool:
    """Does the question name the thing `title` is about? ("Black Hawk Township, Jefferson County,
    Iowa" in "the county where Black Hawk Township is"; "Aschenbrödel" as "Aschenbrodel")."""
    name = _plain(_bare_title(title).split(",")[0]).strip()
    return len(name) >= 4 and re.search(rf"\b{re.escape(name)}\b", _plain(question.lower())) is not None


def _plain(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _bare_title(title: str) -> str:
    """"Lilu (mythology)" and "lilu" are the same document for the bridge check."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip().lower()
