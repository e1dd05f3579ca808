"""Customers: the benchmark path, one insert and one event (batched when they queue up)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateCustomer
from common.contracts.events import CustomerCreated
from ledger import repository as repo
from ledger.effects import Effects, LedgerConfig


async def create_customer(session: AsyncSession, cmd: CreateCustomer, cfg: LedgerConfig) -> Effects:
    await repo.insert_customer(session, cmd)
    return created(cmd)


async def create_customers(session: AsyncSession, cmds: list[CreateCustomer]) -> list[Effects]:
    """Several customers in one statement; the caller falls back to one by one if it fails."""
    await repo.insert_customers(session, cmds)
    return [created(cmd) for cmd in cmds]


def created(cmd: CreateCustomer) -> Effects:
    fx = Effects(201, {"customer_id": cmd.customer_id, "provider": "service"})
    fx.emit(
        CustomerCreated,
        cmd.ctx,
        country_code=cmd.country_code,
        data={
            "customer_id": cmd.customer_id,
            "account_type": cmd.account_type,
            "service_user_id": cmd.service_user_id,
        },
    )
    return fx
