"""rag-rlm: retrieval-augmented, recursive question answering over your documents."""

from .config import Settings
from .errors import (
    BackendError,
    BudgetExceeded,
    ConfigError,
    ModelNotFound,
    RagRlmError,
    StoreError,
    UnknownCollection,
)

__version__ = "0.1.0"

__all__ = [
    "Assistant",
    "BackendError",
    "BudgetExceeded",
    "ConfigError",
    "ModelNotFound",
    "RagRlmError",
    "Settings",
    "StoreError",
    "UnknownCollection",
    "__version__",
]


def __getattr__(name: str) -> object:
    """`Assistant` on first use: it brings the store and reasoning code, which `import rag_rlm`
    (every command line starts with it) must not pay for."""
    if name == "Assistant":
        from .assistant import Assistant

        return Assistant
    raise AttributeError(f"module 'rag_rlm' has no attribute {name!r}")
