"""Developer fees (docs/guides/money.md, "Developer fees"): what a transfer charges, and the
tenant's fee balances."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateTransfer, GetFeeBalances
from common.errors import invalid
from common.fees import developer_fee_amount
from ledger import repository as repo
from ledger.effects import Effects, LedgerConfig, money


def _decimal(field: str, value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        d = Decimal(value)
    except InvalidOperation:
        raise invalid(field, "must be a decimal string") from None
    if not d.is_finite() or d < 0:
        raise invalid(field, "must be a non-negative decimal")
    return d


def charged(cmd: CreateTransfer, amount: Decimal, places: int) -> Decimal:
    """The fee this transfer charges (checked again: the gateway checked first)."""
    if cmd.developer_fee is None:
        return Decimal(0)
    fee = developer_fee_amount(
        amount,
        _decimal("developer_fee.percentage", cmd.developer_fee.percentage),
        _decimal("developer_fee.flat_amount", cmd.developer_fee.flat_amount),
        places,
    )
    if fee >= amount:
        raise invalid("developer_fee", "the developer fee must be less than the amount")
    return fee


async def fee_balances(session: AsyncSession, cmd: GetFeeBalances, ledger_config: LedgerConfig) -> Effects:
    rows = await repo.fee_balances(session, cmd.ctx.tenant_id, cmd.ctx.mode)
    items = [{"currency": c, "available_balance": money(b)} for c, b in rows]
    return Effects(200, {"items": items, "next_cursor": None})  # one row per currency: no paging
