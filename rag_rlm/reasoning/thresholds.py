"""Every number the extractive reasoner decides with, in one object, each with where its value
came from. Built once per reasoner: from the reader's card (the threshold it was calibrated at),
the settings (an operator's override) and the defaults below (each with its reason)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields, replace


@dataclass(frozen=True)
class Thresholds:
    # the collection answers a question when its best candidate scores this much (reader: a
    # probability; without a reader: cosine + lexical share)
    found: float = 0.42
    # reflection keeps a claim whose cited sentence scores at least this share of `found`: a
    # part's second sentence may support the lead without answering alone
    support_share: float = 0.5
    # a second sentence is said only when it scores this share of the lead's score
    second_share: float = 0.8
    # candidates the reader re-scores per question, the best by the bi-encoder first
    reader_candidates: int = 12
    # the reader's score is read as logit + cosine_weight x (the bi-encoder's cosine - cosine_centre)
    # (`scoring.CosineBlend`); 0: the reader alone. A reader's card sets both with its threshold
    cosine_weight: float = 0.0
    cosine_centre: float = 0.0
    # sentence_order "fused": the order is fused only when the reader's best score is under this
    fuse_below: float = 0.7
    # sentences said per part at most: the one that answers, and one that supports it
    max_claims: int = 2
    # cosine above which two sentences say the same thing (one is dropped)
    duplicate: float = 0.9
    # rule entry_opening: an earlier sentence of the lead's manual entry leads when the reader's logits differ this little
    tie_logit: float = 0.2
    # a lead-in said with at most this many items of its list
    max_items: int = 8
    # ... or with the code block right after it when it is this short, in two lines at most (a command, a setting)
    max_code_chars: int = 160
    # ... and a lead-in to a longer example is said alone (its colon a full stop) when it has this many words
    statement_words: int = 6
    # bridge: follow-up retrievals on entities named by the first `bridge_from` hits
    bridge_entities: int = 2
    bridge_from: int = 3
    # ... unless the reader scores a sentence of those hits this much (it answers the question)
    hop_unless: float = 0.9
    # a hop's best sentences (by the bi-encoder) that merge reads in a chain after the link
    hop_claims: int = 1
    # a chain (link, then the hop's sentence) is chosen only when it scores this much above its link alone
    chain_gain: float = 0.0
    # without a reader: the bi-encoder's score is cosine + this x the share of the question's words said
    lexical_weight: float = 0.3
    # follow-ups (rule `followup`): user turns walked back; least cosine between a fragment and the
    # phrase it replaces, with and without "and"/"what about"; how much a generic phrase loses
    followup_depth: int = 3
    followup_fill: float = 0.3
    followup_bare: float = 0.5
    followup_generic_penalty: float = 0.35
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def source(self, name: str) -> str:
        return self.sources.get(name, DEFAULT_SOURCES.get(name, "default"))

    def with_values(self, origin: str, **values: float | int) -> Thresholds:
        """These values, recorded as coming from `origin` (None values are ignored)."""
        values = {k: v for k, v in values.items() if v is not None}
        return replace(self, **values, sources={**self.sources, **dict.fromkeys(values, origin)})

    @property
    def fingerprint(self) -> str:
        """A short hash of the values (not their sources): part of a reasoner's identity, so a
        changed threshold never serves answers cached under the old one."""
        values = sorted((f.name, getattr(self, f.name)) for f in fields(self) if f.name != "sources")
        return hashlib.sha256(repr(values).encode()).hexdigest()[:12]

    def describe(self) -> dict[str, dict[str, object]]:
        """{name: {value, source}}: what `rag-rlm` and the trace report."""
        return {f.name: {"value": getattr(self, f.name), "source": self.source(f.name)}
                for f in fields(self) if f.name != "sources"}


DEFAULT_SOURCES = {
    "found": "bi-encoder scale: squad2 curve of the rules era (bench/eval_results.md); a reader brings its own",
    "support_share": "half the found threshold: measured on the tune halves (bench/eval_results.md)",
    "second_share": "measured on the tune halves: a second sentence under it was off the question",
    "reader_candidates": "bench/bench_reader.py: top-1 stops improving beyond it on the tune halves",
    "cosine_weight": "no blend unless the reader's card was calibrated with one (bench/calibrate_reader.py)",
    "cosine_centre": "no blend unless the reader's card was calibrated with one (bench/calibrate_reader.py)",
    "fuse_below": "tune halves (bench/eval_results.md, thirty-second round): manuals of rounds 23-26 read best at 0.7-0.8, dev tune at 0.7",
    "max_claims": "a one-fact question reads best as its answer and one supporting sentence",
    "duplicate": "cosine of paraphrases in the sample handbook (tests/test_reasoning_extractive.py)",
    "tie_logit": "chosen before measuring: scores this close are the reader's noise, not a reading",
    "max_items": "a longer list is cut: the asker opens the document",
    "statement_words": "bench/realdocs: \"Roughly equivalent to:\" (3 words) says nothing; \"The DNS servers to be used are indicated in /etc/resolv.conf, ...\" does",
    "max_code_chars": "two lines of a manual's example (bench/realdocs): a longer one is an example to open, not an answer to read",
    "hop_unless": "measured on the hotpotqa/musique tune halves (bench/eval_results.md)",
    "hop_claims": "tune halves, hotpotqa lead: 1 0.385, 2 0.359, 4 0.308 (bench/eval_results.md)",
    "chain_gain": "tune halves: 0.05 and 0.1 lose chains through a link the reader over-scores (bench/eval_results.md)",
    "bridge_entities": "two hops cover hotpotqa/musique bridge questions at depth 2 (bench/eval_results.md)",
    "bridge_from": "entities from the first three hits: deeper hits are mostly distractors",
    "lexical_weight": "the rules era's sentence scorer (bench/eval_results.md, issue 8)",
    "followup_depth": "a chain of three follow-ups (tests/test_followup.py)",
    "followup_fill": "the sample handbook's follow-ups: 'vision' ~ 'medical' (tests/test_followup.py)",
    "followup_bare": "a bare phrase may be a question of its own: asked for more likeness",
    "followup_generic_penalty": "'the company' or 'employees' lose to a specific phrase (tests/test_followup.py)",
}
