"""Delivery guarantees across ledger instances: wallets on different partitions, so on the
stack's two ledgers of one consumer group, pay each other at once and keep every cent. The
other guarantees (redelivery, idempotency keys, a burst, dead letters, the outbox relay):
tests/inprocess/test_ledger_delivery.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest

from tests.conftest import Stack
from tests.support.ledger import LedgerKit, ledger_invariants, open_kit

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may start the stack

D = Decimal


@pytest.fixture
async def kit(stack: Stack) -> AsyncIterator[LedgerKit]:
    async with open_kit(stack) as k:
        yield k
        await ledger_invariants(k.db, k.tenant_id)


async def test_concurrent_batches_on_two_instances_keep_every_cent(kit: LedgerKit) -> None:
    """Wallets on different partitions (so different ledger instances) pay each other at once."""
    wallets = [await kit.funded_wallet("10.00") for _ in range(4)]
    ids = [w["wallet_id"] for w in wallets]
    cmds = []
    for i in range(60):
        src, dst = ids[i % 4], ids[(i * 3 + 1) % 4]
        if src == dst:
            dst = ids[(i + 1) % 4]
        cmds.append(kit.book_cmd(src, dst, "1.50") if i % 5 else kit.payout_cmd(src, "2.00"))
    rs = await asyncio.gather(*(kit.send(c, wait_s=60) for c in cmds))
    outcomes = {(r.status, r.error.details.get("reason") if r.error else r.data["state"]) for r in rs}
    assert outcomes <= {(201, "completed"), (201, "pending"), (400, "insufficient_funds")}, outcomes
    assert (201, "completed") in outcomes
    paid = sum(D(c.amount) for c, r in zip(cmds, rs, strict=True) if r.ok and c.kind == "payout")
    for r in rs:
        if r.ok and r.data["state"] == "pending":
            await kit.wait_state(r.data["transfer_id"], "completed", wait_s=30)
    totals = [sum(await kit.balances(w)) for w in ids]
    assert all(t >= 0 for t in totals)
    assert sum(totals) == D("40.00") - paid  # payouts still held count until they complete
    await ledger_invariants(kit.db, kit.tenant_id)
