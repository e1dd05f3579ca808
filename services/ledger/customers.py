"""Customers: the benchmark path, one row and one event each, written with the whole batch."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateCustomer
from common.contracts.events import CustomerCreated
from ledger import journal
from ledger import repository as repo
from ledger.effects import Effects, LedgerConfig


async def create_customer(session: AsyncSession, cmd: CreateCustomer, ledger_config: LedgerConfig) -> Effects:
    await repo.insert_customer(session, cmd)
    return created(cmd)


def create_customers(session: AsyncSession, cmds: list[CreateCustomer]) -> list[Effects]:
    """Customers of a batch, inserted by the batch's write statement (a failure there fails
    the batch, which the consumer then runs command by command)."""
    journal.of(session).writes().customers.extend(repo.customer_row(c) for c in cmds)
    return [created(cmd) for cmd in cmds]


def created(cmd: CreateCustomer) -> Effects:
    effects = Effects(201, {"customer_id": cmd.customer_id, "provider": "service"})
    effects.emit(
        CustomerCreated,
        cmd.ctx,
        country_code=cmd.country_code,
        data={
            "customer_id": cmd.customer_id,
            "account_type": cmd.account_type,
            "service_user_id": cmd.service_user_id,
        },
    )
    return effects
