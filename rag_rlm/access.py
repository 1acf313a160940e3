"""Access groups: which documents a caller may read.

A document carries zero or more access groups; none means everyone in the tenant reads it. A
caller reads the documents without groups and those sharing one of its own groups; a caller with
`everything` (no API keys configured: the open server, the CLI, the Python API by default) reads
all. An API key names its tenant and groups as `tenant[:group|group...]`
(`RAG_RLM_API_KEYS=key1=acme:hr|finance,key2=acme`); a key without groups reads only documents
without groups, and a group no document carries simply matches nothing.

The check runs where the data is read: the stores filter inside their search query (pgvector:
a `groups` text[] column on every chunk row; Qdrant: a payload filter), and the catalog reads
(document list, text, delete, traces, memo keys) go through `Access.allows` / `covers` / `key`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAX_GROUP_CHARS = 63
KEY_GROUPS_SEP = "|"  # between the groups of an API key's spec: "acme:hr|finance"


class GroupError(ValueError):
    """A malformed group name or key spec; the message names the offending value."""


def validate_group(name: str) -> str:
    if not (isinstance(name, str) and 0 < len(name) <= MAX_GROUP_CHARS and name.isascii()
            and all(c.isalnum() or c in "-_" for c in name)):
        raise GroupError(f"group names are letters, digits, '-' or '_' (1-{MAX_GROUP_CHARS} chars), got {name!r}")
    return name


def normalise_groups(groups: Iterable[str]) -> tuple[str, ...]:
    """Validated, each once, sorted: the form stored and compared."""
    if isinstance(groups, str):  # a bare string would be read letter by letter
        raise GroupError(f"expected a list of group names, got the string {groups!r}")
    return tuple(sorted({validate_group(g) for g in groups}))


def parse_groups(text: str, sep: str = ",") -> tuple[str, ...]:
    """`hr,finance` (a CLI flag, a form field) as normalised groups; "" is no groups. An empty
    item ("hr,,finance") is an error: it is a typo, not a group."""
    text = text.strip()
    if not text:
        return ()
    return normalise_groups(item.strip() for item in text.split(sep))


@dataclass(frozen=True)
class Access:
    """What one caller reads: documents without groups and those sharing one of `groups`, or,
    with `everything`, every document."""

    groups: frozenset[str] = frozenset()
    everything: bool = False

    @classmethod
    def of(cls, groups: Iterable[str]) -> Access:
        return cls(frozenset(normalise_groups(groups)))

    def allows(self, document_groups: Iterable[str]) -> bool:
        """Whether a document with these groups is readable."""
        if self.everything:
            return True
        wanted = tuple(document_groups)
        return not wanted or not self.groups.isdisjoint(wanted)

    def covers(self, other: Access) -> bool:
        """Whether this caller reads everything `other` reads (a trace made for `other` may be
        shown to it)."""
        return self.everything or (not other.everything and other.groups <= self.groups)

    @property
    def store_filter(self) -> tuple[str, ...] | None:
        """What a store's `search(groups=...)` takes: None reads every document."""
        return None if self.everything else tuple(sorted(self.groups))

    @property
    def key(self) -> str:
        """A stable text for cache keys: answers built for one access set serve only the same."""
        return "*" if self.everything else KEY_GROUPS_SEP.join(sorted(self.groups))

    def to_dict(self) -> dict[str, Any]:
        return {"everything": self.everything, "groups": sorted(self.groups)}

    @classmethod
    def from_dict(cls, data: Any) -> Access:
        """The inverse of `to_dict`; anything unreadable (a record from before access groups)
        is `everything`, which only an unrestricted caller covers."""
        if not isinstance(data, dict) or data.get("everything", True) is not False:
            return EVERYTHING
        return cls(frozenset(str(g) for g in data.get("groups") or ()))


EVERYTHING = Access(everything=True)


def parse_key_spec(spec: str) -> tuple[str, Access]:
    """An API key's value, `tenant` or `tenant:group|group`, as (tenant, access). The tenant is
    checked by the settings (its alphabet is theirs); groups here."""
    tenant, sep, groups = spec.strip().partition(":")
    tenant = tenant.strip()
    if not sep:
        return tenant, Access()
    if not groups.strip():
        raise GroupError(f"{spec!r}: expected tenant:group|group after ':', got no groups")
    try:
        return tenant, Access(frozenset(parse_groups(groups, KEY_GROUPS_SEP)))
    except GroupError as e:
        raise GroupError(f"{spec!r}: {e}") from None
