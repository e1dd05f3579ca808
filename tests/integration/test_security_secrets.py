"""Secrets (docs/security.md, "Settings that matter") where processes are the point: a real
production start without its secrets exits with status 2, and the key ring rotates across
restarted services without losing what it sealed (webhook secrets, idempotency answers).
The settings checks themselves run in process: tests/unit/test_settings_secrets.py."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from standardwebhooks.webhooks import Webhook

from common.keyring import new_key_setting
from tests.conftest import Stack, customer_body, make_tenant
from tests.support.webhooks import Receiver
from tools.stack.processes import ROOT, python_env


def _start_bare(service: str, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in python_env({}).items() if not k.startswith("SLUICE_")}
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-m", service], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )


@pytest.mark.integration
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
