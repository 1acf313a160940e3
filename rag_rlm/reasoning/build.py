"""The reasoner the settings configure, with its sentence scorer, thresholds and rules."""

from __future__ import annotations

from ..config import Settings
from ..embed import Embedder, cached
from .base import Reasoner, SentenceScorer
from .rules import RuleSet
from .thresholds import Thresholds

# what a card calibrated with a cosine blend sets beside its threshold: the blend, and the hop
# threshold measured on its scale
BLENDED = ("cosine_weight", "cosine_centre", "hop_unless")


def build_scorer(settings: Settings) -> SentenceScorer | None:
    """The reader settings name (default: the shipped one), or None for `reader = "none"`. A
    missing or broken reader folder is a ModelNotFound naming the path, never a silent fallback."""
    if settings.reader.strip().lower() == "none":
        return None
    from ..reader import load_reader, shipped_reader_path
    from .scoring import JudgedScorer, ReaderScorer

    lanes = settings.model_lanes or None  # a server's; None: as they are
    scorer = ReaderScorer(load_reader(settings.reader or shipped_reader_path(), settings.reader_precision,
                                      settings.reader_backend, lanes))
    judge = judge_path(settings)
    if judge is None:
        return scorer
    return JudgedScorer(scorer, ReaderScorer(load_reader(judge, settings.reader_precision, settings.reader_backend, lanes)))


def judge_path(settings: Settings) -> str | None:
    """The judge's folder: the setting's, or the shipped one beside the shipped reader (a reader of
    one's own judges itself unless a judge is named); None for "none"."""
    from ..reader import shipped_judge_path

    name = settings.judge.strip()
    if name.lower() == "none" or (not name and settings.reader.strip()):
        return None
    return name or str(shipped_judge_path())


def build_thresholds(settings: Settings, scorer: SentenceScorer | None) -> Thresholds:
    """The defaults, then the reader's calibrated threshold, then the settings' overrides."""
    t = Thresholds()
    reader = getattr(scorer, "reader", None)
    if reader is not None:
        card = reader.card.raw
        t = t.with_values(f"reader card {reader.path}/reader.json: {card.get('threshold_from', '')}".strip(),
                          found=reader.threshold, **({"reader_candidates": card["reader_candidates"]}
                                                     if "reader_candidates" in card else {}))
        if "cosine_weight" in card:  # the threshold above was calibrated on the blended score
            t = t.with_values(f"reader card {reader.path}/reader.json: {card.get('cosine_from', '')}".strip(),
                              **{name: card[name] for name in BLENDED if name in card})
    judge = getattr(scorer, "judge_reader", None)
    if judge is not None:  # found and the support level are read on the judge's scale
        t = t.with_values(f"judge card {judge.path}/reader.json: {judge.card.raw.get('threshold_from', '')}".strip(),
                          found=judge.threshold)
    if settings.found_threshold >= 0:
        t = t.with_values("setting found_threshold", found=settings.found_threshold)
    if settings.reader_candidates:
        t = t.with_values("setting reader_candidates", reader_candidates=settings.reader_candidates)
    return t


def build_reasoner(settings: Settings, embedder: Embedder, scorer: SentenceScorer | None = None) -> Reasoner:
    """The LLM reasoner when a model is configured, else the extractive one (no model needed);
    both read with `scorer` (built from the settings when not given)."""
    scorer = scorer if scorer is not None else build_scorer(settings)
    thresholds = build_thresholds(settings, scorer)
    if scorer is not None and (thresholds.cosine_weight or settings.sentence_order == "fused"):
        from .scoring import CosineBlend, RankFused

        embedder = cached(embedder)  # the reasoner's own: a question is embedded once for all
        if thresholds.cosine_weight:
            scorer = CosineBlend(scorer, embedder, thresholds.cosine_weight, thresholds.cosine_centre)
        if settings.sentence_order == "fused":
            scorer = RankFused(scorer, embedder, thresholds.support_share * thresholds.found, thresholds.fuse_below,
                               thresholds.found)
    rules = RuleSet.from_setting(settings.rules_off)
    if not settings.llm:
        from .extractive import ExtractiveReasoner

        return ExtractiveReasoner(embedder, scorer, thresholds=thresholds, rules=rules)
    from ..llm import open_llm
    from .llm import LLMReasoner

    return LLMReasoner(open_llm(settings.llm, settings), max_new_tokens=settings.llm_max_new_tokens,
                       scorer=scorer, thresholds=thresholds)
