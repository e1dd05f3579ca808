"""Contract 12.3, trust: forwarding headers are believed only from SLUICE_TRUSTED_PROXIES;
otherwise the TCP peer is the client address (the IP allowlist, per-address limits)."""

from __future__ import annotations

import httpx
import pytest

from common.clientaddr import client_address, parse_networks
from devstack.suite import Proc
from tests.conftest import Stack, make_tenant

TRUSTED = parse_networks("127.0.0.1/32, 10.0.0.0/8")


def _headers(**h: str):  # type: ignore[no-untyped-def]
    low = {k.replace("_", "-").lower(): v for k, v in h.items()}
    return low.get


@pytest.mark.unit
@pytest.mark.parametrize(
    ("peer", "headers", "networks", "expected"),
    [
        ("127.0.0.1", {"x_forwarded_for": "203.0.113.9"}, (), "127.0.0.1"),  # nothing trusted
        ("198.51.100.1", {"x_forwarded_for": "203.0.113.9"}, TRUSTED, "198.51.100.1"),  # untrusted peer
        ("127.0.0.1", {"x_forwarded_for": "203.0.113.9"}, TRUSTED, "203.0.113.9"),
        ("127.0.0.1", {"x_forwarded_for": "203.0.113.9, 10.1.2.3"}, TRUSTED, "203.0.113.9"),
        ("127.0.0.1", {"x_forwarded_for": "1.2.3.4, 203.0.113.9"}, TRUSTED, "203.0.113.9"),  # spoofed left
        ("127.0.0.1", {"x_forwarded_for": "garbage, 203.0.113.9"}, TRUSTED, "203.0.113.9"),
        ("127.0.0.1", {"x_forwarded_for": "garbage"}, TRUSTED, "127.0.0.1"),
        ("127.0.0.1", {}, TRUSTED, "127.0.0.1"),
        ("127.0.0.1", {"forwarded": 'for="[2001:db8::1]:443";proto=https'}, TRUSTED, "2001:db8::1"),
        ("127.0.0.1", {"forwarded": "for=192.0.2.60;by=10.0.0.1, for=10.0.0.7"}, TRUSTED, "192.0.2.60"),
        ("127.0.0.1", {"forwarded": "for=192.0.2.60", "x_forwarded_for": "1.2.3.4"}, TRUSTED, "192.0.2.60"),
        ("127.0.0.1", {"x_forwarded_for": "203.0.113.9:5555"}, TRUSTED, "203.0.113.9"),
    ],
)
def test_client_address(peer: str, headers: dict[str, str], networks: tuple, expected: str) -> None:
    assert client_address(peer, _headers(**headers), networks) == expected


@pytest.mark.unit
def test_bad_trusted_proxy_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="not-a-cidr"):
        parse_networks("10.0.0.0/8,not-a-cidr")


def _health(url: str, key: str, **headers: str) -> httpx.Response:
    return httpx.get(url + "/v1/health", headers={"Authorization": f"Bearer {key}", **headers}, timeout=30)


@pytest.mark.integration
def test_spoofed_forwarding_headers_do_not_pass_the_ip_allowlist(stack: Stack) -> None:
    """The verified bypass: a tenant limited to 203.0.113.0/24, called from loopback."""
    t = make_tenant(stack, metadata={"allowed_ips": ["203.0.113.0/24"]})
    for gw in stack.gateways:
        assert _health(gw.url, t.key).status_code == 403
        for spoof in (
            {"X-Forwarded-For": "203.0.113.9"},
            {"Forwarded": "for=203.0.113.9"},
            {"X-Real-IP": "203.0.113.9", "X-Forwarded-For": "203.0.113.9, 203.0.113.10"},
        ):
            r = _health(gw.url, t.key, **spoof)
            assert r.status_code == 403, (spoof, r.text)
            assert r.json()["error"]["details"]["reason"] == "ip_not_allowed"


@pytest.mark.integration
def test_a_trusted_proxy_forwards_the_client_address(stack: Stack, proxied_gateway: Proc) -> None:
    t = make_tenant(stack, metadata={"allowed_ips": ["203.0.113.0/24"]})
    url = proxied_gateway.url
    assert _health(url, t.key).status_code == 403  # the proxy itself is not the client
    assert _health(url, t.key, **{"X-Forwarded-For": "203.0.113.9"}).status_code == 200
    assert _health(url, t.key, Forwarded='for="203.0.113.9"').status_code == 200
    # A client cannot prepend its way in: the rightmost untrusted hop is the client.
    r = _health(url, t.key, **{"X-Forwarded-For": "203.0.113.9, 198.51.100.7"})
    assert r.status_code == 403, r.text
