"""A wallet's statement (docs/guides/money.md, "A wallet's statement"): the movements of its
available balance, newest first, each with ``balance_after``; the newest one's equals the
wallet's ``available_balance``."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import ListWalletTransactions
from common.errors import invalid
from common.times import iso
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core import accounts
from ledger.core.effects import Effects, missing, money

MAX_LIMIT = 100


def _kind(entry_kind: str) -> str:
    """deposit | transfer | fee | release, from the journal entry's kind."""
    if entry_kind == "deposit":
        return "deposit"
    if entry_kind.endswith(("_failed", "_rejected", "_returned")):
        return "release"
    if entry_kind.endswith("_fee"):
        return "fee"
    return "transfer"


def _view(r: Any) -> dict[str, Any]:
    out = {
        "entry_id": r.entry_id,
        "kind": _kind(r.kind),
        "direction": "credit" if r.amount > 0 else "debit",
        "amount": money(abs(r.amount)),
        "balance_after": money(r.balance_after),
        "created_at": iso(r.created_at),
    }
    if r.transfer_id:
        out["transfer_id"] = r.transfer_id
    if r.deposit_id:
        out["deposit_id"] = r.deposit_id
    return out


async def wallet_transactions(
    session: AsyncSession, cmd: ListWalletTransactions, ledger_config: LedgerConfig
) -> Effects:
    if not 1 <= cmd.limit <= MAX_LIMIT:
        raise invalid("limit", f"limit must be between 1 and {MAX_LIMIT}")
    after = None
    if cmd.starting_after is not None:
        cursor = cmd.starting_after
        if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 18):  # as the document says
            raise invalid("starting_after", "not a cursor returned by this list")
        after = int(cmd.starting_after)
    wallet = await repo.read_one(session, "wallets", cmd.ctx.tenant_id, cmd.ctx.mode, cmd.wallet_id)
    if wallet is None:  # another tenant's (or mode's) wallet is as unknown as a made-up one
        raise missing("wallet", "wallet_id")
    rows = await repo.wallet_transactions(session, accounts.available(cmd.wallet_id), cmd.limit + 1, after)
    shown = rows[: cmd.limit]
    more = len(rows) > cmd.limit
    return Effects(
        200, {"items": [_view(r) for r in shown], "next_cursor": str(shown[-1].id) if more else None}
    )
