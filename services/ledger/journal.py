"""The double-entry journal and its chart of accounts (see README.md).

Every movement of money is one journal entry whose postings sum to zero per currency.
Wallet accounts (``<wallet_id>.available`` and ``<wallet_id>.held``) keep their balance in
step with their postings in the same transaction, through a row-locking update that refuses
to go below zero; external accounts (``ext.<tenant>.<mode>.<currency>.deposits`` and
``.payouts``) are derived from their postings only.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from common.errors import ErrorCode, Reason, ServiceError
from common.ids import new_id
from ledger import repository as repo

Posting = tuple[str, str, Decimal]  # account id, currency, signed amount


def available(wallet_id: str) -> str:
    return f"{wallet_id}.available"


def held(wallet_id: str) -> str:
    return f"{wallet_id}.held"


def external(tenant_id: str, mode: str, currency: str, kind: str) -> str:
    return f"ext.{tenant_id}.{mode}.{currency}.{kind}"


def insufficient_funds(wallet_id: str, needed: Decimal) -> ServiceError:
    return ServiceError(
        ErrorCode.INVALID_REQUEST,
        "insufficient available balance in the source wallet",
        details={"reason": Reason.INSUFFICIENT_FUNDS, "field": "source.amount", "wallet_id": wallet_id},
    )


class UnbalancedEntry(Exception):
    """A programming error: an entry whose postings do not sum to zero."""


async def post(
    session: AsyncSession,
    *,
    tenant_id: str,
    mode: str,
    kind: str,
    postings: list[Posting],
    transfer_id: str | None = None,
    deposit_id: str | None = None,
) -> str:
    """Write one balanced entry and move the wallet balances it touches.

    Wallet accounts are updated in account-id order (a fixed lock order across instances).
    A debit that would take a wallet account below zero raises ``insufficient_funds``; the
    caller's savepoint rolls the whole command back, so bad input changes nothing.
    """
    sums: dict[str, Decimal] = defaultdict(Decimal)
    for _, currency, amount in postings:
        sums[currency] += amount
    if any(total != 0 for total in sums.values()) or not postings:
        raise UnbalancedEntry(f"{kind} does not balance: {dict(sums)}")
    for account_id, currency, _ in postings:
        if account_id.startswith("ext."):
            await repo.ensure_external_account(
                session, account_id, tenant_id, mode, currency, account_id.rsplit(".", 1)[1]
            )
    entry_id = new_id("je")
    await repo.insert_entry(
        session,
        entry_id=entry_id,
        tenant_id=tenant_id,
        mode=mode,
        kind=kind,
        transfer_id=transfer_id,
        deposit_id=deposit_id,
        postings=postings,
    )
    for account_id, _, amount in sorted(postings):
        if account_id.startswith("ext."):
            continue
        if not await repo.move_wallet_balance(session, account_id, amount):
            raise insufficient_funds(account_id.rsplit(".", 1)[0], -amount)
    return entry_id
