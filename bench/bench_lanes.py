"""What model lanes buy: passes of the reader and the embedder run side by side, each on a share of
the cores, against one pass at a time on all of them (`rag_rlm.coalesce`; `rag-rlm serve`'s default).

Each configuration runs in a process of its own (torch's threads are the process's):
- the reader: 32 callers at once, each reading a question's dozen (question, sentence) pairs
  (SQuAD 2.0 dev questions against sentences of their paragraphs), through the reader's coalescer:
  pairs read per second;
- the embedder's ingest pass (`embed_with_tokens`, what an upload or a source sync inside the
  server runs): HotpotQA paragraphs in batches of 64, split among the lanes: chunks per second,
  against the raw sentence-transformers `encode` of the same batches on every core.

    python bench/bench_lanes.py [--callers 32] [--chunks 640]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

CHILD = r"""
import json, os, sys, time
from concurrent.futures import ThreadPoolExecutor
import torch
torch.set_num_threads(int(os.environ["THREADS"]))
lanes, what, callers, chunks = int(os.environ["LANES"]), os.environ["WHAT"], int(os.environ["CALLERS"]), int(os.environ["CHUNKS"])
data = os.environ["DATA"]
if what == "reader":
    from rag_rlm.reader import load_reader, shipped_reader_path
    reader = load_reader(shipped_reader_path(), "auto", lanes=lanes)
    items = [json.loads(l) for l in open(f"{data}/squad2/questions.jsonl")]
    texts = [json.loads(l)["text"] for l in open(f"{data}/squad2/corpus.jsonl")]
    sentences = [s.strip() + "." for t in texts for s in t.split(". ") if len(s) > 30]
    jobs = [[(it["question"], sentences[(i * 7 + j) % len(sentences)]) for j in range(12)]
            for i, it in enumerate(items[: callers * 4])]
    reader.probabilities(jobs[0])
    t = time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        list(pool.map(reader.score_pairs, jobs))
    print(json.dumps({"per_s": sum(map(len, jobs)) / (time.perf_counter() - t)}))
else:
    from rag_rlm.embed import load_embedder
    emb = load_embedder(lanes=lanes)
    texts = [json.loads(l)["text"] for l, _ in zip(open(f"{data}/hotpotqa/corpus.jsonl"), range(chunks))]
    run = ((lambda b: emb.model.encode(b, batch_size=64, show_progress_bar=False)) if what == "encode"
           else emb.embed_with_tokens)
    run(texts[:64])
    t = time.perf_counter()
    for i in range(0, len(texts), 64):
        run(texts[i:i + 64])
    print(json.dumps({"per_s": len(texts) / (time.perf_counter() - t)}))
"""


def measure(what: str, lanes: int, threads: int, args: argparse.Namespace) -> float:
    env = {**os.environ, "LANES": str(lanes), "THREADS": str(threads), "WHAT": what, "CALLERS": str(args.callers),
           "CHUNKS": str(args.chunks), "DATA": str(DATA), "TOKENIZERS_PARALLELISM": "false"}
    env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"{what} lanes={lanes} threads={threads} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["per_s"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--callers", type=int, default=32, help="reader callers at once")
    p.add_argument("--chunks", type=int, default=640, help="paragraphs the ingest pass encodes")
    args = p.parse_args()
    from rag_rlm.coalesce import cores

    n = cores()
    configs = [("one pass on every core", 1, n), (f"{n} lanes, one thread each", n, 1)]
    print(f"{n} cores")
    for what, unit in (("reader", "pairs/s"), ("ingest", "chunks/s")):
        rows = [(name, measure(what, lanes, threads, args)) for name, lanes, threads in configs]
        for name, value in rows:
            print(f"{what:<7} {name:<26} {value:8.1f} {unit}")
        print(f"{what:<7} lanes / one pass: {rows[1][1] / rows[0][1]:.2f}x")
    raw = measure("encode", 1, n, args)
    print(f"ingest  raw sentence-transformers encode, every core {raw:8.1f} chunks/s "
          f"(the lanes' ingest pass: {rows[1][1] / raw:.2f}x of it)")


if __name__ == "__main__":
    main()
