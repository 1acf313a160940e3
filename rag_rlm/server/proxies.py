"""The client address behind trusted reverse proxies.

The auth-failure limiter and the per-address rate limit count by the client's address. Behind a
reverse proxy (the compose file's nginx, a cloud load balancer) every request comes from the
proxy, so all clients would share one budget; yet `X-Forwarded-For` says whatever the client
wrote unless a proxy we trust wrote it. So the header counts only when the direct peer is in
`trusted_proxies` (addresses or CIDR networks), and the client is the right-most address in it
that is not itself a trusted proxy: each proxy appends the address it got the request from, so
what lies left of the first untrusted hop may be forged. `ForwardedFor` puts that address in the
ASGI scope's `client`, where everything else (limits, logs) reads it. `serve` turns uvicorn's own
handling off (it trusts 127.0.0.1 by default), so this setting alone decides.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from litestar.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def trusted_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """The `trusted_proxies` setting (checked when settings load) as networks."""
    return tuple(ipaddress.ip_network(v) for v in values)


def client_address(peer: str, forwarded: Iterable[str], trusted: Sequence[Network]) -> str:
    """The address the limits count: `peer`, or, when `peer` is a trusted proxy, the right-most
    address of the X-Forwarded-For values that is not (all of them trusted: the left-most). A hop
    that is not an address ends the walk at the last one that was."""
    address = _address(peer)
    if address is None or not _trusted(address, trusted):
        return peer
    hops = [hop.strip() for value in forwarded for hop in value.split(",")]
    for hop in reversed([h for h in hops if h]):
        found = _address(hop)
        if found is None:
            break
        address = found
        if not _trusted(found, trusted):
            break
    return str(address)


class ForwardedFor:
    """ASGI middleware: the scope's client becomes `client_address` of the request."""

    def __init__(self, app: ASGIApp, trusted: Sequence[Network]):
        self.app = app
        self.trusted = tuple(trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if self.trusted and client and scope["type"] in ("http", "websocket"):
            forwarded = [v.decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-for"]
            if forwarded:
                address = client_address(client[0], forwarded, self.trusted)
                if address != client[0]:
                    scope["client"] = (address, 0)
        await self.app(scope, receive, send)


def _address(text: str) -> Address | None:
    """An address as a header or a socket gives it: bare, `[v6]:port`, `v4:port`; IPv4-mapped
    IPv6 (a dual-stack socket's view of an IPv4 peer) as the IPv4 address."""
    text = text.strip()
    if text.startswith("[") and "]" in text:
        text = text[1:text.index("]")]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: Address, trusted: Sequence[Network]) -> bool:
    return any(address in network for network in trusted)
