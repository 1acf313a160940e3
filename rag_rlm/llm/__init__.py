"""Text generation backends, opened by a URL-like setting.

    local:PATH                a transformers causal LM folder (4-bit/8-bit/none per settings)
    PATH                      the same, when PATH is an existing folder
    openai+http://HOST/v1     any OpenAI-compatible server (vLLM, llama.cpp, Ollama, TGI)
    openai+https://HOST/v1
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..config import Settings
from ..errors import ConfigError
from .base import LLM, Generation, Message, Prompt

__all__ = ["LLM", "Generation", "Message", "Prompt", "open_llm", "SCHEMES"]


def _open_local(url: str, settings: Settings) -> LLM:
    from .local import LocalLLM

    return LocalLLM.from_url(url, settings)


def _open_openai(url: str, settings: Settings) -> LLM:
    from .openai import OpenAILLM

    return OpenAILLM.from_url(url, settings)


SCHEMES: dict[str, Callable[[str, Settings], LLM]] = {
    "local": _open_local,
    "openai+http": _open_openai,
    "openai+https": _open_openai,
}


def open_llm(url: str, settings: Settings) -> LLM:
    if "://" in url:
        scheme = url.split("://", 1)[0]
    elif url.startswith("local:"):
        scheme = "local"
    elif Path(url).is_dir():
        return _open_local("local:" + url, settings)
    else:
        scheme = ""
    opener = SCHEMES.get(scheme)
    if opener is None:
        raise ConfigError(
            "llm",
            f"unknown backend {url!r}; use local:PATH (a model folder) or openai+http://HOST:PORT/v1",
        )
    return opener(url, settings)
