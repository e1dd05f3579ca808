"""A wake racing a claim: a delivery made due (replayed, or fanned out) while a worker's claim
holds its endpoint must still be claimed afterwards.

The claim resets the endpoint's ``next_due_at`` from the deliveries it can see; a wake that
judged the endpoint "already due" from the value before that claim committed left it unset,
and the new delivery pending for good (the rare stall of
test_webhooks_api.test_endpoint_failing_too_long_is_disabled_then_re_enabled). On a database
of its own, so the running webhooks worker cannot claim first.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.db import create_engine, migrate, sessionmaker
from tests.conftest import Stack
from tests.support.webhooks import insert_backlog
from tools.stack.stores import create_database, drop_database
from webhooks import repository as repo
from webhooks.delivery import Policy, claim_due

pytestmark = pytest.mark.inprocess

POLICY = Policy(schedule=(1, 1, 1), jitter=0, timeout_s=15, disable_after_s=432000, allow_private=True)


@pytest.fixture
def own_database(stack: Stack) -> Iterator[str]:
    url = create_database(stack.stores.database_url, "sluice_wake_" + uuid.uuid4().hex[:10])
    try:
        migrate("admin", url)  # identity.tenants: webhooks holds a disabled tenant's deliveries
        migrate("webhooks", url)
        yield url
    finally:
        drop_database(url)


async def _blocked_on_endpoint(
    sessions: async_sessionmaker[AsyncSession], holder: int, timeout_s: float = 30
) -> str:
    """The statement of a backend waiting for a lock ``holder`` holds, once it is a statement on
    the endpoints table; "" when none is within ``timeout_s`` (a deadline, not a wait)."""
    waiting = text(
        "SELECT query FROM pg_stat_activity WHERE :holder = ANY(pg_blocking_pids(pid))"
        " AND query LIKE '%webhooks.endpoints%'"
    )
    deadline = time.monotonic() + timeout_s
    async with sessions() as s:
        while time.monotonic() < deadline:
            found = (await s.execute(waiting, {"holder": holder})).scalars().first()
            await s.rollback()  # a fresh snapshot of pg_stat_activity each time
            if found:
                return str(found)
            await asyncio.sleep(0.02)
    return ""


async def test_a_replay_during_a_claim_of_its_endpoint_is_claimed_next(own_database: str) -> None:
    engine = create_engine(own_database, 3)
    sessions = sessionmaker(engine)
    try:
        async with sessions() as s, s.begin():
            await s.execute(
                text(
                    "INSERT INTO webhooks.endpoints (id, tenant_id, mode, url, secret_enc, next_due_at)"
                    " VALUES ('we_race', 't_race', 'sandbox', 'http://127.0.0.1:9/', '\\x00', now())"
                )
            )
            raw = (await (await s.connection()).get_raw_connection()).driver_connection
            (event_id,) = await insert_backlog(raw, "t_race", "we_race", 1)
            await s.execute(text("UPDATE webhooks.deliveries SET status = 'dead'"))
        delivery_id = "dlv_" + event_id

        claim = sessions()
        await claim.begin()
        claim_pid = (await claim.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        # The endpoint is due (the enable's now()), nothing of it is pending: the claim locks it,
        # leases nothing and resets next_due_at to unset, not committed yet.
        assert await claim_due(claim, POLICY, "probe", 4) == []
        async with sessions() as replay, replay.begin():
            replayed = asyncio.create_task(repo.replay_delivery(replay, delivery_id))
            # The replay's wake waits for the claim's lock on the endpoint (it must, to read what
            # the claim writes): seen in pg_stat_activity, not assumed after a sleep.
            blocked = await _blocked_on_endpoint(sessions, claim_pid)
            assert blocked, "the replay's wake did not wait for the claim's lock on the endpoint"
            assert not replayed.done()
            await claim.commit()
            await claim.close()
            assert (await replayed) is not None
        async with sessions() as s, s.begin():
            due = (
                await s.execute(
                    text("SELECT next_due_at <= now() FROM webhooks.endpoints WHERE id = 'we_race'")
                )
            ).scalar_one()
            assert due is True, "the replayed delivery's endpoint was left not due"
            claimed = await claim_due(s, POLICY, "probe", 4)
            assert [c.id for c in claimed] == [delivery_id]
    finally:
        await engine.dispose()
