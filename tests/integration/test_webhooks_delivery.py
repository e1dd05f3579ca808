"""A real delivery to a local HTTP receiver, signed and checked with the standardwebhooks
package: its payload, its delivery and attempt rows, the secret stored only encrypted and never
in the webhooks service's log. Retries, dead letters, replay, rotation and a slow endpoint:
tests/inprocess/test_webhooks_delivery.py."""

from __future__ import annotations

import base64
import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from common.contracts.commands import GetWebhookStatus
from tests.conftest import Stack, make_tenant
from tests.support.webhooks import (
    attempts_of,
    connect_db,
    create_customer,
    endpoint,
    standard_headers,
    wait_delivery,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test starts the stack


async def test_delivery_is_signed_and_verifies_with_standardwebhooks(stack: Stack) -> None:
    async with endpoint(stack) as (tenant, receiver, wh, created):
        assert created.status == 201, created
        data = created.data
        assert set(data) >= {"webhook_id", "endpoint_url", "signing_secret", "created_at"}
        assert data["endpoint_url"] == receiver.url
        secret = data["signing_secret"]
        assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32

        customer_id = await create_customer(tenant)
        got = await receiver.wait_for(1)
        assert len(got) == 1
        r = got[0]
        payload = Webhook(secret).verify(r.body, standard_headers(r))
        assert payload["type"] == "customer.created"
        assert payload["id"].startswith("evt_") and payload["id"] == r.headers["x-service-webhook-id"]
        assert set(payload) == {"id", "type", "created_at", "api_version", "mode", "sequence", "data"}
        assert isinstance(payload["sequence"], int) and payload["sequence"] >= 1
        assert payload["api_version"] == "1.0.1" and payload["mode"] == "sandbox"
        assert payload["data"]["customer_id"] == customer_id
        assert "country_code" not in payload["data"]
        assert abs(int(r.headers["x-service-timestamp"]) - time.time()) < 60
        # One signature, over the exact bytes: a changed body or another secret fails.
        assert len(r.headers["x-service-signature"].split(" ")) == 1
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(r.body + b" ", standard_headers(r))
        with pytest.raises(WebhookVerificationError):
            Webhook("whsec_" + base64.b64encode(b"x" * 32).decode()).verify(r.body, standard_headers(r))

        rows = await wait_delivery(stack, data["webhook_id"], "succeeded")
        assert [(d["status"], d["attempts"], d["last_status_code"]) for d in rows] == [("succeeded", 1, 200)]
        attempts = await attempts_of(stack, rows[0]["id"])
        assert [(a["attempt"], a["status_code"]) for a in attempts] == [(1, 200)]
        assert attempts[0]["latency_ms"] is not None and attempts[0]["finished_at"] is not None

        # The secret is stored only encrypted.
        conn = await connect_db(stack)
        try:
            enc = await conn.fetchval(
                "SELECT secret_enc FROM webhooks.endpoints WHERE id = $1", data["webhook_id"]
            )
            inbox = await conn.fetch("SELECT result FROM webhooks.inbox")
        finally:
            await conn.close()
        raw_key = base64.b64decode(secret[6:])
        assert secret.encode() not in bytes(enc) and raw_key not in bytes(enc)
        assert all(secret.encode() not in bytes(i["result"] or b"") for i in inbox)
        log = stack.procs["webhooks"].log.read_text()
        assert secret not in log and secret[6:] not in log

        status = await wh.call(GetWebhookStatus, tenant.tenant_id)
        assert status.status == 200 and status.data == {"verified_endpoint": True}
        other = make_tenant(stack)
        status = await wh.call(GetWebhookStatus, other.tenant_id)
        assert status.data == {"verified_endpoint": False}
