"""Secret strength: one rule for the operator token, the JWT secret and the
onboarding secret, the operator-token parsing admin authenticates with, and no secret in
any log line.

Before: ``SLUICE_ADMIN_TOKEN`` from ``openssl rand -base64 32`` (ends in ``=``) was split at
``=``, refused as weak and printed whole as an "operator name" in the CRITICAL line; JWT and
onboarding secrets were checked for length only (32 x ``a`` passed); the token estimate
accepted ``abcdefghijklmnopqrstuvwxyz0123456789``.
"""

from __future__ import annotations

import base64
import logging
import os
import secrets

import pytest

from admin.operators.tokens import authenticate, parse_operators
from common import authority
from common.keyring import new_key_setting
from common.secret_strength import split_operator, token_bits, weakness
from common.settings import Settings, load_settings

pytestmark = pytest.mark.unit

WEAK = [
    "a" * 32,
    "a" * 64,
    "abcdefghijklmnopqrstuvwxyz0123456789",
    "zyxwvutsrqponmlkjihgfedcba9876543210",
    "0123456789" * 4,
    "passwordpasswordpasswordpassword1",
    "correct-horse-battery-staple-correct-horse",
    "short",
]


def openssl_base64_32() -> str:
    """What ``openssl rand -base64 32`` prints: 44 characters ending in ``=``."""
    token = base64.b64encode(os.urandom(32)).decode()
    assert token.endswith("=") and len(token) == 44
    return token


def strong() -> list[str]:
    return [openssl_base64_32(), secrets.token_urlsafe(32), secrets.token_hex(32)]


@pytest.mark.parametrize("secret", WEAK)
def test_weak_secrets_are_refused(secret: str) -> None:
    assert weakness(secret) is not None


def test_random_secrets_pass_with_a_margin() -> None:
    for _ in range(2000):
        for secret in strong():
            assert weakness(secret) is None, token_bits(secret)


def test_a_base64_token_ending_in_padding_is_a_bare_token() -> None:
    token = openssl_base64_32()
    assert split_operator(token) == (None, token)
    assert split_operator("ops=" + token) == ("ops", token)
    assert split_operator("abcDEF==") == (None, "abcDEF==")  # padding is not a token
    assert split_operator("9ops=x" * 8) == (None, "9ops=x" * 8)  # not a name


def test_admin_authenticates_a_base64_token_as_it_is_checked() -> None:
    token = openssl_base64_32().replace("+", "A").replace("/", "B")  # the name-shaped worst case
    ops = parse_operators([token, "auditor=" + token[::-1]])
    name = authenticate(ops, f"Bearer {token}")
    assert name.startswith("operator-") and token[:-1] not in name
    assert authenticate(ops, f"Bearer {token[::-1]}") == "auditor"


def _production(**over: str) -> Settings:
    values = {
        "env": "production",
        "admin_token": openssl_base64_32(),
        "jwt_secret": openssl_base64_32(),
        "onboarding_secret": openssl_base64_32(),
        "encryption_keys": new_key_setting("p1"),
    }
    values.update(over)
    return Settings(**values)  # type: ignore[arg-type]


def test_production_accepts_the_readmes_own_suggestion() -> None:
    token = openssl_base64_32().replace("+", "A").replace("/", "B")
    assert _production(admin_token=token).weak_secrets() == []
    assert _production(admin_token=f"ops={openssl_base64_32()},{token}").weak_secrets() == []


@pytest.mark.parametrize("setting", ["admin_token", "jwt_secret", "onboarding_secret"])
@pytest.mark.parametrize("secret", ["a" * 32, "abcdefghijklmnopqrstuvwxyz0123456789"])
def test_every_secret_is_checked_by_the_same_rule(setting: str, secret: str) -> None:
    weak = _production(**{setting: secret}).weak_secrets()
    env_name = "SLUICE_" + setting.upper()
    assert len(weak) == 1 and weak[0].startswith(env_name), weak
    assert secret not in weak[0]


def test_a_named_weak_operator_is_named_and_its_token_is_not() -> None:
    weak = _production(admin_token="ops=abcdefghijklmnopqrstuvwxyz0123456789").weak_secrets()
    assert weak == [
        "SLUICE_ADMIN_TOKEN (entry 1, operator 'ops': too predictable (repeats, runs or words);"
        " at least 32 random bytes, e.g. `openssl rand -base64 32`)"
    ]


def test_development_keeps_its_length_floor() -> None:
    dev = Settings(env="development", jwt_secret="x" * 31, admin_token="short")
    assert [w.split(" ")[0] for w in dev.weak_secrets()] == ["SLUICE_JWT_SECRET"]


def test_the_refusal_log_line_never_holds_a_secret(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    token = "Zm9vYmFyYmF6cXV4" * 2 + "="  # a short base64 token with padding: refused
    jwt = "abcdefghijklmnopqrstuvwxyz0123456789"
    for k in [k for k in os.environ if k.startswith("SLUICE_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("SLUICE_ENV", "production")
    monkeypatch.setenv("SLUICE_ADMIN_TOKEN", token)
    monkeypatch.setenv("SLUICE_JWT_SECRET", jwt)
    monkeypatch.setenv("SLUICE_ONBOARDING_SECRET", openssl_base64_32())
    monkeypatch.setenv("SLUICE_ENCRYPTION_KEYS", new_key_setting("p1"))
    for name, value in authority.new_settings("p").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SLUICE_GATEWAY_CACHE_KEY", new_key_setting("c1"))
    with caplog.at_level(logging.CRITICAL), pytest.raises(SystemExit) as done:
        load_settings()
    assert done.value.code == 2
    text = caplog.text
    assert "SLUICE_ADMIN_TOKEN" in text and "SLUICE_JWT_SECRET" in text
    for secret in (token, token.rstrip("="), token[:12], jwt, jwt[:12]):
        assert secret not in text, text
