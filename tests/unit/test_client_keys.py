"""Client addresses in every form, one keying function, and NAT64 refused.

Before: ``[v6]:port`` in X-Forwarded-For, RFC 7239's ``unknown`` and obfuscated identifiers
all fell back to the proxy's address (behind an ingress every such client was the ingress:
one shared budget, and the ingress's place on an IP allowlist); an IPv4-mapped address was a
different client from its IPv4 address for the trusted networks; the onboarding limiter keyed
on the raw address (an IPv6 client had 2^64 budgets); NAT64 addresses passed the SSRF check.
"""

from __future__ import annotations

import ipaddress

import pytest

from common.authfail import counted_as
from common.clientaddr import client_address, client_key, parse_networks
from webhooks.targets import is_public

pytestmark = pytest.mark.unit

PROXY = parse_networks("10.0.0.0/8")


def _via_proxy(header: str, value: str) -> str | None:
    return client_address("10.1.2.3", lambda name: [value] if name == header.lower() else [], PROXY, header)


@pytest.mark.parametrize(
    ("header", "value", "client"),
    [
        ("X-Forwarded-For", "[2001:db8::7]:51234", "2001:db8::7"),
        ("X-Forwarded-For", "[2001:db8::7]", "2001:db8::7"),
        ("X-Forwarded-For", "198.51.100.7:443", "198.51.100.7"),
        ("X-Forwarded-For", "::ffff:198.51.100.7", "198.51.100.7"),
        ("X-Forwarded-For", "198.51.100.9, ::ffff:10.0.0.5", "198.51.100.9"),  # mapped proxy: trusted
        ("X-Forwarded-For", "unknown", "unknown"),
        ("X-Forwarded-For", "198.51.100.9, unknown", "unknown"),  # not the client's own claim
        ("X-Forwarded-For", "_hidden-42", "_hidden-42"),
        ("X-Forwarded-For", "not-an-address", "10.1.2.3"),  # garbage: the last vouched hop
        ("Forwarded", 'for="[2001:db8::7]:4711"', "2001:db8::7"),
        ("Forwarded", "for=unknown", "unknown"),
        ("Forwarded", 'for="_gazonk"', "_gazonk"),
        ("Forwarded", "for=192.0.2.60;proto=https", "192.0.2.60"),
    ],
)
def test_every_form_of_a_hop_is_read(header: str, value: str, client: str) -> None:
    assert _via_proxy(header, value) == client


def test_a_mapped_peer_is_its_ipv4_address() -> None:
    assert client_address("::ffff:10.9.9.9", lambda n: ["198.51.100.1"], PROXY) == "198.51.100.1"
    assert client_address("::ffff:192.0.2.1", lambda n: [], ()) == "192.0.2.1"


@pytest.mark.parametrize(
    ("client", "key"),
    [
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("[2001:db8:1:2::9]:80", "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("192.0.2.7", "192.0.2.7"),
        ("unknown", "unknown"),
        ("_Hidden", "_hidden"),
        ("x" * 5000, "unknown"),  # never an unbounded key
        (None, "unknown"),
        ("", "unknown"),
    ],
)
def test_one_key_for_every_per_client_limit(client: str | None, key: str) -> None:
    assert client_key(client) == key
    assert counted_as(client) == key  # failed authentications count by the same key


def test_the_onboarding_limiter_keys_by_the_same_function() -> None:
    from pathlib import Path

    source = (Path(__file__).resolve().parents[2] / "services/gateway/routes/onboarding.py").read_text()
    assert "client_key(client_ip(request))" in source


@pytest.mark.parametrize(
    "address",
    ["64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "64:ff9b::808:808", "64:ff9b:1::c0a8:1", "64:ff9b:1:ffff::1"],
)
def test_nat64_addresses_are_not_public(address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not is_public(ipaddress.ip_address(address))
    # Python 3.11 happens to call ::/8 (and so 64:ff9b::/96) reserved, and its is_global calls
    # both prefixes global; the refusal must not rest on that table, which other versions change.
    monkeypatch.setattr(ipaddress.IPv6Address, "is_reserved", property(lambda self: False))
    assert not is_public(ipaddress.ip_address(address))


def test_public_ipv6_stays_public() -> None:
    assert is_public(ipaddress.ip_address("2606:4700:4700::1111"))
    assert is_public(ipaddress.ip_address("2001:4860:4860::8888"))
