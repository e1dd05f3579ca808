"""Partner text is never taken for a secret (docs/security.md, "Round 4"), end to end.

Before, a transfer created with ``Idempotency-Key: sealed:AAAAAAAAAAAAAAAAAAAAAAAA`` answered
201 and then ``GET /v1/transfers/{id}`` answered 500 every time (the gateway "opened" the
echoed key as ciphertext). Signing secrets still reach the partner, opened from
``Result.sealed``.
"""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import Stack, Tenant
from tests.support.flows import book, created, funded, send

pytestmark = pytest.mark.inprocess

# Keys the contract allows (8-256 printable ASCII) that look like what the suite once sealed.
LOOKALIKES = [
    "sealed:AAAAAAAAAAAAAAAAAAAAAAAA",
    "sealed:" + "A" * 249,
    "sealed:!not base64!",
    "sealed:" + uuid.uuid4().hex,
]


@pytest.mark.parametrize("key", LOOKALIKES, ids=["short", "long", "not-base64", "random-hex"])
def test_a_transfer_with_any_allowed_key_reads_back(stack: Stack, tenant: Tenant, key: str) -> None:
    src, dst = funded(tenant), funded(tenant)
    body = book(src["wallet_id"], dst["wallet_id"], "1.00", key=key)
    made = created(send(tenant, "/v1/transfers", body))
    for gateway in (0, 1):
        r = tenant.get(f"/v1/transfers/{made['transfer_id']}", gateway=gateway)
        assert r.status_code == 200, r.text
        assert r.json()["data"]["idempotency_key"] == key
    listed = tenant.get("/v1/transfers?limit=5")
    assert listed.status_code == 200, listed.text
    assert key in [t["idempotency_key"] for t in listed.json()["data"]["items"]]
    replay = send(tenant, "/v1/transfers", body)
    assert replay.status_code == 201 and replay.headers["x-idempotent-replay"] == "true"


def test_signing_secrets_still_reach_the_partner(stack: Stack, tenant: Tenant) -> None:
    target = {"endpoint_url": "http://127.0.0.1:9/hooks"}
    hook = tenant.post("/v1/webhooks", target, idem="sealed:" + uuid.uuid4().hex)
    assert hook.status_code == 201, hook.text
    secret = hook.json()["data"]["signing_secret"]
    assert secret.startswith("whsec_")
    rotated = tenant.post(f"/v1/webhooks/{hook.json()['data']['webhook_id']}/rotate-secret", {})
    assert rotated.status_code == 200, rotated.text
    assert rotated.json()["data"]["signing_secret"].startswith("whsec_")
    assert rotated.json()["data"]["signing_secret"] != secret
