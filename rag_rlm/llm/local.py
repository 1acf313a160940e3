"""A transformers causal LM loaded from a folder: batched, greedy, optionally 4-bit or 8-bit.

Weights are never downloaded: the folder must hold config.json, the tokenizer files and the
weights (see models/README.md). torch and transformers are imported in the constructor so that
the rest of rag-rlm imports without them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import BackendError, ModelNotFound
from .base import Generation, Prompt

QUANTIZATIONS = ("4bit", "8bit", "none")
_WHERE = "put a model folder (config.json, tokenizer, *.safetensors) under models/; see models/README.md"
_INSTALL_HINT = "the local backend needs torch, transformers, accelerate and bitsandbytes: pip install rag-rlm"


class LocalLLM:
    """A model folder on this machine. `generate` is thread-safe (one batch at a time)."""

    def __init__(self, path: str | Path, *, quantization: str = "4bit", device: str | None = None) -> None:
        try:
            import torch
            import transformers
        except ImportError as e:  # pragma: no cover - the dependencies are declared
            raise ImportError(f"{_INSTALL_HINT} ({e})") from e
        if quantization not in QUANTIZATIONS:
            raise ValueError(f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}")
        self.path = Path(path)
        self.quantization = quantization
        _check_folder(self.path)
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._tokenizer = _load_tokenizer(transformers, self.path)
        self._model = _load_model(transformers, torch, self.path, quantization, self.device)
        self._eos_ids = _eos_ids(self._tokenizer, self._model)
        self._lock = threading.Lock()
        # A fast tokenizer sets its padding on the shared Rust object at every call, so a count
        # (unpadded) beside a batch (padded) breaks the batch: every encode takes this lock.
        self._encode_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, settings: Settings) -> LocalLLM:
        """`local:PATH` (relative paths are taken from the working directory) or a bare PATH."""
        path = url.removeprefix("local:")
        return cls(Path(path).expanduser(), quantization=settings.llm_quantization)

    @property
    def model(self) -> Any:
        """The loaded transformers model (for inspection: dtype, quantised layers)."""
        return self._model

    def render(self, prompt: Prompt) -> str:
        """The prompt as the model sees it: its chat template, or plain "role: content" lines."""
        messages = [dict(m) for m in prompt]
        if getattr(self._tokenizer, "chat_template", None):
            return self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        lines = [f"{m['role']}: {m['content']}" for m in messages]
        return "\n".join(lines) + "\nassistant:"

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self._encode_one(self.render(prompt)))

    def generate(
        self, prompts: Sequence[Prompt], max_new_tokens: int, *, min_new_tokens: int = 0
    ) -> list[Generation]:
        """One batched, greedy `generate` for all prompts (left-padded). `min_new_tokens` keeps
        the end-of-sequence token away for that many steps (benchmarks use it for equal work)."""
        if not prompts:
            return []
        if max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens must be > 0, got {max_new_tokens}")
        texts = [self.render(p) for p in prompts]
        results: list[Generation | None] = [self._too_long(t, max_new_tokens) for t in texts]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            for i, result in zip(todo, self._batch([texts[i] for i in todo], max_new_tokens, min_new_tokens),
                                 strict=True):
                results[i] = result
        return [r for r in results if r is not None]

    # -- internals ---------------------------------------------------------------------------

    def _too_long(self, text: str, max_new_tokens: int) -> Generation | None:
        """An error for a prompt the model cannot take (positions beyond its context), else None."""
        limit = getattr(self._model.config, "max_position_embeddings", None)
        n = len(self._encode_one(text))
        if limit and n + max_new_tokens > limit:
            msg = f"prompt of {n} tokens + {max_new_tokens} new exceeds the model's context of {limit}"
            return Generation(tokens_in=0, error=BackendError(msg))
        return None

    def _batch(self, texts: list[str], max_new_tokens: int, min_new_tokens: int) -> list[Generation]:
        with self._lock:
            try:
                out, lengths, width = self._run(texts, max_new_tokens, min(min_new_tokens, max_new_tokens))
            except self._torch.cuda.OutOfMemoryError as e:
                # the batch did not fit this time; a smaller one later may
                err = BackendError(f"out of GPU memory for a batch of {len(texts)}: {e}", transient=True)
                return [Generation(error=err) for _ in texts]
        return [self._result(row[width:], n_in) for row, n_in in zip(out, lengths, strict=True)]

    def _encode_one(self, text: str) -> list[int]:
        # a chat template writes its own BOS; the plain rendering needs the tokenizer's
        add_special = not getattr(self._tokenizer, "chat_template", None)
        with self._encode_lock:
            return self._tokenizer(text, add_special_tokens=add_special)["input_ids"]

    def _run(self, texts: list[str], max_new_tokens: int, min_new_tokens: int) -> tuple[Any, list[int], int]:
        add_special = not getattr(self._tokenizer, "chat_template", None)
        with self._encode_lock:
            enc = self._tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=add_special)
        enc = {k: v.to(self._model.device) for k, v in enc.items()}
        lengths = [int(n) for n in enc["attention_mask"].sum(dim=1)]  # prompt tokens without padding
        with self._torch.inference_mode():
            out = self._model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                min_new_tokens=min_new_tokens,
                do_sample=False,
                temperature=None,  # greedy: drop sampling knobs a model's generation_config may set
                top_p=None,
                top_k=None,
                pad_token_id=self._tokenizer.pad_token_id,
                eos_token_id=sorted(self._eos_ids) or None,
            )
        return out.tolist(), lengths, enc["input_ids"].shape[1]

    def _result(self, new_ids: list[int], tokens_in: int) -> Generation:
        # after a row's first EOS the batch keeps going with padding: that is not this prompt's
        end = next((i for i, t in enumerate(new_ids) if t in self._eos_ids), None)
        kept = new_ids if end is None else new_ids[:end]
        tokens_out = len(new_ids) if end is None else end + 1  # the EOS was generated, so it counts
        text = self._tokenizer.decode(kept, skip_special_tokens=True)
        return Generation(text=text, tokens_in=tokens_in, tokens_out=tokens_out)


def _check_folder(path: Path) -> None:
    if not path.exists():
        raise ModelNotFound(str(path), f"no such folder; {_WHERE}")
    if not path.is_dir():
        raise ModelNotFound(str(path), f"not a folder; {_WHERE}")
    if not (path / "config.json").is_file():
        raise ModelNotFound(str(path), f"no config.json in the folder; {_WHERE}")


def _load_tokenizer(transformers: Any, path: Path) -> Any:
    try:
        tok = transformers.AutoTokenizer.from_pretrained(str(path), padding_side="left", local_files_only=True)
    except Exception as e:  # transformers raises OSError, ValueError, KeyError... for a broken folder
        raise ModelNotFound(str(path), f"cannot load its tokenizer ({type(e).__name__}: {e}); {_WHERE}") from e
    tok.padding_side = "left"  # decoder-only batches must end where generation starts
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def _load_model(transformers: Any, torch: Any, path: Path, quantization: str, device: str) -> Any:
    on_gpu = device.startswith("cuda")
    # bf16 where the GPU has it; float32 on CPU, where half-precision matmuls are slow or missing
    dtype = (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16) if on_gpu else torch.float32
    kwargs: dict[str, Any] = {"dtype": dtype, "device_map": "auto" if on_gpu else device, "local_files_only": True}
    if quantization == "4bit":
        kwargs["quantization_config"] = transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype
        )
    elif quantization == "8bit":
        kwargs["quantization_config"] = transformers.BitsAndBytesConfig(load_in_8bit=True)
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    except ImportError:
        raise
    except Exception as e:  # missing/corrupt weights, unknown architecture, bad config
        raise ModelNotFound(str(path), f"cannot load the model ({type(e).__name__}: {e}); {_WHERE}") from e
    model.eval()
    return model


def _eos_ids(tokenizer: Any, model: Any) -> set[int]:
    ids: set[int] = set()
    for source in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(source, int):
            ids.add(source)
        elif source:
            ids.update(int(i) for i in source)
    return ids
