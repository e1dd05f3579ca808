"""The reconciliation's SQL (ledger.reconcile): totals per currency and the rows that break an
invariant of the journal, for one tenant and mode. Read-only; every statement is scoped to
the tenant and mode and returns at most ``limit`` offending rows (the totals are exact)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sqlalchemy import case, func, literal, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Mode
from ledger.models import accounts, journal_entries, postings, state_changes, transfers
from ledger.repository.base import scope

__all__ = [
    "broken_histories",
    "currency_totals",
    "mismatched_transfers",
    "unbalanced_entries",
    "unequal_accounts",
]

# External accounts through which money enters or leaves the tenant's wallets; ``fees`` is
# external too but stays inside (the tenant's developer-fee balance).
BOUNDARY_KINDS = ("deposits", "payouts", "settlement")
HELD_STATES = ("pending", "in_review", "processing")  # the amount sits on the source's hold


async def currency_totals(session: AsyncSession, tenant_id: str, mode: Mode) -> dict[str, dict[str, Decimal]]:
    """Per currency: ``journal_total`` (money brought in less money sent out, from the
    postings of the boundary accounts), the stored ``balances_total`` and ``holds_total`` of
    the wallet accounts, and ``fee_total`` (the postings of the fee accounts)."""
    posted = (
        select(postings.c.account_id, func.sum(postings.c.amount).label("posted"))
        .group_by(postings.c.account_id)
        .subquery()
    )
    amount = func.coalesce(posted.c.posted, 0)
    stmt = (
        select(
            accounts.c.currency,
            func.sum(case((accounts.c.kind.in_(BOUNDARY_KINDS), -amount), else_=0)),
            func.sum(case((accounts.c.kind == "available", accounts.c.balance), else_=0)),
            func.sum(case((accounts.c.kind == "held", accounts.c.balance), else_=0)),
            func.sum(case((accounts.c.kind == "fees", amount), else_=0)),
        )
        .select_from(accounts.outerjoin(posted, posted.c.account_id == accounts.c.id))
        .where(scope(accounts, tenant_id, mode))
        .group_by(accounts.c.currency)
        .order_by(accounts.c.currency)
    )
    names = ("journal_total", "balances_total", "holds_total", "fee_total")
    return {r[0]: dict(zip(names, map(Decimal, r[1:]), strict=True)) for r in await session.execute(stmt)}


async def unequal_accounts(session: AsyncSession, tenant_id: str, mode: Mode, limit: int) -> Sequence[Any]:
    """Wallet accounts whose stored balance differs from the sum of their postings, or is
    below zero: (account id, wallet id, currency, balance, posted)."""
    posted = func.coalesce(func.sum(postings.c.amount), 0)
    stmt = (
        select(accounts.c.id, accounts.c.wallet_id, accounts.c.currency, accounts.c.balance, posted)
        .select_from(accounts.outerjoin(postings, postings.c.account_id == accounts.c.id))
        .where(scope(accounts, tenant_id, mode), accounts.c.wallet_id.is_not(None))
        .group_by(accounts.c.id)
        .having(or_(accounts.c.balance != posted, accounts.c.balance < 0))
        .order_by(accounts.c.id)
        .limit(limit)
    )
    return (await session.execute(stmt)).all()


async def unbalanced_entries(session: AsyncSession, tenant_id: str, mode: Mode, limit: int) -> Sequence[Any]:
    """Journal entries whose postings do not sum to zero in a currency, or that have no
    posting at all: (entry id, currency, total)."""
    total = func.coalesce(func.sum(postings.c.amount), 0)
    stmt = (
        select(journal_entries.c.id, postings.c.currency, total)
        .select_from(journal_entries.outerjoin(postings, postings.c.entry_id == journal_entries.c.id))
        .where(scope(journal_entries, tenant_id, mode))
        .group_by(journal_entries.c.id, postings.c.currency)
        .having(or_(total != 0, postings.c.currency.is_(None)))
        .order_by(journal_entries.c.id)
        .limit(limit)
    )
    return (await session.execute(stmt)).all()


async def mismatched_transfers(
    session: AsyncSession, tenant_id: str, mode: Mode, limit: int
) -> Sequence[Any]:
    """Transfers whose postings on their source wallet disagree with their state: the hold
    carries the amount exactly while the transfer is pending, in review or processing, and
    nothing once it ended; the available balance gave the amount up unless the transfer
    failed, was rejected or came back. (transfer id, state, amount, held, available)."""
    held_id = transfers.c.source_wallet_id + literal(".held")
    available_id = transfers.c.source_wallet_id + literal(".available")
    on_held = func.coalesce(func.sum(case((postings.c.account_id == held_id, postings.c.amount))), 0)
    on_available = func.coalesce(
        func.sum(case((postings.c.account_id == available_id, postings.c.amount))), 0
    )
    holding = transfers.c.state.in_(HELD_STATES)
    spent = or_(holding, transfers.c.state == "completed")
    stmt = (
        select(transfers.c.id, transfers.c.state, transfers.c.amount, on_held, on_available)
        .select_from(
            transfers.outerjoin(journal_entries, journal_entries.c.transfer_id == transfers.c.id).outerjoin(
                postings, postings.c.entry_id == journal_entries.c.id
            )
        )
        .where(scope(transfers, tenant_id, mode))
        .group_by(transfers.c.id)
        .having(
            or_(
                on_held != case((holding, transfers.c.amount), else_=0),
                on_available != case((spent, -transfers.c.amount), else_=0),
                func.count(journal_entries.c.id) == 0,
            )
        )
        .order_by(transfers.c.id)
        .limit(limit)
    )
    return (await session.execute(stmt)).all()


async def broken_histories(session: AsyncSession, tenant_id: str, mode: Mode, limit: int) -> Sequence[Any]:
    """Transfers whose recorded state changes are not one path from ``pending`` (the state a
    transfer is created in, with its ``*.created`` event) to their current state. Each change
    is written in the transaction that stages its ``*.updated`` event in the outbox, so an
    unbroken path means every event of the transfer was committed for delivery.
    (transfer id, state, the last recorded state, changes out of sequence)."""
    ordered = (
        select(
            state_changes.c.transfer_id,
            state_changes.c.to_state,
            (
                state_changes.c.from_state.is_distinct_from(
                    func.lag(state_changes.c.to_state, 1, literal("pending")).over(
                        partition_by=state_changes.c.transfer_id, order_by=state_changes.c.id
                    )
                )
            ).label("out_of_sequence"),
            func.row_number()
            .over(partition_by=state_changes.c.transfer_id, order_by=state_changes.c.id.desc())
            .label("from_end"),
        )
        .join(transfers, transfers.c.id == state_changes.c.transfer_id)
        .where(scope(transfers, tenant_id, mode))
        .subquery()
    )
    last = func.coalesce(func.max(case((ordered.c.from_end == 1, ordered.c.to_state))), literal("pending"))
    jumps = func.count(case((ordered.c.out_of_sequence, 1)))
    stmt = (
        select(transfers.c.id, transfers.c.state, last, jumps)
        .select_from(transfers.outerjoin(ordered, ordered.c.transfer_id == transfers.c.id))
        .where(scope(transfers, tenant_id, mode))
        .group_by(transfers.c.id)
        .having(or_(last != transfers.c.state, jumps > 0))
        .order_by(transfers.c.id)
        .limit(limit)
    )
    return (await session.execute(stmt)).all()
