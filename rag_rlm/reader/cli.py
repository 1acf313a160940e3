"""`rag-rlm train-reader [--data DIR] [--dev DIR] [--out DIR] [--seed N] [--layers N] [--limit N] [--precision P]
[--api-docs DIR] [--faqs MANIFEST [--faq-repeats N]] [--calls FILE [--calls-exclude SETS] [--calls-repeats N]]
[--question-tokens N] [--base DIR] [--learning-rate F] [--passes N] [--device cpu|cuda]`: fine-tune the reader on
the public QA training files (and on questions asked of an API manual, on the entries of the FAQ pages a manifest
lists, and on the system's recorded reader calls on manuals) and write a reader folder with its card.
`--base` goes on from a trained reader; its card keeps how that one was made. `--device cuda` runs the same
steps on a GPU (bench/eval_results.md: two minutes instead of an hour).

`rag-rlm average-readers DIR DIR [DIR ...] --out DIR [--dev DIR]`: the mean of readers trained by one recipe
with different seeds, weight by weight, as one reader (rag_rlm.reader.average says why).

Exit codes: 0 trained, 1 training failed, 2 bad input (a missing data folder, a bad number, no GPU for cuda;
readers that cannot be averaged).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..clikit import positive_int
from ..config import Settings
from .thesaurus import WORDNET

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("train-reader", help="train the reader (a cross-encoder) on public QA data",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="../shared/data/train", help="the training files (default: %(default)s)")
    p.add_argument("--dev", help="SQuAD 2.0 dev sample for the card's figures and the threshold "
                                 "(default: squad2 beside the data folder, when there)")
    p.add_argument("--out", default="models/reader", help="the reader folder to write (default: %(default)s)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--layers", type=positive_int, help="encoder layers kept of the bundled MiniLM (1-6; default 4, "
                   "or a trained --base's own)")
    p.add_argument("--limit", type=positive_int, help="at most this many training pairs (a quick run)")
    p.add_argument("--squad1", type=positive_int, help="SQuAD v1 questions sampled (default 20000)")
    p.add_argument("--chained", type=float, default=0.0,
                   help="share of SQuAD v1 questions that also train on two-sentence candidates (default 0)")
    p.add_argument("--premised", type=float, default=0.0,
                   help="share of SQuAD v1 questions also asked after a premise from their context (default 0)")
    p.add_argument("--storied", type=float, default=0.0,
                   help="share of SQuAD v1 questions also told as a story: two or three other sentences of their "
                        "context said first (default 0)")
    p.add_argument("--swapped", type=float, default=0.0,
                   help="share of SQuAD v1 questions whose answer sentence is also a negative under another "
                        "article's title (default 0)")
    p.add_argument("--echoed", type=float, default=0.0,
                   help="share of SQuAD v1 questions whose candidates are also read under a heading made of the "
                        "question's words (default 0)")
    p.add_argument("--reworded", type=float, default=0.0,
                   help="share of SQuAD v1 questions also asked in other words: one or two of the words they share "
                        "with their answer sentence changed for a WordNet synonym or broader word (default 0)")
    p.add_argument("--thesaurus", default=str(WORDNET),
                   help="WordNet 3.0's database folder, read by --reworded (default: %(default)s, Debian's "
                        "wordnet-base)")
    p.add_argument("--same-article", type=positive_int,
                   help="constructed same-article negatives sampled (default 8000)")
    p.add_argument("--api-docs", help="an API manual's JSON pages (Node.js: /usr/share/doc/nodejs/api) to ask "
                                      "reference-shaped questions of (rag_rlm.reader.apidocs)")
    p.add_argument("--faqs", help="a manifest of FAQ pages (bench/faq_train.txt) whose entries train the reader on "
                                  "questions in askers' words (rag_rlm.reader.faqs)")
    p.add_argument("--faq-repeats", type=positive_int, default=1,
                   help="times each FAQ entry is asked, each with its own random negatives (default: %(default)s)")
    p.add_argument("--calls", action="append", default=[],
                   help="the system's recorded reader calls on manuals (bench/realdocs_calls.json.gz, written by "
                        "bench/reader_calls.py record): their questions and candidates train too "
                        "(rag_rlm.reader.calls); repeat for more files")
    p.add_argument("--calls-exclude", default="", help="real-page sets of --calls left out, comma-separated")
    p.add_argument("--calls-repeats", type=positive_int, default=1, help="times each call trains (default: %(default)s)")
    p.add_argument("--question-tokens", type=positive_int,
                   help="read a pair as the card key question_tokens reads it (a longer question keeps its end) "
                        "instead of longest_first; the card says it")
    p.add_argument("--base", help="start from this reader folder (or transformers model) instead of the bundled MiniLM")
    p.add_argument("--learning-rate", type=float, default=1e-4, help="peak learning rate (default: %(default)s)")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                   help="training arithmetic: bf16 autocasts the forward pass, ~1.4x faster on a CPU with "
                        "AVX512-BF16 or AMX (default: %(default)s)")
    p.add_argument("--passes", type=positive_int, default=1, help="passes over the pairs (default: %(default)s)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the steps run: cuda trains on a GPU, minutes instead of an hour (default: %(default)s)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)
    a = subparsers.add_parser("average-readers", help="average readers trained with different seeds into one",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("readers", nargs="+", help="trained reader folders (two or more, one network and tokenizer)")
    a.add_argument("--out", required=True, help="the reader folder to write (a new one)")
    a.add_argument("--dev", default="../shared/data/squad2",
                   help="SQuAD 2.0 dev sample for the card's figures and the threshold (default: %(default)s; "
                        "'none' skips them)")
    a.set_defaults(run=run_average)


def run_average(args: argparse.Namespace, settings: Settings) -> int:
    from .average import average_readers

    dev = None if args.dev == "none" else Path(args.dev)
    if dev is not None and not (dev / "questions.jsonl").is_file():
        print(f"rag-rlm average-readers: --dev {dev} has no questions.jsonl ('none' skips the figures)", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = average_readers([Path(r) for r in args.readers], Path(args.out), dev)
    except ValueError as e:
        print(f"rag-rlm average-readers: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"rag-rlm average-readers: {e}", file=sys.stderr)
        return EXIT_FAILED
    print(f"reader written to {result.folder}: the mean of {result.ingredients} readers, {result.seconds:.0f} s")
    _print_dev(result.figures.get("squad2_dev"))
    return EXIT_OK


def run(args: argparse.Namespace, settings: Settings) -> int:
    from .data import FILES, Mix

    data = Path(args.data)
    if not data.is_dir() or not any((data / name).is_file() for name in FILES[:4]):
        print(f"rag-rlm train-reader: {data} holds none of the training files ({', '.join(FILES[:4])})", file=sys.stderr)
        return EXIT_USAGE
    if args.layers is not None and not 1 <= args.layers <= 6:
        print(f"rag-rlm train-reader: --layers must be 1..6 (MiniLM has 6), got {args.layers}", file=sys.stderr)
        return EXIT_USAGE
    dev = Path(args.dev) if args.dev else data.parent / "squad2"
    if args.dev and not (dev / "questions.jsonl").is_file():
        print(f"rag-rlm train-reader: {dev} has no questions.jsonl", file=sys.stderr)
        return EXIT_USAGE
    from .train import TrainConfig, train

    for name in ("chained", "premised", "storied", "swapped", "echoed", "reworded"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            print(f"rag-rlm train-reader: --{name} is a share, 0..1, got {getattr(args, name)}", file=sys.stderr)
            return EXIT_USAGE
    problem = _check_paths(args) or _check_device(args.device)
    layers, problem = (0, problem) if problem else _layers(args)
    if problem:
        print(f"rag-rlm train-reader: {problem}", file=sys.stderr)
        return EXIT_USAGE
    counts = {k: v for k, v in (("squad1", args.squad1), ("same_article", args.same_article)) if v}
    mix = Mix(**counts, chained=args.chained, premised=args.premised, storied=args.storied, swapped=args.swapped, echoed=args.echoed,
              reworded=args.reworded, faq_repeats=args.faq_repeats)
    config = TrainConfig(data=data, out=Path(args.out), dev=dev if (dev / "questions.jsonl").is_file() else None,
                         seed=args.seed, layers=layers, limit=args.limit or 0, mix=mix,
                         precision=args.precision, base=args.base or "", learning_rate=args.learning_rate,
                         device=args.device, passes=args.passes,
                         api_docs=Path(args.api_docs) if args.api_docs else None,
                         faqs=Path(args.faqs) if args.faqs else None,
                         calls=tuple(Path(c) for c in args.calls),
                         calls_exclude=tuple(x for x in args.calls_exclude.split(",") if x.strip()),
                         calls_repeats=args.calls_repeats, question_tokens=args.question_tokens,
                         thesaurus=Path(args.thesaurus))
    bar = _bar(args.quiet)
    try:
        result = train(config, bar)
    except (OSError, ValueError) as e:
        print(f"rag-rlm train-reader: {e}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        bar.close()
    print(f"reader written to {result.folder}: {result.pairs} pairs, {result.steps} steps, {result.seconds:.0f} s")
    _print_dev(result.figures.get("squad2_dev"))
    return EXIT_OK


def _print_dev(dev_figures: dict | None) -> None:
    for half in ("tune", "check") if dev_figures else ():
        f = dev_figures[half]
        print(f"  squad2 {half}: top-1 {f['top1_contains_answer']:.3f}, unanswerable declined "
              f"{f['unanswerable_declined']:.3f}, answerable wrongly declined {f['answerable_wrongly_declined']:.3f} "
              f"(threshold {dev_figures['threshold']})")


def _check_paths(args: argparse.Namespace) -> str:
    """What is wrong with --api-docs, --faqs, --calls, --thesaurus, --question-tokens, --base or
    --learning-rate, or ""."""
    from .apidocs import files
    from .model import MAX_TOKENS
    from .thesaurus import folder_problem

    if args.api_docs and (not Path(args.api_docs).is_dir() or not files(Path(args.api_docs))):
        return f"--api-docs {args.api_docs} holds no API manual pages (*.json)"
    if args.faqs:
        from .faqs import pages

        try:
            if not pages(Path(args.faqs)):
                return f"--faqs {args.faqs} lists no FAQ pages"
        except (OSError, UnicodeDecodeError, ValueError) as e:
            return f"--faqs: {e}"
    for c in args.calls:
        if not Path(c).is_file():
            return f"--calls {c}: no such file"
    wordnet = folder_problem(Path(args.thesaurus)) if args.reworded else ""
    if wordnet:
        return f"--thesaurus {wordnet}"
    if args.question_tokens is not None and not 1 <= args.question_tokens <= MAX_TOKENS - 4:
        return f"--question-tokens must be 1..{MAX_TOKENS - 4}, got {args.question_tokens}"
    if args.base and not (Path(args.base) / "config.json").is_file():
        return f"--base {args.base} is no model folder (no config.json)"
    if not 0.0 < args.learning_rate < 1.0:
        return f"--learning-rate must be between 0 and 1, got {args.learning_rate}"
    return ""


def _check_device(device: str) -> str:
    """What is wrong with --device, or "": cuda needs a GPU that torch sees."""
    if device == "cpu":
        return ""
    import torch

    return "" if torch.cuda.is_available() else "--device cuda: torch sees no CUDA GPU here"


def _layers(args: argparse.Namespace) -> tuple[int, str]:
    """The encoder layers to train and what is wrong with --layers, or "". A trained reader as
    --base goes on with all of its layers: another count would be a different network."""
    from .network import HEAD
    from .train import TrainConfig

    base = Path(args.base) if args.base else None
    if base is None or not (base / HEAD).is_file():
        return args.layers or TrainConfig.layers, ""
    has = json.loads((base / "config.json").read_text()).get("num_hidden_layers")
    if args.layers is not None and args.layers != has:
        return 0, f"--layers {args.layers}: the trained reader of --base {base} has {has} layers and goes on with them all"
    return has, ""


class _Bar:
    """A tqdm bar on a terminal (nothing otherwise), fed by the training loop."""

    def __init__(self, quiet: bool):
        from tqdm import tqdm

        self.tqdm = None if quiet or not sys.stderr.isatty() else tqdm(unit="step", file=sys.stderr)
        self.started = time.perf_counter()

    def __call__(self, step: int, steps: int, loss: float) -> None:
        if self.tqdm is None:
            return
        self.tqdm.total = steps
        self.tqdm.set_postfix_str(f"loss {loss:.3f}", refresh=False)
        self.tqdm.update(step - self.tqdm.n)

    def close(self) -> None:
        if self.tqdm is not None:
            self.tqdm.close()


def _bar(quiet: bool) -> _Bar:
    return _Bar(quiet)

