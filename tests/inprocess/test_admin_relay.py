"""Operator actions on data other services own, relayed by request/reply (the in-process tier's bus)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN, Stack, customer_body, make_tenant
from tests.support.admin import admin_error, admin_ok, db
from tools.stack.processes import free_port

pytestmark = pytest.mark.inprocess


class _Receiver(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("content-length") or 0))
        _Receiver.hits.append(self.headers.get("x-service-webhook-id") or "")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks"
    finally:
        server.shutdown()


def _audit(stack: Stack, request_id: str) -> dict:
    return db(stack, "SELECT * FROM identity.audit_log WHERE request_id = $1", request_id)[0]


def test_route_and_cap_validation_names_the_field(stack: Stack) -> None:
    tid = make_tenant(stack).tenant_id
    route = {"tenant_id": tid, "mode": "production", "rail": "ach", "currency": "USD"}
    for change, field in [
        ({"rail": "carrier_pigeon"}, "rail"),
        ({"currency": "EUR"}, "currency"),
        ({"rail": "stablecoin", "currency": "DOGE"}, "currency"),
        ({"mode": "live"}, "mode"),
        ({"currency": "U$D"}, "currency"),
    ]:
        assert admin_error(stack, "approve_route", 400, **{**route, **change})["details"]["field"] == field
    cap = {"tenant_id": tid, "mode": "production", "per_transfer": "100", "daily": "1000"}
    for change, field in [
        ({"per_transfer": "-1"}, "per_transfer"),
        ({"daily": "0"}, "daily"),
        ({"per_transfer": "1e3"}, "per_transfer"),
        ({"per_transfer": "5000"}, "per_transfer"),
        ({"review_threshold": "abc"}, "review_threshold"),
    ]:
        assert admin_error(stack, "set_transfer_cap", 400, **{**cap, **change})["details"]["field"] == field
    assert admin_error(stack, "approve_route", 404, **{**route, "tenant_id": str(uuid.uuid4())})
    assert (
        admin_error(stack, "review_transfer", 400, transfer_id="tr_x", decision="maybe")["details"]["field"]
        == "decision"
    )
    assert admin_error(stack, "list_deliveries", 400, status="lost")["details"]["field"] == "status"


def test_policy_actions_reach_compliance_and_are_audited(stack: Stack) -> None:
    tid = make_tenant(stack).tenant_id
    r = stack.admin_call("approve_route", tenant_id=tid, mode="production", rail="ach", currency="usd")
    assert r.status_code == 200, r.text
    audit = _audit(stack, r.headers["x-request-id"])
    assert (audit["actor"], audit["target"], audit["outcome"]) == ("ops", tid, "ok")
    assert audit["details"] == {"mode": "production", "rail": "ach", "currency": "USD"}
    cap = admin_ok(
        stack,
        "set_transfer_cap",
        tenant_id=tid,
        mode="production",
        per_transfer="500.50",
        daily="2000",
        review_threshold="100",
    )
    assert Decimal(cap["per_transfer"]) == Decimal("500.50") and Decimal(cap["daily"]) == 2000
    assert admin_ok(stack, "revoke_route", tenant_id=tid, mode="production", rail="ach", currency="USD")


def test_external_accounts_are_checked_then_stored_by_compliance(stack: Stack) -> None:
    t = make_tenant(stack)
    r = t.post("/v1/customers", customer_body())
    assert r.status_code == 201, r.text
    cus = r.json()["data"]["customer_id"]
    base = {"tenant_id": t.tenant_id, "mode": "sandbox", "customer_id": cus, "approved": True}
    ach = {
        **base,
        "rail": "ach",
        "currency": "USD",
        "account_number": "000123456789",
        "routing_number": "021000021",
    }
    for change, field in [
        ({"routing_number": "021000022"}, "routing_number"),
        ({"account_number": None}, "account_number"),
        ({"rail": "sepa", "currency": "EUR", "iban": "DE89370400440532013001"}, "iban"),
        ({"rail": "faster_payments", "currency": "GBP"}, "account_number"),
    ]:
        fields = {k: v for k, v in {**ach, **change}.items() if v is not None}
        assert admin_error(stack, "upsert_external_account", 400, **fields)["details"]["field"] == field
    r = stack.admin_call("upsert_external_account", **ach)
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["external_account_id"].startswith("ext_") and data["approved"] is True
    audit = _audit(stack, r.headers["x-request-id"])
    assert audit["details"]["account_last4"] == "6789" and "000123456789" not in str(audit)
    sepa = admin_ok(
        stack,
        "upsert_external_account",
        **{
            **base,
            "rail": "sepa",
            "currency": "eur",
            "iban": "DE89 3704 0044 0532 0130 00",
            "bic": "COBADEFFXXX",
            "approved": False,
        },
    )
    assert sepa["iban"] == "DE89370400440532013000" and sepa["approved"] is False
    err = admin_error(stack, "upsert_external_account", 404, **{**ach, "customer_id": "cus_unknown"})
    assert err["code"] == "not_found"
    decisions = admin_ok(stack, "list_decisions", tenant_id=t.tenant_id, limit=1)
    assert decisions["items"] and decisions["items"][0]["tenant_id"] == t.tenant_id


def test_enable_live_needs_route_cap_and_verified_webhook(stack: Stack, receiver: str) -> None:
    t = make_tenant(stack)
    err = admin_error(stack, "enable_live", 403, tenant_id=t.tenant_id)
    assert err["details"]["reason"] == "live_requirements_missing"
    assert err["details"]["missing"] == [
        "approved_production_route",
        "production_transfer_cap",
        "verified_webhook_endpoint",
    ]
    admin_ok(stack, "approve_route", tenant_id=t.tenant_id, mode="production", rail="ach", currency="USD")
    admin_ok(
        stack, "set_transfer_cap", tenant_id=t.tenant_id, mode="production", per_transfer="100", daily="1000"
    )
    err = admin_error(stack, "enable_live", 403, tenant_id=t.tenant_id)
    assert err["details"]["missing"] == ["verified_webhook_endpoint"]
    hook = t.post("/v1/webhooks", {"endpoint_url": receiver})
    assert hook.status_code == 201, hook.text
    webhook_id = hook.json()["data"]["webhook_id"]
    assert t.post("/v1/customers", customer_body()).status_code == 201
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page = admin_ok(stack, "list_deliveries", tenant_id=t.tenant_id, webhook_id=webhook_id)
        if any(i["status"] == "succeeded" for i in page["items"]):
            break
        time.sleep(0.5)
    item = page["items"][0]
    assert item["status"] == "succeeded" and item["event_type"] == "customer.created"
    assert item["webhook_id"] == webhook_id and item["last_status_code"] == 200
    live = admin_ok(stack, "enable_live", tenant_id=t.tenant_id)
    assert live["live_enabled"] is True
    key = admin_ok(
        stack,
        "create_api_key",
        tenant_id=t.tenant_id,
        key_label="live",
        scopes=["customers:write"],
        mode="production",
    )
    assert key["api_key"].startswith("sk_live_")
    r = httpx.get(stack.gateway + "/v1/health", headers={"Authorization": f"Bearer {key['api_key']}"})
    assert r.status_code == 200 and r.json()["data"]["mode"] == "production"
    err = admin_error(stack, "replay_delivery", 400, delivery_id=item["delivery_id"])
    assert err["details"]["field"] == "delivery_id"  # only dead deliveries are replayed


def test_unknown_transfer_and_delivery_are_passed_through_as_not_found(stack: Stack) -> None:
    err = admin_error(stack, "review_transfer", 404, transfer_id="tr_unknown", decision="approve")
    assert err["code"] == "not_found"
    err = admin_error(stack, "replay_delivery", 404, delivery_id="dlv_unknown")
    assert err["code"] == "not_found"


def test_a_silent_owner_is_503_provider_unavailable(stack: Stack) -> None:
    # An admin instance on topics nobody consumes: every relayed action times out.
    extra = {"SLUICE_TOPIC_PREFIX": f"silent{uuid.uuid4().hex[:8]}", "SLUICE_GATEWAY_TIMEOUT_S": "1"}
    proc = stack.suite.start("admin", free_port(), extra, instance=f"admin-silent-{uuid.uuid4().hex[:6]}")
    try:
        stack.suite.wait_ready([proc], timeout=300)
        tid = make_tenant(stack).tenant_id
        r = httpx.post(
            proc.url + "/",
            json={"action": "enable_live", "tenant_id": tid},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=30,
        )
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "provider_unavailable" and r.headers["retry-after"] == "1"
        assert r.json()["error"]["details"]["outcome"] == "unknown"
        # The command was sent and may yet be carried out: the audit must not say refused.
        assert _audit(stack, r.headers["x-request-id"])["outcome"] == "unknown"
        assert admin_ok(stack, "get_tenant", tenant_id=tid)["live_enabled"] is False
    finally:
        stack.suite.stop_proc(proc)
