"""A tenant has at most 16 webhook endpoints per mode; the 17th is 400 invalid_request naming
endpoint_url and the limit, also when the creations race (docs/security.md, "Round 3"). Delivery
capacity is shared fairly: a noisy tenant cannot hold back a quiet tenant's delivery."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import text

from common.db import create_engine, sessionmaker
from tests.conftest import Stack, make_tenant
from tests.support.webhooks import insert_backlog, webhook_commands
from webhooks.delivery import Policy, claim_due

pytestmark = pytest.mark.inprocess


def _create(stack: Stack, key: str, n: int) -> httpx.Response:
    return httpx.post(
        stack.gateway + "/v1/webhooks",
        json={"endpoint_url": f"http://127.0.0.1:9/hook-{n}"},
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex},
        timeout=60,
    )


def test_the_seventeenth_endpoint_of_a_tenant_and_mode_is_refused(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=100000)
    with ThreadPoolExecutor(8) as pool:  # concurrent creations: the count is taken under a lock
        answers = list(pool.map(lambda n: _create(stack, t.key, n), range(20)))
    created = [r for r in answers if r.status_code == 201]
    refused = [r for r in answers if r.status_code == 400]
    assert len(created) == 16 and len(refused) == 4, [r.status_code for r in answers]
    details = refused[0].json()["error"]["details"]
    assert details["field"] == "endpoint_url" and details["limit"] == 16, details
    assert details["reason"] == "too_many_endpoints"
    listed = httpx.get(
        stack.gateway + "/v1/webhooks?limit=100", headers={"Authorization": f"Bearer {t.key}"}, timeout=30
    )
    assert len(listed.json()["data"]["items"]) == 16
    other = make_tenant(stack)  # another tenant has its own sixteen
    assert _create(stack, other.key, 1).status_code == 201


# ---- fair delivery capacity (docs/security.md, "Delivery capacity shared fairly") ----

POLICY = Policy(schedule=(1, 1, 1), jitter=0, timeout_s=15, disable_after_s=432000, allow_private=True)


async def test_a_noisy_tenant_cannot_hold_back_a_quiet_tenants_delivery(stack: Stack) -> None:
    """A tenant with sixteen endpoints and a backlog that has waited ten minutes, and a quiet
    tenant with one new delivery. The claims run in one transaction, rolled back (the running
    service never sees these endpoints due). Ordered by how long they had waited, the claim
    looked at the noisy endpoints only: the quiet delivery waited for the whole backlog."""
    noisy, quiet = make_tenant(stack), make_tenant(stack)
    async with webhook_commands(stack) as wh:
        loud = [
            (await wh.create(noisy.tenant_id, f"http://127.0.0.1:9/noisy-{i}")).data["webhook_id"]
            for i in range(16)
        ]
        calm = (await wh.create(quiet.tenant_id, "http://127.0.0.1:9/quiet")).data["webhook_id"]
    engine = create_engine(stack.stores.database_url, 1)
    try:
        async with sessionmaker(engine)() as session:
            await session.begin()
            raw = (await (await session.connection()).get_raw_connection()).driver_connection
            for w in loud:
                await insert_backlog(raw, noisy.tenant_id, w, 100)
            await insert_backlog(raw, quiet.tenant_id, calm, 1)
            due = (
                "UPDATE webhooks.endpoints SET next_due_at = now() - make_interval(mins => :m)"
                " WHERE id = ANY(:ids)"
            )
            await session.execute(text(due), {"m": 10, "ids": loud})
            await session.execute(text(due), {"m": 0, "ids": [calm]})

            first = await claim_due(session, POLICY, "probe", POLICY.max_in_flight)
            # A claim reserves up to an endpoint's limit for it (the quiet one had one row due),
            # and the worker claims again at once: the two fill every slot.
            more = await claim_due(session, POLICY, "probe", POLICY.max_in_flight - len(first))
            assert len(first) + len(more) == POLICY.max_in_flight, (len(first), len(more))

            # Every slot is now held, all but one by the noisy tenant (slow endpoints), whose
            # endpoints below their own limit are still due with the old backlog. The quiet
            # tenant's next delivery arrives and one slot frees: it goes to the tenant with
            # fewer deliveries in flight.
            await insert_backlog(raw, quiet.tenant_id, calm, 1)
            await session.execute(text(due), {"m": 0, "ids": [calm]})
            second = await claim_due(session, POLICY, "probe", 1)
            assert [c.webhook_id for c in second] == [calm], second
            # With the quiet tenant served, the noisy one takes what frees up.
            third = await claim_due(session, POLICY, "probe", 4)
            assert len(third) == 4 and calm not in {c.webhook_id for c in third}, third
            await session.rollback()
    finally:
        await engine.dispose()
