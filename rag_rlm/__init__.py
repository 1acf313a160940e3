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
