"""The extractive reasoner: answers with the sentences of the evidence itself, so every word it
says is grounded and cited by construction. No generative model; the embedder ranks sentences.

Token accounting uses the embedder's tokenizer: what a step reads (question + evidence) is
`tokens_in`, what it writes is `tokens_out`, and both fit the step's allowance.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..embed import Embedder
from ..types import Span
from .base import Draft, Part, Plan, SubQuestion
from .rules import novel_entities, residual_question, sentences, split_question

_MARKER = re.compile(r"\[(\d+)\]")


_BRIDGE_SHAPE = re.compile(
    r"\b(?:that|which|who|whose|where|when)\b.+\b\w+|\bof (?:the|a|an)\b|'s\b|\b(?:by|in|from|for) the\b",
    re.IGNORECASE,
)


def _is_follow_up(question: str) -> bool:
    """A bridge sub-question ("Entity: question") is one hop: it is not bridged again."""
    return bool(re.match(r"^[^:?]{1,80}: ", question))


def _bare_title(title: str) -> str:
    """"Lilu (mythology)" and "lilu" are the same document for the bridge check."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", title).strip().lower()


def _looks_multi_hop(question: str) -> bool:
    """A question that names its subject through another thing ("the film that...", "the team of
    ...") may need a second hop; a plain "What is X?" does not."""
    if _is_follow_up(question):
        return False
    body = re.sub(r"^\W*\w+\s+", "", question)  # the leading wh-word does not count
    return len(question.split()) >= 7 and bool(_BRIDGE_SHAPE.search(body))


@dataclass(frozen=True)
class _Sentence:
    span: Span
    text: str


