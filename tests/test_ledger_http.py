"""The ledger behind the gateway: HTTP flows through gateway -> compliance -> ledger -> gateway
for wallets, virtual accounts, sandbox deposits, transfers, payouts, review and reads."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests import ledger_kit  # noqa: F401 - its patient readiness wait for the shared stack
from tests.conftest import Stack, Tenant, customer_body, make_tenant

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # the first test may start the stack


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


def book(src: str, dst: str, amount: str, key: str | None = None) -> dict[str, Any]:
    return {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": amount,
            "provider_wallet_id": src,
        },
        "destination": {"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": dst},
        "idempotency_key": key or uuid.uuid4().hex,
    }


def send(t: Tenant, path: str, body: dict[str, Any]) -> Any:
    """Transfers and payouts carry the same key in the header and the body."""
    return t.post(path, body, idem=body["idempotency_key"])


def wait_state(t: Tenant, path: str, state: str, wait_s: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + wait_s
    while True:
        data = t.get(path).json()["data"]
        if data["state"] == state or time.monotonic() > deadline:
            assert data["state"] == state, data
            return data
        time.sleep(0.2)


def test_wallet_virtual_account_deposit_and_book_transfer_over_http(stack: Stack) -> None:
    t = make_tenant(stack)
    a, b = funded(t, "100.00"), funded(t, "0.01")
    assert a["deposit_address"].startswith("0x") and a["va"]["routing_number"]
    w = t.get(f"/v1/wallets/{a['wallet_id']}").json()["data"]
    assert (w["available_balance"], w["held_balance"]) == ("100.00", "0.00")
    key = uuid.uuid4().hex
    r = send(t, "/v1/transfers", book(a["wallet_id"], b["wallet_id"], "30.50", key))
    tr = created(r)
    assert tr["state"] == "completed" and tr["provider"] == "service"
    got = t.get(f"/v1/transfers/{tr['transfer_id']}").json()["data"]
    assert got["state"] == "completed" and got["source"]["provider_wallet_id"] == a["wallet_id"]
    assert t.get(f"/v1/wallets/{b['wallet_id']}").json()["data"]["available_balance"] == "30.51"
    listed = t.get("/v1/transfers?limit=1").json()["data"]
    assert listed["items"][0]["transfer_id"] == tr["transfer_id"] and listed["next_cursor"] is None
    # Insufficient funds names its reason and changes nothing.
    r = send(t, "/v1/transfers", book(a["wallet_id"], b["wallet_id"], "1000.00"))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert r.json()["error"]["details"]["reason"] == "insufficient_funds"
    assert t.get(f"/v1/wallets/{a['wallet_id']}").json()["data"]["available_balance"] == "69.50"
    # Another tenant's ids are unknown to this one.
    other = make_tenant(stack)
    for path in (
        f"/v1/wallets/{a['wallet_id']}",
        f"/v1/transfers/{tr['transfer_id']}",
        f"/v1/customers/{a['customer_id']}",
        f"/v1/virtual-accounts/{a['va']['virtual_account_id']}",
    ):
        r = other.get(path)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path


def test_payout_and_review_over_http(stack: Stack) -> None:
    t = make_tenant(stack)
    a = funded(t, "500.00")
    ea = stack.admin_call(
        "upsert_external_account",
        tenant_id=t.tenant_id,
        mode="sandbox",
        customer_id=a["customer_id"],
        rail="ach",
        currency="USD",
        account_number="000123456789",
        routing_number="011000015",
        approved=True,
    )
    assert ea.status_code == 200, ea.text
    ext_id = ea.json()["data"]["external_account_id"]
    payout = {
        "source": {
            "payment_rail": "provider_wallet",
            "currency": "USDC",
            "amount": "40.00",
            "provider_wallet_id": a["wallet_id"],
        },
        "destination": {"payment_rail": "ach", "currency": "USD", "external_account_id": ext_id},
        "idempotency_key": uuid.uuid4().hex,
    }
    po = created(send(t, "/v1/payouts", payout))
    assert po["state"] == "pending"
    w = t.get(f"/v1/wallets/{a['wallet_id']}").json()["data"]
    assert (w["available_balance"], w["held_balance"]) == ("460.00", "40.00")
    wait_state(t, f"/v1/payouts/{po['transfer_id']}", "completed")
    assert t.get(f"/v1/wallets/{a['wallet_id']}").json()["data"]["held_balance"] == "0.00"
    # Above the review threshold: in_review with funds held until an operator decides.
    cap = stack.admin_call(
        "set_transfer_cap",
        tenant_id=t.tenant_id,
        mode="sandbox",
        per_transfer="10000",
        daily="100000",
        review_threshold="100",
    )
    assert cap.status_code == 200, cap.text
    b = funded(t, "0.01")
    big = created(send(t, "/v1/transfers", book(a["wallet_id"], b["wallet_id"], "150.00")))
    assert big["state"] == "in_review"
    assert t.get(f"/v1/wallets/{a['wallet_id']}").json()["data"]["held_balance"] == "150.00"
    r = stack.admin_call("review_transfer", transfer_id=big["transfer_id"], decision="approve")
    assert r.status_code == 200, r.text
    done = t.get(f"/v1/transfers/{big['transfer_id']}").json()["data"]
    assert done["state"] == "completed"
    w = t.get(f"/v1/wallets/{a['wallet_id']}").json()["data"]
    assert (w["available_balance"], w["held_balance"]) == ("310.00", "0.00")
    r = stack.admin_call("review_transfer", transfer_id=big["transfer_id"], decision="reject")
    assert r.status_code == 400 and r.json()["error"]["details"]["reason"] == "illegal_transition"
