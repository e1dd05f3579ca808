"""Compliance through the whole suite: partner requests on the gateway, policy set through
the admin service, decisions listed by the operator (sandbox, where keys need no go-live)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.flows import book, payout, send

pytestmark = pytest.mark.inprocess


def _wallet(t: Tenant, country: str = "US") -> tuple[str, str]:
    r = t.post("/v1/customers", customer_body(country_code=country))
    assert r.status_code == 201, r.text
    cid = r.json()["data"]["customer_id"]
    r = t.post("/v1/wallets", {"customer_id": cid, "symbol": "USDC", "chain": "ETH"})
    assert r.status_code == 201, r.text
    return cid, r.json()["data"]["wallet_id"]


def _payout(t: Tenant, wallet: str, ea: str, amount: str = "5") -> Any:
    # send(): header and body carry the same key (docs/guides/idempotency.md)
    return send(t, "/v1/payouts", payout(wallet, ea, amount, "po-" + uuid.uuid4().hex))


def _transfer(t: Tenant, src: str, dst: str, amount: str) -> Any:
    return send(t, "/v1/transfers", book(src, dst, amount, "tr-" + uuid.uuid4().hex))


def _refusal(r: Any, reason: str) -> dict[str, Any]:
    assert r.status_code == 403, r.text
    err = r.json()["error"]
    assert err["code"] == "forbidden" and err["details"]["reason"] == reason, err
    assert err["details"]["request_id"] == r.headers["x-request-id"]
    return err


def test_payout_waits_for_an_approved_external_account(stack: Stack) -> None:
    t = make_tenant(stack)
    cid, wallet = _wallet(t)
    upsert = {
        "tenant_id": t.tenant_id,
        "mode": "sandbox",
        "customer_id": cid,
        "rail": "ach",
        "currency": "USD",
        "account_number": "000123456789",
        "routing_number": "021000021",
    }
    r = stack.admin_call("upsert_external_account", approved=False, **upsert)
    assert r.status_code == 200, r.text
    ea = r.json()["data"]["external_account_id"]
    err = _refusal(_payout(t, wallet, ea), "external_account_not_approved")
    assert err["details"]["problem"] == "not_approved"
    r = stack.admin_call("upsert_external_account", approved=True, external_account_id=ea, **upsert)
    assert r.status_code == 200 and r.json()["data"]["approved"] is True, r.text
    r = _payout(t, wallet, ea)  # compliance lets it through; the empty wallet cannot pay
    assert r.status_code != 403, r.text
    assert r.status_code in (201, 400), r.text
    if r.status_code == 400:
        assert r.json()["error"]["details"]["reason"] == "insufficient_funds"


def test_sandbox_caps_and_the_decision_log(stack: Stack) -> None:
    t = make_tenant(stack)
    _, a = _wallet(t)
    _, b = _wallet(t)
    err = _refusal(_transfer(t, a, b, "1000000.01"), "transfer_cap_exceeded")  # default sandbox cap
    assert err["details"]["limit"] == "per_transfer"
    r = stack.admin_call(
        "set_transfer_cap", tenant_id=t.tenant_id, mode="sandbox", per_transfer="10", daily="10"
    )
    assert r.status_code == 200, r.text
    err = _refusal(_transfer(t, a, b, "10.50"), "transfer_cap_exceeded")
    assert err["details"]["cap"] == "10.000000" or err["details"]["cap"] == "10"
    r = stack.admin_call("list_decisions", tenant_id=t.tenant_id, limit=10)
    assert r.status_code == 200, r.text
    items = r.json()["data"]["items"]
    assert [i["outcome"] for i in items[:2]] == ["refuse", "refuse"]
    assert items[0]["reason"] == "transfer_cap_exceeded" and items[0]["inputs"]["amount"] == "10.50"
    assert items[0]["request_id"]
    assert {i["command_type"] for i in items} >= {"CreateTransfer", "CreateWallet", "CreateCustomer"}


def test_restricted_customer_refused_at_the_gateway_in_sandbox(stack: Stack) -> None:
    t = make_tenant(stack)
    err = _refusal(t.post("/v1/customers", customer_body(country_code="TN")), "jurisdiction_restricted")
    assert "TN" in err["message"]


def test_allowance_given_back_when_the_ledger_refuses(stack: Stack) -> None:
    """Compliance approves 8 of a daily 10; the empty wallet makes the ledger refuse it; the 8
    comes back to the day (docs/failure-model.md, "Cap allowances"), so a later 8 is approved, not
    refused for the cap."""
    t = make_tenant(stack)
    _, a = _wallet(t)
    _, b = _wallet(t)
    r = stack.admin_call(
        "set_transfer_cap", tenant_id=t.tenant_id, mode="sandbox", per_transfer="10", daily="10"
    )
    assert r.status_code == 200, r.text
    first = _transfer(t, a, b, "8")
    assert first.status_code == 400, first.text
    assert first.json()["error"]["details"]["reason"] == "insufficient_funds"
    deadline = time.monotonic() + 20
    while True:  # the release travels ledger -> compliance asynchronously
        again = _transfer(t, a, b, "8")
        assert again.status_code in (400, 403), again.text
        if again.status_code == 400:  # compliance let it through: the first 8 came back
            assert again.json()["error"]["details"]["reason"] == "insufficient_funds"
            break
        details = again.json()["error"]["details"]
        assert details["reason"] == "transfer_cap_exceeded" and details["limit"] == "daily", again.text
        assert time.monotonic() < deadline, "the refused transfer's allowance never came back"
        time.sleep(0.5)
