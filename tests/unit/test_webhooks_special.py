"""Webhook targets against the IANA special-purpose registries (docs/security.md, "Webhook
targets").

Each registry row is named here by one address inside it (an independent copy of the registry,
so a row dropped from ``webhooks.special`` fails), and every block of the code's table is
checked at both ends. The refusal must not rest on Python's ``is_global``: every test also runs
with ``is_global`` forced to True.
"""

from __future__ import annotations

import ipaddress

import pytest

from webhooks.special import IPV4_SPECIAL, IPV6_SPECIAL, is_global_unicast, special_block
from webhooks.targets import is_public

pytestmark = pytest.mark.unit

# (an address inside the row, the row's block, its RFC): one per registry row, copied from
# iana-ipv4-special-registry and iana-ipv6-special-registry.
REGISTRY_ROWS = [
    ("0.1.2.3", "0.0.0.0/8", "RFC 791"),
    ("0.0.0.0", "0.0.0.0/32", "RFC 1122"),
    ("10.20.30.40", "10.0.0.0/8", "RFC 1918"),
    ("100.127.255.254", "100.64.0.0/10", "RFC 6598"),
    ("127.0.0.2", "127.0.0.0/8", "RFC 1122"),
    ("169.254.3.4", "169.254.0.0/16", "RFC 3927"),
    ("172.31.0.1", "172.16.0.0/12", "RFC 1918"),
    ("192.0.0.200", "192.0.0.0/24", "RFC 6890"),
    ("192.0.0.5", "192.0.0.0/29", "RFC 7335"),
    ("192.0.0.8", "192.0.0.8/32", "RFC 7600"),
    ("192.0.0.9", "192.0.0.9/32", "RFC 7723"),
    ("192.0.0.10", "192.0.0.10/32", "RFC 8155"),
    ("192.0.0.170", "192.0.0.170/32", "RFC 8880"),
    ("192.0.0.171", "192.0.0.171/32", "RFC 8880"),
    ("192.0.2.7", "192.0.2.0/24", "RFC 5737"),
    ("192.31.196.1", "192.31.196.0/24", "RFC 7535"),
    ("192.52.193.1", "192.52.193.0/24", "RFC 7450"),
    ("192.88.99.1", "192.88.99.0/24", "RFC 7526"),
    ("192.88.99.2", "192.88.99.2/32", "RFC 6751"),
    ("192.168.1.20", "192.168.0.0/16", "RFC 1918"),
    ("192.175.48.6", "192.175.48.0/24", "RFC 7534"),
    ("198.19.0.1", "198.18.0.0/15", "RFC 2544"),
    ("198.51.100.7", "198.51.100.0/24", "RFC 5737"),
    ("203.0.113.9", "203.0.113.0/24", "RFC 5737"),
    ("250.1.2.3", "240.0.0.0/4", "RFC 1112"),
    ("255.255.255.255", "255.255.255.255/32", "RFC 919"),
    ("::1", "::1/128", "RFC 4291"),
    ("::", "::/128", "RFC 4291"),
    ("::ffff:8.8.8.8", "::ffff:0:0/96", "RFC 4291"),
    ("64:ff9b::808:808", "64:ff9b::/96", "RFC 6052"),
    ("64:ff9b:1::c0a8:1", "64:ff9b:1::/48", "RFC 8215"),
    ("100::1", "100::/64", "RFC 6666"),
    ("100:0:0:1::1", "100:0:0:1::/64", "RFC 9780"),
    ("2001:100::1", "2001::/23", "RFC 2928"),
    ("2001:0:4136:e378::1", "2001::/32", "RFC 4380"),
    ("2001:1::1", "2001:1::1/128", "RFC 7723"),
    ("2001:1::2", "2001:1::2/128", "RFC 8155"),
    ("2001:1::3", "2001:1::3/128", "RFC 9665"),
    ("2001:2::5", "2001:2::/48", "RFC 5180"),
    ("2001:3::1", "2001:3::/32", "RFC 7450"),
    ("2001:4:112::1", "2001:4:112::/48", "RFC 7535"),
    ("2001:10::1", "2001:10::/28", "RFC 4843"),
    ("2001:20::1", "2001:20::/28", "RFC 7343"),
    ("2001:30::1", "2001:30::/28", "RFC 9374"),
    ("2001:db8::1", "2001:db8::/32", "RFC 3849"),
    ("2002:808:808::1", "2002::/16", "RFC 3056"),
    ("2620:4f:8000::1", "2620:4f:8000::/48", "RFC 7534"),
    ("3fff:fff::1", "3fff::/20", "RFC 9637"),
    ("5f00::1", "5f00::/16", "RFC 9602"),
    ("fd12:3456::1", "fc00::/7", "RFC 4193"),
    ("fe80::1", "fe80::/10", "RFC 4291"),
]

# Outside both registries but still not global unicast.
NOT_UNICAST = [
    "fec0::1",
    "feff::1",
    "ff02::1",
    "ff0e::1",
    "4000::1",
    "8000::1",
    "1000::1",
    "224.0.0.1",
    "239.1.2.3",
]

GLOBAL = [
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450::1",
]


@pytest.fixture(params=[False, True], ids=["platform", "is_global_lies"])
def is_global_lies(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if request.param:
        for cls in (ipaddress.IPv4Address, ipaddress.IPv6Address):
            monkeypatch.setattr(cls, "is_global", property(lambda self: True))
            monkeypatch.setattr(cls, "is_private", property(lambda self: False))
            monkeypatch.setattr(cls, "is_reserved", property(lambda self: False))
    return bool(request.param)


@pytest.mark.parametrize(("address", "block", "rfc"), REGISTRY_ROWS, ids=[r[1] for r in REGISTRY_ROWS])
def test_every_registry_row_is_in_the_table_and_refused(
    address: str, block: str, rfc: str, is_global_lies: bool
) -> None:
    table = {(str(b.network), b.rfc) for b in (*IPV4_SPECIAL, *IPV6_SPECIAL)}
    assert (str(ipaddress.ip_network(block)), rfc) in table
    ip = ipaddress.ip_address(address)
    assert special_block(ip) is not None
    assert not is_public(ip)


@pytest.mark.parametrize("block", [*IPV4_SPECIAL, *IPV6_SPECIAL], ids=lambda b: str(b.network))
def test_both_ends_of_every_block_are_refused(block, is_global_lies: bool) -> None:  # type: ignore[no-untyped-def]
    assert block.rfc.startswith("RFC ")
    for ip in (block.network.network_address, block.network.broadcast_address):
        assert not is_global_unicast(ip), ip
        assert not is_public(ip), ip


@pytest.mark.parametrize("address", NOT_UNICAST)
def test_site_local_multicast_and_unassigned_ipv6_are_refused(address: str, is_global_lies: bool) -> None:
    assert not is_public(ipaddress.ip_address(address))


def test_site_local_is_refused_though_python_calls_it_global() -> None:
    site_local = ipaddress.ip_network("fec0::/10")
    for ip in (site_local.network_address, ipaddress.ip_address("fec0::1"), site_local.broadcast_address):
        assert not is_public(ip), ip


@pytest.mark.parametrize("address", GLOBAL)
def test_global_unicast_is_accepted(address: str, is_global_lies: bool) -> None:
    assert is_public(ipaddress.ip_address(address))
