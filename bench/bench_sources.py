"""Sources (issue 17): what a sync costs, and how soon a watched folder's change reaches answers.

    .venv/bin/python bench/bench_sources.py [--files 1000] [--repo PATH] [--web-pages 200]

- folder: a folder of N small files synced into a fresh embedded PostgreSQL, then synced again
  with nothing changed (target: under 5 s, nothing re-embedded); the first sync's chunks/s set
  against the embedder's own `encode` of the same chunk texts (a ratio, one run).
- watch: a live server on loopback follows a watched folder; seconds from a file being created,
  changed and deleted until an answer (or the document) shows it (target: within 5 s).
- git: a real repository with history (default: this project's own, cloned from its folder):
  first sync, then a sync with nothing new.
- web: the PostgreSQL HTML manual (postgresql-doc) served on loopback with ETag/304, crawled and
  ingested (up to --web-pages pages), then synced again: requests that were 304s.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.embed import load_embedder  # noqa: E402
from rag_rlm.memory import open_store  # noqa: E402
from rag_rlm.memory.state import open_state  # noqa: E402
from rag_rlm.sources.service import Sources, make_spec  # noqa: E402

TOPICS = ["invoices", "parking", "badges", "laptops", "travel", "printers", "holidays", "training", "security",
          "canteen"]


def write_folder(folder: Path, n: int) -> None:
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        sub = folder / topic
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{i:04d}.md").write_text(
            f"# {topic.title()} note {i}\n\nRule {i} about {topic}: requests go to desk {i % 37} before day {i % 28 + 1}."
            f"\n\nThe {topic} team reviews item {i} every {i % 6 + 1} weeks and keeps it for {i % 9 + 1} years.\n")


def open_sources(store_url: str, data_dir: str) -> Sources:
    settings = Settings(store=store_url, data_dir=data_dir)
    embedder = load_embedder()
    return Sources(open_store(store_url), open_state(store_url, data_dir), settings, lambda: embedder)


def bench_folder(n: int, work: Path) -> None:
    folder = work / "folder"
    write_folder(folder, n)
    sources = open_sources(f"pgserver://{work}/pg", str(work / "data"))
    spec = make_spec("notes", "folder", str(folder), "bench_folder")
    sources.add(spec)
    first = sources.sync(spec)
    second = sources.sync(spec)
    texts = [p.read_text() for p in sorted(folder.rglob("*.md"))]  # each note is one chunk
    embedder = load_embedder()
    started = time.perf_counter()
    embedder.embed(texts)
    raw = len(texts) / (time.perf_counter() - started)
    rate = first.chunks_written / first.seconds
    print(f"folder  {n} files   first sync {first.seconds:6.2f} s  added {first.added}  chunks {first.chunks_written}"
          f"  {rate:6.1f} chunks/s  (embedder encode alone {raw:6.1f} texts/s: ratio {rate / raw:.2f})")
    print(f"folder  {n} files   re-sync, nothing changed {second.seconds:6.2f} s  unchanged {second.unchanged}"
          f"  chunks re-embedded {second.chunks_written}  (target < 5 s, 0)")
    (folder / "parking" / "note-0001.md").write_text("# Parking\n\nThe osprey garage opens at six.\n")
    third = sources.sync(spec)
    print(f"folder  one file changed  {third.seconds:6.2f} s  updated {third.updated}  unchanged {third.unchanged}")


def bench_watch(work: Path) -> None:
    import uvicorn

    from rag_rlm.server import create_app

    folder = work / "watched"
    folder.mkdir()
    (folder / "start.md").write_text("# Start\n\nThe heron canteen serves lunch from eleven until two.\n")
    settings = Settings(store=f"pgserver://{work}/pg", data_dir=str(work / "data"), source_roots=[str(work)],
                        rate_limit_per_minute=100_000)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            job = http.post("/v1/collections/watched/sources",
                            json={"name": "w", "kind": "folder", "location": str(folder)}).json()["job"]
            while (status := http.get(job["url"]).json())["status"] in ("queued", "running"):
                time.sleep(0.1)
            print(f"watch   first sync {status['status']}: {status.get('summary', {}).get('added')} added", flush=True)
            http.post("/v1/ask", json={"question": "When is lunch served?", "collection": "watched"})  # warm

            def cited(question: str) -> set[str]:
                body = http.post("/v1/ask", json={"question": question, "collection": "watched"}).json()
                return {c["document_id"] for c in body.get("citations", [])}

            def doc(doc_id: str) -> httpx.Response:
                return http.get(f"/v1/collections/watched/documents/{doc_id}")

            cases = [
                ("created", lambda: (folder / "kestrel.md").write_text(
                    "# Kestrel\n\nThe kestrel shuttle bus leaves the north gate at 7:40.\n"),
                 lambda: "w/kestrel.md" in cited("When does the kestrel shuttle bus leave?")),
                ("changed", lambda: (folder / "start.md").write_text(
                    "# Start\n\nThe heron canteen serves lunch from noon until three.\n"),
                 lambda: "noon" in doc("w/start.md").json().get("text", "")),
                ("deleted", lambda: (folder / "kestrel.md").unlink(), lambda: doc("w/kestrel.md").status_code == 404),
            ]
            for label, change, seen in cases:
                started = time.perf_counter()
                change()
                while not seen() and time.perf_counter() - started < 60:
                    time.sleep(0.05)
                took = time.perf_counter() - started
                print(f"watch   file {label:8s} " + (f"reflected after {took:5.2f} s" if took < 60 else "NOT reflected in 60 s")
                      + " (target 5 s)", flush=True)
    finally:
        server.should_exit = True
        thread.join(10)


def bench_git(repo: str, work: Path) -> None:
    sources = open_sources(f"pgserver://{work}/pg", str(work / "data"))
    spec = make_spec("code", "git", repo, "bench_git")
    sources.add(spec)
    first = sources.sync(spec)
    second = sources.sync(spec)
    print(f"git     {repo}  first sync (clone + ingest) {first.seconds:6.2f} s  files {first.reader.get('files')}"
          f"  added {first.added}  failed {first.failed}  chunks {first.chunks_written}"
          f"  commit {first.reader.get('commit', '')[:12]}")
    for failure in first.failures:
        print(f"git       failed: {failure['item']}: {failure['reason'][:100]}")
    print(f"git     {repo}  sync with no new commit {second.seconds:6.2f} s  unchanged {second.unchanged}"
          f"  chunks re-embedded {second.chunks_written}")


def bench_web(pages: int, work: Path) -> None:
    from bench_source_web import find_manual, serve

    ports: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(str(find_manual()), ports), daemon=True)
    server.start()
    try:
        port = ports.get(timeout=30)
        sources = open_sources(f"pgserver://{work}/pg", str(work / "data"))
        spec = make_spec("pg", "web", f"http://127.0.0.1:{port}/index.html", "bench_web", max_pages=pages,
                         max_depth=50, delay=0)
        sources.add(spec)
        first = sources.sync(spec)
        second = sources.sync(spec)
        for label, s in (("first", first), ("second", second)):
            r = s.reader
            print(f"web     {label:6s} sync {s.seconds:7.2f} s  pages {r.get('pages')}  requests {r.get('requests')}"
                  f"  304s {r.get('not_modified')}  robots-disallowed {r.get('robots_disallowed')}  added {s.added}"
                  f"  unchanged {s.unchanged}  chunks {s.chunks_written}")
    finally:
        server.terminate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repo", default=str(ROOT), help="a Git repository (path or URL)")
    parser.add_argument("--web-pages", type=int, default=200)
    parser.add_argument("--only", choices=("folder", "watch", "git", "web"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        steps = {"folder": lambda: bench_folder(args.files, work / "f"), "watch": lambda: bench_watch(work / "w"),
                 "git": lambda: bench_git(args.repo, work / "g"), "web": lambda: bench_web(args.web_pages, work / "x")}
        for name, step in steps.items():
            if args.only in (None, name):
                (work / name[0]).mkdir(exist_ok=True)
                step()


if __name__ == "__main__":
    main()
