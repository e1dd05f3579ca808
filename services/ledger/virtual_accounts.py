"""Virtual accounts: fiat bank numbers whose deposits are routed to one stablecoin wallet."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import CreateVirtualAccount
from common.contracts.events import VirtualAccountCreated
from common.errors import invalid
from ledger import repository as repo
from ledger.config import LedgerConfig
from ledger.core.effects import Effects, missing
from ledger.journal import Journal
from ledger.models import VirtualAccount
from ledger.numbers import PEGS, bank_details
from ledger.views import virtual_account as virtual_account_view

DESTINATION_RAILS = ("provider_wallet", "stablecoin")


async def create_virtual_account(
    session: AsyncSession, journal: Journal, cmd: CreateVirtualAccount, ledger_config: LedgerConfig
) -> Effects:
    t, m = cmd.ctx.tenant_id, cmd.ctx.mode
    currency = cmd.currency.upper()
    if currency not in PEGS:
        raise invalid("currency", "currency must be one of USD, EUR, GBP")
    dest = cmd.destination
    rail, dest_currency = dest.rail.lower(), dest.currency.upper()
    if rail not in DESTINATION_RAILS:
        raise invalid("destination.rail", "destination rail must be provider_wallet or stablecoin")
    if await repo.get_customer(session, t, m, cmd.customer_id) is None:
        raise missing("customer", "customer_id")
    if dest.provider_wallet_id:
        wallet, field = await repo.get_wallet(session, t, m, dest.provider_wallet_id), "provider_wallet_id"
        if wallet is not None and dest.address and dest.address != wallet.deposit_address:
            raise invalid("destination.address", "address is not the deposit address of that wallet")
    elif dest.address:
        wallet, field = await repo.wallet_by_address(session, t, m, dest.address), "address"
    else:
        raise invalid("destination.address", "destination needs address or provider_wallet_id")
    if wallet is None or wallet.customer_id != cmd.customer_id:
        # Another customer's wallet is as unknown here as another tenant's.
        raise missing("destination wallet", f"destination.{field}")
    if dest_currency != wallet.symbol:
        raise invalid(
            "destination.currency", f"destination currency must be the wallet's symbol {wallet.symbol}"
        )
    if wallet.symbol not in PEGS[currency]:
        raise invalid(
            "currency",
            f"{currency} deposits cannot be routed to {wallet.symbol}: "
            "only a stablecoin pegged to the currency is accepted",
            pegged=sorted(PEGS[currency]),
        )
    numbers = bank_details(currency)
    destination = {
        "rail": rail,
        "currency": dest_currency,
        "address": wallet.deposit_address,
        "provider_wallet_id": wallet.id,
    }
    account = VirtualAccount(
        **cmd.ctx.owner,
        id=cmd.virtual_account_id,
        customer_id=cmd.customer_id,
        currency=currency,
        wallet_id=wallet.id,
        destination=destination,
        **numbers,
    )
    account.created_at = await repo.insert_virtual_account(session, account)
    # Answered with the whole account, as a read of it answers; the event keeps its own fields.
    effects = Effects(201, virtual_account_view(account))
    data = {"virtual_account_id": cmd.virtual_account_id, "currency": currency, **numbers}
    effects.emit(
        VirtualAccountCreated,
        cmd.ctx,
        data={**data, "customer_id": cmd.customer_id, "destination": destination},
    )
    return effects
