"""How ledger rows look to partners: reads and event data share these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.times import iso
from common.views import columns
from ledger.effects import money
from ledger.models import Customer, Transfer, VirtualAccount, WalletBalances


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


def transfer(r: Transfer) -> dict[str, Any]:
    out = {
        "transfer_id": r.id,
        "state": r.state,
        "provider": "service",
        "source": r.source,
        "destination": r.destination,
        "amount": money(r.amount),
        "currency": r.currency,
        "idempotency_key": r.idempotency_key,
        "created_at": iso(r.created_at),
        "updated_at": iso(r.updated_at),
    }
    if r.developer_fee:
        out["developer_fee"] = r.developer_fee
        out["developer_fee_amount"] = money(r.fee_amount)
    return out


RENDER: dict[str, Callable[[Any], dict[str, Any]]] = {
    "customers": customer,
    "wallets": wallet,
    "virtual-accounts": virtual_account,
    "transfers": transfer,
    "payouts": transfer,
}