class ExtractiveReasoner:
    def __init__(
        self,
        embedder: Embedder,
        *,
        sentences_per_answer: int = 3,
        min_relative_score: float = 0.75,
        bridge_entities: int = 2,
        bridge_from: int = 3,
        bridge_query: str = "residual",
        bridge_any: bool = True,
        support_threshold: float = 0.2,
        max_candidates: int = 8,
    ):
        """`bridge_entities` follow-up retrievals at most, on entities found in the best
        sentences of the first `bridge_from` hits; `bridge_query` is how a follow-up is asked:
        "full" ("Entity: whole question") or "residual" ("Entity: the question without the
        names it already gave", so the new entity dominates the retrieval); `bridge_any` tries a
        bridge on any question that is not split by its surface form, not only on those shaped
        like "the X that/of ..."."""
        self.embedder = embedder
        self.sentences_per_answer = sentences_per_answer
        self.min_relative_score = min_relative_score
        self.bridge_entities = bridge_entities
        self.bridge_from = bridge_from
        self.bridge_query = bridge_query
        self.bridge_any = bridge_any
        self.support_threshold = support_threshold
        self.max_candidates = max_candidates  # sentences per question that reach the embedder
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    # --- plan -------------------------------------------------------------------------------
    def plan(self, question: str, spans: Sequence[Span], allowance: int) -> Plan:
        if _is_follow_up(question):  # "Entity: question" is one hop, asked as it is
            return Plan(note="rule: follow-up", tokens_in=self._count(question))
        parts = split_question(question)
        if parts:
            return Plan(tuple(SubQuestion(p) for p in parts), note="rule: surface split",
                        tokens_in=self._count(question))
        if not (_looks_multi_hop(question) or self.bridge_any):
            return Plan(note="rule: single question", tokens_in=self._count(question))
        bridges, read = self._bridge_entities(question, spans[: self.bridge_from], allowance)
        if bridges:
            ask = residual_question(question) if self.bridge_query == "residual" else question
            return Plan(tuple(SubQuestion(f"{e}: {ask}") for e in bridges),
                        note="rule: bridge entities " + ", ".join(bridges), tokens_in=read)
        return Plan(note="rule: single question", tokens_in=min(read, allowance))

    def _bridge_entities(self, question: str, spans: Sequence[Span], allowance: int) -> tuple[list[str], int]:
        """Entities named in the best sentences of the first hits but not in the question: the
        likely hop to the next document. Ranked by how well their sentence matches the question;
        an entity that is the title of a document already retrieved is no hop."""
        read, picked = self._count(question), []
        sents: list[_Sentence] = []
        for span in spans:
            cost = self._count(span.text)
            if read + cost > allowance:
                break
            read += cost
            sents += self._sentences(span)
        sents = _shortlist(question, sents, self.max_candidates)
        if not sents:
            return [], read
        scores = self._scores(question, sents)
        retrieved = {_bare_title(s.title) for s in spans}
        for i in np.argsort(-scores):
            for ent in novel_entities(question, sents[i].text):
                if _bare_title(ent) not in retrieved and ent not in picked:
                    picked.append(ent)
            if len(picked) >= self.bridge_entities:
                break
        return picked[: self.bridge_entities], read

    # --- answer -----------------------------------------------------------------------------
    def answer(self, questions: Sequence[str], spans: Sequence[Sequence[Span]], allowance: int) -> list[Draft]:
        """Each question from its own spans; the sentences of the whole batch are embedded in
        one call (the embedder is the cost of this reasoner)."""
        share = allowance // max(len(questions), 1)
        fitted = [self._fit(q, s, share) for q, s in zip(questions, spans, strict=True)]
        candidates = [_shortlist(q, sents, self.max_candidates) for q, (sents, _) in zip(questions, fitted, strict=True)]
        self._embed(list(questions) + [_key(s) for group in candidates for s in group])  # one call, then cached
        drafts = []
        for question, (_, read), group in zip(questions, fitted, candidates, strict=True):
            if read > share:
                drafts.append(Draft("", error="budget"))
            elif not group:
                drafts.append(Draft("", tokens_in=read, notes=("no evidence retrieved",)))
            else:
                drafts.append(self._render(self._select(question, group), read, share - read))
        return drafts

    def _fit(self, question: str, spans: Sequence[Span], allowance: int) -> tuple[list[_Sentence], int]:
        """The sentences of as many spans (best first) as the allowance can pay to read, with
        room kept for the answer: fewer spans is how a short budget degrades."""
        read = self._count(question)
        out_reserve = min(96, allowance // 3)
        sents: list[_Sentence] = []
        for span in spans:
            cost = self._count(span.text)
            if read + cost + out_reserve > allowance:
                break
            read += cost
            sents += self._sentences(span)
        return sents, read

    def _select(self, question: str, sents: list[_Sentence]) -> list[_Sentence]:
        """Best sentences by similarity, near-duplicates removed (maximal marginal relevance)."""
        scores = self._scores(question, sents)
        vecs = self._embed_sentences(sents)
        best = float(scores.max())
        chosen: list[int] = []
        for i in np.argsort(-scores):
            if len(chosen) >= self.sentences_per_answer or scores[i] < best * self.min_relative_score:
                break
            if any(float(vecs[i] @ vecs[j]) > 0.92 for j in chosen):
                continue
            chosen.append(int(i))
        return [sents[i] for i in chosen]

    def _render(self, chosen: list[_Sentence], read: int, room: int) -> Draft:
        cited: list[Span] = []
        pieces: list[str] = []
        spent = 0
        for s in chosen:
            if s.span not in cited:
                cited.append(s.span)
            piece = f"{s.text} [{cited.index(s.span) + 1}]"
            cost = self._count(piece)
            if spent + cost > room:
                break
            pieces.append(piece)
            spent += cost
        cited = [c for i, c in enumerate(cited) if any(f"[{i + 1}]" in p for p in pieces)]
        return Draft(" ".join(pieces), cited=tuple(cited), tokens_in=read, tokens_out=spent)

    # --- merge ------------------------------------------------------------------------------
    def merge(self, question: str, parts: Sequence[Part], allowance: int) -> Draft:
        """Keep the per-part structure: one line per part that adds something, sentences said
        by an earlier part left out, citations renumbered into one list."""
        cited: list[Span] = []
        lines: list[str] = []
        seen: set[str] = set()
        spent = 0
        for part in parts:
            fresh = [(sent, mark) for sent, mark in _pieces(part.draft.text) if sent not in seen]
            if not fresh:
                continue
            body = _renumber(" ".join(f"{sent} {mark}" for sent, mark in fresh), part.draft.cited, cited)
            line = body if part.question == question else f"{part.question} — {body}"
            cost = self._count(line)
            if spent + cost > allowance:
                break
            seen.update(sent for sent, _ in fresh)
            lines.append(line)
            spent += cost
        text = "\n".join(lines)
        return Draft(text, cited=tuple(_only_cited(cited, text)), tokens_out=spent)

    # --- reflect ----------------------------------------------------------------------------
    def reflect(self, question: str, draft: Draft, spans: Sequence[Span], allowance: int) -> Draft:
        """Drop unsupported or repeated sentences; name the parts of the question that no kept
        sentence answers, so the controller can retrieve once more for them."""
        read = self._count(question) + self._count(draft.text)
        if read > allowance:
            return Draft(draft.text, draft.cited, error="budget")
        lines = [(label, _pieces(body)) for label, body in map(_label, draft.text.split("\n"))]
        flat = [sent for _, pieces in lines for sent, _ in pieces]
        if not flat:
            return Draft(draft.text, draft.cited, tokens_in=read, missing=(question,))
        # Embedded as the answer step did ("title: sentence"), so the vectors come from the cache.
        titled = [_titled(sent, mark, draft.cited) for _, pieces in lines for sent, mark in pieces]
        keep, kept_vecs = self._supported(question, titled)
        kept_lines, i = [], 0
        for label, pieces in lines:
            body = " ".join(f"{sent} {mark}" for sent, mark in pieces if keep[i + pieces.index((sent, mark))])
            i += len(pieces)
            if body:
                kept_lines.append(f"{label} — {body}" if label else body)
        parts = split_question(question) or [question]
        part_vecs = self._embed(parts)
        missing = tuple(p for p, v in zip(parts, part_vecs, strict=True)
                        if not len(kept_vecs) or float((kept_vecs @ v).max()) < self.support_threshold)
        text = "\n".join(kept_lines) or draft.text
        return Draft(text, draft.cited, tokens_in=read, missing=missing,
                     notes=(f"reflect: kept {sum(keep)} of {len(flat)} sentences",))

    def _supported(self, question: str, sents: list[str]) -> tuple[list[bool], np.ndarray]:
        vecs = self._embed(sents)
        qv = self._embed([question])[0]
        keep, kept_vecs = [], []
        for vec in vecs:
            ok = float(vec @ qv) >= self.support_threshold * 0.5  # related to the question at all
            ok = ok and not any(float(vec @ k) > 0.95 for k in kept_vecs)  # not said already
            keep.append(ok)
            if ok:
                kept_vecs.append(vec)
        return keep, np.array(kept_vecs) if kept_vecs else np.zeros((0, len(qv)), dtype=np.float32)

    # --- helpers ----------------------------------------------------------------------------
    def _count(self, text: str) -> int:
        return self.embedder.count_tokens(text) if text else 0

    def _sentences(self, span: Span) -> list[_Sentence]:
        # One line per sentence: answers use line breaks for their own structure.
        return [_Sentence(span, " ".join(span.text[s:e].split())) for s, e in sentences(span.text)]

    def _scores(self, question: str, sents: list[_Sentence]) -> np.ndarray:
        qv = self._embed([question])[0]
        return self._embed_sentences(sents) @ qv

    def _embed_sentences(self, sents: list[_Sentence]) -> np.ndarray:
        return self._embed([_key(s) for s in sents])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors through an LRU cache: the same spans, questions and answer sentences come back
        across the steps of one request (plan, answer, reflect) and across requests."""
        keys = list(texts)
        with self._lock:
            todo = [k for k in dict.fromkeys(keys) if k not in self._vectors]
        if todo:
            fresh = self.embedder.embed(todo)
            with self._lock:
                for k, v in zip(todo, fresh, strict=True):
                    self._vectors[k] = v
                while len(self._vectors) > 50_000:
                    self._vectors.popitem(last=False)
        with self._lock:
            return np.stack([self._vectors[k] for k in keys])


def _titled(sentence: str, marks: str, cited: Sequence[Span]) -> str:
    """An answer sentence as it was embedded: with the title of the span its first marker cites."""
    n = int(_MARKER.search(marks).group(1))
    return f"{cited[n - 1].title}: {sentence}" if 1 <= n <= len(cited) else sentence


def _key(sentence: _Sentence) -> str:
    """What a sentence is embedded as: with its document's title for context ("He directed..."
    alone does not say who)."""
    return f"{sentence.span.title}: {sentence.text}"


_WORD = re.compile(r"\w+")
_STOP = frozenset("a an the of in on at to for by with from and or is are was were be been what which who whom "
                  "whose when where why how did does do that this it its as".split())


def _shortlist(question: str, sents: list[_Sentence], limit: int) -> list[_Sentence]:
    """At most `limit` sentences, those sharing the most content words with the question (and
    its spans' titles), in their original order: a cheap filter before the embedder ranks them."""
    if len(sents) <= limit:
        return sents
    words = {w for w in _WORD.findall(question.lower()) if w not in _STOP}
    overlap = [len(words & set(_WORD.findall(_key(s).lower()))) for s in sents]
    keep = sorted(sorted(range(len(sents)), key=lambda i: (-overlap[i], i))[:limit])
    return [sents[i] for i in keep]


def _renumber(text: str, local: Sequence[Span], merged: list[Span]) -> str:
    """Rewrite a part's [n] markers into positions of the merged citation list."""
    def repl(m: re.Match[str]) -> str:
        n = int(m.group(1))
        if not 1 <= n <= len(local):
            return ""
        # The same chunk reached by two sub-questions (with two scores) is one source.
        ids = [s.id for s in merged]
        span = local[n - 1]
        if span.id not in ids:
            merged.append(span)
            ids.append(span.id)
        return f"[{ids.index(span.id) + 1}]"

    return _MARKER.sub(repl, text)


_PIECE = re.compile(r"\s*(.+?)\s*((?:\[\d+\])+)")


def _pieces(text: str) -> list[tuple[str, str]]:
    """(sentence, its citation markers) pairs of an extractive answer."""
    return [(m.group(1), m.group(2)) for m in _PIECE.finditer(text)]


def _label(line: str) -> tuple[str, str]:
    label, sep, body = line.partition(" — ")
    return (label, body) if sep else ("", line)


def _only_cited(cited: list[Span], text: str) -> list[Span]:
    """Citations that the text refers to; unreferenced ones can only trail the list."""
    used = {int(n) for n in _MARKER.findall(text)}
    return [s for i, s in enumerate(cited) if i + 1 in used] if used else []
