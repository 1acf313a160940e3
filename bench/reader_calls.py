"""The reader measured on what the system gives it to read: every (question, candidate) pair the shipped
reader scores while every question we hold is asked once, labelled, then scored again by any reader folder.
`rag_rlm.reader.evaluate` reads SQuAD paragraphs; this reads the candidates of the real-page sets and of the
dev sets as answering them produced them (sub-questions, hops, cores and all).

    python bench/reader_calls.py record --out bench/out/reader_calls.json.gz [--sets all] [--dev hotpotqa,musique,squad2]
    python bench/reader_calls.py score bench/out/reader_calls.json.gz --reader DIR [--reader DIR ...] [--cosine]

A candidate answers a dev question when it holds a gold answer (not "yes"/"no"); a real-page question when it
holds eight words in a row of a sentence the expectation quotes ('...'), or, where it quotes none, half or
more of the code-like tokens the expectation names (`--track-origins=yes`, `TimestampSigner`).
- top-1: of the reader calls with an answering candidate, the share whose best-scored candidate answers;
- AUC: how well a question's best score over all its calls tells answerable from unanswerable questions.
The labels are rough (a quote may sit in a sentence that does not answer); compare readers on the same file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rule_audit import DEV_DATA, DEV_K, REALDOCS, Askers  # noqa: E402

from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.eval.data import read_questions  # noqa: E402
from rag_rlm.eval.runner import ask_one  # noqa: E402
from rag_rlm.reader.model import Reader, load_reader  # noqa: E402

QUOTE = re.compile(r"(?:^|[\s(:=,\[])'(.+?)'(?=[\s).,;:\]]|$)")
CODE_TOKEN = re.compile(r"[A-Za-z0-9_][\w.\-\[\]=/]*[\w\]]")
RUN = 8  # words in a row of a quoted sentence that a candidate must say


@contextmanager
def recorded() -> Iterator[dict]:
    """Every pair `Reader.score_pairs` is asked for while the block runs, with its score, under the key
    that `calls["key"]` holds at the time (None: not recorded)."""
    calls: dict = {"key": None, "pairs": {}}
    original = Reader.score_pairs

    def score_pairs(self, pairs):
        scores = original(self, pairs)
        if calls["key"] is not None:
            for (question, text), score in zip(pairs, scores, strict=True):
                calls["pairs"].setdefault(calls["key"], {}).setdefault(question, {})[text] = float(score)
        return scores

    Reader.score_pairs = score_pairs  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        Reader.score_pairs = original  # type: ignore[method-assign]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _runs(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def real_label(expect: str):
    """Whether a candidate answers, read off a real-page question's expectation; None when unanswerable."""
    if expect.lower().startswith("not "):
        return None
    quotes = [_words(q) for q in QUOTE.findall(expect) if len(_words(q)) >= 3]
    if quotes:
        return lambda text: any(_runs(q, min(RUN, len(q))) & _runs(_words(text.split(": ", 1)[-1]), min(RUN, len(q)))
                                for q in quotes)
    tokens = sorted({t for t in CODE_TOKEN.findall(expect) if len(t) >= 3 and
                     (re.search(r"[\d_\-.\[=/]", t) or re.search(r"[a-z][A-Z]", t))})
    need = max(1, (len(tokens) + 1) // 2)
    return lambda text: bool(tokens) and sum(t.lower() in text.lower() for t in tokens) >= need


def dev_label(golds: list[str], answerable: bool):
    if not answerable:
        return None
    golds = [" ".join(_words(g)) for g in golds]
    golds = [g for g in golds if len(g) >= 3 and g not in ("yes", "no")]
    return lambda text: any(f" {g} " in f" {' '.join(_words(text))} " for g in golds)


def record(args: argparse.Namespace) -> None:
    names = sorted(p.stem for p in REALDOCS.glob("*.json")) if args.sets == "all" else args.sets.split(",")
    devs = [] if args.dev == "none" else args.dev.split(",")
    questions: dict = {}
    with recorded() as calls:
        if names:
            data = ROOT / "bench" / "out" / "realdocs"
            askers = Askers(Settings.from_env(store=f"pgserver://{data}/pgdata", data_dir=str(data)), [])
            for name in names:
                spec = json.loads((REALDOCS / f"{name}.json").read_text())
                collection = f"real_{name}"
                askers.base.ingest_files([Path(spec["root"]) / (p if "." in p else f"{p}.html") for p in spec["pages"]],
                                         collection)
                for q in spec["questions"]:
                    history = None
                    if q.get("after"):
                        first = askers.base.ask(q["after"], collection)  # not recorded: the earlier turn's calls
                        history = [{"role": "user", "content": q["after"]}, {"role": "assistant", "content": first.answer}]
                    calls["key"] = (name, q["id"])
                    askers.base.ask(q["question"], collection, history=history)
                    calls["key"] = None
                    questions[(name, q["id"])] = {"kind": "real", "expect": q["expect"]}
                print(f"{name}: {len(spec['questions'])} questions", file=sys.stderr)
            askers.close()
        if devs:
            askers = Askers(Settings.from_env(store=args.dev_store), [])
            for name in devs:
                for q in read_questions(DEV_DATA / name / "questions.jsonl"):
                    calls["key"] = (name, q.id)
                    ask_one(askers.base, q, f"dev_{name}", "recursive", DEV_K)
                    calls["key"] = None
                    questions[(name, q.id)] = {"kind": name, "golds": list(q.answers), "answerable": q.answerable}
                print(f"{name}: done", file=sys.stderr)
            askers.close()
    pairs: list[list[str]] = []
    index: dict[tuple[str, str], int] = {}
    rows = []
    for key, asked in calls["pairs"].items():
        about = questions[key]
        label = real_label(about["expect"]) if about["kind"] == "real" else dev_label(about["golds"], about["answerable"])
        for question, texts in asked.items():
            for text in texts:
                if (question, text) not in index:
                    index[(question, text)] = len(pairs)
                    pairs.append([question, text])
            ids = [index[(question, t)] for t in texts]
            rows.append({"set": key[0], "id": key[1], "kind": about["kind"], "unanswerable": label is None,
                         "idx": ids, "answers": [bool(label and label(t)) for t in texts],
                         "recorded": list(texts.values())})
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        json.dump({"pairs": pairs, "calls": rows}, f)
    print(f"{len(pairs)} pairs, {len(rows)} reader calls -> {args.out}")
    print(figures("recorded", rows, None))


def _auc(yes: list[float], no: list[float]) -> float:
    a, b = np.array(yes)[:, None], np.array(no)[None, :]
    return float((a > b).mean() + 0.5 * (a == b).mean())


def figures(name: str, rows: list[dict], scores: np.ndarray | None) -> str:
    top1: dict[str, list[bool]] = {}
    best: dict[tuple[str, str, str], float] = {}
    for row in rows:
        s = np.array(row["recorded"]) if scores is None else scores[row["idx"]]
        if any(row["answers"]):
            top1.setdefault(row["kind"], []).append(row["answers"][int(np.argmax(s))])
        key = (row["kind"], row["set"], row["id"])
        best[key] = max(best.get(key, 0.0), float(s.max()))
    unanswerable = {(r["kind"], r["set"], r["id"]) for r in rows if r["unanswerable"]}
    parts = [f"{kind} {np.mean(v):.3f} ({len(v)})" for kind, v in sorted(top1.items())]
    aucs = []
    for kind in ("real", "squad2"):
        yes = [v for k, v in best.items() if k[0] == kind and k not in unanswerable]
        no = [v for k, v in best.items() if k[0] == kind and k in unanswerable]
        if yes and no:
            aucs.append(f"{kind} {_auc(yes, no):.3f} ({len(yes)}/{len(no)})")
    return f"{name}: top-1 {', '.join(parts)}; AUC {', '.join(aucs)}"


def score(args: argparse.Namespace) -> None:
    with gzip.open(args.file, "rt", encoding="utf-8") as f:
        data = json.load(f)
    pairs = [tuple(p) for p in data["pairs"]]
    print(figures("recorded", data["calls"], None))
    if args.cosine:  # the bundled bi-encoder alone: what the reader must beat
        from rag_rlm.embed import load_embedder

        embed = load_embedder().embed
        questions, texts = sorted({q for q, _ in pairs}), sorted({t for _, t in pairs})
        q_vec, t_vec = dict(zip(questions, embed(questions), strict=True)), dict(zip(texts, embed(texts), strict=True))
        print(figures("bi-encoder cosine", data["calls"], np.array([float(q_vec[q] @ t_vec[t]) for q, t in pairs])))
    for folder in args.reader:
        reader = load_reader(folder, precision=args.precision)
        print(figures(folder, data["calls"], reader.probabilities(pairs)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="ask everything with the shipped reader and keep the pairs it scores")
    rec.add_argument("--out", required=True, help="the pairs and labelled calls (.json.gz)")
    rec.add_argument("--sets", default="all", help="real-page sets (bench/realdocs/*.json names), or all")
    rec.add_argument("--dev", default="hotpotqa,musique,squad2", help="dev sets, or none")
    rec.add_argument("--dev-store", default="pgserver://.rag_rlm/pgdata", help="store of the dev collections dev_<set>")
    sco = sub.add_parser("score", help="score the recorded pairs with reader folders")
    sco.add_argument("file", help="what record wrote")
    sco.add_argument("--reader", action="append", default=[], help="a reader folder (repeat for more)")
    sco.add_argument("--cosine", action="store_true", help="also the bundled bi-encoder's cosine alone")
    sco.add_argument("--precision", default="fp32", help="fp32, bf16 or int8 (default: %(default)s)")
    args = parser.parse_args()
    record(args) if args.command == "record" else score(args)


if __name__ == "__main__":
    main()
