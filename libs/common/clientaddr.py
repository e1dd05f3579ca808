"""The client address of a request (contract section 12.3).

Forwarding headers are believed only when the TCP peer is a trusted proxy
(``SLUICE_TRUSTED_PROXIES``, CIDRs, empty by default). Then the chain is read from the right,
skipping trusted hops: the first address not in a trusted network is the client. ``Forwarded``
(RFC 7239) wins over ``X-Forwarded-For`` when both are present. Otherwise the TCP peer is the
client, whatever the headers say. uvicorn's own proxy-header handling is off (it trusts
127.0.0.1 by default), so this is the only place that reads them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_FOR = re.compile(r'(?i)(?:^|;)\s*for="?\[?([^";,\]]+)')


def parse_networks(setting: str) -> tuple[Network, ...]:
    """``10.0.0.0/8, 127.0.0.1`` -> networks; ValueError names a bad entry."""
    out = []
    for entry in (e.strip() for e in setting.split(",")):
        if entry:
            try:
                out.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"SLUICE_TRUSTED_PROXIES: {entry[:64]!r} is not an IP network") from None
    return tuple(out)


def _address(text: str) -> Address | None:
    text = text.strip()
    if text.count(":") == 1:  # IPv4 with a port
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _trusted(addr: Address, networks: tuple[Network, ...]) -> bool:
    return any(addr in n for n in networks)


def _hops(get: Callable[[str], str | None]) -> list[str]:
    forwarded = get("forwarded")
    if forwarded:
        return [m.group(1) for part in forwarded.split(",") if (m := _FOR.search(part.strip()))]
    xff = get("x-forwarded-for")
    return [h for h in (xff or "").split(",") if h.strip()]


def client_address(
    peer: str | None, get: Callable[[str], str | None], networks: tuple[Network, ...]
) -> str | None:
    """The client's address; ``get`` reads a request header by lower-case name."""
    peer_addr = _address(peer) if peer else None
    if peer_addr is None or not networks or not _trusted(peer_addr, networks):
        return peer
    client = peer_addr
    for hop in reversed(_hops(get)):
        addr = _address(hop)
        if addr is None:
            break  # garbage in the chain: stop at the last hop a trusted proxy vouched for
        client = addr
        if not _trusted(addr, networks):
            break
    return str(client)
