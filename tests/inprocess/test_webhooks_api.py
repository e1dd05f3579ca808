"""Webhook commands on their topic (create, get, list, idempotent redelivery), event fan-out
(tenant and mode scoping, redelivered events), and disabling / re-enabling an endpoint."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from standardwebhooks import Webhook

from common.contracts import encode
from common.contracts.commands import (
    CreateWebhook,
    EnableWebhook,
    GetWebhook,
    ListDeliveries,
    ListWebhooks,
    ReplayDelivery,
)
from common.ids import new_id
from common.topics import Topics
from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.webhooks import (
    Receiver,
    WebhookCommands,
    connect_db,
    create_customer,
    customer_created,
    deliveries_of,
    endpoint,
    mark_failing_for_days,
    wait_disabled,
    webhook_commands,
)

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]


@pytest.fixture
async def wh(stack: Stack) -> AsyncIterator[WebhookCommands]:
    async with webhook_commands(stack) as client:
        yield client


async def test_create_get_list_and_scoping(stack: Stack, tenant: Tenant, wh: WebhookCommands) -> None:
    made = [await wh.create(tenant.tenant_id, f"http://127.0.0.1:9/hook{i}") for i in range(3)]
    assert all(m.status == 201 for m in made), made
    ids = [m.data["webhook_id"] for m in made]

    got = await wh.call(GetWebhook, tenant.tenant_id, webhook_id=ids[0])
    assert got.status == 200 and got.data["webhook_id"] == ids[0]
    assert got.data["endpoint_url"] == "http://127.0.0.1:9/hook0"
    assert "signing_secret" not in got.data and got.data["created_at"].endswith("Z")

    page = await wh.call(ListWebhooks, tenant.tenant_id, limit=2)
    assert page.status == 200
    assert [i["webhook_id"] for i in page.data["items"]] == [ids[2], ids[1]]  # newest first
    assert all("signing_secret" not in i for i in page.data["items"])
    assert page.data["next_cursor"] == ids[1]
    rest = await wh.call(ListWebhooks, tenant.tenant_id, limit=2, starting_after=ids[1])
    assert [i["webhook_id"] for i in rest.data["items"]] == [ids[0]]
    assert rest.data["next_cursor"] is None

    # Another tenant, or the other mode of the same tenant, sees none of them.
    other = make_tenant(stack)
    assert (await wh.call(GetWebhook, other.tenant_id, webhook_id=ids[0])).status == 404
    assert (await wh.call(GetWebhook, tenant.tenant_id, "production", webhook_id=ids[0])).status == 404
    empty = await wh.call(ListWebhooks, tenant.tenant_id, "production")
    assert empty.data == {"items": [], "next_cursor": None}
    bad = await wh.call(ListWebhooks, tenant.tenant_id, limit=0)
    assert bad.status == 400 and bad.error is not None and bad.error.details["field"] == "limit"

    refused = await wh.create(tenant.tenant_id, "ftp://127.0.0.1/hook")
    assert refused.status == 400 and refused.error is not None
    assert refused.error.details == {"field": "endpoint_url", "reason": "invalid_url"}


async def test_redelivered_create_command_answers_the_same_and_creates_one(
    tenant: Tenant, wh: WebhookCommands
) -> None:
    cmd = CreateWebhook(
        command_id=uuid.uuid4().hex,
        ctx=wh.ctx(tenant.tenant_id),
        webhook_id=new_id("we"),
        endpoint_url="http://127.0.0.1:9/hook",
    )
    first = await wh.rpc.call(wh.topic, cmd, key=tenant.tenant_id, timeout=20)
    second = await wh.rpc.call(wh.topic, cmd, key=tenant.tenant_id, timeout=20)
    assert first.status == second.status == 201
    assert first.data == second.data  # same secret, from the sealed inbox record
    listed = await wh.call(ListWebhooks, tenant.tenant_id)
    assert [i["webhook_id"] for i in listed.data["items"]] == [cmd.webhook_id]


async def test_events_fan_out_by_tenant_and_mode_and_redelivery_creates_nothing(stack: Stack) -> None:
    tenant, other = make_tenant(stack), make_tenant(stack)
    sandbox, production, foreign = Receiver().start(), Receiver().start(), Receiver().start()
    try:
        async with webhook_commands(stack) as wh:
            a = (await wh.create(tenant.tenant_id, sandbox.url)).data["webhook_id"]
            b = (await wh.create(tenant.tenant_id, sandbox.url + "?second")).data["webhook_id"]
            p = (await wh.create(tenant.tenant_id, production.url, "production")).data["webhook_id"]
            f = (await wh.create(other.tenant_id, foreign.url)).data["webhook_id"]
            event = customer_created(tenant.tenant_id, "cus_x")
            topic = Topics().events
            for _ in range(3):  # the same event delivered three times by Kafka
                await wh.broker.publish(encode(event), topic=topic, key=tenant.tenant_id.encode())
            got = await sandbox.wait_for(2, event_id=event.event_id)
            await asyncio.sleep(2.0)
            assert len(sandbox.for_event(event.event_id)) == 2  # one per endpoint, not per copy
            for webhook_id in (a, b):
                rows = await deliveries_of(stack, webhook_id)
                assert [(r["event_id"], r["status"]) for r in rows] == [(event.event_id, "succeeded")]
            assert await deliveries_of(stack, p) == [] and production.received == []
            assert await deliveries_of(stack, f) == [] and foreign.received == []
            assert {g.headers["x-service-webhook-id"] for g in got} == {event.event_id}
    finally:
        for r in (sandbox, production, foreign):
            r.stop()


async def test_endpoint_failing_too_long_is_disabled_then_re_enabled(stack: Stack) -> None:
    async with endpoint(stack, Receiver(default=500)) as (tenant, receiver, wh, created):
        webhook_id = created.data["webhook_id"]
        # Failing for six days before the delivery exists: its first failed attempt disables
        # the endpoint, however late this process gets to run (marked after the first attempt,
        # the delivery could run out of its 1, 1, 1 s retries first, which disable nothing).
        await mark_failing_for_days(stack, webhook_id)
        await create_customer(tenant)
        rows, row = await wait_disabled(stack, webhook_id, timeout=30)
        assert len(receiver.received) >= 1  # it was attempted, and failed, before being disabled
        assert row["enabled"] is False and row["disabled_reason"] == "failing_without_success"
        assert [r["status"] for r in rows] == ["dead"]
        delivery_id = rows[0]["id"]
        got = await wh.call(GetWebhook, tenant.tenant_id, webhook_id=webhook_id)
        assert got.data["status"] == "disabled"

        # A disabled endpoint gets no new deliveries, and its dead ones cannot be replayed yet.
        await create_customer(tenant)
        conn = await connect_db(stack)
        try:
            for _ in range(300):  # until the service has consumed the second event
                seen = await conn.fetchval(
                    "SELECT count(*) FROM webhooks.events WHERE tenant_id = $1 AND type = 'customer.created'",
                    tenant.tenant_id,
                )
                if seen == 2:
                    break
                await asyncio.sleep(0.1)
        finally:
            await conn.close()
        assert seen == 2
        refused = await wh.call(ReplayDelivery, "", delivery_id=delivery_id)
        assert refused.status == 400 and refused.error is not None
        assert refused.error.details["reason"] == "endpoint_disabled"

        receiver.default = 200
        enabled = await wh.call(EnableWebhook, "", webhook_id=webhook_id)
        assert enabled.status == 200 and enabled.data["status"] == "enabled"
        assert (await wh.call(EnableWebhook, "", webhook_id="we_missing")).status == 404
        assert (
            await wh.call(EnableWebhook, make_tenant(stack).tenant_id, webhook_id=webhook_id)
        ).status == 404
        assert (await wh.call(ReplayDelivery, "", delivery_id=delivery_id)).status == 200
        deadline = time.monotonic() + 20
        while True:  # the replayed delivery is sent once the endpoint is enabled again
            rows = await deliveries_of(stack, webhook_id)
            mine = [r for r in rows if r["id"] == delivery_id]
            if mine[0]["status"] == "succeeded" or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        if mine[0]["status"] != "succeeded":  # what the worker saw: a rare stall, cause unknown
            conn = await connect_db(stack)
            try:
                hook = dict(await conn.fetchrow("SELECT * FROM webhooks.endpoints WHERE id = $1", webhook_id))
                due = await conn.fetchval(
                    "SELECT count(*) FROM webhooks.endpoints WHERE next_due_at <= now()"
                )
            finally:
                await conn.close()
            async with httpx.AsyncClient(timeout=5) as client:
                ready = (await client.get(stack.procs["webhooks"].url + "/readyz")).json()
            hook.pop("secret_enc", None)
            hook.pop("retired_secrets_enc", None)
            pytest.fail(
                f"replayed delivery {mine[0]}; endpoint {hook}; due endpoints {due}; webhooks {ready}"
            )
        conn = await connect_db(stack)
        try:  # the event stored while the endpoint was disabled was never fanned out to it
            later = await conn.fetchval(
                "SELECT event_id FROM webhooks.events WHERE tenant_id = $1 AND event_id <> $2"
                " AND type = 'customer.created'",
                tenant.tenant_id,
                mine[0]["event_id"],
            )
        finally:
            await conn.close()
        assert later is not None and later not in {r["event_id"] for r in rows}, [dict(r) for r in rows]
        listed = await wh.call(ListDeliveries, "", webhook_id=webhook_id)
        assert {i["delivery_id"]: i["status"] for i in listed.data["items"]}[delivery_id] == "succeeded"
        bad = await wh.call(ListDeliveries, "", status="stuck")
        assert bad.status == 400 and bad.error is not None and bad.error.details["field"] == "status"


def test_partner_http_and_admin_flow(stack: Stack) -> None:
    """POST/GET /v1/webhooks through the gateway, a real delivery, and admin list_deliveries."""
    tenant = make_tenant(stack)
    receiver = Receiver().start()
    try:
        r = tenant.post("/v1/webhooks", {"endpoint_url": receiver.url})
        assert r.status_code == 201, r.text
        created = r.json()["data"]
        webhook_id, secret = created["webhook_id"], created["signing_secret"]
        got = tenant.get(f"/v1/webhooks/{webhook_id}")
        assert got.status_code == 200, got.text
        assert (
            got.json()["data"]["endpoint_url"] == receiver.url and "signing_secret" not in got.json()["data"]
        )
        listed = tenant.get("/v1/webhooks")
        assert [i["webhook_id"] for i in listed.json()["data"]["items"]] == [webhook_id]
        other = make_tenant(stack)
        assert other.get(f"/v1/webhooks/{webhook_id}").status_code == 404
        refused = tenant.post("/v1/webhooks", {"endpoint_url": "ftp://127.0.0.1/hook"})
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["details"]["field"] == "endpoint_url"

        customer = tenant.post("/v1/customers", customer_body())
        assert customer.status_code == 201, customer.text
        deadline = time.monotonic() + 30
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.1)
        delivered = receiver.received[0]
        payload = Webhook(secret).verify(
            delivered.body,
            {
                "webhook-id": delivered.headers["x-service-webhook-id"],
                "webhook-timestamp": delivered.headers["x-service-timestamp"],
                "webhook-signature": delivered.headers["x-service-signature"],
            },
        )
        assert payload["data"]["customer_id"] == customer.json()["data"]["customer_id"]

        while time.monotonic() < deadline:
            ops = stack.admin_call("list_deliveries", tenant_id=tenant.tenant_id)
            assert ops.status_code == 200, ops.text
            items = ops.json()["data"]["items"]
            if items and items[0]["status"] == "succeeded":
                break
            time.sleep(0.2)
        assert [
            (i["webhook_id"], i["event_type"], i["status"], i["attempts"], i["last_status_code"])
            for i in items
        ] == [(webhook_id, "customer.created", "succeeded", 1, 200)]
        replay = stack.admin_call("replay_delivery", delivery_id=items[0]["delivery_id"])
        assert replay.status_code == 400, replay.text
        assert replay.json()["error"]["details"]["reason"] == "not_dead"

        rotated = tenant.post(f"/v1/webhooks/{webhook_id}/rotate-secret", {})
        assert rotated.status_code == 200, rotated.text
        assert rotated.json()["data"]["signing_secret"] not in (secret, None)
    finally:
        receiver.stop()
