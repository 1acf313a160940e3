"""Readers trained by one recipe with different seeds, averaged weight by weight into one reader (a "model
soup": Wortsman et al., 2022). Every seed starts from the same MiniLM and moves little from it, so the mean of
their weights is itself a good network, and it reads at the cost of one reader, where averaging their scores
would cost one forward pass per seed.

Why: two seeds of one recipe were 17 graded answers apart on the real-page sets, as far apart as any recipe
change we measured (bench/eval_results.md, twenty-third round). A single training run is partly a draw of
chance; the mean of several is less so.

The folder written is what `Reader` loads: the mean encoder and head in fp16, the first ingredient's tokenizer,
and a card that names every ingredient (its weights' sha256 and the `train-reader` line that rebuilds it).
The found threshold is picked again on the SQuAD 2.0 dev tune half, as `train-reader` picks it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .model import CARD, HEAD, WEIGHTS
from .train import dev_figures, rebuild_command, threshold_fields, write_card

SAME_CONFIG = ("model_type", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
               "vocab_size", "max_position_embeddings")
TOKENIZER = "tokenizer.json"


@dataclass(frozen=True)
class AverageResult:
    folder: Path
    ingredients: int
    seconds: float
    figures: dict


def average_readers(folders: list[Path], out: Path, dev: Path | None = None) -> AverageResult:
    """Write the mean of the readers in `folders` to `out`; ValueError naming the folder when one cannot be
    averaged with the others (not a trained reader folder, another shape, another tokenizer)."""
    started = time.perf_counter()
    cards = _check(folders, out)
    _write_weights(folders, out)
    figures: dict = {}
    card = _card(folders, cards, figures, time.perf_counter() - started)
    write_card(out, card)  # a first card, so the folder loads for the figures below
    if dev is not None and (dev / "questions.jsonl").is_file():
        figures["squad2_dev"] = dev_figures(dev, out)
        write_card(out, _card(folders, cards, figures, time.perf_counter() - started))
    return AverageResult(out, len(folders), time.perf_counter() - started, figures)


def _check(folders: list[Path], out: Path) -> list[dict]:
    """Each folder's card, once every folder is known to be a trained reader like the first."""
    if len(folders) < 2:
        raise ValueError(f"averaging needs two readers or more, got {len(folders)}")
    if len({f.resolve() for f in folders}) < len(folders):
        raise ValueError("a reader folder is named twice: each seed counts once")
    if out.resolve() in {f.resolve() for f in folders}:
        raise ValueError(f"--out {out} is one of the readers averaged: write the mean to a new folder")
    cards, first = [], None
    for folder in folders:
        for need in ("config.json", WEIGHTS, HEAD, CARD, TOKENIZER):
            if not (folder / need).is_file():
                raise ValueError(f"{folder} has no {need}: not a reader folder")
        card = json.loads((folder / CARD).read_text(encoding="utf-8"))
        if "ingredients" in card or "settings" not in card:
            raise ValueError(f"{folder} is not a reader trained by train-reader (an average already?): "
                             "average the trained readers themselves")
        shape = _shape(folder, card)
        if first is None:
            first = (folder, shape)
        elif shape != first[1]:
            differ = sorted(k for k in shape if shape[k] != first[1][k])
            raise ValueError(f"{folder} differs from {first[0]} in {', '.join(differ)}: only readers of one "
                             "network and tokenizer can be averaged")
        cards.append(card)
    return cards


def _shape(folder: Path, card: dict) -> dict:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return {**{k: config.get(k) for k in SAME_CONFIG},
            "max_tokens": card.get("max_tokens"),
            "tokenizer": hashlib.sha256((folder / TOKENIZER).read_bytes()).hexdigest()}


def _write_weights(folders: list[Path], out: Path) -> None:
    """The mean of each tensor, summed in fp32 and stored in fp16 as train-reader stores its weights."""
    from safetensors.torch import load_file, save_file

    out.mkdir(parents=True, exist_ok=True)
    for name in (WEIGHTS, HEAD):
        total: dict = {}
        for folder in folders:
            tensors = load_file(str(folder / name))
            if total and tensors.keys() != total.keys():
                raise ValueError(f"{folder / name} holds other tensors than {folders[0] / name}")
            for key, tensor in tensors.items():
                total[key] = total[key] + tensor.float() if key in total else tensor.float()
        save_file({k: (v / len(folders)).half().contiguous() for k, v in total.items()}, str(out / name),
                  metadata={"format": "pt"})
    for name in ("config.json", TOKENIZER, "tokenizer_config.json"):
        if (folders[0] / name).is_file():
            shutil.copyfile(folders[0] / name, out / name)


def _card(folders: list[Path], cards: list[dict], figures: dict, seconds: float) -> dict:
    dev = figures.get("squad2_dev", {})
    files: dict[str, str] = {}
    for card in cards:
        files.update(card.get("data", {}).get("files_sha256", {}))
    return {
        **threshold_fields(dev),
        "max_tokens": cards[0].get("max_tokens"),
        "base": f"the mean of {len(folders)} readers' weights",
        "settings": {"layers": cards[0]["settings"]["layers"]},
        "data": {"files_sha256": files},
        "ingredients": [{"folder": str(folder), "weights_sha256": card.get("weights_sha256", ""),
                         "settings": card["settings"], "seconds": card.get("seconds"),
                         "trained_on": card.get("trained_on", ""), "pairs": card.get("data", {}).get("pairs")}
                        for folder, card in zip(folders, cards, strict=True)],
        "seconds": round(seconds, 1),
        "figures": figures,
    }


def rebuild_lines(card: dict, out: str) -> list[str]:
    """The commands that rebuild an averaged reader: each ingredient's train-reader line, then the mean."""
    lines = [rebuild_command(i["settings"]) for i in card["ingredients"]]
    return lines + ["rag-rlm average-readers " + " ".join(i["settings"]["out"] for i in card["ingredients"])
                    + f" --out {out}"]


def ingredient_lines(card: dict) -> list[str]:
    """The card's table of the readers averaged."""
    rows = ["| reader | seed | arithmetic | pairs | trained | weights sha256 |", "|---|---|---|---|---|---|"]
    for i in card["ingredients"]:
        s = i["settings"]
        rows.append(f"| {s['out']} | {s['seed']} | {s.get('precision', 'fp32')} | {i.get('pairs')} | "
                    f"{(i.get('seconds') or 0):.0f} s on {i.get('trained_on') or 'CPU'} | `{i['weights_sha256'][:16]}…` |")
    return rows
