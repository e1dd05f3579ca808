"""Customers: the benchmark path, one row and one event each, written with the whole batch."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateCustomer
from common.contracts.events import CustomerCreated
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import Effects
from ledger.journal import Journal


async def create_customer(
    session: AsyncSession, journal: Journal, cmd: CreateCustomer, ledger_config: LedgerConfig
) -> Effects:
    await repo.insert_customer(session, cmd)
    return created(cmd)


def create_customers(journal: Journal, cmds: list[CreateCustomer]) -> list[Effects]:
    """Customers of a batch, inserted by the batch's write statement (a failure there fails
    the batch, which the consumer then runs command by command)."""
    journal.writes().customers.extend(repo.customer_row(c) for c in cmds)
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
