"""Peak memory of ingesting one large document, against its size (issue 9: it must not grow).

    .venv/bin/python bench/bench_ingest_memory.py [--sizes 1,10,50] [--chunk-tokens 200] [--code DIR]

For each size: write a plain-text file of that many MB (HotpotQA paragraphs from
/work/shared/data/hotpotqa/corpus.jsonl, cycled, as blank-line separated paragraphs), then ingest
it in a fresh subprocess into a fresh pgvector (pgserver) store in a temporary folder with the
bundled embedder. The child reports its RSS once the embedder and store are loaded and one full
batch has been encoded (idle: the model's working set, which any ingest has) and its peak RSS
(ru_maxrss) after the ingest; growth = peak - idle is what the document's size cost.
`--code DIR` imports rag_rlm from another checkout (e.g. `git archive` of an older commit), for a
before/after table. A `--docx` row adds the 1 MB text as a .docx file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOTPOT = Path("/work/shared/data/hotpotqa/corpus.jsonl")
MB = 1_000_000


def write_text(path: Path, size: int) -> None:
    """`size` bytes of real prose: corpus paragraphs, cycled, separated by blank lines."""
    with HOTPOT.open() as f:
        paras = [f"{r['title']}\n\n{r['text']}" for r in map(json.loads, f) if r.get("text")]
    written, i = 0, 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            piece = paras[i % len(paras)].encode("utf-8")[: size - written].decode("utf-8", "ignore") + "\n\n"
            out.write(piece)
            written += len(piece.encode("utf-8"))
            i += 1


def write_docx(path: Path, text_file: Path) -> None:
    import docx

    document = docx.Document()
    for para in text_file.read_text(encoding="utf-8").split("\n\n"):
        if para.strip():
            document.add_paragraph(para)
    document.save(str(path))


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from rag_rlm.config import Settings
from rag_rlm.embed import load_embedder
from rag_rlm.memory import open_store
from rag_rlm.ingest.pipeline import ingest_paths

def rss_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

path, store_url, chunk_tokens = sys.argv[2], sys.argv[3], int(sys.argv[4])
settings = Settings(store=store_url, chunk_tokens=chunk_tokens, chunk_overlap=min(32, chunk_tokens // 4),
                    max_document_bytes=200_000_000, data_dir=sys.argv[5])
embedder = load_embedder(settings.embed_model, settings.embed_device, settings.batch_size)
store = open_store(store_url)
# idle = after one full batch of chunk-sized texts: the model's working set, which any ingest
# (of many small files too) has, so growth is what the document's size adds
warm = ["a few words of text " * (chunk_tokens // 5)] * settings.batch_size
embedder.embed_with_tokens(warm) if settings.sentence_vectors == "pool" else embedder.embed(warm)
idle = rss_mib()
idle_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
summary = ingest_paths([path], collection="bench_memory", store=store, embedder=embedder, settings=settings,
                       progress=False)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
store.close()
print(json.dumps({"summary": summary.to_dict(), "idle": idle, "idle_peak": idle_peak, "peak": peak}))
"""


def run_child(code: Path, path: Path, tmp: Path, chunk_tokens: int) -> dict:
    pg = tmp / f"pg_{path.stem}"
    proc = subprocess.run(
        ["nice", sys.executable, "-c", CHILD, str(code), str(path), f"pgserver://{pg}", str(chunk_tokens),
         str(tmp / "data")], capture_output=True, text=True, cwd=tmp,
    )
    if proc.returncode != 0:
        raise SystemExit(f"ingest of {path.name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1,10,50", help="document sizes in MB, comma separated")
    p.add_argument("--chunk-tokens", type=int, default=200)
    p.add_argument("--code", type=Path, default=ROOT, help="the checkout whose rag_rlm is measured")
    p.add_argument("--docx", action="store_true", help="also a row for the 1 MB text as a .docx")
    args = p.parse_args()
    print(f"code: {args.code.resolve()}  chunk_tokens={args.chunk_tokens}")
    print(f"{'document':<14}{'chunks':>8}{'seconds':>9}{'idle MiB':>10}{'peak MiB':>10}{'growth MiB':>12}  failed")
    with tempfile.TemporaryDirectory(prefix="bench_ingest_memory_") as name:
        tmp = Path(name)
        files = []
        for mb in (float(s) for s in args.sizes.split(",")):
            path = tmp / f"doc_{mb:g}mb.txt"
            write_text(path, int(mb * MB))
            files.append(path)
        if args.docx:
            text = files[0] if files else tmp / "doc_1mb.txt"
            if not text.exists():
                write_text(text, MB)
            files.append(tmp / f"{text.stem}.docx")
            write_docx(files[-1], text)
        for path in files:
            r = run_child(args.code, path, tmp, args.chunk_tokens)
            s = r["summary"]
            failed = "; ".join(f["reason"] for f in s["failed"]) or "-"
            label = f"{path.stat().st_size / MB:.1f} MB {path.suffix[1:]}"
            print(f"{label:<14}{s['chunks_written']:>8}{s['seconds']:>9.1f}{r['idle']:>10.0f}{r['peak']:>10.0f}"
                  f"{r['peak'] - r['idle']:>12.0f}  {failed}", flush=True)


if __name__ == "__main__":
    main()
