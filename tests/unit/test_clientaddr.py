"""The client address behind proxies (contract 12.3): forwarding headers believed only from
SLUICE_TRUSTED_PROXIES and only the one header they set, read from the right. Through a
real gateway: tests/integration/test_security_proxies.py."""

from __future__ import annotations

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
