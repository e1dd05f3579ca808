"""The client address of a request (docs/security.md, "Settings that matter" and "Round 3").

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

Every form a hop takes is read, so that none falls back to the proxy's address: ``192.0.2.1``,
``192.0.2.1:port``, ``2001:db8::1``, ``[2001:db8::1]`` and ``[2001:db8::1]:port``; an
IPv4-mapped IPv6 address is that IPv4 address (for the trusted networks, allowlists and limits
alike); RFC 7239's ``unknown`` and obfuscated identifiers (``_hidden``) name a client whose
address the proxy withholds: the walk stops there and the client is that token, never the
proxy's address (so every such client does not share, and cannot spend, the proxy's budget, and
no allowlist admits it).

:func:`client_key` is the one function that turns a client into the unit limits count
against: an IPv4 address, an IPv6 client's /64 (one subscriber's allocation), or a bounded
token for a client without an address.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_FOR = re.compile(r'(?i)(?:^|;)\s*for="?([^";,]+)')
_BRACKETED = re.compile(r"^\[([^\]]+)\](?::\d{1,5})?$")
# RFC 7239 section 6: "unknown", or an obfuscated identifier ("_" and [A-Za-z0-9._-]).
_WITHHELD = re.compile(r"^(?:unknown|_[A-Za-z0-9._-]{1,63})$", re.IGNORECASE)


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
    """The address a hop names in any of its forms (see the module), None if it names none."""
    text = text.strip()
    bracketed = _BRACKETED.match(text)
    if bracketed:  # [v6] or [v6]:port
        text = bracketed.group(1)
    elif text.count(":") == 1:  # IPv4 with a port
        text = text.split(":", 1)[0]
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped  # ::ffff:192.0.2.1 is that IPv4 client
    return addr


def _withheld(text: str) -> str | None:
    """``unknown`` or an obfuscated identifier, lower-cased; None for anything else."""
    text = text.strip().strip('"')
    return text.lower() if _WITHHELD.match(text) else None


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
        return str(peer_addr) if peer_addr is not None else peer
    client = peer_addr
    for hop in reversed(_hops(get_all(header.lower()), header.lower())):
        addr = _address(hop)
        if addr is None:
            # A trusted proxy withholding the address names the client "unknown" or by an
            # obfuscated token: that is the client. Garbage: stop at the last vouched hop.
            return _withheld(hop) or str(client)
        client = addr
        if not _trusted(addr, networks):
            break
    return str(client)


def client_key(client: str | None) -> str:
    """The unit a per-client limit counts against, the same everywhere (failed
    authentications, the public onboarding pages): an IPv4 address (an IPv4-mapped one
    included), an IPv6 client's /64, or ``unknown`` / an obfuscated token (bounded)."""
    if not client:
        return "unknown"
    addr = _address(client)
    if addr is None:
        return _withheld(client) or "unknown"
    if isinstance(addr, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{addr}/64", strict=False))
    return str(addr)
