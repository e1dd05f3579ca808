"""The ledger behind the gateway: HTTP flows through gateway -> compliance -> ledger -> gateway
for wallets, virtual accounts, sandbox deposits, transfers, payouts, review and reads."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import Stack, make_tenant
from tests.support import ledger  # noqa: F401 - its patient readiness wait for the shared stack
from tests.support.admin import approved_ach_account
from tests.support.flows import book, created, funded, payout, send, wait_state

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]  # the first test may start the stack


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
    ext_id = approved_ach_account(stack, t.tenant_id, a["customer_id"], routing_number="011000015")
    po = created(send(t, "/v1/payouts", payout(a["wallet_id"], ext_id, "40.00")))
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
