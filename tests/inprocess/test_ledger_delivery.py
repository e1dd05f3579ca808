"""Delivery guarantees: redelivered commands, the idempotency key as a second line of
defence, a burst on one wallet, dead letters that still answer, the outbox relay (concurrency
across the stack's two ledger instances is in tests/integration/test_ledger_delivery.py, the
SIGKILL-after-commit test in tests/integration/test_ledger_crash.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest

from common.contracts import Result, encode
from common.contracts.commands import CreateCustomer
from common.ids import new_id
from tests.conftest import Stack
from tests.support.ledger import LedgerKit, allow, ledger_invariants, open_kit

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]

D = Decimal


@pytest.fixture
async def kit(stack: Stack) -> AsyncIterator[LedgerKit]:
    async with open_kit(stack) as k:
        yield k
        await ledger_invariants(k.db, k.tenant_id)


async def test_redelivered_command_changes_nothing_and_answers_the_same(kit: LedgerKit) -> None:
    a, b = await kit.funded_wallet("50.00"), await kit.funded_wallet("0")
    cmd = kit.book_cmd(a["wallet_id"], b["wallet_id"], "20")
    first = await kit.send(cmd)
    again = await kit.send(cmd)  # the same command id, delivered a second time
    assert encode(first) == encode(again)
    deposit = kit.deposit_cmd(a["virtual_account_id"], "5.00")
    assert encode(await kit.send(deposit)) == encode(await kit.send(deposit))
    assert await kit.balances(a["wallet_id"]) == (D("35.00"), D(0))
    assert await kit.balances(b["wallet_id"]) == (D("20"), D(0))
    assert (
        await kit.db.fetchval("SELECT count(*) FROM ledger.transfers WHERE tenant_id = $1", kit.tenant_id)
        == 1
    )
    refused = kit.book_cmd(a["wallet_id"], b["wallet_id"], "1000")  # a refusal replays too
    assert encode(await kit.send(refused)) == encode(await kit.send(refused))


async def test_same_idempotency_key_never_pays_twice(kit: LedgerKit) -> None:
    a, b = await kit.funded_wallet("50.00"), await kit.funded_wallet("0")
    key = "idem-" + uuid.uuid4().hex
    first = await kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "20", idem=key))
    twin = await kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "20", idem=key))
    assert first.status == twin.status == 201
    assert twin.data["transfer_id"] == first.data["transfer_id"]
    other = await kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "21", idem=key))
    assert other.status == 409 and other.error.code == "idempotency_replay_mismatch"
    payout = await kit.send(kit.payout_cmd(a["wallet_id"], "20", idem=key))
    assert payout.status == 409
    # Concurrent twins with fresh command ids: one transfer.
    key2 = "idem-" + uuid.uuid4().hex
    rs = await asyncio.gather(
        *(kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "3", idem=key2)) for _ in range(5))
    )
    assert {r.data["transfer_id"] for r in rs} == {rs[0].data["transfer_id"]}
    assert await kit.balances(a["wallet_id"]) == (D("27.00"), D(0))


async def test_one_wallet_cannot_be_overdrawn_by_a_burst(kit: LedgerKit) -> None:
    a, b = await kit.funded_wallet("10.00"), await kit.funded_wallet("0")
    rs = await asyncio.gather(
        *(kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "1.00"), wait_s=60) for _ in range(25))
    )
    assert sum(1 for r in rs if r.ok) == 10
    assert all(r.error.details["reason"] == "insufficient_funds" for r in rs if not r.ok)
    assert await kit.balances(a["wallet_id"]) == (D(0), D(0))
    assert await kit.balances(b["wallet_id"]) == (D("10.00"), D(0))


async def test_a_finally_failing_command_is_answered_with_provider_error(kit: LedgerKit) -> None:
    cus = await kit.customer()
    clash = CreateCustomer(
        command_id=new_id("cmd"),
        ctx=kit.ctx(),
        decision=allow(),
        customer_id=cus,
        account_type="individual",
        email="x@example.com",
        country_code="US",
        service_user_id="u-2",
        full_name="Dup",
    )
    r = await kit.send(clash, wait_s=30)  # a primary-key clash: not a refusal, a failure
    assert r.status == 502 and r.error.code == "provider_error"
    assert await kit.db.fetchval("SELECT count(*) FROM ledger.customers WHERE id = $1", cus) == 1


async def test_relay_publishes_outbox_rows_left_behind(kit: LedgerKit) -> None:
    """Rows written but never dispatched (a crash) are published by the relay of any instance."""
    cmd_id = new_id("cmd")
    orphan = Result(command_id=cmd_id, request_id="req_orphan", status=201, data={"from": "outbox"})
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Result] = loop.create_future()
    kit.rpc._waiters[cmd_id] = fut
    await kit.db.execute(
        "INSERT INTO ledger.outbox (topic, partition, payload, created_at) VALUES"
        " ($1, 0, $2, now() - interval '1 minute')",
        kit.rpc.reply_topic,
        encode(orphan),
    )
    got = await asyncio.wait_for(fut, 20)
    assert got.data == {"from": "outbox"}
    for _ in range(50):  # the relay deletes the row in the transaction that published it
        left = await kit.db.fetchval(
            "SELECT count(*) FROM ledger.outbox WHERE topic = $1", kit.rpc.reply_topic
        )
        if not left:
            break
        await asyncio.sleep(0.1)
    assert left == 0
