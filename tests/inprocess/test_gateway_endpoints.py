"""Every endpoint end to end through the running pipeline, in both access forms:
customer -> wallets -> virtual account -> sandbox deposit -> transfer -> payout -> reads,
and webhook endpoints."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.conftest import ALL_SCOPES, Stack, Tenant, customer_body, make_tenant
from tests.support.admin import approved_ach_account
from tests.support.flows import book, payout, wait_state
from tests.support.gateway import assert_error, call, jwt_for, post, routed
from tests.support.wait import eventually

pytestmark = pytest.mark.inprocess


def ok(r: httpx.Response, status: int = 201) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["success"] is True and set(body) == {"success", "data"}
    return body["data"]


def read(t: Tenant, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """GET in both forms; the bodies must be identical (same X-Request-Id)."""
    rid = "req-" + uuid.uuid4().hex
    a = call(t.stack, "GET", path, key=t.key, headers={"X-Request-Id": rid})
    b = routed(t.stack, "GET", path, key=t.key, headers={"X-Request-Id": rid}, gateway=1)
    assert a.status_code == b.status_code, (a.text, b.text)
    assert a.content == b.content
    return a.json(), b.json()


def wait_balance(t: Tenant, wallet_id: str, want: str, timeout: float = 20) -> dict[str, Any]:
    """The wallet once its available balance is ``want`` (or as it is at the deadline)."""

    def reached() -> dict[str, Any] | None:
        data: dict[str, Any] = ok(t.get(f"/v1/wallets/{wallet_id}"), 200)
        return data if Decimal(data.get("available_balance", "0")) == Decimal(want) else None

    try:
        return eventually(reached, timeout=timeout, interval=0.3)
    except AssertionError:
        return ok(t.get(f"/v1/wallets/{wallet_id}"), 200)


@pytest.fixture(scope="module")
def flow_tenant(stack: Stack) -> Tenant:
    return make_tenant(stack, rate_limit=100000)


def test_money_flow_through_every_endpoint(stack: Stack, flow_tenant: Tenant) -> None:
    t = flow_tenant
    cus = ok(post(t, "/v1/customers", customer_body(), form="routed"))
    assert cus["customer_id"].startswith("cus_") and cus["provider"] == "service"

    w1 = ok(post(t, "/v1/wallets", {"customer_id": cus["customer_id"], "symbol": "usdc", "chain": "eth"}))
    assert (w1["symbol"], w1["chain"]) == ("USDC", "ETH")
    assert re.fullmatch(r"0x[0-9a-fA-F]{40}", w1["deposit_address"])
    w2 = ok(
        post(
            t,
            "/v1/wallets",
            {"customer_id": cus["customer_id"], "symbol": "USDC", "chain": "Base"},
            form="routed",
        )
    )
    assert w2["chain"] == "BASE" and w2["wallet_id"] != w1["wallet_id"]

    va = ok(
        post(
            t,
            "/v1/virtual-accounts",
            {
                "customer_id": cus["customer_id"],
                "currency": "usd",
                "destination": {
                    "rail": "provider_wallet",
                    "currency": "usdc",
                    "address": w1["deposit_address"],
                },
            },
        )
    )
    assert va["virtual_account_id"].startswith("va_") and va["currency"] == "USD"
    assert va["account_number"] and va["routing_number"]
    va2 = ok(
        post(
            t,
            "/v1/virtual-accounts",
            {
                "customer_id": cus["customer_id"],
                "currency": "USD",
                "destination": {
                    "payment_rail": "provider_wallet",
                    "currency": "USDC",
                    "provider_wallet_id": w2["wallet_id"],
                },
            },
            form="routed",
        )
    )
    assert va2["virtual_account_id"] != va["virtual_account_id"]

    dep = ok(
        post(t, "/v1/sandbox/deposits", {"virtual_account_id": va["virtual_account_id"], "amount": "100.00"})
    )
    assert isinstance(dep, dict)
    assert float(wait_balance(t, w1["wallet_id"], "100")["available_balance"]) == 100

    key = "tr-" + uuid.uuid4().hex
    body = book(w1["wallet_id"], w2["wallet_id"], "10.5", key)
    body["source"]["currency"] = "usdc"  # codes in any case
    tr = ok(post(t, "/v1/transfers", body, idem=key))
    assert tr["transfer_id"].startswith("tr_") and tr["provider"] == "service"
    assert tr["state"] == "completed"

    ext_id = approved_ach_account(stack, t.tenant_id, cus["customer_id"])
    key = "po-" + uuid.uuid4().hex
    body = payout(w1["wallet_id"], ext_id, "5", key, fiat="usd")
    po = ok(post(t, "/v1/payouts", body, idem=key, form="routed"))
    assert po["transfer_id"].startswith("po_") and po["provider"] == "service"
    assert po["state"] in ("pending", "processing", "completed")
    # the sandbox settles the payout on its own; the reads below compare two answers byte
    # for byte, so the source wallet's held balance must not move between them
    wait_state(t, f"/v1/payouts/{po['transfer_id']}", "completed")

    # reads, both forms byte-identical
    a, _ = read(t, f"/v1/customers/{cus['customer_id']}")
    assert a["data"]["customer_id"] == cus["customer_id"]
    a, _ = read(t, f"/v1/wallets/{w2['wallet_id']}")
    assert float(a["data"]["available_balance"]) == 10.5 and "held_balance" in a["data"]
    a, _ = read(t, f"/v1/virtual-accounts/{va['virtual_account_id']}")
    assert a["data"]["virtual_account_id"] == va["virtual_account_id"]
    a, _ = read(t, f"/v1/transfers/{tr['transfer_id']}")
    assert a["data"]["transfer_id"] == tr["transfer_id"]
    assert {"state", "source", "destination", "created_at", "updated_at"} <= set(a["data"])
    a, _ = read(t, f"/v1/payouts/{po['transfer_id']}")
    assert a["data"]["transfer_id"] == po["transfer_id"]

    a, _ = read(t, "/v1/wallets?limit=1")
    assert [w["wallet_id"] for w in a["data"]["items"]] == [w2["wallet_id"]]
    assert a["data"]["next_cursor"]
    a, _ = read(t, f"/v1/wallets?limit=1&starting_after={a['data']['next_cursor']}")
    assert [w["wallet_id"] for w in a["data"]["items"]] == [w1["wallet_id"]]
    a, _ = read(t, "/v1/virtual-accounts")
    assert len(a["data"]["items"]) == 2 and a["data"]["next_cursor"] is None
    a, _ = read(t, "/v1/customers")
    assert [c["customer_id"] for c in a["data"]["items"]] == [cus["customer_id"]]

    # another tenant cannot see any of it
    other = make_tenant(stack)
    for path in (
        f"/v1/customers/{cus['customer_id']}",
        f"/v1/wallets/{w1['wallet_id']}",
        f"/v1/transfers/{tr['transfer_id']}",
    ):
        assert_error(other.get(path), 404, "not_found")


def test_webhook_endpoints(stack: Stack, flow_tenant: Tenant) -> None:
    t = flow_tenant
    wh = ok(post(t, "/v1/webhooks", {"endpoint_url": "http://127.0.0.1:9/hooks"}))
    assert wh["webhook_id"].startswith("wh_") and wh["signing_secret"].startswith("whsec_")
    assert wh["endpoint_url"] == "http://127.0.0.1:9/hooks" and wh["created_at"]
    a, _ = read(t, f"/v1/webhooks/{wh['webhook_id']}")
    assert a["data"]["webhook_id"] == wh["webhook_id"] and "signing_secret" not in a["data"]
    a, _ = read(t, "/v1/webhooks")
    assert wh["webhook_id"] in [w["webhook_id"] for w in a["data"]["items"]]
    rotated = ok(post(t, f"/v1/webhooks/{wh['webhook_id']}/rotate-secret", {}, form="routed"), 200)
    assert rotated["signing_secret"].startswith("whsec_")
    assert rotated["signing_secret"] != wh["signing_secret"]
    r = call(
        stack,
        "POST",
        f"/v1/webhooks/{wh['webhook_id']}/rotate-secret",
        key=t.key,
        raw=b"",
        idem=uuid.uuid4().hex,
        headers={"Content-Type": ""},
    )
    assert r.status_code == 200, r.text


def test_sandbox_deposits_do_not_exist_in_production(stack: Stack, tenant: Tenant) -> None:
    token = jwt_for(stack, tenant.tenant_id, mode="production", scopes=ALL_SCOPES)
    bearer = tenant.with_key(token)
    for form in ("direct", "routed"):
        r = post(bearer, "/v1/sandbox/deposits", {"virtual_account_id": "va_1", "amount": "1.00"}, form=form)
        err = assert_error(r, 404, "not_found")
        assert err["message"] == "no such route"


def test_unknown_ids_are_not_found(stack: Stack, tenant: Tenant) -> None:
    for path in (
        "/v1/customers/cus_nope",
        "/v1/wallets/wal_nope",
        "/v1/virtual-accounts/va_x",
        "/v1/transfers/tr_nope",
        "/v1/payouts/po_nope",
        "/v1/webhooks/wh_nope",
        "/v1/customers/%3Cscript%3E",
    ):
        for fn in (call, routed):
            assert_error(fn(stack, "GET", path, key=tenant.key), 404, "not_found")
