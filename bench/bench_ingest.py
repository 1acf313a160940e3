"""Ingest throughput against the embedder's own encode throughput, and ingest peak memory.

    .venv/bin/python bench/bench_ingest.py [--chunks 2000] [--store pgserver://...]

One run: build a corpus of Markdown files (HotpotQA paragraphs from
/work/shared/data/hotpotqa/corpus.jsonl when present, generated prose otherwise) until it makes
at least --chunks chunks; (a) time `embedder.embed` on exactly the chunk texts the pipeline will
produce, and on those plus the sentence texts (what ingest encodes with sentence_vectors=encode;
the default, pool, encodes only the chunks); (b) run the real `ingest` CLI in a subprocess into a fresh pgvector (pgserver) collection
and take its chunks/s (files to stored rows, model loading excluded); (c) that subprocess's peak
RSS. Target: ingest >= 0.85 x the raw encode of the same work.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.ingest.chunker import chunk_text  # noqa: E402
from rag_rlm.ingest.parsers import parse_file  # noqa: E402
from rag_rlm.ingest.sentences import split_sentences  # noqa: E402

HOTPOT = Path("/work/shared/data/hotpotqa/corpus.jsonl")


def paragraphs() -> list[tuple[str, str]]:
    if HOTPOT.is_file():
        with HOTPOT.open() as f:
            return [(r["title"], r["text"]) for r in map(json.loads, f) if r.get("text")]
    rng = random.Random(7)
    words = "office team policy pipeline expense approve vacation deploy incident report city night".split()
    return [(f"Topic {i}", " ".join(rng.choice(words) for _ in range(rng.randint(60, 160))) + ".")
            for i in range(8000)]


def build_corpus(folder: Path, embedder, settings: Settings, want: int) -> tuple[list[str], list[str]]:
    """Write files until they make `want` chunks; return the chunk and sentence texts the
    pipeline will embed."""
    texts: list[str] = []
    sentences: list[str] = []
    for i, (title, text) in enumerate(paragraphs()):
        path = folder / f"{i // 500:02}" / f"p{i:05}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
        doc = parse_file(path, path.relative_to(folder).as_posix()).documents[0]
        texts += [c.text for c in chunk_text(doc.id, doc.text, embedder, chunk_tokens=settings.chunk_tokens,
                                             overlap=settings.chunk_overlap)]
        sentences += [s.text for s in split_sentences(doc.text, doc.id)]
        if len(texts) >= want:
            break
    return texts, sentences


def raw_encode(embedder, texts: list[str], extra: list[str]) -> tuple[float, float]:
    """Chunks per second of encoding the chunks alone, and of encoding chunks and `extra`."""
    embedder.embed(texts[:64])  # warm-up: first calls allocate
    started = time.perf_counter()
    embedder.embed(texts)
    alone = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed(texts + extra)
    return len(texts) / alone, len(texts) / (time.perf_counter() - started)


def ingest_subprocess(folder: Path, store: str) -> tuple[dict, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run(
        [sys.executable, "-m", "ingest", str(folder), "--collection", "bench_ingest", "--store", store,
         "--json", "--quiet"], cwd=ROOT, capture_output=True, text=True, env=os.environ.copy(),
    )
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed ({proc.returncode}):\n{proc.stderr}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak_kib <= before:
        print("note: peak RSS not above an earlier child's; figure is an upper bound", file=sys.stderr)
    return json.loads(proc.stdout), peak_kib / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=2000)
    p.add_argument("--store", help="default: a fresh pgserver in a temporary folder")
    args = p.parse_args()
    settings = Settings.from_env()
    embedder = load_embedder(settings.embed_model, settings.embed_device, settings.batch_size)
    with tempfile.TemporaryDirectory(prefix="bench_ingest_") as tmp:
        folder = Path(tmp, "corpus")
        texts, sentences = build_corpus(folder, embedder, settings, args.chunks)
        files = sum(1 for _ in folder.rglob("*.md"))
        chunks_cps, both_cps = raw_encode(embedder, texts, sentences)
        encode_cps = both_cps if settings.sentence_vectors == "encode" else chunks_cps
        summary, peak_mib = ingest_subprocess(folder, args.store or f"pgserver://{tmp}/pgdata")
    ratio = summary["chunks_per_second"] / encode_cps
    rows = [
        ("corpus", f"{files} files, {len(texts)} chunks (chunk_tokens={settings.chunk_tokens}, "
                   f"overlap={settings.chunk_overlap}, batch_size={settings.batch_size})"),
        ("device", f"{settings.embed_device}, {os.cpu_count()} CPUs"),
        ("sentences", f"{len(sentences)} ({len(sentences) / len(texts):.1f} a chunk), "
                      f"sentence_vectors={settings.sentence_vectors}"),
        ("raw encode, chunks", f"{chunks_cps:.1f} chunks/s"),
        ("raw encode, + sentences", f"{both_cps:.1f} chunks/s"),
        ("ingest (files -> pgvector)", f"{summary['chunks_per_second']:.1f} chunks/s "
                                       f"({summary['chunks_written']} chunks in {summary['seconds']:.1f} s)"),
        ("ratio ingest / encode", f"{ratio:.2f} of the raw encode of the same work (target >= 0.85) "
                                  f"{'OK' if ratio >= 0.85 else 'BELOW TARGET'}"),
        ("ingest peak RSS", f"{peak_mib:.0f} MiB"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
