"""Customers: the benchmark path, one row and one event each, written with the whole batch."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateCustomer
from common.contracts.events import CustomerCreated
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import Effects
from ledger.journal import Journal
from ledger.models import Customer
from ledger.views import customer


async def create_customer(
    session: AsyncSession, journal: Journal, cmd: CreateCustomer, ledger_config: LedgerConfig
) -> Effects:
    row = repo.customer_row(cmd, datetime.now(UTC))
    await repo.insert_customer(session, row)
    return created(cmd, row)


def create_customers(journal: Journal, cmds: list[CreateCustomer]) -> list[Effects]:
    """Customers of a batch, inserted by the batch's write statement (a failure there fails
    the batch, which the consumer then runs command by command)."""
    now = datetime.now(UTC)
    rows = [repo.customer_row(c, now) for c in cmds]
    journal.writes().customers.extend(rows)
    return [created(cmd, row) for cmd, row in zip(cmds, rows, strict=True)]


def created(cmd: CreateCustomer, row: dict[str, Any]) -> Effects:
    """Answered with the whole customer, as a read of it answers (``row``: its columns)."""
    effects = Effects(201, customer(Customer(**row)))
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
