"""The client address behind proxies (docs/security.md): forwarding headers believed only from
SLUICE_TRUSTED_PROXIES and only the one header they set, read from the right. Through a
real gateway: tests/integration/test_security_proxies.py."""

from __future__ import annotations

import ipaddress

import pytest

from common.clientaddr import client_address, parse_networks

pytestmark = pytest.mark.unit

TRUSTED = parse_networks("127.0.0.1/32, 10.0.0.0/8")


def _headers(**h: str | list[str]):  # type: ignore[no-untyped-def]
    """A ``get_all``: every line of a header (a list value is several lines)."""
    low = {k.replace("_", "-").lower(): v for k, v in h.items()}
    return lambda name: (
        list(low[name]) if isinstance(low.get(name), list) else ([low[name]] if name in low else [])
    )


XFF, REAL, FWD = "X-Forwarded-For", "X-Real-IP", "Forwarded"
LO, T = "127.0.0.1", TRUSTED


@pytest.mark.parametrize(
    ("peer", "header", "headers", "networks", "expected"),
    [
        (LO, XFF, {"x_forwarded_for": "203.0.113.9"}, (), "127.0.0.1"),  # nothing trusted
        ("198.51.100.1", XFF, {"x_forwarded_for": "203.0.113.9"}, T, "198.51.100.1"),
        (LO, XFF, {"x_forwarded_for": "203.0.113.9"}, T, "203.0.113.9"),
        (LO, XFF, {"x_forwarded_for": "203.0.113.9, 10.1.2.3"}, T, "203.0.113.9"),
        (
            "127.0.0.1",
            XFF,
            {"x_forwarded_for": "1.2.3.4, 203.0.113.9"},
            TRUSTED,
            "203.0.113.9",
        ),  # spoofed left
        (LO, XFF, {"x_forwarded_for": "garbage, 203.0.113.9"}, T, "203.0.113.9"),
        (LO, XFF, {"x_forwarded_for": "203.0.113.9, garbage"}, T, "127.0.0.1"),
        (LO, XFF, {"x_forwarded_for": "garbage"}, T, "127.0.0.1"),
        (LO, XFF, {}, T, "127.0.0.1"),
        (LO, XFF, {"x_forwarded_for": "203.0.113.9:5555"}, T, "203.0.113.9"),
        # several lines are one list in order: the proxy's line (the last) decides
        (LO, XFF, {"x_forwarded_for": ["1.2.3.4", "203.0.113.9"]}, T, "203.0.113.9"),
        (
            "127.0.0.1",
            XFF,
            {"x_forwarded_for": ["1.2.3.4, 5.6.7.8", "203.0.113.9, 10.0.0.2"]},
            TRUSTED,
            "203.0.113.9",
        ),
        # only the named header: the others say what the client likes and are ignored
        (
            "127.0.0.1",
            XFF,
            {"forwarded": "for=1.2.3.4", "x_forwarded_for": "203.0.113.9"},
            TRUSTED,
            "203.0.113.9",
        ),
        (LO, XFF, {"forwarded": "for=1.2.3.4", "x_real_ip": "1.2.3.5"}, T, "127.0.0.1"),
        (
            "127.0.0.1",
            REAL,
            {"x_real_ip": "203.0.113.9", "x_forwarded_for": "1.2.3.4"},
            TRUSTED,
            "203.0.113.9",
        ),
        (LO, REAL, {"x_forwarded_for": "1.2.3.4"}, T, "127.0.0.1"),
        (LO, REAL, {"x_real_ip": ["1.2.3.4", "203.0.113.9"]}, T, "203.0.113.9"),
        (LO, FWD, {"forwarded": 'for="[2001:db8::1]:443";proto=https'}, T, "2001:db8::1"),
        (LO, FWD, {"forwarded": "for=192.0.2.60;by=10.0.0.1, for=10.0.0.7"}, T, "192.0.2.60"),
        (
            "127.0.0.1",
            FWD,
            {"forwarded": "for=192.0.2.60", "x_forwarded_for": "1.2.3.4"},
            TRUSTED,
            "192.0.2.60",
        ),
        (LO, FWD, {"forwarded": ["for=1.2.3.4", "for=192.0.2.60"]}, T, "192.0.2.60"),
        (LO, FWD, {"forwarded": "for=192.0.2.60, proto=https"}, T, "127.0.0.1"),  # garbage hop
        (LO, FWD, {"x_forwarded_for": "1.2.3.4"}, T, "127.0.0.1"),
    ],
)
def test_client_address(peer: str, header: str, headers: dict, networks: tuple, expected: str) -> None:
    assert client_address(peer, _headers(**headers), networks, header) == expected


def test_bad_trusted_proxy_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="not-a-cidr"):
        parse_networks("10.0.0.0/8,not-a-cidr")


def test_the_trusted_proxies_setting_is_a_comma_list_of_networks() -> None:
    assert parse_networks(" 10.0.0.0/8, ,127.0.0.1 ,192.168.1.5/24,") == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("192.168.1.0/24"),  # host bits allowed: the network they are in
    )
    assert parse_networks("") == ()


def test_a_bad_entry_is_named_in_at_most_64_characters() -> None:
    entry = "x" * 100
    with pytest.raises(ValueError) as err:
        parse_networks(f"10.0.0.0/8,{entry}")
    assert str(err.value) == f"SLUICE_TRUSTED_PROXIES: {'x' * 64!r} is not an IP network"
    assert err.value.__cause__ is None and err.value.__suppress_context__


@pytest.mark.parametrize(
    ("peer", "expected"),
    [
        (None, None),  # no peer (a test client): nothing to read
        ("", ""),
        ("not-an-address", "not-an-address"),  # kept as given, even with trusted networks
        ("::ffff:198.51.100.1", "198.51.100.1"),  # an IPv4-mapped peer is its IPv4 address
    ],
)
def test_a_peer_that_is_no_trusted_address_is_the_client(peer: str | None, expected: str | None) -> None:
    spoof = _headers(x_forwarded_for="203.0.113.9")
    assert client_address(peer, spoof, TRUSTED) == expected
    assert client_address(peer, spoof, ()) == expected


def test_x_forwarded_for_is_the_default_header() -> None:
    headers = _headers(x_forwarded_for="203.0.113.9", x_real_ip="198.51.100.7")
    assert client_address("127.0.0.1", headers, TRUSTED) == "203.0.113.9"


@pytest.mark.parametrize("hop", ['"unknown"', '"_Hidden.1"', "unknown", '"_X.aX"'])
def test_a_quoted_withheld_identifier_is_the_client(hop: str) -> None:
    got = client_address("127.0.0.1", _headers(x_forwarded_for=f"203.0.113.9, {hop}"), TRUSTED)
    assert got == hop.strip('"').lower()
