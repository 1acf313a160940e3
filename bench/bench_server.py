"""Load test of the HTTP server: 32 concurrent clients asking questions on a 10,000-chunk
collection with the extractive reasoner, from a second process on loopback; without and with the
reader in one run.

    .venv/bin/python bench/bench_server.py [--duration 60] [--clients 32] [--chunks 10000]
                                           [--no-compare] [--no-unique]

(1) Builds the collection once with the real `ingest` CLI (HotpotQA + MuSiQue paragraphs from
/work/shared/data, chunked small enough to pass --chunks; reused on later runs: ingest is
idempotent; it stores sentence vectors, so a folder built before sentence memory will not do).
--no-ingest skips this and asks an existing collection, e.g. bench_controller.py's 16,158-chunk
HotpotQA one: --store pgserver://bench/out/controller2/pg --collection hotpot16k --chunks 16000.
(2) Starts the server in a subprocess (uvicorn with the app factory, as `rag-rlm serve --workers N`
does). (3) Runs an async httpx load client for --duration seconds and prints requests/s,
p50/p95/p99 latency, errors, the server's peak RSS, and the CPU seconds the server and PostgreSQL
spent per answer during the load: on a machine shared with other work, throughput moves with the
neighbours' load, CPU per answer much less.
With --compare (the default) steps 2-3 run three times on the same collection: "before" with
RAG_RLM_READER=none (sentences chosen and judged by the bi-encoder's similarity), then "after"
with the shipped reader (the bi-encoder preranks, the reader re-scores the best candidates, in the
default fused order), then "reader-order" (the same in the reader's own order); then the throughput
ratio. With --unique (the default) every answer is cold, and every question reads as it was written: each
mode asks each question of the pool once (the load ends when the pool does, or at --duration), and
the memo entries of earlier runs are dropped before each mode (`StateStore.prune`; the memo lives in
the store's database). An earlier version appended "(request <id>)" to each question instead: that
tail reads as a second sentence, so the long-question rule read 92 of 100 HotpotQA questions twice
(a user's question of one sentence is read once) and the reader did ~30 pairs a question, not ~19.
--no-unique cycles through the pool for --duration, so repeats may come from the memo.
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
import uuid
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data")
CORPORA = [DATA / "hotpotqa" / "corpus.jsonl", DATA / "musique" / "corpus.jsonl"]
QUESTIONS = [DATA / "hotpotqa" / "questions.jsonl", DATA / "musique" / "questions.jsonl"]
COLLECTION = "bench"
# name -> (RAG_RLM_READER, RAG_RLM_SENTENCE_ORDER): without the reader, with the shipped one in its
# default (fused) order, and with it in its own order
MODES = {"before": ("none", "fused"), "after": ("", "fused"), "reader-order": ("", "reader")}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--chunks", type=int, default=10_000, help="fewest chunks in the collection")
    p.add_argument("--chunk-tokens", type=int, default=128, help="chunk size used to build the collection")
    p.add_argument("--store", help="store URL to reuse (e.g. bench_controller.py's: pgserver://bench/out/controller2/pg "
                   "with --collection hotpot16k --chunks 16000 --no-ingest)")
    p.add_argument("--collection", default=COLLECTION, help="collection to build (or reuse) and ask")
    p.add_argument("--corpus", action="append", help="corpus file or folder to ingest, repeatable "
                   "(default: the HotpotQA and MuSiQue corpora)")
    p.add_argument("--ingest", action=argparse.BooleanOptionalAction, default=True,
                   help="ingest the corpora first; --no-ingest asks the collection as it is (another bench's: "
                   "ingesting the default corpora would add MuSiQue to bench_controller's HotpotQA collection)")
    p.add_argument("--data", default=str(ROOT / "bench" / "out" / "server2"), help="store and data folder")
    p.add_argument("--workers", type=int, default=1, help="server worker processes")
    p.add_argument("--concurrent-answers", type=int, default=8, help="RAG_RLM_MAX_CONCURRENT_ANSWERS")
    p.add_argument("--compare", action=argparse.BooleanOptionalAction, default=True,
                   help="load the server before (sentence memory off) and after (on); --no-compare: after only")
    p.add_argument("--unique", action=argparse.BooleanOptionalAction, default=True,
                   help="ask each question once per mode, the memo emptied first (cold answers only)")
    p.add_argument("--no-reflect", action="store_true", help='ask with "reflect": false (where time goes)')
    p.add_argument("--torch-threads", type=int, help="OMP_NUM_THREADS of the server (default: the server's "
                   "choice, its cores shared among its model lanes: one thread per pass)")
    p.add_argument("--model-lanes", type=int, default=0,
                   help="RAG_RLM_MODEL_LANES: passes of each model at once (default 0: one per core)")
    return p.parse_args()


def server_env(args: argparse.Namespace, port: int, mode: str = "after") -> dict[str, str]:
    return {
        **os.environ,
        "RAG_RLM_STORE": args.store or f"pgserver://{args.data}/pgdata", "RAG_RLM_DATA_DIR": f"{args.data}/state-{mode}",
        "RAG_RLM_READER": MODES[mode][0], "RAG_RLM_SENTENCE_ORDER": MODES[mode][1],
        "RAG_RLM_COLLECTION": args.collection, "RAG_RLM_HOST": "127.0.0.1", "RAG_RLM_PORT": str(port),
        "RAG_RLM_CHUNK_TOKENS": str(args.chunk_tokens), "RAG_RLM_CHUNK_OVERLAP": "16",
        "RAG_RLM_RATE_LIMIT_PER_MINUTE": "1000000",  # the load test measures answering, not the limiter
        "RAG_RLM_MAX_CONCURRENT_ANSWERS": str(args.concurrent_answers),
        "RAG_RLM_MAX_QUEUED_ANSWERS": str(args.clients * 2), "RAG_RLM_LOG_LEVEL": "warning",
        "RAG_RLM_MODEL_LANES": str(args.model_lanes), "TOKENIZERS_PARALLELISM": "false",
        **({"OMP_NUM_THREADS": str(args.torch_threads)} if args.torch_threads else {}),
    }


def build_collection(args: argparse.Namespace) -> None:
    env = server_env(args, 8000)  # the port is unused by ingest but must be valid
    corpora = args.corpus or [str(p) for p in CORPORA]
    cmd = [sys.executable, "-m", "ingest", *corpora, "--collection", args.collection, "--quiet", "--json"]
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


def start_server(args: argparse.Namespace, port: int, mode: str) -> subprocess.Popen[bytes]:
    return serve_process(server_env(args, port, mode), port, "--workers", str(args.workers))


def serve_process(env: dict[str, str], port: int, *flags: str) -> subprocess.Popen[bytes]:
    """`rag-rlm serve` in a process of its own, once /health answers (exits the bench if it never does)."""
    proc = subprocess.Popen([sys.executable, "-m", "rag_rlm.cli", "serve", "--port", str(port), *flags],
                            env=env, cwd=ROOT)
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
    """Asks until the deadline: with --unique the next question nobody has asked (`qs` is shared and
    consumed), else the pool in a stride of its own (`qs` is read, never consumed)."""
    n = i
    while time.monotonic() < deadline:  # bounded: each request starts before the deadline
        if extra.get("_unique"):
            if not qs:
                return
            question = qs.pop()
        else:
            question = qs[n % len(qs)]
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


class CpuClock:
    """CPU seconds (user + system) of the server's process tree and of the PostgreSQL serving the
    store (the postmaster of a pgserver:// data folder and its backends), between start and stop."""

    def __init__(self, pid: int, store: str):
        self.server = psutil.Process(pid)
        self.postmaster = _postmaster(store)
        self.spent = {"server": 0.0, "postgres": 0.0}

    def _read(self) -> dict[str, float]:
        out = {}
        for name, root in (("server", self.server), ("postgres", self.postmaster)):
            out[name] = sum(_cpu(p) for p in _tree(root))
        return out

    def start(self) -> None:
        self._start = self._read()

    def stop(self) -> None:
        end = self._read()
        self.spent = {k: end[k] - self._start[k] for k in end}


def _postmaster(store: str) -> psutil.Process | None:
    """The postmaster of a pgserver:// data folder (its pid is the first line of postmaster.pid)."""
    if not store.startswith("pgserver://"):
        return None
    try:
        return psutil.Process(int(Path(store.removeprefix("pgserver://"), "postmaster.pid").read_text().split()[0]))
    except (OSError, ValueError, psutil.Error):
        return None


def _tree(root: psutil.Process | None) -> list[psutil.Process]:
    if root is None:
        return []
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _cpu(proc: psutil.Process) -> float:
    try:
        t = proc.cpu_times()
        return t.user + t.system + t.children_user + t.children_system
    except psutil.Error:
        return 0.0


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def load(args: argparse.Namespace, port: int, pid: int, mode: str, run_id: str) -> dict[str, float]:
    base = f"http://127.0.0.1:{port}"
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:
        cols = (await http.get("/v1/collections")).json()["collections"]
        chunks = next((c["chunks"] for c in cols if c["name"] == args.collection), None)
        if chunks is None:
            sys.exit(f"no collection {args.collection!r} in the store ({args.store or args.data}): "
                     "run without --no-ingest to build it, or name the store that has it with --store")
        print(f"\n[{mode}: RAG_RLM_READER={MODES[mode][0] or 'the shipped reader'}, order {MODES[mode][1]}] collection {args.collection!r}: "
              f"{chunks} chunks; {args.clients} clients for {args.duration:g} s"
              f"{', each question once' if args.unique else ''}; "
              f"{psutil.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        if chunks < args.chunks:
            sys.exit(f"only {chunks} chunks (< {args.chunks}): lower --chunk-tokens and rebuild")
        qs = questions()
        extra: dict[str, object] = {"reflect": False} if args.no_reflect else {}
        extra["_unique"] = args.unique
        if args.unique:
            qs = qs[::-1]  # popped from the end: asked in the pool's order
        # One answer before the clock (not counted): the first request's one-off costs.
        await http.post("/v1/ask", json={"question": f"Who founded the company of warm-up {run_id}-{mode}?"})
        latencies: list[float] = []
        errors: dict[str, int] = {}
        peak, stop = Peak(pid), asyncio.Event()
        sampler = asyncio.create_task(peak.sample(stop))
        cpu = CpuClock(pid, server_env(args, port)["RAG_RLM_STORE"])
        cpu.start()
        t0 = time.monotonic()
        deadline = t0 + args.duration
        await asyncio.gather(*(client(i, http, qs, deadline, latencies, errors, extra) for i in range(args.clients)))
        elapsed = time.monotonic() - t0
        cpu.stop()
        stop.set()
        await sampler
        metrics = (await http.get("/metrics")).text
    row = report(latencies, errors, elapsed, peak.bytes)
    answers = max(len(latencies), 1)
    row.update(cpu_ms=1000 * cpu.spent["server"] / answers, pg_ms=1000 * cpu.spent["postgres"] / answers)
    print(f"CPU per answer: server {row['cpu_ms']:.0f} ms, postgres {row['pg_ms']:.0f} ms "
          f"({cpu.spent['server']:.1f} s and {cpu.spent['postgres']:.1f} s in all)")
    print(f"server: {metric(metrics, 'rag_rlm_answers_total')} answers, "
          f"{metric(metrics, 'rag_rlm_cache_hits_total')} memo cache hits")
    return row


def metric(text: str, name: str) -> int:
    """Sum of a metric's series in Prometheus text."""
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name)))


