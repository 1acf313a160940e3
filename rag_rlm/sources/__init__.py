"""Sources: a collection kept in sync with a folder, a Git repository or a web site."""

from .base import KINDS, Item, ItemFailure, Known, SourceError, SourceReader, SourceSpec

__all__ = ["KINDS", "Item", "ItemFailure", "Known", "SourceError", "SourceReader", "SourceSpec"]
