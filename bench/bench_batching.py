"""Batched vs sequential sub-question answering with the local backend.

A randomly initialised Llama-style model (built here, never downloaded) answers 8 sub-question
prompts, rendered with the LLM reasoner's answer prompt, twice: in one batched `generate` and
in 8 sequential ones. Both force exactly --max-new-tokens new tokens per prompt (EOS is held
off), so both do the same work; the ratio batched/sequential is the figure (target <= 0.5).

    python bench/bench_batching.py                       # CPU, small model, ~a minute
    python bench/bench_batching.py --hidden 1024 --layers 8 --device cuda
    python bench/bench_batching.py --compare-quant       # tokens/s: full precision vs 8-bit vs 4-bit
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rag_rlm.llm.local import LocalLLM
from rag_rlm.llm.random_model import build_random_llama
from rag_rlm.reasoning.prompts import Prompts, render_evidence

CORPUS = """Staff may work remotely two days a week after their probation period ends.
Expenses are reimbursed within thirty days of a claim with receipts attached.
The security team rotates on-call duty weekly; incidents are reviewed every Friday.
Who directed the film in which the actor starred? Which office opened first?
Answer the question using the passages and cite them as [1] or [2]."""

QUESTIONS = [
    "How many days a week may staff work remotely?",
    "When are expenses reimbursed?",
    "Who reviews incidents?",
    "How often does on-call duty rotate?",
    "What must be attached to an expense claim?",
    "When does remote work start for a new employee?",
    "Which day are incidents reviewed on?",
    "Who is on call this week?",
]


def build_model(folder: Path, hidden: int, layers: int, seed: int) -> Path:
    return build_random_llama(folder, hidden=hidden, layers=layers, vocab_size=600, seed=seed)


def prompts() -> list[list[dict[str, str]]]:
    passages = [(f"Handbook {i}", line) for i, line in enumerate(CORPUS.splitlines()[:3], 1)]
    out = []
    for i, question in enumerate(QUESTIONS):
        # different evidence per sub-question, so the batch is padded as in real use
        evidence = render_evidence(passages[: 1 + i % 3])
        out.append(Prompts().messages("answer", question=question, evidence=evidence))
    return out


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare_batching(llm: LocalLLM, batch: list, max_new: int, repeat: int) -> None:
    llm.generate(batch[:2], max_new, min_new_tokens=max_new)  # warm-up: allocations, kernels
    batched = min(timed(lambda: llm.generate(batch, max_new, min_new_tokens=max_new)) for _ in range(repeat))
    sequential = min(
        timed(lambda: [llm.generate([p], max_new, min_new_tokens=max_new) for p in batch]) for _ in range(repeat)
    )
    results = llm.generate(batch, max_new, min_new_tokens=max_new)
    assert all(r.tokens_out == max_new for r in results), "generation stopped early: unequal work"
    tokens = max_new * len(batch)
    print(f"prompts: {len(batch)}, prompt tokens: {[r.tokens_in for r in results]}, new tokens each: {max_new}")
    print(f"batched    (1 generate of {len(batch)}): {batched:8.3f} s  {tokens / batched:8.1f} tokens/s")
    print(f"sequential ({len(batch)} generates of 1): {sequential:8.3f} s  {tokens / sequential:8.1f} tokens/s")
    ratio = batched / sequential
    print(f"ratio batched/sequential: {ratio:.3f}  (target <= 0.5: {'met' if ratio <= 0.5 else 'NOT met'})")


def compare_quantization(folder: Path, device: str | None, batch: list, max_new: int) -> None:
    print(f"{'quantization':>12} {'load s':>8} {'memory MiB':>11} {'batched s':>10} {'tokens/s':>10}")
    for quantization in ("none", "8bit", "4bit"):
        start = time.perf_counter()
        llm = LocalLLM(folder, quantization=quantization, device=device)
        load = time.perf_counter() - start
        llm.generate(batch[:2], 4, min_new_tokens=4)
        seconds = timed(lambda llm=llm: llm.generate(batch, max_new, min_new_tokens=max_new))
        memory = llm.model.get_memory_footprint() / 2**20
        label = quantization if quantization != "none" else f"none ({llm.model.dtype})".replace("torch.", "")
        print(f"{label:>12} {load:8.2f} {memory:11.1f} {seconds:10.3f} {max_new * len(batch) / seconds:10.1f}")
        del llm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--quantization", choices=("none", "8bit", "4bit"), default="none")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1, help="best of N timings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare-quant", action="store_true", help="tokens/s for none vs 8-bit vs 4-bit")
    args = parser.parse_args()

    import torch

    torch.manual_seed(args.seed)
    batch = prompts()
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(Path(tmp) / "random-llama", args.hidden, args.layers, args.seed)
        print(f"model: random Llama, hidden {args.hidden}, {args.layers} layers, torch {torch.__version__}, "
              f"{torch.get_num_threads()} CPU threads, cuda: {torch.cuda.is_available()}")
        if args.compare_quant:
            compare_quantization(folder, args.device, batch, args.max_new_tokens)
            return
        llm = LocalLLM(folder, quantization=args.quantization, device=args.device)
        print(f"quantization: {args.quantization}, device: {llm.device}, dtype: {llm.model.dtype}")
        compare_batching(llm, batch, args.max_new_tokens, args.repeat)


if __name__ == "__main__":
    main()
