"""Picks the reader's `found_threshold` from the answerability curve of the whole system on the tune
half of the SQuAD 2.0 dev sample, reports it on the check half, and writes it into the reader's card.

    python bench/calibrate_reader.py [--reader models/reader] [--store pgserver://.rag_rlm/pgdata]
                                     [--collection dev_squad2] [--cosine-weight W --cosine-centre C] [--write]

Every tune question is answered (recursive, at --k, the reader at the threshold 0: nothing declined),
and its confidence (the reader's best score) recorded; the threshold is the one that declines most
unanswerable questions while declining at most 10% of the answerable ones. `train-reader` picks a
first threshold on the reader's own candidates; this one is what the product's answers are judged
on. With --write the card (reader.json, README.md) records it and where it came from.
With --cosine-weight the system reads the reader's logit moved by the bi-encoder's cosine
(`scoring.CosineBlend`), and --write records that blend beside the thresholds picked on it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_rlm.assistant import Assistant  # noqa: E402
from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.errors import UnknownCollection  # noqa: E402
from rag_rlm.eval.data import read_questions  # noqa: E402
from rag_rlm.eval.runner import _NoSharedState, ask_one  # noqa: E402
from rag_rlm.eval.splits import half  # noqa: E402
from rag_rlm.reader import shipped_reader_path  # noqa: E402
from rag_rlm.reader.evaluate import MAX_WRONGLY_DECLINED, card_threshold, pick_threshold  # noqa: E402
from rag_rlm.reader.model import CARD  # noqa: E402
from rag_rlm.reasoning.build import BLENDED  # noqa: E402

SQUAD2 = ROOT.parent / "shared" / "data" / "squad2" / "questions.jsonl"


def shares(rows, threshold: float) -> dict[str, float]:
    ans = [r.confidence for r in rows if r.answerable]
    un = [r.confidence for r in rows if not r.answerable]
    return {"answerable": len(ans), "unanswerable": len(un),
            "unanswerable_declined": round(float(np.mean([c < threshold for c in un])), 3),
            "answerable_wrongly_declined": round(float(np.mean([c < threshold for c in ans])), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reader", default=str(shipped_reader_path()))
    parser.add_argument("--store", default=f"pgserver://{ROOT / '.rag_rlm' / 'pgdata'}")
    parser.add_argument("--collection", default="dev_squad2", help="the SQuAD 2.0 dev corpus's collection, as the "
                        "other benches name it (default: %(default)s)")
    parser.add_argument("--precisions", default="int8,fp32,bf16", help="comma-separated, each calibrated")
    parser.add_argument("--k", type=int, default=Settings.top_k, help="spans retrieved per question (default: "
                        "the shipped top_k, %(default)s)")
    parser.add_argument("--cosine-weight", type=float, help="calibrate the reader read with this blend of the "
                        "bi-encoder's cosine (scoring.CosineBlend; 0: none); default: the card's own")
    parser.add_argument("--cosine-centre", type=float, default=0.0, help="the blend's centre cosine")
    parser.add_argument("--hop-unless", type=float, help="the blend's hop threshold (Thresholds.hop_unless on its scale)")
    parser.add_argument("--cosine-from", default="", help="where the blend's weight and centre came from (the card says it)")
    parser.add_argument("--write", action="store_true", help="record the thresholds (and the blend) in the reader's card")
    args = parser.parse_args()
    picked = {}
    check_collection(args.store, args.collection)
    with tempfile.TemporaryDirectory() as tmp:
        reader = (args.reader if args.cosine_weight is None else
                  blended_copy(Path(args.reader), Path(tmp), args))
        for precision in args.precisions.split(","):  # each runs with its own threshold (RAG_RLM_READER_PRECISION)
            settings = Settings.from_env(store=args.store, reader=str(reader), found_threshold=0.0,
                                         reader_precision=precision)
            picked[precision] = calibrate(settings, args.collection, args.k)
        if args.write:
            write(Path(args.reader), picked, args.k, blend=json.loads((Path(reader) / CARD).read_text(encoding="utf-8")))


BLEND = (*BLENDED, "cosine_from")  # what the card's blend sets, and where it came from


def blended_copy(folder: Path, tmp: Path, args: argparse.Namespace) -> Path:
    """The reader folder copied with its card naming the blend (none when weight is 0): the system
    builds its scorer from the card, so this is what it is calibrated with."""
    copy = tmp / folder.name
    shutil.copytree(folder, copy)
    card = json.loads((copy / CARD).read_text(encoding="utf-8"))
    for key in BLEND:
        card.pop(key, None)
    if args.cosine_weight:
        card.update(cosine_weight=args.cosine_weight, cosine_centre=args.cosine_centre,
                    cosine_from=args.cosine_from or "bench/calibrate_reader.py",
                    **({"hop_unless": args.hop_unless} if args.hop_unless is not None else {}))
    (copy / CARD).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return copy


def check_collection(store: str, collection: str) -> None:
    """Exit naming the command that makes `collection` when the store lacks it."""
    assistant = Assistant(Settings.from_env(store=store, reader="none"), state=_NoSharedState())
    try:
        assistant.store.version(collection)
    except UnknownCollection:
        raise SystemExit(f"calibrate_reader: no collection {collection!r} in {store}; make it with: rag-rlm eval "
                         f"{SQUAD2} --collection {collection} --corpus {SQUAD2.with_name('corpus.jsonl')}") from None
    finally:
        assistant.close()


def calibrate(settings: Settings, collection: str, k: int) -> dict:
    assistant = Assistant(settings, state=_NoSharedState())
    rows = {h: [] for h in ("tune", "check")}
    for q in read_questions(SQUAD2):
        rows[half(q.id)].append(ask_one(assistant, q, collection, "recursive", k))
    assistant.close()
    tune = rows["tune"]
    threshold = pick_threshold([r.confidence for r in tune if r.answerable], [r.confidence for r in tune if not r.answerable])
    figures = {h: shares(rs, threshold) for h, rs in rows.items()}
    print(f"{settings.reader_precision}: threshold {threshold:.4f} (tune: most unanswerables "
          f"declined with <= {MAX_WRONGLY_DECLINED:.0%} of answerables declined)")
    for h, f in figures.items():
        print(f"  {h}: {f}")
    return {"threshold": card_threshold(threshold), "k": k, **figures}


def write(folder: Path, picked: dict, k: int, blend: dict) -> None:
    """The thresholds picked, and the blend they were picked with (`blend`: the card calibrated)."""
    from rag_rlm.reader.train import card_markdown

    card = json.loads((folder / CARD).read_text(encoding="utf-8"))
    for key in BLEND:
        card.pop(key, None)
        if key in blend:
            card[key] = blend[key]
    for precision, figures in picked.items():  # the plain key is int8's, as the first card had it
        card["found_threshold" if precision == "int8" else f"found_threshold_{precision}"] = figures["threshold"]
        card["figures"]["squad2_system" if precision == "int8" else f"squad2_system_{precision}"] = figures
    card["threshold_from"] = (f"bench/calibrate_reader.py: the whole system's answers (recursive, k={k}) on the squad2 "
                              f"dev tune half, most unanswerables declined with at most {MAX_WRONGLY_DECLINED:.0%} "
                              "of answerables declined")
    (folder / CARD).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (folder / "README.md").write_text(card_markdown(card), encoding="utf-8")
    print(f"written to {folder / CARD}")


if __name__ == "__main__":
    main()
