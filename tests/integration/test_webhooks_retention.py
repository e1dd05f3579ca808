"""Retention: the running webhooks service deletes old finished deliveries (with their
attempts) and events left without deliveries, and nothing that is pending or recent."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from common.ids import new_id
from tests.conftest import Stack
from tests.support.webhooks import connect_db

pytestmark = pytest.mark.integration

OLD_DAYS = 40  # the default retention is 30 days


async def test_retention_sweep_deletes_only_old_finished_rows(stack: Stack) -> None:
    db = await connect_db(stack)
    tenant = "ten_ret_" + uuid.uuid4().hex[:10]
    wid = new_id("wh")
    events = {name: new_id("evt") for name in ("old_done", "old_pending", "old_orphan", "new_done")}
    deliveries = {name: new_id("dlv") for name in ("old_done", "old_pending", "new_done")}
    try:
        await db.execute(
            "INSERT INTO webhooks.endpoints (id, tenant_id, mode, url, secret_enc)"
            " VALUES ($1, $2, 'sandbox', 'http://127.0.0.1:9/hook', $3)",
            wid,
            tenant,
            b"sealed",
        )
        for name, eid in events.items():
            await db.execute(
                "INSERT INTO webhooks.events (event_id, tenant_id, mode, type, body, received_at)"
                " VALUES ($1, $2, 'sandbox', 'customer.created', $3, now() - make_interval(days => $4))",
                eid,
                tenant,
                b"{}",
                1 if name.startswith("new") else OLD_DAYS,
            )
        for name, did in deliveries.items():
            await db.execute(
                "INSERT INTO webhooks.deliveries (id, event_id, webhook_id, tenant_id, mode, event_type,"
                " status, attempts, max_attempts, next_attempt_at, created_at, updated_at)"
                " VALUES ($1, $2, $3, $4, 'sandbox', 'customer.created', $5, 1, 3,"
                " now() + interval '1 day', now() - make_interval(days => $6),"
                " now() - make_interval(days => $6))",
                did,
                events[name],
                wid,
                tenant,
                "pending" if name == "old_pending" else "succeeded",
                1 if name.startswith("new") else OLD_DAYS,
            )
            await db.execute(
                "INSERT INTO webhooks.attempts (delivery_id, attempt, worker, status_code)"
                " VALUES ($1, 1, 'test', 200)",
                did,
            )
        for _ in range(150):  # the test stack sweeps every second
            left = await db.fetchval(
                "SELECT count(*) FROM webhooks.deliveries WHERE id = $1", deliveries["old_done"]
            )
            if not left:
                break
            await asyncio.sleep(0.2)
        kept_deliveries = {
            r["id"] for r in await db.fetch("SELECT id FROM webhooks.deliveries WHERE tenant_id = $1", tenant)
        }
        assert kept_deliveries == {deliveries["old_pending"], deliveries["new_done"]}
        kept_attempts = {
            r["delivery_id"]
            for r in await db.fetch(
                "SELECT delivery_id FROM webhooks.attempts WHERE delivery_id = ANY($1::text[])",
                list(deliveries.values()),
            )
        }
        assert kept_attempts == kept_deliveries
        kept_events = {
            r["event_id"]
            for r in await db.fetch("SELECT event_id FROM webhooks.events WHERE tenant_id = $1", tenant)
        }
        assert kept_events == {events["old_pending"], events["new_done"]}
        async with httpx.AsyncClient(timeout=10) as client:
            stats = (await client.get(stack.procs["webhooks"].url + "/readyz")).json()["stats"]
        assert stats["deliveries_pruned"] >= 1 and stats["events_pruned"] >= 2
    finally:
        ids = list(deliveries.values())
        await db.execute("DELETE FROM webhooks.attempts WHERE delivery_id = ANY($1::text[])", ids)
        await db.execute("DELETE FROM webhooks.deliveries WHERE tenant_id = $1", tenant)
        await db.execute("DELETE FROM webhooks.events WHERE tenant_id = $1", tenant)
        await db.execute("DELETE FROM webhooks.endpoints WHERE id = $1", wid)
        await db.close()
