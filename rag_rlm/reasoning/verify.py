"""Reflection by reading: every claim of a draft, extractive or generated, is checked by the sentence
scorer against the sentence it cites, and one that its sentence does not support is dropped; a part
is found when its best remaining claim reaches the found threshold (the same `Answerability` the
extractive reasoner chose with), else it becomes "not found". Both reasoners end their reflect step
here, so a model's claims meet the same check, and the same verdict, as quoted ones.

- a quoted claim is judged on what the scorer read when it was chosen (`Claim.read_as`: the
  question it answers and the sentence with its title, or a bridge chain), else on its cited
  text against its part's question;
- a generated claim cites whole passages: its sentence is the one of the cited passages that
  shares most words with it, and the claim then cites that sentence alone;
- a verdict (a comparison's or a yes/no) stands while the quotes it was made from stand.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ingest.sentences import split_sentences
from ..reader.data import reader_text
from .base import Answerability, Claim, Draft, PartDraft, SentenceScorer, Source
from .english import content_words


def verify(draft: Draft, scorer: SentenceScorer, support: Answerability,
           found: Answerability) -> tuple[Draft, tuple[str, ...]]:
    """`draft` with its unsupported claims dropped (`support` judges each claim's score), each
    part found when `found` judges its best remaining score so, and a note per change."""
    parts, notes = [], []
    for part in draft.parts:
        if not part.found:  # nothing is said of it: its sentences are only kept for merge to read
            parts.append(part)
            continue
        checked, dropped = _check_part(part, scorer, support, found)
        notes += [f"reflect: dropped '{_short(c.text)}' (support {s:.2f} < {support.threshold:.2f})" for c, s in dropped]
        if not checked.found:
            notes.append(f"reflect: '{_short(part.question)}' is not found: no claim is supported "
                         f"(best {checked.confidence:.2f}, found at {found.threshold:.2f})")
        parts.append(checked)
    return replace(draft, parts=tuple(parts)), tuple(notes)


def _check_part(part: PartDraft, scorer: SentenceScorer, support: Answerability,
                found: Answerability) -> tuple[PartDraft, list[tuple[Claim, float]]]:
    if not part.claims:
        return replace(part, found=False), []
    quotes = [c for c in part.claims if c.kind != "verdict"]
    grounded = [_grounded(c) for c in quotes]
    scores = [float(scorer.score_texts(c.read_as[0] or part.question, [text])[0]) for c, text in grounded]
    ok = [support.judge(np.array([s]))[0] for s in scores]
    kept = [claim for (claim, _), good in zip(grounded, ok, strict=True) if good]
    dropped = [(claim, s) for (claim, _), s, good in zip(grounded, scores, ok, strict=True) if not good]
    lost = {id(c) for c, _ in dropped}
    verdicts = tuple(c for c in part.claims if c.kind == "verdict"
                     and not any(id(q) in lost for q in quotes if _derived(c, q)))
    answered, confidence = found.judge(np.array([s for s, good in zip(scores, ok, strict=True) if good]))
    if verdicts and kept:  # a comparison settled on supported quotes answers its question
        answered, confidence = True, max(confidence, part.confidence)
    if not answered:
        return replace(part, claims=(), found=False, confidence=max(scores, default=0.0)), dropped
    return replace(part, claims=verdicts + tuple(kept), confidence=confidence), dropped


def _derived(verdict: Claim, quote: Claim) -> bool:
    """Whether a verdict rests on this quote (it cites the quote's place)."""
    return any(s.span.id == q.span.id and s.start == q.start for s in verdict.sources for q in quote.sources)


def _grounded(claim: Claim) -> tuple[Claim, str]:
    """The claim (narrowed to one sentence when generated) and the text the scorer reads for it."""
    if claim.read_as[1]:
        return claim, claim.read_as[1]
    if claim.kind == "generated" and claim.sources:
        return _narrowed(claim)
    source = claim.sources[0] if claim.sources else None
    if source is None:
        return claim, claim.text
    quoted = source.span.text[source.start - source.span.start:source.end - source.span.start] or claim.text
    return claim, reader_text(source.span.title, " ".join(quoted.split()))


def _narrowed(claim: Claim) -> tuple[Claim, str]:
    """A generated claim's sentence: of the passages it cites, the one sharing most words with it,
    read with its heading and the term of the entry it belongs to, as answering reads sentences."""
    words = content_words(claim.text)
    best: tuple[int, Source, str] | None = None
    for source in claim.sources:
        span = source.span
        for sentence in split_sentences(span.text, span.document_id, span.start):
            shared = len(words & content_words(sentence.text))
            if best is None or shared > best[0]:
                read = reader_text(span.title, sentence.text, sentence.heading)  # as answering reads it
                best = (shared, Source(span, sentence.start, sentence.end), read)
    if best is None:
        return claim, claim.text
    return replace(claim, sources=(best[1],)), best[2]


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
