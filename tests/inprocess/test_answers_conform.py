"""Every operation of the gateway's OpenAPI document, driven once to success: each answer is
held to the document with no undeclared property (the recorder of tests/integration/conftest.py
and tests/inprocess/conftest.py does that for every test of both tiers; here every operation is
reached), and a create answers the whole object, as its retrieve does."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.conformance import Checker, Operation, Recorder, answered, report
from tests.support.flows import book, created, payout, send
from tests.support.wait import eventually
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.inprocess


def ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, (r.request.method, r.request.url, r.status_code, r.text[:500])
    return r.json()["data"]


def request(t: Tenant, method: str, path: str, body: Any = None) -> httpx.Response:
    headers = t.headers(uuid.uuid4().hex if method != "GET" else None)
    return httpx.request(method, t.stack.gateway + path, json=body, headers=headers, timeout=30)


def _same_as_read(t: Tenant, made: dict[str, Any], path: str) -> None:
    """A create answers the whole object: what a read of it answers right after."""
    assert ok(t.get(path)) == made, path


def _customers_wallets_accounts(t: Tenant) -> dict[str, Any]:
    person = created(t.post("/v1/customers", customer_body()))
    _same_as_read(t, person, f"/v1/customers/{person['customer_id']}")
    firm = created(
        t.post(
            "/v1/customers", customer_body(account_type="business", full_name=None, company_name="Acme Ltd")
        )
    )
    assert firm["company_name"] == "Acme Ltd" and firm["full_name"] is None
    ok(t.get("/v1/customers?limit=2"))
    cus = person["customer_id"]
    wallets = [
        created(t.post("/v1/wallets", {"customer_id": cus, "symbol": "usdc", "chain": "base"}))
        for _ in range(2)
    ]
    _same_as_read(t, wallets[0], f"/v1/wallets/{wallets[0]['wallet_id']}")
    assert wallets[0]["available_balance"] == "0" or float(wallets[0]["available_balance"]) == 0
    ok(t.get("/v1/wallets"))
    va = created(
        t.post(
            "/v1/virtual-accounts",
            {
                "customer_id": cus,
                "currency": "USD",
                "destination": {
                    "rail": "stablecoin",
                    "currency": "USDC",
                    "address": wallets[0]["deposit_address"],
                },
            },
        )
    )
    _same_as_read(t, va, f"/v1/virtual-accounts/{va['virtual_account_id']}")
    ok(t.get("/v1/virtual-accounts"))
    deposit = created(
        t.post("/v1/sandbox/deposits", {"virtual_account_id": va["virtual_account_id"], "amount": "100.00"})
    )
    assert deposit["state"] == "completed" and deposit["wallet_id"] == wallets[0]["wallet_id"]
    ok(t.get(f"/v1/wallets/{wallets[0]['wallet_id']}/transactions"))
    return {"customer_id": cus, "from": wallets[0]["wallet_id"], "to": wallets[1]["wallet_id"]}


def _transfers_and_payouts(stack: Stack, t: Tenant, made: dict[str, Any]) -> None:
    body = book(made["from"], made["to"], "10.00")
    body["developer_fee"] = {"percentage": 1.5}  # a JSON number, as the money guide shows it
    transfer = created(send(t, "/v1/transfers", body))
    assert transfer["developer_fee_amount"] == "0.15", transfer
    _same_as_read(t, transfer, f"/v1/transfers/{transfer['transfer_id']}")  # a book transfer settles at once
    ok(t.get("/v1/transfers"))
    account = stack.admin_call(
        "upsert_external_account",
        tenant_id=t.tenant_id,
        mode="sandbox",
        customer_id=made["customer_id"],
        rail="ach",
        currency="USD",
        account_number="000123456789",
        routing_number="021000021",
        approved=True,
    )
    assert account.status_code == 200, account.text
    paid = created(
        send(t, "/v1/payouts", payout(made["from"], account.json()["data"]["external_account_id"], "5.00"))
    )
    read = ok(t.get(f"/v1/payouts/{paid['transfer_id']}"))
    # a payout moves on after it is answered: the same object, perhaps a later state
    assert {k: v for k, v in paid.items() if k not in ("state", "updated_at")} == {
        k: v for k, v in read.items() if k not in ("state", "updated_at")
    }
    ok(t.get("/v1/payouts"))
    eventually(lambda: ok(t.get("/v1/fee-balances"))["items"], timeout=20)


def _webhooks(t: Tenant, receiver: Receiver) -> None:
    made = created(
        t.post("/v1/webhooks", {"endpoint_url": receiver.url, "enabled_events": ["transfer.created"]})
    )
    wid = made["webhook_id"]
    assert made["status"] == "enabled" and made["signing_secret"]
    _same_as_read(t, {k: v for k, v in made.items() if k != "signing_secret"}, f"/v1/webhooks/{wid}")
    ok(t.get("/v1/webhooks"))
    changed = ok(request(t, "PATCH", f"/v1/webhooks/{wid}", {"status": "disabled"}))
    assert changed["status"] == "disabled" and changed["disabled_reason"] == "disabled_by_partner"
    rotated = ok(request(t, "POST", f"/v1/webhooks/{wid}/rotate-secret", {}))
    assert rotated["previous_secret_expires_at"] and rotated["signing_secret"] != made["signing_secret"]
    assert ok(request(t, "DELETE", f"/v1/webhooks/{wid}"))["status"] == "deleted"


def _events_and_the_rest(t: Tenant) -> None:
    events = eventually(
        lambda: ok(t.get("/v1/events?limit=5"))["items"] or pytest.fail("no events yet"), timeout=20
    )
    ok(t.get(f"/v1/events/{events[0]['id']}"))
    ok(t.get("/v1/health"))
    ok(t.post("/v1/onboarding-authorizations", {"service_user_id": "u-" + uuid.uuid4().hex[:8]}), 201)
    routed = httpx.post(
        t.stack.gateway + "/",
        json={"method": "GET"},
        headers=t.headers(None, **{"x-service-route": "/v1/customers"}),
        timeout=30,
    )
    ok(routed)


def test_every_operation_answers_as_the_document_says(
    stack: Stack, answer_recorder: Recorder, answer_checker: Checker, answers_seen: dict[Operation, set[int]]
) -> None:
    t = make_tenant(stack)
    made = _customers_wallets_accounts(t)
    _transfers_and_payouts(stack, t, made)
    receiver = Receiver().start()
    try:
        _webhooks(t, receiver)
    finally:
        receiver.stop()
    _events_and_the_rest(t)
    answers = list(answer_recorder.answers)  # this test's so far (the teardown checks them too)
    assert report(answer_checker, answers) == []
    seen: dict[Operation, set[int]] = {}
    answered(answer_checker, answers, seen)
    unreached = sorted(
        op for op in answer_checker.operations if not any(200 <= s < 300 for s in seen.get(op, ()))
    )
    assert unreached == [], f"operations no answer reached: {unreached}"
