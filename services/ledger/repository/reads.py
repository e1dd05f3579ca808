"""The ledger's reads: resources by id and by page (typed), fee balances, wallet statements."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Mode
from ledger.models import (
    Customer,
    Transfer,
    VirtualAccount,
    Wallet,
    WalletBalances,
    accounts,
    customers,
    journal_entries,
    postings,
    transfers,
    virtual_accounts,
    wallets,
)
from ledger.repository.base import scope

__all__ = ["Readable", "fee_balances", "read_one", "read_page", "wallet_transactions"]


AVAILABLE = accounts.alias("available")
HELD = accounts.alias("held")
KINDS = {"transfers": "transfer", "payouts": "payout"}
Readable = Customer | WalletBalances | VirtualAccount | Transfer
TABLES: dict[str, Any] = {
    "customers": customers,
    "wallets": wallets,
    "virtual-accounts": virtual_accounts,
    "transfers": transfers,
    "payouts": transfers,
}
MODELS: dict[str, type[Any]] = {
    "customers": Customer,
    "virtual-accounts": VirtualAccount,
    "transfers": Transfer,
    "payouts": Transfer,
}


def _read(resource: str, tenant_id: str, mode: Mode) -> Select[Any]:
    table = TABLES[resource]
    if resource == "wallets":
        stmt = (
            select(
                wallets, AVAILABLE.c.balance.label("available_balance"), HELD.c.balance.label("held_balance")
            )
            .join(AVAILABLE, AVAILABLE.c.id == wallets.c.id + ".available")
            .join(HELD, HELD.c.id == wallets.c.id + ".held")
        )
    else:
        stmt = select(table)
    stmt = stmt.where(scope(table, tenant_id, mode))
    if resource in KINDS:
        stmt = stmt.where(table.c.kind == KINDS[resource])
    return stmt


def _readable(resource: str, row: Any) -> Readable:
    if resource == "wallets":
        fields = dict(row)
        available, held = fields.pop("available_balance"), fields.pop("held_balance")
        return WalletBalances(Wallet(**fields), available, held)
    model: Readable = MODELS[resource](**row)
    return model


async def read_one(
    session: AsyncSession, resource: str, tenant_id: str, mode: Mode, resource_id: str
) -> Readable | None:
    stmt = _read(resource, tenant_id, mode).where(TABLES[resource].c.id == resource_id)
    row = (await session.execute(stmt)).mappings().first()
    return None if row is None else _readable(resource, row)


async def read_page(
    session: AsyncSession, resource: str, tenant_id: str, mode: Mode, limit: int, starting_after: str | None
) -> list[Readable]:
    """Newest first (ids sort by creation time); ``limit + 1`` rows tell whether more exist."""
    table = TABLES[resource]
    stmt = _read(resource, tenant_id, mode)
    if starting_after:
        stmt = stmt.where(table.c.id < starting_after)
    stmt = stmt.order_by(table.c.id.desc()).limit(limit + 1)
    return [_readable(resource, r) for r in (await session.execute(stmt)).mappings()]


# ---- developer fees ----


async def fee_balances(session: AsyncSession, tenant_id: str, mode: str) -> list[tuple[str, Decimal]]:
    """(currency, balance) of the tenant's fee accounts: external accounts, so the balance
    is the sum of their postings."""
    stmt = (
        select(accounts.c.currency, func.coalesce(func.sum(postings.c.amount), 0))
        .select_from(accounts.outerjoin(postings, postings.c.account_id == accounts.c.id))
        .where(accounts.c.tenant_id == tenant_id, accounts.c.mode == mode, accounts.c.kind == "fees")
        .group_by(accounts.c.currency)
        .order_by(accounts.c.currency)
    )
    return [(r[0], Decimal(r[1])) for r in await session.execute(stmt)]


# ---- statements ----


async def wallet_transactions(
    session: AsyncSession, account_id: str, limit: int, before_posting: int | None
) -> Sequence[Any]:
    """The postings of one wallet account, newest first, each with the balance after it (a
    running sum in posting order: the balance is the sum of the account's postings)."""
    running = (
        select(
            postings.c.id,
            postings.c.entry_id,
            postings.c.amount,
            journal_entries.c.kind,
            journal_entries.c.transfer_id,
            journal_entries.c.deposit_id,
            journal_entries.c.created_at,
            func.sum(postings.c.amount).over(order_by=postings.c.id).label("balance_after"),
        )
        .join(journal_entries, journal_entries.c.id == postings.c.entry_id)
        .where(postings.c.account_id == account_id)
        .cte("running")
    )
    stmt = select(running)
    if before_posting is not None:
        stmt = stmt.where(running.c.id < before_posting)
    return (await session.execute(stmt.order_by(running.c.id.desc()).limit(limit))).all()
