"""Secrets (docs/security.md, "Settings that matter"): explicit settings, production refuses to
start without them, and the key ring rotates without losing what it sealed (webhook secrets,
idempotency answers)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
import uuid

import pytest
from standardwebhooks.webhooks import Webhook

from common import authority
from common.keyring import KeyRing, KeyRingError, new_key_setting
from common.settings import SERVICE_SECRETS, Settings
from tests.conftest import Stack, customer_body, make_tenant
from tests.support.webhooks import Receiver
from tools.stack.processes import ROOT, python_env

SECRETS = [
    "SLUICE_ADMIN_TOKEN",
    "SLUICE_JWT_SECRET",
    "SLUICE_ONBOARDING_SECRET",
    "SLUICE_ENCRYPTION_KEYS",
    "SLUICE_COMPLIANCE_SIGNING_KEY",
    "SLUICE_ADMIN_SIGNING_KEY",
    "SLUICE_GATEWAY_CACHE_KEY",
]


@pytest.mark.unit
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


@pytest.mark.unit
@pytest.mark.parametrize(
    "setting",
    ["nocolon", "k1:not-base64!!", "k1:" + base64.b64encode(b"short").decode(), "bad kid:" + "A" * 44],
)
def test_key_ring_refuses_malformed_settings_without_echoing_keys(setting: str) -> None:
    with pytest.raises(KeyRingError) as err:
        KeyRing.parse(setting)
    assert setting.partition(":")[2][:8] not in str(err.value) or ":" not in setting


@pytest.mark.unit
def test_no_secret_is_derived_from_another() -> None:
    s = Settings(admin_token="ops=" + "a" * 40)
    assert not hasattr(s, "derived_secret")
    assert s.jwt_key == b"" and s.onboarding_key == b""
    assert s.missing_secrets() == SECRETS[1:]


def _start_bare(service: str, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in python_env({}).items() if not k.startswith("SLUICE_")}
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-m", service], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def _refusal(stderr: str) -> str:
    """The one line a service refusing its settings logs."""
    return next((line for line in stderr.splitlines() if "refusing to start" in line), "")


@pytest.mark.unit
@pytest.mark.parametrize("service", ["gateway", "admin", "webhooks"])
def test_a_production_service_without_secrets_refuses_to_start(service: str) -> None:
    """Each names the secrets it uses (common.settings.SERVICE_SECRETS; docs/security.md), and no
    other: the gateway never asks for the operator token, webhooks only for the key ring."""
    done = _start_bare(service, {"SLUICE_ENV": "production"})
    assert done.returncode == 2, done.stderr[-2000:]
    line = _refusal(done.stderr)
    for name in SECRETS:
        assert (name in line) == (name in SERVICE_SECRETS[service]), (name, line)


@pytest.mark.unit
def test_production_names_only_what_is_missing_and_refuses_short_secrets() -> None:
    done = _start_bare(
        "gateway",
        {
            "SLUICE_ENV": "production",
            "SLUICE_ADMIN_TOKEN": "ops=" + "x" * 40,
            "SLUICE_JWT_SECRET": "short",
        },
    )
    assert done.returncode != 0
    line = _refusal(done.stderr)
    assert "SLUICE_ONBOARDING_SECRET" in line and "SLUICE_ENCRYPTION_KEYS" in line, done.stderr
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


@pytest.mark.unit
@pytest.mark.parametrize(
    "setting",
    [("SLUICE_FAILPOINTS", "ledger.after_commit=kill"), ("SLUICE_WEBHOOKS_ALLOW_PRIVATE_TARGETS", "true")],
)
def test_production_refuses_test_only_settings_with_status_2(setting: tuple[str, str]) -> None:
    """Failpoints and private webhook targets are test scaffolding: a production process with
    either refuses to start (status 2, naming it), the same process without it gets past the
    settings check (the positive control: the refusal is the setting's, not the environment's)."""
    name, value = setting
    refused = _start_bare("webhooks", {**_production_env(), name: value})
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "test-only" in refused.stderr and name in refused.stderr, refused.stderr[-2000:]
    control = _start_bare("webhooks", _production_env())
    assert "test-only" not in control.stderr, control.stderr[-2000:]


@pytest.mark.unit
@pytest.mark.parametrize(
    "token",
    [
        "ops=short-token",
        "ops=" + "a" * 48,
        "ops=correct-horse-battery-staple-correct-horse",
        "0123456789" * 4,
    ],
)
def test_production_refuses_a_weak_admin_token(token: str) -> None:
    """An operator token has at least 32 random bytes (docs/security.md, "Operator tokens in
    production"); a short, repeated or word-like token refuses
    start like a missing secret (the control: the well-formed token of _production_env starts)."""
    done = _start_bare("admin", {**_production_env(), "SLUICE_ADMIN_TOKEN": token})
    assert done.returncode == 2 and "SLUICE_ADMIN_TOKEN" in done.stderr, done.stderr[-1500:]
    assert token.split("=")[-1] not in done.stderr  # the token itself is never printed
    control = _start_bare("admin", _production_env())
    assert "SLUICE_ADMIN_TOKEN" not in control.stderr, control.stderr[-1500:]


@pytest.mark.unit
def test_a_production_service_without_secrets_exits_with_status_2() -> None:
    """docs/security.md says status 2: the code and the document agree. (The gateway: it has
    secrets of its own to miss; a service needs only its own: docs/security.md.)"""
    assert _start_bare("gateway", {"SLUICE_ENV": "production"}).returncode == 2
    assert "status 2" in (ROOT / "docs" / "security.md").read_text()


def _restart(stack: Stack, names: list[str]) -> None:
    """Restart the webhooks service and both gateways with the stack's (rotated) settings."""
    procs = []
    if "webhooks" in names:
        old = stack.procs["webhooks"]
        stack.suite.stop_proc(old)
        stack.procs["webhooks"] = stack.suite.start("webhooks", old.port)
        procs.append(stack.procs["webhooks"])
    if "gateway" in names:
        for i, gw in enumerate(list(stack.gateways)):
            stack.suite.stop_proc(gw)
            stack.gateways[i] = stack.suite.start("gateway", gw.port, instance=f"gateway-{i}")
            procs.append(stack.gateways[i])
    stack.suite.wait_ready(procs, timeout=120)


def _verify(secret: str, received: object) -> dict:
    h = received.headers  # type: ignore[attr-defined]
    return Webhook(secret).verify(
        received.body,  # type: ignore[attr-defined]
        {
            "webhook-id": h["x-service-webhook-id"],
            "webhook-timestamp": h["x-service-timestamp"],
            "webhook-signature": h["x-service-signature"],
        },
    )


@pytest.mark.integration
def test_rotating_the_key_ring_keeps_webhook_secrets_and_idempotency_answers(stack: Stack) -> None:
    tenant = make_tenant(stack)
    receiver = Receiver().start()
    try:
        idem = "rotate-" + uuid.uuid4().hex
        created = tenant.post("/v1/webhooks", {"endpoint_url": receiver.url}, idem=idem)
        assert created.status_code == 201, created.text
        secret = created.json()["data"]["signing_secret"]

        old = stack.env["SLUICE_ENCRYPTION_KEYS"]
        stack.env["SLUICE_ENCRYPTION_KEYS"] = new_key_setting("rot" + uuid.uuid4().hex[:6]) + "," + old
        _restart(stack, ["webhooks", "gateway"])

        # The saved answer (sealed under the old key) replays on both gateways.
        for gw in (0, 1):
            again = tenant.post("/v1/webhooks", {"endpoint_url": receiver.url}, idem=idem, gateway=gw)
            assert again.status_code == 201, again.text
            assert again.headers.get("x-idempotent-replay") == "true"
            assert again.json()["data"]["signing_secret"] == secret
        # The stored signing secret (sealed under the old key) still signs deliveries.
        assert tenant.post("/v1/customers", customer_body()).status_code == 201
        deadline = time.monotonic() + 30
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.1)
        assert receiver.received, "no delivery after the rotation"
        assert _verify(secret, receiver.received[0])["type"] == "customer.created"
    finally:
        receiver.stop()


@pytest.mark.unit
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
