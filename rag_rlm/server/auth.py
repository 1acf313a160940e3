"""API keys -> tenants and access groups, and the collection namespace of each tenant.

With no keys configured, auth is off (the loopback default) and collection names are used as
they are. With keys, every /v1 request needs `Authorization: Bearer KEY`; the key's tenant sees
only collections stored as `{tenant}__{name}`, so no endpoint can name another tenant's data:
whatever name a caller sends is always prefixed with its own tenant. A key may also name access
groups (`tenant:hr|finance`, rag_rlm.access): its caller reads the documents without groups and
those sharing one of its groups; with auth off, a caller reads everything.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any

from litestar import Request

from ..access import EVERYTHING, Access, parse_key_spec
from ..config import MAX_NAME_CHARS, validate_collection_name
from ..errors import ConfigError
from .errors import ApiError

SEP = "__"


@dataclass(frozen=True)
class Caller:
    tenant: str | None  # None: auth is off, names are used as they are
    rate_key: str  # what the rate limit counts against
    access: Access = EVERYTHING  # the documents it reads

    def stored(self, name: str) -> str:
        """The stored collection name for a name this caller sent (validated: it ends up in SQL
        identifiers and URLs)."""
        validate_collection_name(name)
        if self.tenant is None:
            return name
        if SEP in name:  # "a__b" of tenant "x" must not collide with "b" of tenant "x__a"
            raise ConfigError("collection", f"must not contain {SEP!r}, got {name!r}")
        longest = MAX_NAME_CHARS - len(self.tenant) - len(SEP)
        if len(name) > longest:  # said in the caller's terms: the stored name is not theirs to see
            raise ConfigError("collection", f"must be at most {longest} characters, got {name!r}")
        return f"{self.tenant}{SEP}{name}"

    def owns(self, stored: str) -> bool:
        # tenants hold no '_' (checked when settings load), so the first SEP ends the owner
        owner, sep, _ = stored.partition(SEP)
        return self.tenant is None or (bool(sep) and owner == self.tenant)

    def public(self, stored: str) -> str:
        if self.tenant is None:
            return stored
        return stored.removeprefix(f"{self.tenant}{SEP}")


def authenticate(request: Request[Any, Any, Any], api_keys: dict[str, str]) -> Caller:
    if not api_keys:
        client = request.client.host if request.client else "unknown"
        return Caller(tenant=None, rate_key=f"ip:{client}")
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "unauthorized", "missing API key: send Authorization: Bearer KEY",
                       field="Authorization", headers={"WWW-Authenticate": "Bearer"})
    spec = _lookup(key.strip(), api_keys)
    if spec is None:
        raise ApiError(401, "unauthorized", "invalid API key", field="Authorization",
                       headers={"WWW-Authenticate": "Bearer"})
    tenant, access = parse_key_spec(spec)  # checked when the settings loaded
    return Caller(tenant=tenant, rate_key=f"tenant:{tenant}", access=access)


def _lookup(key: str, api_keys: dict[str, str]) -> str | None:
    found = None
    for known, spec in api_keys.items():  # compare against every key: no timing hint
        if hmac.compare_digest(known.encode(), key.encode()):
            found = spec
    return found