def report(latencies: list[float], errors: dict[str, int], elapsed: float, peak_bytes: int) -> dict[str, float]:
    total = len(latencies) + sum(errors.values())
    row = {"req_s": total / elapsed, "ok_s": len(latencies) / elapsed, "p50": pct(latencies, 0.50),
           "p95": pct(latencies, 0.95), "p99": pct(latencies, 0.99), "errors": sum(errors.values()),
           "rss_mib": peak_bytes / 2**20}
    print(f"requests: {total} in {elapsed:.1f} s = {row['req_s']:.2f} req/s ({row['ok_s']:.2f} ok/s)")
    print(f"latency s: p50 {row['p50']:.3f}  p95 {row['p95']:.3f}  "
          f"p99 {row['p99']:.3f}  max {max(latencies, default=float('nan')):.3f}")
    print(f"errors: {row['errors']} {errors if errors else ''}".rstrip())
    print(f"server peak RSS: {row['rss_mib']:.0f} MiB")
    return row


def compare(rows: dict[str, dict[str, float]]) -> None:
    print(f"\n{'mode':<12} {'req/s':>7} {'ok/s':>7} {'p50 s':>7} {'p95 s':>7} {'p99 s':>7} {'errors':>6} {'RSS MiB':>8}")
    for mode, r in rows.items():
        print(f"{mode:<12} {r['req_s']:>7.2f} {r['ok_s']:>7.2f} {r['p50']:>7.3f} {r['p95']:>7.3f} {r['p99']:>7.3f} "
              f"{r['errors']:>6.0f} {r['rss_mib']:>8.0f}")
    b, a = rows["before"], rows["after"]
    ratio = a["ok_s"] / b["ok_s"] if b["ok_s"] else float("nan")
    print(f"throughput after/before: {ratio:.1f}x (answers/s); p50 before/after: {b['p50'] / a['p50']:.1f}x")


