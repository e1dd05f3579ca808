"""The state machine: every (from, to) pair for transfers and payouts, decided by the one
transition function against real rows (the pure table, planned paths and the sandbox's steps:
tests/unit/test_states.py)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from decimal import Decimal

import asyncpg
import pytest
from sqlalchemy import text

from common.db import create_engine, sessionmaker
from common.errors import ServiceError
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core import entries
from ledger.core.entries import UnbalancedEntry
from ledger.core.states import is_legal
from ledger.journal import Journal
from ledger.states import transition
from tests.conftest import Stack
from tests.support.ledger import LedgerKit, allow, ledger_invariants, open_kit

STATES = ["pending", "in_review", "processing", "completed", "failed", "rejected", "returned"]
LEGAL = {
    ("pending", "processing"),
    ("processing", "completed"),
    ("pending", "in_review"),
    ("in_review", "processing"),
    ("in_review", "rejected"),
    ("processing", "failed"),
}


@pytest.fixture
async def kit(stack: Stack) -> AsyncIterator[LedgerKit]:
    async with open_kit(stack) as k:
        yield k


@pytest.mark.inprocess
async def test_every_pair_through_the_one_transition_function(kit: LedgerKit) -> None:
    a, b = await kit.funded_wallet("100.00"), await kit.funded_wallet("0")
    book = (await kit.send(kit.book_cmd(a["wallet_id"], b["wallet_id"], "5", decision=allow("review")))).data
    payout = (await kit.send(kit.payout_cmd(a["wallet_id"], "7", decision=allow("review")))).data
    assert book["state"] == payout["state"] == "in_review"
    engine = create_engine(kit.stack.stores.database_url, 2)
    sessions = sessionmaker(engine)
    ledger_config = LedgerConfig(settle_s=60)
    checked = 0
    try:
        for tid, kind in ((book["transfer_id"], "transfer"), (payout["transfer_id"], "payout")):
            for frm, to in itertools.product(STATES, STATES):
                async with sessions() as session, session.begin():
                    # Put the row in ``frm`` (test-only, rolled back), funds held as at in_review.
                    await session.execute(
                        text("UPDATE ledger.transfers SET state = :s WHERE id = :id"), {"s": frm, "id": tid}
                    )
                    row = await repo.lock_transfer(session, tid, kit.tenant_id, kit.mode)
                    journal = Journal.begin(session)  # never applied: the transaction rolls back
                    if is_legal(kind, frm, to):
                        new, event = await transition(
                            session, journal, row, to, cause="test", ledger_config=ledger_config
                        )
                        assert (new.state, new.previous_state) == (to, frm)
                        assert event.data["state"] == to and event.data["previous_state"] == frm
                        assert type(event).__name__ == (
                            "PayoutUpdated" if kind == "payout" else "TransferUpdated"
                        )
                    else:
                        with pytest.raises(ServiceError) as err:
                            await transition(
                                session, journal, row, to, cause="test", ledger_config=ledger_config
                            )
                        assert err.value.details["reason"] == "illegal_transition"
                        assert err.value.details["state"] == frm
                    await session.rollback()
                checked += 1
    finally:
        await engine.dispose()
    assert checked == 2 * len(STATES) ** 2
    assert await kit.state(book["transfer_id"]) == "in_review"
    assert await kit.balances(a["wallet_id"]) == (Decimal(88), Decimal(12))
    await ledger_invariants(kit.db, kit.tenant_id)


@pytest.mark.unit
def test_an_unbalanced_entry_is_never_written() -> None:
    """An entry is checked when it is built, before anything can post it."""
    with pytest.raises(UnbalancedEntry):
        entries.entry(
            tenant_id="t",
            mode="sandbox",
            kind="oops",
            postings=[("a.available", "USDC", Decimal(1)), ("b.available", "USDC", Decimal(-2))],
        )
    with pytest.raises(UnbalancedEntry):  # balanced in total, not per currency
        entries.entry(
            tenant_id="t",
            mode="sandbox",
            kind="oops",
            postings=[("a.available", "USDC", Decimal(1)), ("b.available", "EURC", Decimal(-1))],
        )


@pytest.mark.inprocess
async def test_the_database_refuses_what_the_code_must_never_do(kit: LedgerKit) -> None:
    """Defence in depth: unbalanced entries, edited postings and negative wallets are refused."""
    a = await kit.funded_wallet("10.00")
    acct = a["wallet_id"] + ".available"
    with pytest.raises(asyncpg.RaiseError, match="does not balance"):
        async with kit.db.transaction():
            await kit.db.execute(
                "INSERT INTO ledger.journal_entries (id, tenant_id, mode, kind, seq, hash)"
                " VALUES ('je_bad', $1, 'sandbox', 'oops', 0, 'unchained')",
                kit.tenant_id,
            )
            await kit.db.execute(
                "INSERT INTO ledger.postings (entry_id, account_id, currency, amount)"
                " VALUES ('je_bad', $1, 'USDC', 5)",
                acct,
            )
    with pytest.raises(asyncpg.RaiseError, match="append-only"):
        await kit.db.execute("UPDATE ledger.postings SET amount = amount * 2 WHERE account_id = $1", acct)
    with pytest.raises(asyncpg.CheckViolationError):
        await kit.db.execute("UPDATE ledger.accounts SET balance = -1 WHERE id = $1", acct)
    assert await kit.balances(a["wallet_id"]) == (Decimal("10.00"), Decimal(0))
    await ledger_invariants(kit.db, kit.tenant_id)
