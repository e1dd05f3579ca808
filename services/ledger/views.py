"""How ledger rows look to partners: reads and event data share these (a transfer's view is
the core's, ``ledger.core.events.transfer_view``: its events are decided there)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.times import iso
from common.views import columns
from ledger.core.effects import money
from ledger.core.events import transfer_view
from ledger.models import Customer, VirtualAccount, WalletBalances


def customer(r: Customer) -> dict[str, Any]:
    shown = {"customer_id": r.id, "provider": "service"}
    return shown | columns(
        r,
        "account_type",
        "email",
        "country_code",
        "service_user_id",
        "full_name",
        "company_name",
        "registration_number",
        "phone_e164",
        "created_at",
    )


def wallet(r: WalletBalances) -> dict[str, Any]:
    w = r.wallet
    return {
        "wallet_id": w.id,
        "customer_id": w.customer_id,
        "deposit_address": w.deposit_address,
        "symbol": w.symbol,
        "chain": w.chain,
        "available_balance": money(r.available_balance),
        "held_balance": money(r.held_balance),
        "created_at": iso(w.created_at),
    }


def virtual_account(r: VirtualAccount) -> dict[str, Any]:
    shown = columns(r, virtual_account_id="id", customer_id="customer_id", currency="currency")
    return shown | columns(
        r, "account_number", "routing_number", "iban", "bic", "bank_name", "destination", "created_at"
    )


RENDER: dict[str, Callable[[Any], dict[str, Any]]] = {
    "customers": customer,
    "wallets": wallet,
    "virtual-accounts": virtual_account,
    "transfers": transfer_view,
    "payouts": transfer_view,
}
