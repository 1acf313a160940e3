"""Wall time of one `rag-rlm ask`, as a person runs it, before and after issue 16, in one run.

    .venv/bin/python bench/bench_cli.py [--runs 6] [--base REV] [--out bench/out/cli]

Three ways of answering the same questions, each a fresh process timed from start to exit:

- before:  the code at REV (default: where this branch left main, `git merge-base HEAD main`),
           extracted with `git archive`; no server, so the command loads sentence-transformers
           and starts the embedded PostgreSQL itself (`--json`: its text output crashed);
- cold:    this code with no server running: the numpy embedder, and the embedded PostgreSQL
           started and stopped by the command;
- server:  this code while `rag-rlm serve` runs for the same data folder (found through
           DATA_DIR/server.json): one HTTP round trip.

Each mode asks its own copy of the collection (the PostgreSQL manual pages of tests/data/pgdocs),
so no mode answers from another's memo entries; within a mode every run asks a new question.
Targets (issue 16): server at most 0.5 s, cold at most 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from clirun import Serve, env  # noqa: E402 - the tests' way of running our commands

CORPUS = ROOT / "tests" / "data" / "pgdocs"
QUESTIONS = [
    "What does TRUNCATE do?",
    "Why should VACUUM be run regularly?",
    "Which index types does PostgreSQL provide?",
    "How do I dump only the schema of a database?",
    "What is write-ahead logging?",
    "What values does the boolean type accept?",
    "What is the difference between character varying and character?",
    "What is the default value of max_connections?",
]
MODES = ("before", "cold", "server")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=6, help=f"questions asked per mode (at most {len(QUESTIONS)})")
    p.add_argument("--base", help="the revision 'before' runs (default: git merge-base HEAD main)")
    p.add_argument("--out", type=Path, help="work folder (default: a temporary one, removed at the end)")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    questions = QUESTIONS[: max(1, min(args.runs, len(QUESTIONS)))]
    base = args.base or _git("merge-base", "HEAD", "main")
    work = args.out or Path(tempfile.mkdtemp(prefix="bench_cli_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        before_code = _extract(base, work / "before_code")
        chunks = _ingest(work)
        print(f"collection: {CORPUS.relative_to(ROOT)} ({chunks} chunks) x {len(MODES)} copies; "
              f"before = {base[:10]}; {len(questions)} questions per mode; load average {_load()}")
        times = {"before": _ask_all(work, questions, "before", before_code, ["--json"]),
                 "cold": _ask_all(work, questions, "cold", ROOT, ["-v"], "answering in this process")}
        with Serve(work) as server:
            times["server"] = _ask_all(work, questions, "server", ROOT, ["-v"], f"answering in the server at {server.url}")
        _report(times)
    finally:
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def _extract(revision: str, target: Path) -> Path:
    """The packages and migrations at `revision`, to run as `PYTHONPATH=target`."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "rag_rlm", "ingest", "migrations"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def _ingest(work: Path) -> int:
    chunks = 0
    for mode in MODES:
        done = subprocess.run([sys.executable, "-m", "ingest", str(CORPUS), "--collection", f"pgdocs_{mode}",
                               "--json", "--quiet"], cwd=work, env=env(), capture_output=True, text=True, check=True)
        summary = json.loads(done.stdout)
        chunks = chunks or summary["chunks_written"]
    return chunks


def _ask_all(work: Path, questions: list[str], mode: str, code: Path, flags: list[str],
             where: str = "") -> list[float]:
    """Seconds of each `ask`; `where`: what --verbose must say, so the mode is the one measured."""
    seconds = []
    for question in questions:
        command = [sys.executable, "-m", "rag_rlm.cli", "ask", question, "-c", f"pgdocs_{mode}", *flags]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=work, env={**env(), "PYTHONPATH": str(code)}, capture_output=True, text=True)
        seconds.append(time.perf_counter() - started)
        if done.returncode != 0 or where not in done.stderr:
            raise SystemExit(f"{mode}: {question!r} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def _report(times: dict[str, list[float]]) -> None:
    print(f"\n{'ask, wall seconds':<34} {'min':>6} {'median':>7} {'max':>6}   runs")
    labels = {"before": "before (no server, old code)", "cold": "after, cold (no server)",
              "server": "after, with a server running"}
    for mode, values in times.items():
        print(f"{labels[mode]:<34} {min(values):6.2f} {statistics.median(values):7.2f} {max(values):6.2f}   "
              + " ".join(f"{v:.2f}" for v in values))
    before = statistics.median(times["before"])
    print(f"\nmedian speed-up over before: cold {before / statistics.median(times['cold']):.1f}x, "
          f"with a server {before / statistics.median(times['server']):.1f}x "
          f"(targets: server <= 0.5 s, cold <= 3 s)")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
