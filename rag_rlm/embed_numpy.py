"""The bundled all-MiniLM-L6-v2 (or any sentence encoder of its shape: BERT, mean pooling,
normalised) run in numpy, for answering from the command line.

A cold `rag-rlm ask` encodes one question. Through sentence-transformers that means importing
torch, transformers and, with sentence-transformers, scipy and scikit-learn: about four seconds
on the development machine, most of the command's wall time. The same weights (safetensors), the
same tokenizer (`tokenizer.json` through `tokenizers`) and the same pooling in numpy take a tenth
of a second to load, and the vectors agree with sentence-transformers' to about 1e-6
(tests/test_embed_numpy.py). Ingest and the server keep the torch embedder (`rag_rlm.embed`):
they encode in bulk, where torch is faster, and ingest needs its token vectors.

`load_answer_embedder(path)` picks this one when the folder has the shape, else the torch one.
`NumpyBert` is the encoder itself, which the reader's light path shares.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embed import Embedder, bundled_model_path, load_embedder
from .errors import ModelNotFound

# sentence-transformers module types this encoder reproduces, in order (matched by class name:
# the package path differs between its versions)
_PIPELINE = ("Transformer", "Pooling", "Normalize")
_BATCH = 16  # texts per forward pass: attention is batch x heads x length^2 floats


def fits_numpy(path: str | Path) -> bool:
    """Whether the sentence-transformers folder is one this module runs exactly: a BERT encoder
    with erf GELU and absolute positions, mean pooling only, then normalisation."""
    folder = Path(path)
    try:
        modules = _json(folder / "modules.json")
        pooling = _json(folder / modules[1]["path"] / "config.json")
        config = _json(folder / "config.json")
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return False
    kinds = tuple(str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules)
    only_mean = all(bool(v) == (k == "pooling_mode_mean_tokens")
                    for k, v in pooling.items() if k.startswith("pooling_mode_"))
    return (kinds == _PIPELINE and modules[0].get("path", "") == "" and only_mean
            and config.get("model_type") == "bert" and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and all((folder / name).is_file() for name in ("model.safetensors", "tokenizer.json")))


def load_answer_embedder(model_path: str = "") -> Embedder:
    """The embedder for answering in a short-lived process: numpy when the folder fits, else the
    torch one (`rag_rlm.embed.load_embedder`)."""
    path = model_path or bundled_model_path()
    if fits_numpy(path):
        return NumpyBertEmbedder(path)
    return load_embedder(model_path)


class NumpyBertEmbedder:
    """An Embedder over a folder that `fits_numpy`: BERT's forward pass in float32 numpy.

    Thread-safe: the weights are only read, and each `tokenizers.Tokenizer` is configured once
    (one truncating for encoding, one whole for counting) and then only used to encode."""

    def __init__(self, path: str | Path):
        folder = Path(path)
        if not fits_numpy(folder):
            raise ModelNotFound(str(folder), "not a BERT mean-pooling sentence encoder (rag_rlm.embed loads others)")
        from tokenizers import Tokenizer

        self.path = str(folder)
        self.bert = NumpyBert(folder)
        self.config = self.bert.config
        self.dimension = int(self.config["hidden_size"])
        self.max_tokens = int(_max_seq_length(folder, self.config))
        self._encoder_tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._encoder_tokenizer.no_padding()
        self._encoder_tokenizer.enable_truncation(self.max_tokens)
        self._counter = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._counter.no_padding()
        self._counter.no_truncation()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # sentence-transformers strips each text before tokenizing; so must we, to match it
        ids = [e.ids for e in self._encoder_tokenizer.encode_batch([str(t).strip() for t in texts])]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths pad less
        out = np.zeros((len(ids), self.dimension), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            batch = order[start:start + _BATCH]
            out[batch] = self._encode([ids[i] for i in batch])
        return out

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return [tuple(o) for o in self._counter.encode(text, add_special_tokens=False).offsets]

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def _encode(self, ids: list[list[int]]) -> np.ndarray:
        pooled = self.bert.mean_pooled(ids)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


class NumpyBert:
    """BERT's encoder (a transformers folder: `config.json`, `model.safetensors`) in float32 numpy:
    token vectors of padded batches, and their mean over each sequence. The embedder above and the
    reader's light path (`rag_rlm.reader.model`) run on it."""

    def __init__(self, folder: str | Path, weights: str = "model.safetensors"):
        from safetensors.numpy import load_file

        folder = Path(folder)
        self.config = _json(folder / "config.json")
        self.weights = {k.removeprefix("bert."): v.astype(np.float32, copy=False)
                        for k, v in load_file(str(folder / weights)).items()}

    def mean_pooled(self, ids: list[list[int]], type_ids: list[list[int]] | None = None) -> np.ndarray:
        """The mean of each sequence's last-layer token vectors (padding left out)."""
        length = max(map(len, ids))
        token_ids = np.zeros((len(ids), length), dtype=np.int64)
        types = np.zeros((len(ids), length), dtype=np.int64)
        mask = np.zeros((len(ids), length), dtype=np.float32)
        for row, seq in enumerate(ids):
            token_ids[row, :len(seq)] = seq
            types[row, :len(seq)] = type_ids[row] if type_ids is not None else 0
            mask[row, :len(seq)] = 1.0
        hidden = self._embeddings(token_ids, types)
        blocked = (1.0 - mask)[:, None, None, :] * np.finfo(np.float32).min  # padding gets no attention
        for layer in range(int(self.config["num_hidden_layers"])):
            hidden = self._layer(hidden, blocked, f"encoder.layer.{layer}.")
        return (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)

    def _embeddings(self, token_ids: np.ndarray, types: np.ndarray) -> np.ndarray:
        w = self.weights
        summed = (w["embeddings.word_embeddings.weight"][token_ids]
                  + w["embeddings.position_embeddings.weight"][: token_ids.shape[1]][None]
                  + w["embeddings.token_type_embeddings.weight"][types])
        return self._norm(summed, "embeddings.LayerNorm")

    def _layer(self, hidden: np.ndarray, blocked: np.ndarray, prefix: str) -> np.ndarray:
        batch, length, width = hidden.shape
        heads = int(self.config["num_attention_heads"])

        def split(x: np.ndarray) -> np.ndarray:  # (batch, heads, length, head width)
            return x.reshape(batch, length, heads, width // heads).transpose(0, 2, 1, 3)

        query, key, value = (split(self._linear(hidden, f"{prefix}attention.self.{n}"))
                             for n in ("query", "key", "value"))
        scores = query @ key.transpose(0, 1, 3, 2) / np.float32(np.sqrt(width // heads)) + blocked
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch, length, width)
        hidden = self._norm(self._linear(context, f"{prefix}attention.output.dense") + hidden,
                            f"{prefix}attention.output.LayerNorm")
        inner = _gelu(self._linear(hidden, f"{prefix}intermediate.dense"))
        return self._norm(self._linear(inner, f"{prefix}output.dense") + hidden, f"{prefix}output.LayerNorm")

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        # as one 2-D product: numpy runs a 3-D one batch item by batch item, ~16x slower
        flat = x.reshape(-1, x.shape[-1]) @ self.weights[f"{name}.weight"].T + self.weights[f"{name}.bias"]
        return flat.reshape(*x.shape[:-1], flat.shape[-1])

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        variance = np.square(x - mean).mean(-1, keepdims=True)
        eps = np.float32(self.config.get("layer_norm_eps", 1e-12))
        return (x - mean) / np.sqrt(variance + eps) * self.weights[f"{name}.weight"] + self.weights[f"{name}.bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's GELU, x * Phi(x), with erf from Abramowitz and Stegun 7.1.26 (absolute error under
    1.5e-7, below float32's resolution of the activations; numpy has no erf of its own)."""
    z = np.abs(x) / np.float32(np.sqrt(2.0))
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32, copy=False)


def _max_seq_length(folder: Path, config: dict[str, Any]) -> int:
    """sentence-transformers' limit (sentence_bert_config.json), within the model's positions."""
    try:
        limit = int(_json(folder / "sentence_bert_config.json")["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        limit = int(config["max_position_embeddings"])
    return min(limit, int(config["max_position_embeddings"]))


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
