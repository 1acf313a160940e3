"""The reader: a cross-encoder trained here that judges whether a sentence answers a question."""

from .model import Reader, load_reader, shipped_judge_path, shipped_reader_path

__all__ = ["Reader", "load_reader", "shipped_judge_path", "shipped_reader_path"]
