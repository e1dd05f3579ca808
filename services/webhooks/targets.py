"""Endpoint URL vetting against SSRF, at registration and again before every attempt.

A target is refused unless it is ``https`` and every address its host resolves to is globally
routable unicast by the IANA special-purpose registries (``webhooks.special``): not loopback,
private, link-local, site-local, metadata, CGNAT, NAT64, documentation, multicast, reserved or
unspecified, and for IPv6 inside 2000::/3, whatever the platform's ``is_global`` says.
Delivery connects to the vetted address itself (the ``Host`` header and TLS SNI keep the
name), so a DNS answer that changes between the check and the connection (rebinding) is
never followed. ``allow_private`` (development and tests) permits ``http`` and local hosts.

Names are resolved by a :class:`Resolver`: the system's (``getaddrinfo``: /etc/hosts, then the
nameservers of /etc/resolv.conf) unless the caller gives another. The seam exists so that the
rebinding tests can answer from a real DNS server of their own (tests/support/dns.py) without
changing the machine's configuration; what is checked is the same either way (docs/security.md,
"Webhook targets: what is checked when").
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from webhooks.special import is_global_unicast

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT_S = 5.0

# Cloud metadata addresses, named although every one lies in a special-purpose block.
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("169.254.170.2"),
    ipaddress.ip_address("100.100.100.200"),
    ipaddress.ip_address("fd00:ec2::254"),
}


class TargetError(Exception):
    """A refused target; ``reason`` is the machine-readable ``details.reason``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True, slots=True)
class Target:
    url: str
    scheme: str
    host: str  # name or literal, without brackets
    port: int
    addresses: tuple[str, ...]  # vetted, in resolver order

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == default else f"{name}:{self.port}"


def is_public(ip: IPAddress) -> bool:
    """Globally routable unicast by the IANA special-purpose registries (``webhooks.special``).

    IPv4-mapped, 6to4, Teredo and NAT64 addresses are refused whole (their blocks are in the
    IPv6 registry) rather than judged by the IPv4 address they embed.
    """
    return ip not in _METADATA and is_global_unicast(ip)


def _is_public_text(addr: str) -> bool:
    """``is_public`` of a resolver's answer; one that is not an address is not public."""
    try:
        return is_public(ipaddress.ip_address(addr))
    except ValueError:
        return False


def parse(url: str, allow_private: bool) -> tuple[str, str, int]:
    """(scheme, host, port) of an acceptable URL, else :class:`TargetError`."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise TargetError("invalid_url", f"endpoint_url must be a URL of at most {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise TargetError("invalid_url", "endpoint_url is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise TargetError("invalid_url", "endpoint_url must be an http(s) URL")
    if scheme != "https" and not allow_private:
        raise TargetError("https_required", "endpoint_url must use https")
    if parts.username is not None or parts.password is not None:
        raise TargetError("invalid_url", "endpoint_url must not carry credentials")
    host = (parts.hostname or "").rstrip(".")
    if not host or any(c.isspace() for c in url):
        raise TargetError("invalid_url", "endpoint_url must name a host")
    return scheme, host, port or (443 if scheme == "https" else 80)


class Resolver(Protocol):
    """Every address (A and AAAA) a host name has now, as text; ``OSError`` if none."""

    async def addresses(self, host: str, port: int) -> list[str]: ...


class SystemResolver:
    """The running loop's ``getaddrinfo``, both families: what the operating system answers."""

    async def addresses(self, host: str, port: int) -> list[str]:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return [str(info[4][0]) for info in infos]


SYSTEM = SystemResolver()


async def _resolve(host: str, port: int, resolver: Resolver) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT_S):
            answers = await resolver.addresses(host, port)
    except (OSError, TimeoutError):
        raise TargetError("unresolvable_host", "endpoint_url's host does not resolve") from None
    seen: list[str] = []
    for answer in answers:
        addr = answer.split("%", 1)[0]  # an IPv6 zone names our interface, not the host
        if addr not in seen:
            seen.append(addr)
    if not seen:
        raise TargetError("unresolvable_host", "endpoint_url's host does not resolve")
    return seen


async def vet(url: str, allow_private: bool, resolver: Resolver = SYSTEM) -> Target:
    """Parse, resolve and vet; refuses if any resolved address is not public (one private
    answer among public ones is enough: the connection may go to any of them)."""
    scheme, host, port = parse(url, allow_private)
    addresses = await _resolve(host, port, resolver)
    if not allow_private:
        for addr in addresses:
            if not _is_public_text(addr):
                raise TargetError(
                    "private_target",
                    "endpoint_url resolves to a loopback, private, link-local or metadata address",
                )
    return Target(url, scheme, host, port, tuple(addresses))
