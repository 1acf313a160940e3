"""The exceptions rag-rlm raises on purpose.

    RagRlmError
    ├── ConfigError        a setting, flag or config file is wrong (names the setting)
    ├── ModelNotFound      a model folder is missing or broken (names the path)
    ├── StoreError         the vector store cannot be reached or refused an operation
    ├── UnknownCollection  a collection that does not exist
    ├── BackendError       a generation backend failed (after retries, where retrying made sense)
    ├── BudgetExceeded     a request ran out of tokens or time; carries what was done
    └── Cancelled          the caller withdrew the request

Anything else escaping the library is a bug in it.
"""

from __future__ import annotations

from typing import Any


class RagRlmError(Exception):
    """Base of every error rag-rlm raises deliberately."""


class ConfigError(RagRlmError):
    def __init__(self, setting: str, reason: str):
        super().__init__(f"{setting}: {reason}")
        self.setting = setting
        self.reason = reason


class ModelNotFound(RagRlmError):
    def __init__(self, path: str, reason: str):
        super().__init__(f"model at {path!r}: {reason}")
        self.path = path


class StoreError(RagRlmError):
    pass


class UnknownCollection(RagRlmError):
    def __init__(self, name: str):
        super().__init__(f"unknown collection {name!r}")
        self.name = name


class BackendError(RagRlmError):
    def __init__(self, message: str, *, transient: bool = False, status: int | None = None):
        super().__init__(message)
        self.transient = transient
        self.status = status


class BudgetExceeded(RagRlmError):
    def __init__(self, message: str, partial_answer: Any = None):
        super().__init__(message)
        self.partial_answer = partial_answer


class Cancelled(RagRlmError):
    """The caller withdrew the request (e.g. an HTTP client disconnected)."""