def forget_memo(args: argparse.Namespace) -> None:
    """Drop every memo entry in the store's state (earlier runs' answers), as retention would."""
    from rag_rlm.memo import MemoCache
    from rag_rlm.memory.state import open_state

    env = server_env(args, 8000)
    state = open_state(env["RAG_RLM_STORE"], env["RAG_RLM_DATA_DIR"])
    try:
        print(f"memo: {state.prune(MemoCache.KIND, 0)} entries of earlier runs dropped")
    finally:
        getattr(state, "close", lambda: None)()  # as sources/cli.py closes it: the Protocol has no close


def run_mode(args: argparse.Namespace, mode: str, run_id: str) -> dict[str, float]:
    if args.unique:
        forget_memo(args)
    port = free_port()
    proc = start_server(args, port, mode)
    try:
        return asyncio.run(load(args, port, proc.pid, mode, run_id))
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    args = parse_args()
    Path(args.data).mkdir(parents=True, exist_ok=True)
    if args.ingest:
        build_collection(args)
    run_id = uuid.uuid4().hex[:8]  # in every unique question: no memo entry of an earlier run answers it
    rows = {mode: run_mode(args, mode, run_id) for mode in (MODES if args.compare else ["after"])}
    if args.compare:
        compare(rows)


if __name__ == "__main__":
    main()
