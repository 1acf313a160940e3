"""The reader: a small cross-encoder that reads (question, candidate sentence) together and gives
the probability that the sentence answers the question. Trained here (`rag-rlm train-reader`),
shipped under `models/reader/`, loaded from a folder like any local model, never downloaded.

A folder holds the encoder as a transformers folder (`config.json`, `model.safetensors`, the
tokenizer files), the head over its mean token vector (`head.safetensors`; rag_rlm.reader.network)
and `reader.json`: the card's figures, among them the
threshold over which the collection is taken to answer (`found_threshold`, picked on the tune
half of the dev data). The reader's identity is the sha256 of its weights: answers remembered by
the memo cache under one reader are never served under another.

Scoring is batched across threads like the embedder's encodes: callers that arrive while a
forward pass runs are scored together in the next one, and a (question, text) pair scored once
is remembered, so merge and reflection re-read the answer step's scores for free. A pair is read
padded to a multiple of PAD_TO tokens, beside pairs padded alike only, so its score never depends
on the requests it was batched with (in bf16 a padded pair reads a little differently).

Precision (`PRECISIONS`): fp32; bf16 where the CPU multiplies bf16 natively (AVX512-BF16 or AMX:
~1.7x faster, scores within ~0.02 of fp32); int8 Linear layers, whose activations are quantised
per batch, so a score moves with its batch (bench/bench_reader.py). Each has its own threshold in
the card, and the precision is part of the reader's identity.

A card's `question_tokens` caps the question's share of a pair, cut from its start (`pair_ids`): a
question told as a story ends with its ask, which the training's longest_first cut would drop.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..coalesce import Coalescer
from ..errors import ModelNotFound

CARD = "reader.json"
WEIGHTS = "model.safetensors"
MAX_TOKENS = 96  # question and candidate together; the training length
BATCH = 16  # pairs a forward pass reads, all padded to one length
PAD_TO = 8  # tokens: a pair is padded to a multiple of this (fp32: within 2% of padding a batch to its longest)
PRECISIONS = ("fp32", "bf16", "int8")
Encoded = tuple[list[int], list[int]]  # a pair's token ids and token type ids, unpadded
MEMORY = 20_000  # remembered pair scores (~100 bytes each)


@dataclass(frozen=True)
class Card:
    """What `reader.json` says: how the reader was made and what it measured."""

    found_threshold: float
    max_tokens: int
    data: dict
    raw: dict
    question_tokens: int | None = None  # see pair_ids; None: longest_first, as the reader was trained

    def threshold(self, precision: str) -> float:
        return found_threshold(self.raw, precision)


def found_threshold(card: dict, precision: str) -> float:
    """The found threshold a card calibrated for `precision` (`found_threshold_fp32`, `_bf16`;
    the plain `found_threshold` is int8's, the first reader's default). bf16 falls back to fp32's,
    fp32 to the plain one, for a card written before them."""
    if precision == "int8":
        return float(card["found_threshold"])
    fallback = card.get("found_threshold_fp32", card["found_threshold"])
    return float(card.get(f"found_threshold_{precision}", fallback))


HEAD = "head.safetensors"


def weights_sha256(path: str | Path) -> str:
    """sha256 over the encoder's and the head's weight files: the reader's identity."""
    digest = hashlib.sha256()
    for name in (WEIGHTS, HEAD):
        with open(Path(path) / name, "rb") as f:
            for block in iter(lambda f=f: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def read_card(folder: Path) -> Card:
    try:
        raw = json.loads((folder / CARD).read_text(encoding="utf-8"))
        question_tokens = raw.get("question_tokens")
        max_tokens = int(raw.get("max_tokens", MAX_TOKENS))
        if question_tokens is not None and not 0 < int(question_tokens) <= max_tokens - 4:
            raise ValueError(f"question_tokens must be 1 to {max_tokens - 4} (max_tokens {max_tokens}), "
                             f"got {question_tokens!r}")
        return Card(float(raw["found_threshold"]), max_tokens, raw.get("data", {}), raw,
                    None if question_tokens is None else int(question_tokens))
    except FileNotFoundError:
        raise ModelNotFound(str(folder), f"no {CARD}: not a reader folder (train one with `rag-rlm train-reader`)") from None
    except (ValueError, KeyError, TypeError) as e:
        raise ModelNotFound(str(folder), f"{CARD} is unreadable: {e}") from None


BACKENDS = ("torch", "numpy")


def pair_ids(question: Sequence[int], text: Sequence[int], *, cls: int, sep: int, max_tokens: int,
             question_tokens: int, continuations: Collection[int]) -> Encoded:
    """`[CLS] question [SEP] text [SEP]` in at most `max_tokens`, from the two sides' ids without specials.

    A question over `question_tokens` keeps its last ones, from the start of a word (not a `continuations`
    id): a question told as a story ends with its ask, and longest_first, which cuts the end of the longer
    side, left the reader the asker's scene without the ask, so it picked sentences that repeat the scene.
    The text fills the rest and loses its end."""
    question = list(question)
    if len(question) > question_tokens:
        question = question[-question_tokens:]
        while question and question[0] in continuations:
            question.pop(0)
    text = list(text)[:max(0, max_tokens - 3 - len(question))]
    return [cls, *question, sep, *text, sep], [0] * (len(question) + 2) + [1] * (len(text) + 1)


def native_precision() -> str:
    """bf16 where the CPU has bf16 arithmetic (AVX512-BF16 or AMX), else fp32 (emulated bf16 is
    slower than fp32)."""
    import torch

    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # torch.cpu's own feature probes
    return "bf16" if any(getattr(torch.cpu, p, lambda: False)() for p in probes) else "fp32"


class Reader:
    """Loaded from a reader folder; `score(question, texts)` gives one probability per text.

    `backend` "torch" runs the network in torch at `precision` (one of PRECISIONS); "numpy" runs
    the same network in float32 numpy (`rag_rlm.embed_numpy.NumpyBert`): no torch import, for a
    short-lived command that answers one question (its scores are the torch fp32 ones)."""

    def __init__(self, path: str | Path, *, precision: str = "fp32", backend: str = "torch"):
        folder = Path(path)
        if not folder.is_dir():
            raise ModelNotFound(str(folder), "no such folder (RAG_RLM_READER names a reader folder, or 'none')")
        for need in ("config.json", WEIGHTS, HEAD):
            if not (folder / need).is_file():
                raise ModelNotFound(str(folder), f"no {need}: not a reader folder")
        if backend not in BACKENDS:
            raise ValueError(f"reader backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"reader precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        self.card = read_card(folder)
        self.path = str(folder)
        self.precision = "fp32" if backend == "numpy" else precision
        question_tokens = self.card.question_tokens
        ask = "" if question_tokens is None else f"/ask{question_tokens}"  # a pair is read otherwise
        self.identity = f"{weights_sha256(folder)}{ask}/{self.precision}"  # scores differ a little by precision
        self.threshold = self.card.threshold(self.precision)  # picked for the precision it runs at
        self.max_tokens = self.card.max_tokens
        self._network = (_NumpyNetwork(folder, self.max_tokens, question_tokens) if backend == "numpy"
                         else _TorchNetwork(folder, self.precision, self.max_tokens, question_tokens))
        self._batched = Coalescer(self.probabilities)
        self._memory: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._memory_lock = threading.Lock()

    def score(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """P(text answers question) for each text, in order."""
        return self.score_pairs([(question, t) for t in texts])

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        with self._memory_lock:
            known = {p: s for p in dict.fromkeys(pairs) if (s := self._memory.get(p)) is not None}
        todo = [p for p in dict.fromkeys(pairs) if p not in known]
        if todo:
            for pair, s in zip(todo, self._batched(todo), strict=True):
                known[pair] = float(s)
            with self._memory_lock:
                for pair in todo:
                    self._memory[pair] = known[pair]
                while len(self._memory) > MEMORY:
                    self._memory.popitem(last=False)
        return np.array([known[p] for p in pairs], dtype=np.float32)

    @property
    def lanes(self) -> int:
        """Passes that run at once."""
        return self._batched.lanes

    @lanes.setter
    def lanes(self, lanes: int) -> None:
        self._batched.lanes = lanes

    def forget(self) -> None:
        """Drop the remembered pair scores: a benchmark that asks the same questions in two modes
        measures the second's reading, not the first's memory (the reader is process-wide)."""
        with self._memory_lock:
            self._memory.clear()

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """One forward pass per BATCH pairs padded to the same width (a multiple of PAD_TO), so a
        pair's score depends on the pair alone, and little padding is read (9.5 -> 5.3 ms a pair
        against mixed batches of 64); no memory, no queue."""
        encoded = self._network.encode(pairs)  # tokenized once: the widths and the passes read the same ids
        widths = np.array([min(self.max_tokens, -(-len(ids) // PAD_TO) * PAD_TO) for ids, _ in encoded])
        out = np.zeros(len(pairs), dtype=np.float32)
        for width in np.unique(widths):
            same = np.flatnonzero(widths == width)
            for lo in range(0, len(same), BATCH):
                idx = same[lo:lo + BATCH]
                out[idx] = self._network.probabilities([encoded[i] for i in idx], int(width))
        return out


def encode_pairs(pairs: Sequence[tuple[str, str]], ids_of, *, cls: int, sep: int, max_tokens: int,
                  question_tokens: int, continuations: Collection[int]) -> list[Encoded]:
    """`pair_ids` for each pair; `ids_of(strings)` tokenizes each distinct string once, without specials."""
    strings = list(dict.fromkeys(s for pair in pairs for s in pair))
    ids = dict(zip(strings, ids_of(strings), strict=True))
    return [pair_ids(ids[q], ids[t], cls=cls, sep=sep, max_tokens=max_tokens, question_tokens=question_tokens,
                     continuations=continuations) for q, t in pairs]


def encode_with(tokenizer, pairs: Sequence[tuple[str, str]], max_tokens: int, question_tokens: int,
                continuations: Collection[int] | None = None) -> list[Encoded]:
    """`encode_pairs` with a transformers tokenizer: what the reader reads and training trains on."""
    if continuations is None:
        continuations = continuation_ids(tokenizer.get_vocab())
    return encode_pairs(pairs, lambda strings: tokenizer(strings, add_special_tokens=False)["input_ids"],
                        cls=tokenizer.cls_token_id, sep=tokenizer.sep_token_id, max_tokens=max_tokens,
                        question_tokens=question_tokens, continuations=continuations)


def continuation_ids(vocab: dict[str, int]) -> frozenset[int]:
    return frozenset(i for token, i in vocab.items() if token.startswith("##"))  # WordPiece: inside a word


class _TorchNetwork:
    def __init__(self, folder: Path, precision: str, max_tokens: int, question_tokens: int | None = None):
        self.model, self.tokenizer = _load(folder, precision)
        self.max_tokens = max_tokens
        self.question_tokens = question_tokens
        if question_tokens is not None:
            self.continuations = continuation_ids(self.tokenizer.get_vocab())

    def encode(self, pairs: Sequence[tuple[str, str]]) -> list[Encoded]:
        if self.question_tokens is not None:
            return encode_with(self.tokenizer, pairs, self.max_tokens, self.question_tokens, self.continuations)
        enc = self.tokenizer([q for q, _ in pairs], [t for _, t in pairs], truncation="longest_first",
                             max_length=self.max_tokens, return_token_type_ids=True)
        return list(zip(enc["input_ids"], enc["token_type_ids"], strict=True))

    def probabilities(self, encoded: Sequence[Encoded], width: int) -> np.ndarray:
        """Each pair padded to `width` tokens (at least its length)."""
        import torch

        ids = torch.full((len(encoded), width), self.tokenizer.pad_token_id, dtype=torch.long)
        types, mask = torch.zeros_like(ids), torch.zeros_like(ids)
        for row, (seq, kinds) in enumerate(encoded):
            ids[row, :len(seq)], types[row, :len(seq)], mask[row, :len(seq)] = torch.tensor(seq), torch.tensor(kinds), 1
        with torch.inference_mode():
            return torch.sigmoid(self.model(ids, mask, types).float()).numpy().reshape(-1)


class _NumpyNetwork:
    """The reader's network in numpy: its encoder (NumpyBert), the mean of its token vectors, the head."""

    def __init__(self, folder: Path, max_tokens: int, question_tokens: int | None = None):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        from ..embed_numpy import NumpyBert

        try:
            self.bert = NumpyBert(folder)
            head = load_file(str(folder / HEAD))
            self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as e:  # safetensors, tokenizers (a bare Exception) and OSError alike: a broken folder
            raise ModelNotFound(str(folder), f"could not be loaded: {e}") from None
        self.weight = head["weight"].astype(np.float32)[0]
        self.bias = float(head["bias"].astype(np.float32)[0])
        self.tokenizer.no_padding()
        self.max_tokens, self.question_tokens = max_tokens, question_tokens
        if question_tokens is None:
            self.tokenizer.enable_truncation(max_tokens, strategy="longest_first")
        else:
            self.tokenizer.no_truncation()
            self.continuations = continuation_ids(self.tokenizer.get_vocab())

    def encode(self, pairs: Sequence[tuple[str, str]]) -> list[Encoded]:
        if self.question_tokens is not None:
            tok = self.tokenizer
            return encode_pairs(pairs, lambda strings: [e.ids for e in tok.encode_batch(strings, add_special_tokens=False)],
                                 cls=tok.token_to_id("[CLS]"), sep=tok.token_to_id("[SEP]"), max_tokens=self.max_tokens,
                                 question_tokens=self.question_tokens, continuations=self.continuations)
        return [(e.ids, e.type_ids) for e in self.tokenizer.encode_batch(list(pairs))]

    def probabilities(self, encoded: Sequence[Encoded], width: int) -> np.ndarray:
        """`width` is unused: each pair is read at its own length (fp32 reads padding exactly)."""
        pooled = self.bert.mean_pooled([ids for ids, _ in encoded], [kinds for _, kinds in encoded])
        return 1.0 / (1.0 + np.exp(-(pooled @ self.weight + self.bias)))


def _load(folder: Path, precision: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import warnings

    import torch
    from safetensors import SafetensorError
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    from .network import load

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = load(folder)
    except (OSError, ValueError, RuntimeError, KeyError, SafetensorError) as e:
        raise ModelNotFound(str(folder), f"could not be loaded: {e}") from None
    # the encoder only: its mean token vector and the head's one output stay fp32 (network.py)
    if precision == "int8":  # Linear layers in int8, activations quantised on the fly: bench/bench_reader.py
        with warnings.catch_warnings():  # torch.ao's dynamic quantisation warns that it is deprecated
            warnings.simplefilter("ignore")
            model.encoder = torch.ao.quantization.quantize_dynamic(model.encoder, {torch.nn.Linear}, dtype=torch.qint8)
    elif precision == "bf16":
        model.encoder.to(torch.bfloat16)
    return model, tokenizer


def shipped_reader_path() -> Path:
    """The reader committed with the code (`models/reader/` of the repository), else
    `./models/reader` of the working directory (a copy of the models folder beside a deployment)."""
    return _shipped("reader")


def shipped_judge_path() -> Path:
    """The judge committed with the code (`models/judge/`), found as the shipped reader is."""
    return _shipped("judge")


def _shipped(name: str) -> Path:
    beside_code = Path(__file__).resolve().parents[2] / "models" / name
    return beside_code if (beside_code / CARD).is_file() else Path("models") / name


_LOADED: dict[tuple[str, str, str], Reader] = {}
_LOADING = threading.Lock()


def load_reader(path: str | Path, precision: str = "fp32", backend: str = "torch", lanes: int | None = None) -> Reader:
    """A process-wide reader per folder: it is loaded once and shared by every request.
    `precision` "auto" is bf16 where the CPU computes it natively, else fp32. `lanes`: passes
    that run at once (`coalesce`; a server's choice), None: as they are (one)."""
    if precision == "auto":
        precision = "fp32" if backend == "numpy" else native_precision()
    key = (str(Path(path).resolve()), precision, backend)
    with _LOADING:
        reader = _LOADED.get(key)
        if reader is None:
            reader = _LOADED[key] = Reader(path, precision=precision, backend=backend)
    if lanes:
        reader.lanes = lanes
    return reader
