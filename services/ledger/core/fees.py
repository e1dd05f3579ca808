"""Developer fees (docs/guides/money.md, "Developer fees"): what a transfer charges.

The arithmetic is ``common.fees`` (the gateway checks the same before the command leaves);
the ledger checks it again here, on the command it was given, because the fee is money it
moves on completion. The tenant's fee balances are a read: ``ledger.fees``.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from common.contracts.commands import CreateTransfer
from common.errors import invalid
from common.fees import developer_fee_amount


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
