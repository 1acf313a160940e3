"""The coalescer that batches the embedder's encodes and the reader's pairs across concurrent
requests: each caller gets its own rows, passes never exceed their lanes, and an error reaches
every caller of the failed pass."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rag_rlm.coalesce import Coalescer


class SlowSquares:
    """`run` of a coalescer: squares its items after a pause, recording how many passes overlap."""

    def __init__(self, pause: float = 0.02):
        self.pause = pause
        self.running = 0
        self.most = 0
        self.passes: list[list[int]] = []
        self._lock = threading.Lock()

    def __call__(self, items: list[int]) -> np.ndarray:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.passes.append(list(items))
        time.sleep(self.pause)
        with self._lock:
            self.running -= 1
        return np.array(items, dtype=np.float64) ** 2


def ask_concurrently(coalescer: Coalescer, callers: int) -> list[np.ndarray]:
    with ThreadPoolExecutor(callers) as pool:
        return list(pool.map(lambda i: coalescer([i, i + 100]), range(callers)))


@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_each_caller_gets_its_own_rows_and_passes_stay_within_their_lanes(lanes):
    run = SlowSquares()
    results = ask_concurrently(Coalescer(run, lanes=lanes), 24)
    for i, rows in enumerate(results):
        assert rows.tolist() == [i * i, (i + 100) ** 2]
    assert run.most <= lanes
    assert len(run.passes) < 24  # callers that waited were served together
    served = sorted(x for items in run.passes for x in items)
    assert served == sorted([*range(24), *range(100, 124)])  # every item read once


def test_two_lanes_read_side_by_side_where_one_lane_reads_in_turn():
    one, two = SlowSquares(pause=0.05), SlowSquares(pause=0.05)
    ask_concurrently(Coalescer(one, lanes=1), 16)
    ask_concurrently(Coalescer(two, lanes=2), 16)
    assert one.most == 1
    assert two.most == 2


def test_an_error_in_a_pass_reaches_every_caller_of_it_and_the_next_pass_still_runs():
    calls = {"n": 0}

    def flaky(items):
        calls["n"] += 1
        if calls["n"] == 1:
            time.sleep(0.05)  # the others queue behind the failing pass
            raise RuntimeError("model fell over")
        return np.array(items, dtype=np.float64)

    coalescer = Coalescer(flaky, lanes=1)
    errors, values = [], []

    def call(i):
        try:
            values.append(coalescer([i]).tolist())
        except RuntimeError as e:
            errors.append(str(e))

    first = threading.Thread(target=call, args=(0,))
    first.start()
    time.sleep(0.01)
    later = [threading.Thread(target=call, args=(i,)) for i in range(1, 5)]
    for t in later:
        t.start()
    for t in [first, *later]:
        t.join(5)
    assert errors == ["model fell over"]
    assert sorted(values) == [[1], [2], [3], [4]]


def test_lanes_below_one_are_refused():
    with pytest.raises(ValueError, match="lanes must be >= 1"):
        Coalescer(lambda items: np.zeros(len(items)), lanes=0)


def test_a_server_shares_its_cores_among_its_workers_and_their_lanes(monkeypatch):
    from rag_rlm import coalesce

    monkeypatch.setattr(coalesce, "cores", lambda: 8)
    assert coalesce.serving_parallelism(0, workers=1, answers=8) == (8, 1)  # a pass per core, one thread each
    assert coalesce.serving_parallelism(0, workers=2, answers=8) == (4, 1)
    assert coalesce.serving_parallelism(0, workers=16, answers=8) == (1, 1)  # more workers than cores: one each
    assert coalesce.serving_parallelism(0, workers=1, answers=4) == (4, 2)  # no more lanes than answers at once
    assert coalesce.serving_parallelism(2, workers=1, answers=8) == (2, 4)  # lanes named: the threads fill the rest
    assert coalesce.serving_parallelism(1, workers=2, answers=8) == (1, 4)


SERVE_PARALLELISM = """
import json, torch
from rag_rlm.config import Settings
from rag_rlm.coalesce import cores
from rag_rlm.embed import load_embedder
from rag_rlm.reader import load_reader, shipped_reader_path
from rag_rlm.server.app import _share_cores
before = torch.get_num_threads()
s = _share_cores(Settings(), workers=1)
load_embedder(lanes=s.model_lanes or None)
reader = load_reader(shipped_reader_path(), "auto", lanes=s.model_lanes or None)
print(json.dumps({"lanes": s.model_lanes, "threads": torch.get_num_threads(), "before": before, "cores": cores(),
                  "embedder": load_embedder().lanes, "reader": reader.lanes}))
"""


@pytest.mark.parametrize("omp", [None, "2"])
def test_serve_runs_a_pass_per_core_on_one_thread_each_unless_omp_num_threads_says_otherwise(omp):
    """In a process of its own: torch's threads are the process's."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"} | ({"OMP_NUM_THREADS": omp} if omp else {})
    out = subprocess.run([sys.executable, "-c", SERVE_PARALLELISM], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["lanes"] == got["cores"] == got["embedder"] == got["reader"]
    assert got["threads"] == (got["before"] if omp else 1)  # OMP_NUM_THREADS: torch's own reading of it


@pytest.mark.parametrize("cpu_max,cpus", [("max 100000", None), ("200000 100000", 2), ("150000 100000", 2),
                                          ("50000 100000", 1), ("", None), ("lots of cpus", None)])
def test_a_containers_cpu_quota_caps_the_cores_a_server_shares(cpu_max, cpus):
    from rag_rlm.coalesce import quota_cpus

    assert quota_cpus(cpu_max) == cpus


@pytest.mark.parametrize("n,parts,sizes", [(10, 2, [5, 5]), (7, 3, [3, 2, 2]), (2, 4, [1, 1]), (5, 1, [5])])
def test_split_evenly_keeps_the_order_in_runs_of_nearly_equal_length(n, parts, sizes):
    from rag_rlm.embed import split_evenly

    runs = split_evenly(list(range(n)), parts)
    assert [len(r) for r in runs] == sizes
    assert [x for r in runs for x in r] == list(range(n))


def test_ingest_in_a_server_encodes_across_its_lanes_what_one_pass_encodes():
    """A server's upload or source sync: its chunks split among the lanes, vectors and token vectors
    as one pass gives them (to float noise), in the texts' order."""
    from rag_rlm.embed import SentenceTransformerEmbedder

    texts = [f"Chunk {i}: the scheduler retries a job {i} times before it gives up on host {i % 3}." * (1 + i % 4)
             for i in range(9)]
    one, two = SentenceTransformerEmbedder(), SentenceTransformerEmbedder()
    two.lanes = 2
    (v1, t1), (v2, t2) = one.embed_with_tokens(texts), two.embed_with_tokens(texts)
    assert np.allclose(v1, v2, atol=1e-5)
    assert [len(offsets) for _, offsets in t1] == [len(offsets) for _, offsets in t2]
    for (vecs1, offsets1), (vecs2, offsets2) in zip(t1, t2, strict=True):
        assert np.allclose(vecs1, vecs2, atol=1e-4) and np.array_equal(offsets1, offsets2)
