"""The judge's found threshold, picked on the real-page sets it was not trained on.

    python bench/judge_threshold.py --judge models/judge --sets apache,bash,... [--calls bench/realdocs_calls.json.gz] [--write]

A judge (`RAG_RLM_JUDGE`) is trained on the system's recorded reader calls on manuals, SQuAD's
questions replayed beside them; on SQuAD 2.0 its threshold at 10% wrongly declined declines half the
answerable questions of manuals it meets first (bench/eval_results.md, twenty-seventh round). So its
threshold is picked on manuals: the held-out sets' questions (`--sets`, the ones `train-reader
--calls-exclude` left out), each scored as the system scores it (its best candidate over every call,
the whole question or its asking sentence, whichever reads better), at the threshold that best tells
answerable from unanswerable there (most of the unanswerable declined less the share of answerable
declined: Youden's J), for each precision. `--write` puts them on the judge's card.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_rlm.reader.model import CARD, load_reader  # noqa: E402
from rag_rlm.reader.train import write_card  # noqa: E402
from rag_rlm.reasoning.forms import core_question  # noqa: E402

GRID = np.round(np.arange(0.02, 0.6001, 0.005), 3)


def best_scores(calls_file: Path, sets: set[str], reader) -> dict[tuple[str, str], tuple[float, bool]]:
    """Each question's best score over its calls, and whether the pages leave it unanswered."""
    with gzip.open(calls_file, "rt", encoding="utf-8") as f:
        data = json.load(f)
    pairs = [tuple(p) for p in data["pairs"]]
    calls = [c for c in data["calls"] if c["kind"] == "real" and c["set"] in sets]
    wanted = sorted({pairs[i] for c in calls for i in c["idx"]}
                    | {(core, pairs[i][1]) for c in calls if (core := core_question(pairs[c["idx"][0]][0]))
                       for i in c["idx"]})
    score = dict(zip(wanted, reader.probabilities(wanted), strict=True))
    best: dict[tuple[str, str], tuple[float, bool]] = {}
    for c in calls:
        question = pairs[c["idx"][0]][0]
        core = core_question(question)
        top = max(max(score[pairs[i]], score[(core, pairs[i][1])] if core else 0.0) for i in c["idx"])
        key = (c["set"], c["id"])
        best[key] = (max(best.get(key, (0.0, False))[0], float(top)), c["unanswerable"])
    return best


def youden(best: dict) -> tuple[float, float, float]:
    """The threshold of most (unanswerable declined - answerable declined), and both shares at it."""
    yes = np.array([s for s, unanswerable in best.values() if not unanswerable])
    no = np.array([s for s, unanswerable in best.values() if unanswerable])
    j = [(no < t).mean() - (yes < t).mean() for t in GRID]
    t = float(GRID[int(np.argmax(j))])
    return t, float((no < t).mean()), float((yes < t).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", required=True, help="the judge's reader folder")
    parser.add_argument("--sets", required=True, help="the held-out real-page sets, comma-separated")
    parser.add_argument("--calls", default=str(ROOT / "bench" / "realdocs_calls.json.gz"))
    parser.add_argument("--precisions", default="bf16,fp32")
    parser.add_argument("--write", action="store_true", help="write the thresholds on the judge's card")
    args = parser.parse_args()
    sets = {s.strip() for s in args.sets.split(",") if s.strip()}
    found = {}
    for precision in args.precisions.split(","):
        best = best_scores(Path(args.calls), sets, load_reader(args.judge, precision=precision))
        t, declined, wrongly = youden(best)
        found[precision] = t
        print(f"{precision}: threshold {t:.3f} on {len(best)} held-out questions: {declined:.3f} of the unanswerable "
              f"declined, {wrongly:.3f} of the answerable")
    if args.write:
        card_file = Path(args.judge) / CARD
        card = json.loads(card_file.read_text())
        card.update({f"found_threshold_{p}": t for p, t in found.items()},
                    found_threshold=found.get("fp32", next(iter(found.values()))),
                    threshold_from=f"bench/judge_threshold.py: the real-page sets it was not trained on "
                                   f"({', '.join(sorted(sets))}; their recorded reader calls), the threshold that "
                                   f"best tells answerable from unanswerable there (Youden's J)")
        write_card(Path(args.judge), card)  # and the README a person reads
        print(f"written: {card_file}")


if __name__ == "__main__":
    main()
