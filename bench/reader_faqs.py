"""A reader measured on questions users asked: the entries of FAQ pages it never trained on
(`bench/faq_heldout.txt`), each a question, its answer's first sentence and six sentences of other
entries of the same page (the four the bi-encoder finds closest to the question, two others),
built as `rag_rlm.reader.faqs` builds training groups. Top-1: the share of entries whose answer
sentence the reader scores above all six. The bi-encoder's own order is the floor (its closest
negatives were picked to beat it).

    python bench/reader_faqs.py [--pages bench/faq_heldout.txt] --reader DIR [--reader DIR ...] [--precision bf16]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.reader.faqs import groups  # noqa: E402
from rag_rlm.reader.model import Reader  # noqa: E402

SEED = 13


def top1(score, held) -> dict[str, list[bool]]:
    """Per manual, whether the answer sentence scored above every negative."""
    out: dict[str, list[bool]] = defaultdict(list)
    for g in held:
        s = score(g.question, [g.positive, *g.negatives])
        out[_manual(g.page)].append(bool(s[0] > s[1:].max()))
    return out


def _manual(page: str) -> str:
    """The package a page comes with (/usr/share/doc/<package>/…), else its folder."""
    parts = Path(page).parts
    return parts[4] if parts[:4] == ("/", "usr", "share", "doc") and len(parts) > 5 else Path(page).parent.name


def line(name: str, hits: dict[str, list[bool]]) -> str:
    every = [h for v in hits.values() for h in v]
    parts = " ".join(f"{k} {np.mean(v):.3f}" for k, v in sorted(hits.items()))
    return f"{name:36s} top-1 {np.mean(every):.3f} ({len(every)} entries): {parts}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", default=str(ROOT / "bench" / "faq_heldout.txt"), help="a manifest of FAQ pages")
    parser.add_argument("--reader", action="append", default=[], help="a reader folder (repeat for more)")
    parser.add_argument("--precision", default="bf16", help="fp32, bf16 or int8 (default: %(default)s)")
    args = parser.parse_args()
    embedder = load_embedder()
    held = groups(Path(args.pages), SEED, embedder.embed)

    def cosine(question: str, texts: list[str]) -> np.ndarray:
        vectors = embedder.embed([question, *texts])
        return vectors[1:] @ vectors[0]

    print(line("bi-encoder (cosine)", top1(cosine, held)))
    for folder in args.reader:
        reader = Reader(folder, precision=args.precision)
        print(line(f"{folder} ({args.precision})", top1(reader.score, held)))


if __name__ == "__main__":
    main()
