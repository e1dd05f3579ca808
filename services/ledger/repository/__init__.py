"""All ledger SQL lives here (writes in this module, reads in ``reads``), built from the tables
of ``ledger.models``. Functions take the
session; the boundary owns the transaction.

Reads return detached model instances (``Customer``, ``Wallet``, ``Transfer``...): typed,
never tracked by the session, so nothing is flushed behind the code's back; every write is
an explicit statement. A consumer batch runs in three statements sent straight to asyncpg
(``batch``: claim and read, lock, write); the commands outside it (operators', the sandbox
simulator's, wallets and deposits) use the statements below.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    func,
    insert,
    select,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Mode
from common.contracts.commands import CreateCustomer
from common.tables import table_of, values_of
from ledger.models import (
    Customer,
    Transfer,
    VirtualAccount,
    Wallet,
    accounts,
    customers,
    deposits,
    state_changes,
    transfers,
    virtual_accounts,
    wallets,
)
from ledger.repository.base import all_of, one_of, scope
from ledger.repository.base import read_only as read_only
from ledger.repository.batch import *  # noqa: F403 - a consumer batch's three statements
from ledger.repository.chains import *  # noqa: F403 - the journal's hash chains
from ledger.repository.reads import *  # noqa: F403 - reads, fee balances, statements: one namespace

# ---- customers ----


async def insert_customer(session: AsyncSession, row: dict[str, Any]) -> None:
    """``row``: :func:`customer_row`."""
    await session.execute(insert(customers).values(**row))


def customer_row(c: CreateCustomer, created_at: datetime) -> dict[str, Any]:
    """A customer's columns, from its command; ``created_at`` is decided by the caller, so the
    create's answer shows the time a later read shows."""
    return {
        "id": c.customer_id,
        "tenant_id": c.ctx.tenant_id,
        "mode": c.ctx.mode,
        "account_type": c.account_type,
        "email": c.email,
        "country_code": c.country_code,
        "service_user_id": c.service_user_id,
        "full_name": c.full_name,
        "company_name": c.company_name,
        "registration_number": c.registration_number,
        "phone_e164": c.phone_e164,
        "created_at": created_at,
    }


async def get_customer(
    session: AsyncSession, tenant_id: str, mode: Mode, customer_id: str
) -> Customer | None:
    stmt = select(customers).where(customers.c.id == customer_id, scope(customers, tenant_id, mode))
    return await one_of(session, Customer, stmt)


# ---- wallets and their accounts ----


async def insert_wallet(session: AsyncSession, wallet: Wallet) -> datetime:
    """The wallet and its two accounts (``available`` and ``held``)."""
    created = await _insert_created(session, wallet)
    await session.execute(
        insert(accounts).values(
            [
                {
                    "id": f"{wallet.id}.{kind}",
                    "tenant_id": wallet.tenant_id,
                    "mode": wallet.mode,
                    "currency": wallet.symbol,
                    "kind": kind,
                    "wallet_id": wallet.id,
                }
                for kind in ("available", "held")
            ]
        )
    )
    return created


async def _insert_created(session: AsyncSession, row: Wallet | VirtualAccount) -> datetime:
    """Insert ``row``: the ``created_at`` the database gave it."""
    table = table_of(type(row))
    stmt = insert(table).values(values_of(row)).returning(table.c.created_at)
    created: datetime = (await session.execute(stmt)).scalar_one()
    return created


async def get_wallet(session: AsyncSession, tenant_id: str, mode: Mode, wallet_id: str) -> Wallet | None:
    return await one_of(
        session, Wallet, select(wallets).where(wallets.c.id == wallet_id, scope(wallets, tenant_id, mode))
    )


async def wallet_by_address(session: AsyncSession, tenant_id: str, mode: Mode, address: str) -> Wallet | None:
    stmt = select(wallets).where(wallets.c.deposit_address == address, scope(wallets, tenant_id, mode))
    return await one_of(session, Wallet, stmt)


# ---- virtual accounts ----


