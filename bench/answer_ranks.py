"""Where a real-page set's answering sentences are lost: retrieval, or reading. For each answerable question
of the sets (its answering sentence is the longest quote of `expect`), the rank of the chunk holding that
sentence in dense retrieval of the whole question, and, among the sentences of the top k chunks, the rank the
shipped reader, the bundled bi-encoder's cosine and the two fused (the sum of their ranks) give it. Questions
marked `"reworded": true` (asked in the asker's own words, not the page's) are counted apart, then stories and
direct questions where the set marks a `style`.

    python bench/answer_ranks.py pymarkdown sphinxdoc [--k 10] [--store pgserver://bench/out/realdocs/pgdata]

The sets must have been asked once (bench/realdocs.py or bench/blind_grading.py ask), which ingests their
pages into the real-page store. The reader here reads the whole question once; the system also reads a long
question's asking sentence (`long_question`), so its ranks are those of the reader alone, not of the answer.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.ingest.sentences import split_sentences  # noqa: E402
from rag_rlm.memory import open_store  # noqa: E402
from rag_rlm.reader import Reader, shipped_reader_path  # noqa: E402
from rag_rlm.reasoning.scoring import fused  # noqa: E402

SETS = ROOT / "bench" / "realdocs"
NEEDLE = 40  # characters of the quote, normalised, that locate it in a chunk


def normalised(text: str) -> str:
    return re.sub(r"\W+", " ", text).lower().strip()


def answering_quote(expect: str) -> str | None:
    """The longest quoted passage of five words or more (a Sphinx set quotes its section's name first)."""
    quotes = [q for q in re.findall(r"'([^']+)'", expect) if len(q.split()) >= 5]
    return normalised(max(quotes, key=len))[:NEEDLE] if quotes else None


def ranks(store, embedder, reader, name: str, k: int) -> list[dict]:
    out = []
    for q in json.loads((SETS / f"{name}.json").read_text())["questions"]:
        needle = None if q["expect"].startswith("not in the pages") else answering_quote(q["expect"])
        if needle is None:
            continue
        vector = embedder.embed([q["question"]])[0]
        spans = store.search(f"real_{name}", vector, max(k, 60))
        chunk = next((i for i, s in enumerate(spans) if needle in normalised(s.text)), None)
        row = {"set": name, "id": q["id"], "kind": _kind(q), "chunk": chunk, "reader": None, "cosine": None, "fused": None}
        sentences = list(dict.fromkeys(s.text for sp in spans[:k] for s in split_sentences(sp.text) if len(s.text.split()) >= 3))
        gold = next((i for i, t in enumerate(sentences) if needle[:25] in normalised(t)), None)
        if gold is not None:
            scores = np.asarray(reader.score(q["question"], sentences))
            cosines = embedder.embed(sentences) @ vector
            row.update(reader=_rank(scores, gold), cosine=_rank(cosines, gold), fused=_rank(fused(scores, cosines), gold))
        out.append(row)
    return out


def _kind(question: dict) -> str:
    """Own-words questions apart, then stories and direct questions where the set says which."""
    if question.get("reworded"):
        return "in the asker's own words"
    return {"story": "told as a story", "direct": "asked directly"}.get(question.get("style", ""), "in the page's words")


def _rank(scores: np.ndarray, gold: int) -> int:
    """How many sentences score above the answering one."""
    return int((scores > scores[gold]).sum())


def summary(rows: list[dict], k: int) -> None:
    kinds: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        kinds[r["kind"]].append(r)
    print(f"{'answerable questions':28s} n   chunk in top 3 / {k} / 60   among its sentences: top-1 reader / cosine / fused   median rank reader / cosine / fused")
    for kind, rs in kinds.items():
        print(f"{kind:28s} {len(rs):2d}  " + _ranks_line(rs, k))


def _ranks_line(rows: list[dict], k: int) -> str:
    """Chunk ranks within 3 / k / 60, top-1 counts and median ranks of one kind of question."""
    chunk = [r["chunk"] for r in rows]
    read = [r for r in rows if r["reader"] is not None]

    def within(n: int) -> int:
        return sum(c is not None and c < n for c in chunk)

    def median(key: str) -> float:
        return statistics.median(r[key] for r in read) if read else float("nan")

    return (f"{within(3):6d} / {within(k):2d} / {within(60):2d}"
            f"   {sum(r['reader'] == 0 for r in read):14d} / {sum(r['cosine'] == 0 for r in read):2d}"
            f" / {sum(r['fused'] == 0 for r in read):2d} of {len(read):2d}"
            f"   {median('reader'):14.1f} / {median('cosine'):.1f} / {median('fused'):.1f}")

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", help="bench/realdocs set names")
    parser.add_argument("--k", type=int, default=10, help="chunks retrieved (default: %(default)s, the shipped top_k)")
    parser.add_argument("--store", default=f"pgserver://{ROOT / 'bench' / 'out' / 'realdocs' / 'pgdata'}")
    args = parser.parse_args()
    missing = [s for s in args.sets if not (SETS / f"{s}.json").is_file()]
    if missing:
        parser.error(f"no question set bench/realdocs/{missing[0]}.json")
    store, embedder, reader = open_store(args.store), load_embedder(), Reader(shipped_reader_path())
    rows = [r for name in args.sets for r in ranks(store, embedder, reader, name, args.k)]
    summary(rows, args.k)


if __name__ == "__main__":
    main()
