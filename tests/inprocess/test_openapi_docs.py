"""The admin and gateway OpenAPI documents: served, valid, complete; docs pages; 405 Allow;
the routed form checks credentials before routes."""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema
import pytest
from openapi_spec_validator import validate

from admin.actions.table import ACTIONS
from common.offerings import OFFERED_PAIRS as OFFERED_CHAINS
from gateway.app import ENDPOINTS
from gateway.openapi.document import build_document
from gateway.openapi.examples import EXAMPLES
from gateway.openapi.rules import REDIRECT_URL, amount_pattern
from tests.conftest import Stack, Tenant


def _body_schema(doc: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    media = doc["paths"][path][method.lower()]["requestBody"]["content"]["application/json"]
    return {**media["schema"], "components": doc["components"]}


def _valid(doc: dict[str, Any], method: str, path: str, body: Any) -> bool:
    v = jsonschema.Draft202012Validator(_body_schema(doc, method, path))
    return v.is_valid(body)


@pytest.mark.unit
def test_gateway_document_states_the_rules() -> None:
    doc = build_document(ENDPOINTS)
    validate(doc)
    assert {t["name"] for t in doc["tags"]} >= {"customers", "transfers", "webhooks", "routed"}
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert op["tags"], (method, path)
            if method == "post" and path != "/":
                assert "Idempotency-Key" in {p["name"] for p in op["parameters"]}
                assert (
                    "X-Idempotent-Replay"
                    in op["responses"]["201" if "201" in op["responses"] else "200"]["headers"]
                )
            assert op["responses"]["429"]["headers"]["Retry-After"]["required"] is True
            assert op["responses"]["405"]["headers"]["Allow"]["required"] is True
            assert "X-RateLimit-Remaining" in op["responses"]["429"]["headers"]
    for (method, path), example in EXAMPLES.items():
        assert _valid(doc, method, path, example), (method, path)
    wallet = {"customer_id": "c1", "symbol": "PYUSD"}
    for chain in ("ETH", "OPTIMISM", "TRON"):
        offered = chain in OFFERED_CHAINS["PYUSD"]
        assert _valid(doc, "POST", "/v1/wallets", {**wallet, "chain": chain}) is offered
    deposit = {"virtual_account_id": "va1"}
    assert not _valid(doc, "POST", "/v1/sandbox/deposits", {**deposit, "amount": "0"})
    assert not _valid(doc, "POST", "/v1/sandbox/deposits", {**deposit, "amount": "1.005"})
    assert _valid(doc, "POST", "/v1/sandbox/deposits", {**deposit, "amount": "0.01"})
    va = EXAMPLES[("POST", "/v1/virtual-accounts")]
    assert not _valid(doc, "POST", "/v1/virtual-accounts", {**va, "destination": {"currency": "USDC"}})
    assert not _valid(doc, "POST", "/v1/virtual-accounts", {**va, "currency": "GBP"})
    tr = EXAMPLES[("POST", "/v1/transfers")]
    no_amount = {**tr, "source": {k: v for k, v in tr["source"].items() if k != "amount"}}
    assert not _valid(doc, "POST", "/v1/transfers", no_amount)
    other = {**tr, "destination": {**tr["destination"], "currency": "USDT"}}
    assert not _valid(doc, "POST", "/v1/transfers", other)
    po = EXAMPLES[("POST", "/v1/payouts")]
    assert not _valid(
        doc, "POST", "/v1/payouts", {**po, "destination": {**po["destination"], "currency": "EUR"}}
    )
    assert re.match(REDIRECT_URL, "http://127.0.0.1:8080/cb") and not re.match(REDIRECT_URL, "http://a.io/")
    assert re.match(amount_pattern(6), "1000000000000") and not re.match(amount_pattern(6), "1000000000000.5")


@pytest.mark.inprocess
def test_admin_serves_a_valid_document_with_every_action(stack: Stack) -> None:
    r = httpx.get(stack.admin + "/schema/openapi.json", timeout=10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    doc = r.json()
    validate(doc)
    body = doc["paths"]["/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(body["discriminator"]["mapping"]) == set(ACTIONS)
    schemas = doc["components"]["schemas"]
    for action, ref in body["discriminator"]["mapping"].items():
        assert schemas[ref.rsplit("/", 1)[1]]["properties"]["action"]["const"] == action
    page = httpx.get(stack.admin + "/docs", timeout=10)
    assert page.status_code == 200 and "docs/assets/init.js" in page.text and "Sluice Admin API" in page.text


@pytest.mark.inprocess
def test_gateway_docs_allow_and_auth_order(stack: Stack, tenant: Tenant) -> None:
    page = httpx.get(stack.gateway + "/docs", timeout=10)
    assert page.status_code == 200 and "docs/assets/init.js" in page.text
    r = httpx.delete(stack.gateway + "/v1/customers", headers=tenant.headers(), timeout=10)
    assert r.status_code == 405
    assert {m.strip() for m in r.headers["allow"].split(",")} >= {"GET", "POST"}
    opts = httpx.options(stack.gateway + "/v1/customers", timeout=10)
    assert {m.strip() for m in opts.headers["allow"].split(",")} >= {"GET", "POST"}
    routed = {"x-service-route": "/v1/nowhere", "Content-Type": "application/json"}
    assert httpx.post(stack.gateway + "/", json={}, headers=routed, timeout=10).status_code == 401
    r = httpx.post(stack.gateway + "/", json={}, headers={**tenant.headers(), **routed}, timeout=10)
    assert r.status_code == 404 and "x-ratelimit-remaining" in r.headers
    missing = httpx.post(stack.gateway + "/", json={}, headers=tenant.headers(), timeout=10)
    assert missing.status_code == 400 and missing.json()["error"]["details"]["field"] == "x-service-route"
    read_as = {**tenant.headers(), "x-service-route": "/v1/customers"}
    wrong = httpx.post(stack.gateway + "/", json={"method": "GET", "x": 1}, headers=read_as, timeout=10)
    assert wrong.status_code == 400
