"""The chart of accounts (services/ledger/README.md, "Chart of accounts"): the names of the
accounts money moves between, and the postings that recur in several decisions.

Wallet accounts (``<wallet_id>.available`` and ``<wallet_id>.held``) keep their balance in step
with their postings and never go below zero; external accounts
(``ext.<tenant>.<mode>.<currency>.<kind>``: deposits, payouts, settlement, fees) are derived
from their postings only, so no tenant-wide hot row is ever locked. Account ids are text that
carries what they are, so a decision names an account without reading it.
"""

from __future__ import annotations

from decimal import Decimal

from common.contracts.base import Mode

#: One posting of an entry: account id, currency, signed amount (negative: money leaves).
Posting = tuple[str, str, Decimal]


def available(wallet_id: str) -> str:
    return f"{wallet_id}.available"


def held(wallet_id: str) -> str:
    return f"{wallet_id}.held"


def external(tenant_id: str, mode: Mode, currency: str, kind: str) -> str:
    return f"ext.{tenant_id}.{mode}.{currency}.{kind}"


def fees(tenant_id: str, mode: Mode, currency: str) -> str:
    """The tenant's developer-fee balance in one currency (GET /v1/fee-balances)."""
    return external(tenant_id, mode, currency, "fees")


def is_external(account_id: str) -> bool:
    return account_id.startswith("ext.")


def completion(
    tenant_id: str,
    mode: Mode,
    source: str,
    credit: str,
    currency: str,
    amount: Decimal,
    fee: Decimal,
    *,
    from_held: bool = True,
) -> list[Posting]:
    """A transfer's funds leave the source: ``amount - fee`` to ``credit``, the developer fee
    to the tenant's fee balance; from its held balance (``from_held``: the transfer held them
    first), or straight from its available balance (a transfer settled as it is created)."""
    debit = held(source) if from_held else available(source)
    postings: list[Posting] = [(debit, currency, -amount), (credit, currency, amount - fee)]
    if fee:
        postings.append((fees(tenant_id, mode, currency), currency, fee))
    return postings
