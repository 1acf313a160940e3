"""Who sees what in a report: one predicate over document records, built from the caller.

A maintainer sees a question or a rated answer only when they could read every document it
cites (tenants are apart already: a report reads one collection of the caller's own tenant).
A document with no access groups is everyone's in its tenant; one with groups is readable by
a caller holding one of them (`rag_rlm.access.Access.allows`, the rule every read path uses).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..types import DocumentRecord

CanRead = Callable[[DocumentRecord], bool]


def readable_by(caller: Any) -> CanRead:
    """`can_read(record)` for an HTTP caller; None (the operator, on the command line) reads all."""
    if caller is None:
        return lambda record: True
    return lambda record: caller.access.allows(record.groups)


def sees(cited: tuple[str, ...], documents: Mapping[str, DocumentRecord], can_read: CanRead) -> bool:
    """Whether an entry citing `cited` may be shown: every cited document is still there and
    readable (a deleted one's groups are unknown, so an entry citing it is not shown)."""
    return all(d in documents and can_read(documents[d]) for d in cited)