async def insert_virtual_account(session: AsyncSession, account: VirtualAccount) -> datetime:
    return await _insert_created(session, account)


async def get_virtual_account(
    session: AsyncSession, tenant_id: str, mode: Mode, va_id: str
) -> VirtualAccount | None:
    stmt = select(virtual_accounts).where(
        virtual_accounts.c.id == va_id, scope(virtual_accounts, tenant_id, mode)
    )
    return await one_of(session, VirtualAccount, stmt)


# ---- transfers and payouts ----


async def transfers_by_idempotency_key(
    session: AsyncSession, keys: Sequence[tuple[str, str, str]]
) -> list[Transfer]:
    """Transfers already recorded under any of these (tenant, mode, idempotency key)."""
    if not keys:
        return []
    cols = tuple_(transfers.c.tenant_id, transfers.c.mode, transfers.c.idempotency_key)
    return await all_of(session, Transfer, select(transfers).where(cols.in_(sorted(set(keys)))))


async def lock_transfer(
    session: AsyncSession, transfer_id: str, tenant_id: str | None = None, mode: Mode | None = None
) -> Transfer | None:
    """The transfer row, locked for a state change; tenant and mode narrow it when given."""
    stmt = select(transfers).where(transfers.c.id == transfer_id)
    if tenant_id is not None:
        stmt = stmt.where(transfers.c.tenant_id == tenant_id)
    if mode is not None:
        stmt = stmt.where(transfers.c.mode == mode)
    return await one_of(session, Transfer, stmt.with_for_update())


def _next_step(next_step_s: float | None) -> Any:
    if next_step_s is None:
        return None
    return func.clock_timestamp() + func.make_interval(0, 0, 0, 0, 0, 0, next_step_s)


async def set_state(
    session: AsyncSession, transfer_id: str, state: str, previous: str, next_step_s: float | None
) -> Transfer:
    stmt = (
        update(transfers)
        .where(transfers.c.id == transfer_id)
        .values(
            state=state,
            previous_state=previous,
            updated_at=func.clock_timestamp(),
            next_step_at=_next_step(next_step_s),
        )
        .returning(*transfers.c)
    )
    row = (await session.execute(stmt)).mappings().one()
    return Transfer(**row)


async def unschedule(session: AsyncSession, transfer_id: str) -> None:
    await session.execute(update(transfers).where(transfers.c.id == transfer_id).values(next_step_at=None))


async def record_state_change(
    session: AsyncSession,
    transfer_id: str,
    from_state: str | None,
    to_state: str,
    cause: str,
    request_id: str | None,
) -> None:
    await session.execute(
        insert(state_changes).values(
            transfer_id=transfer_id,
            from_state=from_state,
            to_state=to_state,
            cause=cause,
            request_id=request_id,
        )
    )


async def due_transfers(session: AsyncSession, limit: int) -> list[Transfer]:
    """Sandbox transfers whose next simulated step is due, locked; other instances skip them."""
    stmt = (
        select(transfers)
        .where(transfers.c.next_step_at <= func.clock_timestamp(), transfers.c.mode == "sandbox")
        .order_by(transfers.c.next_step_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return await all_of(session, Transfer, stmt)


async def next_due_in(session: AsyncSession) -> float | None:
    """Seconds until the earliest scheduled sandbox step (negative when overdue), None when
    nothing is scheduled (``transfers_due`` holds only the scheduled rows)."""
    stmt = select(func.extract("epoch", func.min(transfers.c.next_step_at) - func.clock_timestamp())).where(
        transfers.c.next_step_at.is_not(None), transfers.c.mode == "sandbox"
    )
    seconds = (await session.execute(stmt)).scalar_one_or_none()
    return None if seconds is None else float(seconds)


# ---- deposits ----


async def insert_deposit(session: AsyncSession, d: dict[str, Any]) -> datetime:
    created: datetime = (
        await session.execute(insert(deposits).values(**d).returning(deposits.c.created_at))
    ).scalar_one()
    return created
