"""Secrets (docs/security.md, "Settings that matter"), in process: explicit settings, production
refuses to start without them (the check a service's ``python -m`` runs first:
``common.settings.load_settings``, and admin's roster in its ``create_app``), and the key ring.
tests/integration/test_security_secrets.py keeps what needs processes: a real start exiting
with status 2, and a rotation across restarted services."""

from __future__ import annotations

import base64
import logging
import os

import pytest

from common import authority
from common.keyring import KeyRing, KeyRingError, new_key_setting
from common.settings import SERVICE_SECRETS, Settings, load_settings

SECRETS = [
    "SLUICE_ADMIN_TOKEN",
    "SLUICE_JWT_SECRET",
    "SLUICE_ONBOARDING_SECRET",
    "SLUICE_ENCRYPTION_KEYS",
    "SLUICE_COMPLIANCE_SIGNING_KEY",
    "SLUICE_ADMIN_SIGNING_KEY",
    "SLUICE_LEDGER_SIGNING_KEY",
    "SLUICE_GATEWAY_CACHE_KEY",
]

pytestmark = pytest.mark.unit


def test_key_ring_rotation_opens_old_ciphertexts_and_seals_with_the_first_key() -> None:
    old = new_key_setting("old")
    sealed_old = KeyRing.parse(old).seal(b"whsec_x", "secret:we_1")
    rotated = KeyRing.parse(new_key_setting("new") + "," + old)
    assert rotated.open(sealed_old, "secret:we_1") == b"whsec_x"
    sealed_new = rotated.seal(b"whsec_y", "secret:we_1")
    assert rotated.kid_of(sealed_new) == "new" and rotated.kid_of(sealed_old) == "old"
    with pytest.raises(KeyRingError, match="not in the key ring"):
        KeyRing.parse(old).open(sealed_new, "secret:we_1")  # the old ring alone cannot
    with pytest.raises(KeyRingError):
        rotated.open(sealed_old, "secret:we_2")  # bound to its context
    tampered = bytearray(sealed_old)
    tampered[-1] ^= 1
    with pytest.raises(KeyRingError):
        rotated.open(bytes(tampered), "secret:we_1")


@pytest.mark.parametrize(
    "setting",
    ["nocolon", "k1:not-base64!!", "k1:" + base64.b64encode(b"short").decode(), "bad kid:" + "A" * 44],
)
def test_key_ring_refuses_malformed_settings_without_echoing_keys(setting: str) -> None:
    with pytest.raises(KeyRingError) as err:
        KeyRing.parse(setting)
    assert setting.partition(":")[2][:8] not in str(err.value) or ":" not in setting


def test_no_secret_is_derived_from_another() -> None:
    s = Settings(admin_token="ops=" + "a" * 40)
    assert not hasattr(s, "derived_secret")
    assert s.jwt_key == b"" and s.onboarding_key == b""
    assert s.missing_secrets() == SECRETS[1:]


