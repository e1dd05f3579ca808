"""The tenant's developer-fee balances (GET /v1/fee-balances; docs/guides/money.md,
"Developer fees"). What a transfer charges is decided in the core: ``ledger.core.fees``."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import GetFeeBalances
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import Effects, money


async def fee_balances(session: AsyncSession, cmd: GetFeeBalances, ledger_config: LedgerConfig) -> Effects:
    rows = await repo.fee_balances(session, cmd.ctx.tenant_id, cmd.ctx.mode)
    items = [{"currency": c, "available_balance": money(b)} for c, b in rows]
    return Effects(200, {"items": items, "next_cursor": None})  # one row per currency: no paging
