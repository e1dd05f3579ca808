"""The walking skeleton: one request travels gateway -> compliance -> ledger -> gateway. Every
service's /healthz and /readyz and the two ledgers sharing a consumer group are the processes'
(tests/integration/test_foundation.py)."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.db import fetch

pytestmark = pytest.mark.inprocess


async def _customer_rows(stack: Stack, tenant_id: str) -> int:
    # the stack's own URL, password and all (a container's PostgreSQL proves it; the
    # embedded one trusts its socket)
    sql = "SELECT count(*) AS n FROM ledger.customers WHERE tenant_id = $1"
    rows = await fetch(stack.stores.database_url, sql, tenant_id)
    return int(rows[0]["n"])


def test_create_customer_travels_the_pipeline(stack: Stack, tenant: Tenant) -> None:
    r = tenant.post("/v1/customers", customer_body())
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["success"] is True
    assert body["data"]["provider"] == "service"
    assert body["data"]["customer_id"].startswith("cus_")
    assert r.headers["x-request-id"]
    assert asyncio.run(_customer_rows(stack, tenant.tenant_id)) == 1


def test_restricted_country_refused_and_nothing_persisted(stack: Stack, tenant: Tenant) -> None:
    for country in ("DZ", "BI", "CN", "JP", "TN"):
        r = tenant.post("/v1/customers", customer_body(country_code=country))
        assert r.status_code == 403, r.text
        err = r.json()["error"]
        assert err["code"] == "forbidden"
        assert err["details"]["reason"] == "jurisdiction_restricted"
        assert r.json()["success"] is False
    assert asyncio.run(_customer_rows(stack, tenant.tenant_id)) == 0


@pytest.mark.parametrize("auth", [None, "Bearer sk_test_" + "x" * 43, "Basic abc", "Bearer"])
def test_missing_or_invalid_key_is_401(stack: Stack, auth: str | None) -> None:
    headers = {"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex}
    if auth is not None:
        headers["Authorization"] = auth
    r = httpx.post(stack.gateway + "/v1/customers", json=customer_body(), headers=headers)
    assert r.status_code == 401
    assert r.json()["success"] is False
    assert r.json()["error"]["code"] == "unauthorized"
    assert r.json()["error"]["details"]["request_id"] == r.headers["x-request-id"]
    assert r.headers["www-authenticate"] == "Bearer"


def test_revoked_key_is_401_on_next_request(stack: Stack, tenant: Tenant) -> None:
    assert tenant.get("/v1/health").status_code == 200
    r = stack.admin_call("revoke_api_key", key_id=tenant.key_id)
    assert r.status_code == 200, r.text
    r = tenant.get("/v1/health")
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"


def test_missing_scope_is_403(stack: Stack) -> None:
    t = make_tenant(stack, scopes=["wallets:write"])
    r = t.post("/v1/customers", customer_body())
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "forbidden"
    assert r.json()["error"]["details"]["scope"] == "customers:write"


def test_health_snapshot_from_real_state(stack: Stack, tenant: Tenant) -> None:
    first = tenant.get("/v1/health").json()["data"]
    second = tenant.get("/v1/health").json()["data"]
    assert first["tenant_id"] == tenant.tenant_id
    assert first["tenant_name"] == tenant.name
    assert first["mode"] == "sandbox"
    assert first["gateway"] == "ready"
    assert first["route"] == "GET /v1/health"
    assert first["rate_limit_per_minute"] == 600
    assert second["remaining"] == first["remaining"] - 1
    assert first["white_label"] is None