class Start:
    """What a service's start makes of an environment, up to where it would serve: the exit
    status it stops with (None: it got past its settings) and what it logged."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
        self.monkeypatch, self.caplog = monkeypatch, caplog

    def __call__(self, service: str, env: dict[str, str]) -> tuple[int | None, str]:
        for name in [n for n in os.environ if n.startswith("SLUICE_")]:
            self.monkeypatch.delenv(name)
        for name, value in env.items():
            self.monkeypatch.setenv(name, value)
        self.caplog.clear()
        with self.caplog.at_level(logging.WARNING):
            try:
                settings = load_settings(service)
                if service == "admin":  # its roster is checked as its app is made
                    from admin.app import create_app

                    create_app(settings)
            except SystemExit as stop:
                return int(stop.code or 0), self.caplog.text
        return None, self.caplog.text


@pytest.fixture
def start(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Start:
    return Start(monkeypatch, caplog)


def _refusal(log: str) -> str:
    """The one line a service refusing its settings logs."""
    return next((line for line in log.splitlines() if "refusing to start" in line), "")


@pytest.mark.parametrize("service", ["gateway", "admin", "webhooks"])
def test_a_production_service_without_secrets_refuses_to_start(start: Start, service: str) -> None:
    """Each names the secrets it uses (common.settings.SERVICE_SECRETS; docs/security.md), and no
    other: the gateway never asks for the operator token, webhooks only for the key ring."""
    status, log = start(service, {"SLUICE_ENV": "production"})
    assert status == 2, log
    line = _refusal(log)
    for name in SECRETS:
        assert (name in line) == (name in SERVICE_SECRETS[service]), (name, line)


def test_production_names_only_what_is_missing_and_refuses_short_secrets(start: Start) -> None:
    status, log = start(
        "gateway",
        {"SLUICE_ENV": "production", "SLUICE_ADMIN_TOKEN": "ops=" + "x" * 40, "SLUICE_JWT_SECRET": "short"},
    )
    assert status == 2, log
    line = _refusal(log)
    assert "SLUICE_ONBOARDING_SECRET" in line and "SLUICE_ENCRYPTION_KEYS" in line, log
    assert "SLUICE_ADMIN_TOKEN" not in line and "SLUICE_JWT_SECRET" not in line


def _production_env() -> dict[str, str]:
    """Every production secret, well formed: what is left to refuse is what a test adds."""
    token = lambda: base64.urlsafe_b64encode(os.urandom(32)).decode()  # noqa: E731
    return {
        **authority.new_settings("p"),
        **authority.new_anchor_settings("p"),
        "SLUICE_GATEWAY_CACHE_KEY": new_key_setting("c1"),
        "SLUICE_ENV": "production",
        # four eyes is on in production: two approvers (docs/security.md)
        "SLUICE_ADMIN_TOKEN": f"ops:approver={token()},ops2:approver={token()}",
        "SLUICE_JWT_SECRET": base64.urlsafe_b64encode(os.urandom(32)).decode(),
        "SLUICE_ONBOARDING_SECRET": base64.urlsafe_b64encode(os.urandom(32)).decode(),
        "SLUICE_ENCRYPTION_KEYS": new_key_setting("p1"),
        # a store nobody answers: a start that got past the settings fails later, differently
        "SLUICE_DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:1/none",
    }


@pytest.mark.parametrize(
    "setting",
    [("SLUICE_FAILPOINTS", "ledger.after_commit=kill"), ("SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS", "true")],
)
def test_production_refuses_test_only_settings_with_status_2(start: Start, setting: tuple[str, str]) -> None:
    """Failpoints and private webhook targets are test scaffolding: a production process with
    either refuses to start (status 2, naming it), the same start without it gets past the
    settings check (the positive control: the refusal is the setting's, not the environment's)."""
    name, value = setting
    status, log = start("webhooks", {**_production_env(), name: value})
    assert status == 2, log
    assert "test-only" in log and name in log, log
    status, log = start("webhooks", _production_env())
    assert status is None and "test-only" not in log, log


@pytest.mark.parametrize(
    "token",
    [
        "ops=short-token",
        "ops=" + "a" * 48,
        "ops=correct-horse-battery-staple-correct-horse",
        "0123456789" * 4,
    ],
)
def test_production_refuses_a_weak_admin_token(start: Start, token: str) -> None:
    """An operator token has at least 32 random bytes (docs/security.md, "Operator tokens in
    production"); a short, repeated or word-like token refuses
    start like a missing secret (the control: the well-formed token of _production_env starts)."""
    status, log = start("admin", {**_production_env(), "SLUICE_ADMIN_TOKEN": token})
    assert status == 2 and "SLUICE_ADMIN_TOKEN" in log, log
    assert token.split("=")[-1] not in log  # the token itself is never printed
    status, log = start("admin", _production_env())
    assert status is None and "SLUICE_ADMIN_TOKEN" not in log, log


def test_the_test_stack_runs_in_development_with_generated_secrets() -> None:
    from tests.conftest import _base_env

    class _S:
        def service_env(self) -> dict[str, str]:
            return {}

    env = _base_env(_S())  # type: ignore[arg-type]
    assert env["SLUICE_ENV"] == "development"
    assert all(env.get(n) for n in SECRETS)
    again = _base_env(_S())  # type: ignore[arg-type]
    assert os.environ.get("SLUICE_JWT_SECRET") or env["SLUICE_JWT_SECRET"] != again["SLUICE_JWT_SECRET"]
