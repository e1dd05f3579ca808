"""The client address of a request (contract sections 12.3 and 13.2).

Forwarding headers are believed only when the TCP peer is a trusted proxy
(``SLUICE_TRUSTED_PROXIES``, CIDRs, empty by default), and only the one header those proxies
set (``SLUICE_CLIENT_IP_HEADER``: ``X-Forwarded-For`` by default, ``X-Real-IP`` or
``Forwarded``): every other forwarding header is ignored, whatever it says, so a client cannot
pick its address by sending the header the proxy does not write. Several lines of that header
count as one list in order (a proxy that appends adds a line or an element, and reading only
the first line would read the client's own). The chain is read from the right, skipping
trusted hops: the rightmost address not in a trusted network is the client. A hop that is not
an address ends the walk at the last hop a trusted proxy vouched for. Otherwise the TCP peer is
the client. uvicorn's own proxy-header handling is off (it trusts 127.0.0.1 by default), so
this is the only place that reads them.
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


CLIENT_IP_HEADERS = ("x-forwarded-for", "x-real-ip", "forwarded")


def _hops(lines: list[str], header: str) -> list[str]:
    """The hops of every line of ``header``, left to right."""
    joined = ",".join(lines)
    if header == "forwarded":  # RFC 7239: for= of each element; an element without one is garbage
        return [m.group(1) if (m := _FOR.search(part.strip())) else "" for part in joined.split(",")]
    return [h for h in joined.split(",") if h.strip()]


def client_address(
    peer: str | None,
    get_all: Callable[[str], list[str]],
    networks: tuple[Network, ...],
    header: str = "x-forwarded-for",
) -> str | None:
    """The client's address; ``get_all`` reads every line of a request header by lower-case
    name; ``header`` is the one the trusted proxies set."""
    peer_addr = _address(peer) if peer else None
    if peer_addr is None or not networks or not _trusted(peer_addr, networks):
        return peer
    client = peer_addr
    for hop in reversed(_hops(get_all(header.lower()), header.lower())):
        addr = _address(hop)
        if addr is None:
            break  # garbage in the chain: stop at the last hop a trusted proxy vouched for
        client = addr
        if not _trusted(addr, networks):
            break
    return str(client)
