"""Sandbox deposits: a simulated fiat deposit credits the VA's destination wallet 1:1."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import SandboxDeposit
from common.contracts.events import DepositReceived
from common.money import FIAT_PLACES
from common.times import iso
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core import accounts
from ledger.core.effects import Effects, missing, money, parse_amount
from ledger.core.entries import entry
from ledger.journal import Journal


async def sandbox_deposit(
    session: AsyncSession, journal: Journal, cmd: SandboxDeposit, ledger_config: LedgerConfig
) -> Effects:
    """Credit the virtual account's wallet; the deposit's entry is posted to ``journal``."""
    t, m = cmd.ctx.tenant_id, cmd.ctx.mode
    if m != "sandbox":
        # Production has no such endpoint: it does not exist there (404, like any unknown route).
        raise missing("sandbox deposits", "virtual_account_id")
    va = await repo.get_virtual_account(session, t, m, cmd.virtual_account_id)
    if va is None:
        raise missing("virtual account", "virtual_account_id")
    fiat_amount = parse_amount(cmd.amount, FIAT_PLACES, "amount")
    wallet = await repo.get_wallet(session, t, m, va.wallet_id)
    if wallet is None:  # a foreign key makes this impossible
        raise missing("wallet", "virtual_account_id")
    amount = fiat_amount  # pegged 1:1 (USD -> USDC/USDT/PYUSD/USDB, EUR -> EURC)
    created_at = await repo.insert_deposit(
        session,
        {
            "id": cmd.deposit_id,
            "tenant_id": t,
            "mode": m,
            "virtual_account_id": va.id,
            "wallet_id": wallet.id,
            "fiat_currency": va.currency,
            "fiat_amount": fiat_amount,
            "currency": wallet.symbol,
            "amount": amount,
        },
    )
    posted = entry(
        tenant_id=t,
        mode=m,
        kind="deposit",
        deposit_id=cmd.deposit_id,
        postings=[
            (accounts.external(t, m, wallet.symbol, "deposits"), wallet.symbol, -amount),
            (accounts.available(wallet.id), wallet.symbol, amount),
        ],
    )
    journal.add([posted])
    data = {
        "deposit_id": cmd.deposit_id,
        "virtual_account_id": va.id,
        "wallet_id": wallet.id,
        "amount": money(fiat_amount),
        "currency": va.currency,
        "credited_amount": money(amount),
        "credited_currency": wallet.symbol,
        "state": "completed",
        "created_at": iso(created_at),
    }
    effects = Effects(201, data)
    effects.emit(DepositReceived, cmd.ctx, data["created_at"], data=data)
    return effects
