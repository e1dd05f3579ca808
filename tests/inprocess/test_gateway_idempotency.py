"""Idempotency (docs/guides/idempotency.md): replay, mismatch, concurrent duplicates, what is not
saved, agreement across both forms and both gateways, and survival of a gateway restart."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.gateway import assert_error, call, fetchval, routed
from tools.stack.processes import free_port

pytestmark = pytest.mark.inprocess


def customers_of(stack: Stack, tenant_id: str) -> int:
    return fetchval(stack, "SELECT count(*) FROM ledger.customers WHERE tenant_id = $1", tenant_id)


def test_replay_mismatch_and_forms(stack: Stack, tenant: Tenant) -> None:
    key = "idem-" + uuid.uuid4().hex
    body = customer_body()
    first = call(stack, "POST", "/v1/customers", key=tenant.key, body=body, idem=key)
    assert first.status_code == 201, first.text
    assert "x-idempotent-replay" not in first.headers
    for fn, gw in ((call, 1), (routed, 0), (routed, 1)):
        again = fn(stack, "POST", "/v1/customers", key=tenant.key, body=body, idem=key, gateway=gw)
        assert again.status_code == 201
        assert again.headers["x-idempotent-replay"] == "true"
        assert again.content == first.content
    # key order and whitespace do not change the fingerprint
    reordered = dict(reversed(list(body.items())))
    assert (
        call(stack, "POST", "/v1/customers", key=tenant.key, body=reordered, idem=key).headers[
            "x-idempotent-replay"
        ]
        == "true"
    )
    other = call(stack, "POST", "/v1/customers", key=tenant.key, body=customer_body(), idem=key)
    assert_error(other, 409, "idempotency_replay_mismatch")
    wrong_route = call(
        stack,
        "POST",
        "/v1/wallets",
        key=tenant.key,
        idem=key,
        body={"customer_id": "cus_1", "symbol": "USDC", "chain": "ETH"},
    )
    assert_error(wrong_route, 409, "idempotency_replay_mismatch")
    assert customers_of(stack, tenant.tenant_id) == 1


def test_refusals_are_replayed_validation_failures_are_not_saved(stack: Stack, tenant: Tenant) -> None:
    key = "idem-" + uuid.uuid4().hex
    refused = customer_body(country_code="JP")
    r1 = call(stack, "POST", "/v1/customers", key=tenant.key, body=refused, idem=key)
    assert_error(r1, 403, "forbidden")
    r2 = call(stack, "POST", "/v1/customers", key=tenant.key, body=refused, idem=key, gateway=1)
    assert r2.status_code == 403 and r2.headers["x-idempotent-replay"] == "true"
    assert r2.content == r1.content

    key = "idem-" + uuid.uuid4().hex
    bad = call(stack, "POST", "/v1/customers", key=tenant.key, body=customer_body(email="x"), idem=key)
    assert_error(bad, 400, "invalid_request", "email")
    good = call(stack, "POST", "/v1/customers", key=tenant.key, body=customer_body(), idem=key)
    assert good.status_code == 201 and "x-idempotent-replay" not in good.headers


def test_keys_are_scoped_per_tenant(stack: Stack, tenant: Tenant) -> None:
    other = make_tenant(stack)
    key = "shared-key-" + uuid.uuid4().hex
    a = call(stack, "POST", "/v1/customers", key=tenant.key, body=customer_body(), idem=key)
    b = call(stack, "POST", "/v1/customers", key=other.key, body=customer_body(), idem=key)
    assert a.status_code == b.status_code == 201
    assert "x-idempotent-replay" not in b.headers
    assert a.json()["data"]["customer_id"] != b.json()["data"]["customer_id"]


def test_concurrent_duplicates_wait_for_the_original(stack: Stack, tenant: Tenant) -> None:
    key = "idem-" + uuid.uuid4().hex
    body = customer_body()

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            return await asyncio.gather(
                *(
                    client.post(
                        stack.gateways[i % 2].url + "/v1/customers", json=body, headers=tenant.headers(key)
                    )
                    for i in range(8)
                )
            )

    rs = asyncio.run(burst())
    assert [r.status_code for r in rs] == [201] * 8
    assert len({r.json()["data"]["customer_id"] for r in rs}) == 1
    assert sum(1 for r in rs if r.headers.get("x-idempotent-replay") == "true") == 7
    assert customers_of(stack, tenant.tenant_id) == 1


def test_records_survive_a_gateway_restart(stack: Stack) -> None:
    t = make_tenant(stack)
    port = free_port()
    gw = stack.suite.start("gateway", port, instance="gateway-restart")
    stack.suite.wait_ready([gw], timeout=120)
    key = "idem-" + uuid.uuid4().hex
    body = customer_body()
    first = httpx.post(gw.url + "/v1/customers", json=body, headers=t.headers(key), timeout=30)
    assert first.status_code == 201, first.text
    stack.suite.stop_proc(gw)
    gw = stack.suite.start("gateway", port, instance="gateway-restart")
    try:
        stack.suite.wait_ready([gw], timeout=120)
        again = httpx.post(gw.url + "/v1/customers", json=body, headers=t.headers(key), timeout=30)
        assert again.status_code == 201
        assert again.headers["x-idempotent-replay"] == "true"
        assert again.content == first.content
    finally:
        stack.suite.stop_proc(gw)


def test_saved_outcomes_never_hold_secrets_in_clear(stack: Stack, tenant: Tenant) -> None:
    """A webhook's signing secret is shown once; its replay record in Redis is encrypted."""
    import redis

    key = "whsec-replay-" + uuid.uuid4().hex
    r = tenant.post("/v1/webhooks", {"endpoint_url": "http://127.0.0.1:9/hook"}, idem=key)
    assert r.status_code == 201, r.text
    secret = r.json()["data"]["signing_secret"]
    again = tenant.post("/v1/webhooks", {"endpoint_url": "http://127.0.0.1:9/hook"}, idem=key)
    assert again.headers.get("x-idempotent-replay") == "true"
    assert again.json()["data"]["signing_secret"] == secret
    client = redis.Redis.from_url(stack.stores.redis_url)
    names = list(client.scan_iter(f"sluice:idem:{tenant.tenant_id}:*"))
    assert names
    for name in names:
        raw = client.get(name) or b""
        assert secret.encode() not in raw
        assert b"whsec_" not in raw
