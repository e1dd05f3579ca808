"""A production process environment for settings tests: every SLUICE_ variable removed but
SLUICE_ENV, and a set of secrets strong enough for production."""

from __future__ import annotations

import os
import secrets

import pytest

from common import authority
from common.keyring import new_key_setting


def strong_secrets() -> dict[str, str]:
    keys = authority.new_settings("prod")
    return {
        "SLUICE_COMPLIANCE_SIGNING_KEY": keys["SLUICE_COMPLIANCE_SIGNING_KEY"],
        "SLUICE_ADMIN_SIGNING_KEY": keys["SLUICE_ADMIN_SIGNING_KEY"],
        "SLUICE_LEDGER_SIGNING_KEY": keys["SLUICE_LEDGER_SIGNING_KEY"],
        "SLUICE_ADMIN_TOKEN": "ops=" + secrets.token_urlsafe(32),
        "SLUICE_JWT_SECRET": secrets.token_urlsafe(32),
        "SLUICE_ONBOARDING_SECRET": secrets.token_urlsafe(32),
        "SLUICE_ENCRYPTION_KEYS": new_key_setting("k1"),
        "SLUICE_GATEWAY_CACHE_KEY": new_key_setting("c1"),
    }


def production_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A production environment with no SLUICE_ variable but SLUICE_ENV."""
    for k in [k for k in os.environ if k.startswith("SLUICE_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("SLUICE_ENV", "production")
    return monkeypatch


def verify_keys(values: dict[str, str]) -> str:
    """The verification keys (not a secret) for the signing keys of ``values``."""
    return authority.verify_setting(
        values["SLUICE_COMPLIANCE_SIGNING_KEY"],
        values["SLUICE_ADMIN_SIGNING_KEY"],
        values["SLUICE_LEDGER_SIGNING_KEY"],
    )
