"""Money flows over HTTP for integration tests: a funded wallet, a book transfer body, sending
with the same key in header and body, waiting for a state."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Tenant, customer_body
from tests.support.wait import eventually


def created(r: Any) -> dict[str, Any]:
    assert r.status_code == 201, r.text
    return r.json()["data"]


def funded(t: Tenant, amount: str = "100.00", chain: str = "BASE") -> dict[str, Any]:
    cus = created(t.post("/v1/customers", customer_body()))["customer_id"]
    w = created(t.post("/v1/wallets", {"customer_id": cus, "symbol": "usdc", "chain": chain.lower()}))
    va = created(
        t.post(
            "/v1/virtual-accounts",
            {
                "customer_id": cus,
                "currency": "USD",
                "destination": {"rail": "stablecoin", "currency": "USDC", "address": w["deposit_address"]},
            },
        )
    )
    dep = created(
        t.post("/v1/sandbox/deposits", {"virtual_account_id": va["virtual_account_id"], "amount": amount})
    )
    assert dep["credited_amount"] == amount
    return {**w, "customer_id": cus, "va": va}


def _from_wallet(src: str, amount: str) -> dict[str, Any]:
    return {
        "payment_rail": "provider_wallet",
        "currency": "USDC",
        "amount": amount,
        "provider_wallet_id": src,
    }


def book(src: str, dst: str, amount: str, key: str | None = None) -> dict[str, Any]:
    return {
        "source": _from_wallet(src, amount),
        "destination": {"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": dst},
        "idempotency_key": key or uuid.uuid4().hex,
    }


def payout(
    src: str, external_account_id: str, amount: str, key: str | None = None, fiat: str = "USD"
) -> dict[str, Any]:
    """A payout body: USDC from a wallet to an ACH external account."""
    return {
        "source": _from_wallet(src, amount),
        "destination": {"payment_rail": "ach", "currency": fiat, "external_account_id": external_account_id},
        "idempotency_key": key or uuid.uuid4().hex,
    }


def send(t: Tenant, path: str, body: dict[str, Any]) -> Any:
    """Transfers and payouts carry the same key in the header and the body."""
    return t.post(path, body, idem=body["idempotency_key"])


def wait_state(t: Tenant, path: str, state: str, wait_s: float = 20) -> dict[str, Any]:
    def reached() -> dict[str, Any]:
        data: dict[str, Any] = t.get(path).json()["data"]
        assert data["state"] == state, data
        return data

    return eventually(reached, timeout=wait_s)
