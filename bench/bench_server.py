"""Load test of the HTTP server: 32 concurrent clients asking varied questions on a 10,000-chunk
collection with the extractive reasoner, from a second process on loopback.

    .venv/bin/python bench/bench_server.py [--duration 60] [--clients 32] [--chunks 10000]

(1) Builds the collection once with the real `ingest` CLI (HotpotQA + MuSiQue paragraphs from
/work/shared/data, chunked small enough to pass --chunks; reused on later runs: ingest is
idempotent). (2) Starts the server in a subprocess (uvicorn with the app factory, as
`rag-rlm serve --workers N` does). (3) Runs an async httpx load client for --duration seconds and
prints requests/s, p50/p95/p99 latency, errors and the server's peak RSS.
Targets: zero errors, p99 under 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data")
CORPORA = [DATA / "hotpotqa" / "corpus.jsonl", DATA / "musique" / "corpus.jsonl"]
QUESTIONS = [DATA / "hotpotqa" / "questions.jsonl", DATA / "musique" / "questions.jsonl"]
COLLECTION = "bench"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--chunks", type=int, default=10_000, help="fewest chunks in the collection")
    p.add_argument("--chunk-tokens", type=int, default=128, help="chunk size used to build the collection")
    p.add_argument("--data", default=str(ROOT / "bench" / "out" / "server"), help="store and data folder")
    p.add_argument("--workers", type=int, default=1, help="server worker processes")
    p.add_argument("--concurrent-answers", type=int, default=8, help="RAG_RLM_MAX_CONCURRENT_ANSWERS")
    p.add_argument("--unique", action="store_true",
                   help="make every question text unique (defeats the memo cache: cold answers only)")
    p.add_argument("--no-reflect", action="store_true", help='ask with "reflect": false (where time goes)')
    p.add_argument("--torch-threads", type=int, default=os.cpu_count() or 1,
                   help="OMP threads per server process (encodes are serialised by the embedder lock, so all cores)")
    return p.parse_args()


def server_env(args: argparse.Namespace, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "RAG_RLM_STORE": f"pgserver://{args.data}/pgdata", "RAG_RLM_DATA_DIR": f"{args.data}/state",
        "RAG_RLM_COLLECTION": COLLECTION, "RAG_RLM_HOST": "127.0.0.1", "RAG_RLM_PORT": str(port),
        "RAG_RLM_CHUNK_TOKENS": str(args.chunk_tokens), "RAG_RLM_CHUNK_OVERLAP": "16",
        "RAG_RLM_RATE_LIMIT_PER_MINUTE": "1000000",  # the load test measures answering, not the limiter
        "RAG_RLM_MAX_CONCURRENT_ANSWERS": str(args.concurrent_answers),
        "RAG_RLM_MAX_QUEUED_ANSWERS": str(args.clients * 2), "RAG_RLM_LOG_LEVEL": "warning",
        "OMP_NUM_THREADS": str(args.torch_threads), "TOKENIZERS_PARALLELISM": "false",
    }


def build_collection(args: argparse.Namespace) -> None:
    env = server_env(args, 8000)  # the port is unused by ingest but must be valid
    cmd = [sys.executable, "-m", "ingest", *map(str, CORPORA), "--collection", COLLECTION, "--quiet", "--json"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"ingest failed ({out.returncode}):\n{out.stderr[-2000:]}")
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"ingest: {summary.get('documents_new', 0)} new, {summary.get('documents_unchanged', 0)} unchanged, "
          f"{summary.get('chunks_written', 0)} chunks written in {time.perf_counter() - t0:.1f} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args: argparse.Namespace, port: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "rag_rlm.cli", "serve", "--port", str(port), "--workers", str(args.workers)]
    proc = subprocess.Popen(cmd, env=server_env(args, port), cwd=ROOT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    sys.exit("server did not become healthy in 180 s")


def questions() -> list[str]:
    out = []
    for path in QUESTIONS:
        with path.open() as f:
            out += [json.loads(line)["question"] for line in f if line.strip()]
    return out


class Peak:
    """Peak RSS of the server process and its children (workers), sampled every 100 ms."""

    def __init__(self, pid: int):
        self.proc = psutil.Process(pid)
        self.bytes = 0

    async def sample(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
                self.bytes = max(self.bytes, sum(p.memory_info().rss for p in procs))
            except psutil.Error:
                pass
            await asyncio.sleep(0.1)


async def client(i: int, http: httpx.AsyncClient, qs: list[str], deadline: float,
                 latencies: list[float], errors: dict[str, int], extra: dict[str, object]) -> None:
    n = i
    while time.monotonic() < deadline:  # bounded: each request starts before the deadline
        question = qs[n % len(qs)] + (f" (request {i}-{n})" if extra.get("_unique") else "")
        n += 37  # clients walk the questions with different strides: varied, few memo hits
        t0 = time.perf_counter()
        try:
            r = await http.post("/v1/ask", json={"question": question, **{k: v for k, v in extra.items() if k[0] != "_"}})
            if r.status_code == 200 and r.json().get("answer") is not None:
                latencies.append(time.perf_counter() - t0)
            else:
                errors[str(r.status_code)] = errors.get(str(r.status_code), 0) + 1
        except httpx.HTTPError as e:
            errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def load(args: argparse.Namespace, port: int, pid: int) -> None:
    base = f"http://127.0.0.1:{port}"
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:
        cols = (await http.get("/v1/collections")).json()["collections"]
        chunks = next(c["chunks"] for c in cols if c["name"] == COLLECTION)
        print(f"collection {COLLECTION!r}: {chunks} chunks; {args.clients} clients for {args.duration:g} s; "
              f"{psutil.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        if chunks < args.chunks:
            sys.exit(f"only {chunks} chunks (< {args.chunks}): lower --chunk-tokens and rebuild")
        qs = questions()
        latencies: list[float] = []
        errors: dict[str, int] = {}
        peak, stop = Peak(pid), asyncio.Event()
        sampler = asyncio.create_task(peak.sample(stop))
        t0 = time.monotonic()
        deadline = t0 + args.duration
        extra: dict[str, object] = {"reflect": False} if args.no_reflect else {}
        extra["_unique"] = args.unique
        await asyncio.gather(*(client(i, http, qs, deadline, latencies, errors, extra) for i in range(args.clients)))
        elapsed = time.monotonic() - t0
        stop.set()
        await sampler
        metrics = (await http.get("/metrics")).text
    report(latencies, errors, elapsed, peak.bytes)
    print(f"server: {metric(metrics, 'rag_rlm_answers_total')} answers, "
          f"{metric(metrics, 'rag_rlm_cache_hits_total')} memo cache hits")


def metric(text: str, name: str) -> int:
    """Sum of a metric's series in Prometheus text."""
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name)))


def report(latencies: list[float], errors: dict[str, int], elapsed: float, peak_bytes: int) -> None:
    total = len(latencies) + sum(errors.values())
    print(f"requests: {total} in {elapsed:.1f} s = {total / elapsed:.2f} req/s ({len(latencies) / elapsed:.2f} ok/s)")
    print(f"latency s: p50 {pct(latencies, 0.50):.3f}  p95 {pct(latencies, 0.95):.3f}  "
          f"p99 {pct(latencies, 0.99):.3f}  max {max(latencies, default=float('nan')):.3f}")
    print(f"errors: {sum(errors.values())} {errors if errors else ''}".rstrip())
    print(f"server peak RSS: {peak_bytes / 2**20:.0f} MiB")


def main() -> None:
    args = parse_args()
    Path(args.data).mkdir(parents=True, exist_ok=True)
    build_collection(args)
    port = free_port()
    proc = start_server(args, port)
    try:
        asyncio.run(load(args, port, proc.pid))
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
