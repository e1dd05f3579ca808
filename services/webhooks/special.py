"""The IANA special-purpose address registries, as the webhook target check reads them.

A webhook target must be a globally routable unicast address (docs/guides/webhooks.md,
"Register an endpoint"): an IPv4 address outside every block below and outside multicast, an
IPv6 address inside 2000::/3 (global unicast) and outside every block below. The decision rests
on this table, not on the platform's ``is_global`` (Python 3.11 calls site-local fec0::/10
global, and its tables move between versions). Blocks the registries mark "globally reachable"
(AS112, AMT, 6to4 relays) are refused too: none of them is where a partner's webhook endpoint
lives.

Sources: https://www.iana.org/assignments/iana-ipv4-special-registry and
https://www.iana.org/assignments/iana-ipv6-special-registry, each row with its RFC.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple


class Block(NamedTuple):
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    name: str
    rfc: str


def _blocks(rows: tuple[tuple[str, str, str], ...]) -> tuple[Block, ...]:
    return tuple(Block(ipaddress.ip_network(net), name, rfc) for net, name, rfc in rows)


IPV4_SPECIAL = _blocks(
    (
        ("0.0.0.0/8", "This network", "RFC 791"),
        ("0.0.0.0/32", "This host on this network", "RFC 1122"),
        ("10.0.0.0/8", "Private-Use", "RFC 1918"),
        ("100.64.0.0/10", "Shared Address Space", "RFC 6598"),
        ("127.0.0.0/8", "Loopback", "RFC 1122"),
        ("169.254.0.0/16", "Link Local", "RFC 3927"),
        ("172.16.0.0/12", "Private-Use", "RFC 1918"),
        ("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890"),
        ("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335"),
        ("192.0.0.8/32", "IPv4 dummy address", "RFC 7600"),
        ("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723"),
        ("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155"),
        ("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880"),
        ("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880"),
        ("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737"),
        ("192.31.196.0/24", "AS112-v4", "RFC 7535"),
        ("192.52.193.0/24", "AMT", "RFC 7450"),
        ("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526"),
        ("192.88.99.2/32", "6a44-relay anycast address", "RFC 6751"),
        ("192.168.0.0/16", "Private-Use", "RFC 1918"),
        ("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534"),
        ("198.18.0.0/15", "Benchmarking", "RFC 2544"),
        ("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737"),
        ("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737"),
        ("240.0.0.0/4", "Reserved", "RFC 1112"),
        ("255.255.255.255/32", "Limited Broadcast", "RFC 919"),
    )
)

IPV6_SPECIAL = _blocks(
    (
        ("::1/128", "Loopback Address", "RFC 4291"),
        ("::/128", "Unspecified Address", "RFC 4291"),
        ("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291"),
        ("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052"),
        ("64:ff9b:1::/48", "IPv4-IPv6 Translat.", "RFC 8215"),
        ("100::/64", "Discard-Only Address Block", "RFC 6666"),
        ("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780"),
        ("2001::/23", "IETF Protocol Assignments", "RFC 2928"),
        ("2001::/32", "TEREDO", "RFC 4380"),
        ("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723"),
        ("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155"),
        ("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665"),
        ("2001:2::/48", "Benchmarking", "RFC 5180"),
        ("2001:3::/32", "AMT", "RFC 7450"),
        ("2001:4:112::/48", "AS112-v6", "RFC 7535"),
        ("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843"),
        ("2001:20::/28", "ORCHIDv2", "RFC 7343"),
        ("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374"),
        ("2001:db8::/32", "Documentation", "RFC 3849"),
        ("2002::/16", "6to4", "RFC 3056"),
        ("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534"),
        ("3fff::/20", "Documentation", "RFC 9637"),
        ("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602"),
        ("fc00::/7", "Unique-Local", "RFC 4193"),
        ("fe80::/10", "Link-Local Unicast", "RFC 4291"),
    )
)

# Not special-purpose blocks but not unicast either; named so the refusal says why.
IPV4_MULTICAST = ipaddress.IPv4Network("224.0.0.0/4")  # RFC 5771
# RFC 4291 section 2.4; site-local fec0::/10 and multicast ff00::/8 lie outside it.
IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")


def special_block(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> Block | None:
    """The registry block ``ip`` lies in, if any (the most specific one)."""
    table = IPV4_SPECIAL if isinstance(ip, ipaddress.IPv4Address) else IPV6_SPECIAL
    found = [block for block in table if ip in block.network]
    return max(found, key=lambda b: b.network.prefixlen) if found else None


def is_global_unicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Globally routable unicast by the registries above, whatever ``ip.is_global`` says."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip not in IPV4_MULTICAST and special_block(ip) is None
    return ip in IPV6_GLOBAL_UNICAST and special_block(ip) is None
