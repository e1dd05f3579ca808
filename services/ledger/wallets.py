"""Stablecoin wallets: a chain-shaped deposit address and two ledger accounts each."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateWallet
from common.contracts.events import WalletCreated
from common.errors import invalid
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import Effects, missing
from ledger.journal import Journal
from ledger.models import Wallet, WalletBalances
from ledger.numbers import OFFERED_PAIRS, deposit_address
from ledger.views import wallet as wallet_view


async def create_wallet(
    session: AsyncSession, journal: Journal, cmd: CreateWallet, ledger_config: LedgerConfig
) -> Effects:
    symbol, chain = cmd.symbol.upper(), cmd.chain.upper()
    if symbol not in OFFERED_PAIRS:
        raise invalid("symbol", f"symbol must be one of {', '.join(sorted(OFFERED_PAIRS))}")
    if chain not in OFFERED_PAIRS[symbol]:
        raise invalid("chain", f"{symbol} is not offered on {chain}", offered=sorted(OFFERED_PAIRS[symbol]))
    t, m = cmd.ctx.tenant_id, cmd.ctx.mode
    if await repo.get_customer(session, t, m, cmd.customer_id) is None:
        raise missing("customer", "customer_id")
    address = deposit_address(chain)
    wallet = Wallet(
        **cmd.ctx.owner,
        id=cmd.wallet_id,
        customer_id=cmd.customer_id,
        symbol=symbol,
        chain=chain,
        deposit_address=address,
    )
    wallet.created_at = await repo.insert_wallet(session, wallet)
    # Answered with the whole wallet, as a read of it answers; the event keeps its own fields.
    effects = Effects(201, wallet_view(WalletBalances(wallet, Decimal(0), Decimal(0))))
    data = {"wallet_id": cmd.wallet_id, "deposit_address": address, "symbol": symbol, "chain": chain}
    effects.emit(WalletCreated, cmd.ctx, data={**data, "customer_id": cmd.customer_id})
    return effects
