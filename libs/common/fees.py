"""The developer fee (docs/guides/money.md, "Developer fees"), computed the same way where it
is checked (gateway) and where it is charged (ledger)."""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal


def developer_fee_amount(
    amount: Decimal, percentage: Decimal | None, flat: Decimal | None, places: int
) -> Decimal:
    """``flat + amount * percentage / 100``, rounded down to the currency's ``places``."""
    fee = (flat or Decimal(0)) + amount * (percentage or Decimal(0)) / 100
    return fee.quantize(Decimal(1).scaleb(-places), rounding=ROUND_DOWN)
