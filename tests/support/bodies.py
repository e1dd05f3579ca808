"""Valid request bodies for every POST route of the gateway (validation tests start from them
and break one field at a time)."""

from __future__ import annotations

from typing import Any

from tests.conftest import customer_body

ADDR = "0x" + "ab" * 20
KEY = "transfer-key-0001"


def wallet() -> dict[str, Any]:
    return {"customer_id": "cus_1", "symbol": "usdc", "chain": "eth"}


def va() -> dict[str, Any]:
    return {
        "customer_id": "cus_1",
        "currency": "usd",
        "destination": {"rail": "provider_wallet", "currency": "USDC", "address": ADDR},
    }


def transfer() -> dict[str, Any]:
    return {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "usdc",
            "amount": "10.5",
            "provider_wallet_id": "wal_a",
        },
        "destination": {"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": "wal_b"},
        "idempotency_key": KEY,
    }


def payout() -> dict[str, Any]:
    b = transfer()
    b["destination"] = {"payment_rail": "ach", "currency": "usd", "external_account_id": "ext_1"}
    return b


def webhook() -> dict[str, Any]:
    return {"endpoint_url": "https://example.com/hooks"}


def deposit() -> dict[str, Any]:
    return {"virtual_account_id": "va_1", "amount": "100.00"}


BASE = {
    "/v1/customers": lambda: customer_body(),
    "/v1/wallets": wallet,
    "/v1/virtual-accounts": va,
    "/v1/transfers": transfer,
    "/v1/payouts": payout,
    "/v1/webhooks": webhook,
    "/v1/sandbox/deposits": deposit,
}
