"""Money rules, defined once so that no two services can disagree on them: the currencies Sluice
moves, where each fiat rail settles, how many places each currency has, and the largest amount
any request may name. Every service imports these; ``tests/unit/test_money_rules.py`` fails if a
second definition of one of them appears anywhere under ``libs/`` or ``services/``."""

from __future__ import annotations

from decimal import Decimal

STABLECOINS: tuple[str, ...] = ("USDC", "USDT", "PYUSD", "USDB", "EURC")
FIATS: tuple[str, ...] = ("USD", "EUR", "GBP")
TRANSFER_CURRENCIES = frozenset({"USDC", "USDT"})  # what a transfer or payout moves
FIAT_OF_RAIL = {"ach": "USD", "wire": "USD", "sepa": "EUR", "faster_payments": "GBP"}
STABLECOIN_PLACES = 6
FIAT_PLACES = 2
MAX_AMOUNT = Decimal("1e12")  # no amount above this, in any currency

RULES = (
    "STABLECOINS",
    "FIATS",
    "TRANSFER_CURRENCIES",
    "FIAT_OF_RAIL",
    "RAIL_CURRENCY",
    "STABLECOIN_PLACES",
    "FIAT_PLACES",
    "MAX_AMOUNT",
)


def places(currency: str) -> int:
    """Decimal places of ``currency``: 2 for a fiat, 6 for a stablecoin."""
    return FIAT_PLACES if currency.upper() in FIATS else STABLECOIN_PLACES
