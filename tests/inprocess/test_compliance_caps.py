"""Daily cap accounting under concurrency, on PostgreSQL: racing transactions and batches,
settling and releasing at once. Transfers decided by two compliance instances of one consumer
group, and a cap given back when the ledger reports a transfer failed:
tests/integration/test_compliance_caps.py."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from common.db import create_engine, sessionmaker
from compliance import allowance
from compliance import repository as repo
from compliance.allowance import Claim
from tests.conftest import Stack
from tests.support.compliance import settle_claims, uid
from tests.support.db import pg_connect

pytestmark = pytest.mark.inprocess


def _claim(tenant: str, amount: int, daily: int, currency: str = "USDC", mode: str = "production") -> Claim:
    return Claim(
        uid("cmd"),
        uid("tr"),
        tenant,
        mode,
        currency,
        datetime.now(UTC).date(),
        Decimal(amount),
        Decimal(daily),
    )


async def test_racing_transactions_cannot_share_the_last_of_a_cap(stack: Stack) -> None:
    """20 concurrent transactions take 10 each from a daily 50: exactly 5 succeed."""
    engine = create_engine(stack.stores.database_url, pool_size=20)
    sessions = sessionmaker(engine)
    tenant, day = uid("ten"), datetime.now(UTC).date()
    gate = asyncio.Event()

    async def take() -> bool:
        async with sessions() as session, session.begin():
            await gate.wait()
            refused = await settle_claims(session, [_claim(tenant, 10, 50)])
            await asyncio.sleep(0.01)  # hold the row lock a moment: racers must wait, then re-check
            return not refused

    try:
        tasks = [asyncio.create_task(take()) for _ in range(20)]
        await asyncio.sleep(0.2)
        gate.set()
        results = await asyncio.gather(*tasks)
        async with sessions() as session:
            used = await repo.used_today(session, tenant, "production", "USDC", day)
    finally:
        await engine.dispose()
    assert results.count(True) == 5
    assert used == Decimal(50)


async def test_concurrent_batches_never_approve_beyond_the_cap(stack: Stack) -> None:
    """16 instances settle batches of 25 transfers of two tenants (three daily caps, keys in
    random order within each batch) at once: no deadlock, no cap exceeded, and no transfer
    refused that would still have fitted (the caps are filled exactly)."""
    rnd = random.Random(15)
    engine = create_engine(stack.stores.database_url, pool_size=16)
    sessions = sessionmaker(engine)
    a, b = uid("ten"), uid("ten")
    daily = {(a, "USDC"): 500, (b, "USDC"): 300, (b, "EUR"): 200}
    keys = list(daily)
    batches = [
        [
            _claim(t, rnd.choice((3, 7, 10, 25, 40)), daily[(t, cur)], cur)
            for t, cur in rnd.choices(keys, k=25)
        ]
        for _ in range(16)
    ]
    gate = asyncio.Event()

    async def settle(batch: list[Claim]) -> dict[str, Decimal]:
        async with sessions() as session, session.begin():
            await gate.wait()
            refused = await settle_claims(session, batch)
            await asyncio.sleep(0.02)  # hold the locks: the other instances must wait, then re-read
            return refused

    try:
        tasks = [asyncio.create_task(settle(batch)) for batch in batches]
        await asyncio.sleep(0.3)
        started = time.monotonic()
        gate.set()
        refusals = await asyncio.gather(*tasks)
        elapsed = time.monotonic() - started
        day = datetime.now(UTC).date()
        async with sessions() as session:
            used = {k: await repo.used_today(session, k[0], "production", k[1], day) for k in keys}
    finally:
        await engine.dispose()
    conn = await pg_connect(stack.stores.database_url)
    try:
        holds = {
            (r["tenant_id"], r["currency"]): r["total"]
            for r in await conn.fetch(
                "SELECT tenant_id, currency, sum(amount) AS total FROM compliance.holds"
                " WHERE tenant_id = ANY($1) GROUP BY 1, 2",
                [a, b],
            )
        }
    finally:
        await conn.close()
    granted: dict[tuple[str, str], Decimal] = dict.fromkeys(keys, Decimal(0))
    for batch, refused in zip(batches, refusals, strict=True):
        for c in batch:
            key = (c.tenant_id, c.currency)
            if c.command_id in refused:
                assert refused[c.command_id] + c.amount > c.daily  # refused only when it did not fit
                assert used[key] + c.amount > c.daily, "a refused transfer would still have fitted"
            else:
                granted[key] += c.amount
    for key in keys:
        assert granted[key] == used[key] == holds.get(key, Decimal(0))
        assert used[key] <= daily[key], f"{key}: {used[key]} approved against a cap of {daily[key]}"
    print(f"\n16 concurrent batches of 25 settled in {elapsed:.2f}s; used {sorted(used.values())}")


async def test_settling_and_releasing_at_once_keep_usage_equal_to_open_holds(stack: Stack) -> None:
    """Instances settle new batches while the usage consumer gives back failed transfers of
    the same days, keys in random order: no deadlock, and each day's usage stays exactly the
    sum of its holds not released."""
    rnd = random.Random(11)
    engine = create_engine(stack.stores.database_url, pool_size=16)
    sessions = sessionmaker(engine)
    t = uid("ten")
    currencies = ["USDC", "USDT", "EURC"]
    held = [_claim(t, 5, 10_000, rnd.choice(currencies)) for _ in range(60)]
    gate = asyncio.Event()

    async def settle(batch: list[Claim]) -> None:
        async with sessions() as session, session.begin():
            await gate.wait()
            assert await settle_claims(session, batch) == {}
            await asyncio.sleep(0.02)

    async def release(holds: list[tuple[str, str]]) -> None:
        async with sessions() as session, session.begin():
            await gate.wait()
            await allowance.release(session, holds)
            await asyncio.sleep(0.02)

    try:
        async with sessions() as session, session.begin():
            assert await settle_claims(session, held) == {}
        work = [settle([_claim(t, 3, 10_000, rnd.choice(currencies)) for _ in range(20)]) for _ in range(8)]
        samples = [rnd.sample(held, 20) for _ in range(8)]
        work += [release([(c.transfer_id, t) for c in sample]) for sample in samples]
        rnd.shuffle(work)
        tasks = [asyncio.create_task(w) for w in work]
        await asyncio.sleep(0.3)
        gate.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
    finally:
        await engine.dispose()
    conn = await pg_connect(stack.stores.database_url)
    try:
        used = dict(
            await conn.fetch("SELECT currency, used FROM compliance.cap_usage WHERE tenant_id = $1", t)
        )
        open_holds = dict(
            await conn.fetch(
                "SELECT currency, coalesce(sum(amount) FILTER (WHERE released_at IS NULL), 0)"
                " FROM compliance.holds WHERE tenant_id = $1 GROUP BY 1",
                t,
            )
        )
    finally:
        await conn.close()
    assert used == open_holds
    released = {c.transfer_id for sample in samples for c in sample}
    assert sum(used.values()) == 8 * 20 * 3 + 5 * (60 - len(released))


async def test_a_hold_is_kept_on_its_decision_and_an_earlier_release_s_hold_is_still_given_back(
    stack: Stack,
) -> None:
    """A granted claim's hold is written on its decision (no ``cap_holds`` row); a hold the
    previous release wrote to ``cap_holds`` (during a rolling upgrade, or before migration
    0007) is still given back, once, by the release naming its command, and ``compliance.holds``
    lists both."""
    engine = create_engine(stack.stores.database_url, pool_size=2)
    sessions = sessionmaker(engine)
    t = uid("ten")
    new, old = _claim(t, 7, 100), _claim(t, 5, 100)
    conn = await pg_connect(stack.stores.database_url)
    try:
        async with sessions() as session, session.begin():
            assert await settle_claims(session, [new]) == {}
        async with sessions() as session, session.begin():  # the previous release's hold
            used = await repo.lock_usage(session, [old.key])
            await repo.set_usage(session, {old.key: used[old.key] + old.amount})
        await conn.execute(
            "INSERT INTO compliance.cap_holds"
            " (transfer_id, tenant_id, mode, currency, day, amount, command_id)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7)",
            *(old.transfer_id, t, old.mode, old.currency, old.day, old.amount, old.command_id),
        )
        in_table = "SELECT count(*) FROM compliance.cap_holds WHERE tenant_id = $1"
        assert await conn.fetchval(in_table, t) == 1  # the new hold has no row of its own
        listed = (
            "SELECT transfer_id, amount FROM compliance.holds WHERE tenant_id = $1 AND released_at IS NULL"
        )
        assert sorted(tuple(r) for r in await conn.fetch(listed, t)) == sorted(
            [(new.transfer_id, Decimal(7)), (old.transfer_id, Decimal(5))]
        )
        failed = [(c.transfer_id, c.command_id, t) for c in (new, old)]
        for _ in range(2):  # a release read twice gives back once
            async with sessions() as session, session.begin():
                await allowance.release_failed(session, failed)
        async with sessions() as session:
            assert await repo.used_today(session, t, new.mode, new.currency, new.day) == 0
        assert await conn.fetch(listed, t) == []
    finally:
        await conn.close()
        await engine.dispose()
