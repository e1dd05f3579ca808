"""Forwarding headers are believed only from SLUICE_TRUSTED_PROXIES (docs/security.md, "Client
address behind proxies"); otherwise the TCP peer is the client address (the IP allowlist,
per-address limits). How common.clientaddr reads each header: tests/unit/test_clientaddr.py."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import Stack, make_tenant
from tools.stack.suite import Proc


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
    # Only the header the proxy sets (SLUICE_CLIENT_IP_HEADER, X-Forwarded-For here) is read:
    # a client-sent Forwarded or X-Real-IP says nothing (13.2).
    assert _health(url, t.key, Forwarded='for="203.0.113.9"').status_code == 403
    assert _health(url, t.key, **{"X-Real-IP": "203.0.113.9"}).status_code == 403
    # A client cannot prepend its way in: the rightmost untrusted hop is the client.
    r = _health(url, t.key, **{"X-Forwarded-For": "203.0.113.9, 198.51.100.7"})
    assert r.status_code == 403, r.text
