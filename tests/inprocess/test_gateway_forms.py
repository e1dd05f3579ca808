"""The two access forms give byte-identical answers; X-Request-Id is echoed or generated on
every response and travels in the Kafka command; the OpenAPI document lists every endpoint."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.conftest import Stack, Tenant, customer_body
from tests.support.gateway import TOPICS, Tap, call, fetchval, routed

pytestmark = pytest.mark.inprocess


def both(
    stack: Stack, method: str, path: str, t: Tenant, body: object = None, idem: str | None = None
) -> tuple[httpx.Response, httpx.Response]:
    rid = "req-" + uuid.uuid4().hex
    h = {"X-Request-Id": rid}
    a = call(stack, method, path, key=t.key, body=body, idem=idem, headers=h)
    b = routed(stack, method, path, key=t.key, body=body, idem=idem, headers=h, gateway=1)
    assert a.headers["x-request-id"] == b.headers["x-request-id"] == rid
    return a, b


CASES = [
    ("POST", "/v1/customers", customer_body(email="bad")),
    ("POST", "/v1/customers", customer_body(account_type="business")),
    ("POST", "/v1/wallets", {"customer_id": "cus_1", "symbol": "USDC", "chain": "TRON"}),
    ("POST", "/v1/transfers", {"source": {}, "destination": {}, "idempotency_key": "k" * 10}),
    ("POST", "/v1/nowhere", {}),
    ("GET", "/v1/customers?limit=1000", None),
    ("GET", "/v1/customers/cus_" + "0" * 32, None),
    ("GET", "/v1/webhooks/wh_" + "0" * 32, None),
]


@pytest.mark.parametrize(("method", "path", "body"), CASES, ids=[f"{m} {p}" for m, p, _ in CASES])
def test_forms_answer_byte_identical_bodies(
    stack: Stack, tenant: Tenant, method: str, path: str, body: object
) -> None:
    idem = uuid.uuid4().hex if method == "POST" else None
    a, b = both(stack, method, path, tenant, body, idem)
    assert a.status_code == b.status_code
    assert a.content == b.content
    assert a.headers["content-type"] == b.headers["content-type"] == "application/json"


def test_success_and_replay_across_forms(stack: Stack, tenant: Tenant) -> None:
    idem = uuid.uuid4().hex
    a, b = both(stack, "POST", "/v1/customers", tenant, customer_body(), idem)
    assert a.status_code == b.status_code == 201
    assert a.content == b.content and b.headers["x-idempotent-replay"] == "true"
    ha, hb = both(stack, "GET", "/v1/health", tenant)
    da, db = ha.json()["data"], hb.json()["data"]
    assert db["remaining"] == da["remaining"] - 1
    da.pop("remaining"), db.pop("remaining")
    assert da == db
    for r in (ha, hb):
        assert int(r.headers["x-ratelimit-limit"]) == 600
        assert r.headers["x-ratelimit-reset"].isdigit()


def test_request_id_generated_echoed_and_propagated(stack: Stack, tenant: Tenant) -> None:
    r = call(stack, "GET", "/v1/health", key=tenant.key)
    assert r.headers["x-request-id"].startswith("req_")
    assert r.json()["data"]["request_id"] == r.headers["x-request-id"]
    for bad in ("has space", "x" * 200, "<script>"):
        r = call(stack, "GET", "/v1/health", key=tenant.key, headers={"X-Request-Id": bad})
        assert r.headers["x-request-id"] != bad and r.headers["x-request-id"].startswith("req_")
    for path in ("/v1/nowhere", "/nowhere"):
        r = httpx.get(stack.gateway + path, headers={"X-Request-Id": "rid-404"})
        assert r.status_code == 404 and r.headers["x-request-id"] == "rid-404"
        assert r.json()["error"]["details"]["request_id"] == "rid-404"
    r = httpx.delete(stack.gateway + "/v1/customers", headers={"X-Request-Id": "rid-405"})
    assert r.status_code == 405 and r.headers["x-request-id"] == "rid-405"
    assert r.json()["error"]["code"] == "invalid_request"

    tap = Tap(stack, TOPICS.compliance_commands)
    try:
        rid = "rid-kafka-" + uuid.uuid4().hex
        r = tenant.post("/v1/customers", customer_body(), **{"X-Request-Id": rid})
        assert r.status_code == 201
        (cmd,) = tap.find(rid)
        assert cmd.ctx.request_id == rid and cmd.ctx.tenant_id == tenant.tenant_id
    finally:
        tap.close()
    n = fetchval(stack, "SELECT count(*) FROM compliance.decisions WHERE request_id = $1", rid)
    assert n == 1


def test_openapi_document_lists_every_endpoint(stack: Stack) -> None:
    doc = httpx.get(stack.gateway + "/schema/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    want = {
        ("get", "/v1/health"),
        ("post", "/v1/customers"),
        ("post", "/v1/wallets"),
        ("post", "/v1/virtual-accounts"),
        ("post", "/v1/transfers"),
        ("post", "/v1/payouts"),
        ("post", "/v1/webhooks"),
        ("post", "/v1/sandbox/deposits"),
        ("get", "/v1/webhooks"),
        ("get", "/v1/webhooks/{webhook_id}"),
        ("post", "/v1/webhooks/{webhook_id}/rotate-secret"),
        ("post", "/"),
    }
    for res, param in (
        ("customers", "customer_id"),
        ("wallets", "wallet_id"),
        ("virtual-accounts", "virtual_account_id"),
        ("transfers", "transfer_id"),
        ("payouts", "transfer_id"),
    ):
        want |= {("get", f"/v1/{res}"), ("get", f"/v1/{res}/{{{param}}}")}
    have = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    assert want <= have, want - have
    post = doc["paths"]["/v1/customers"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/CustomerCreate")
    assert {"201", "400", "401", "403", "409", "429", "503"} <= set(post["responses"])
    cases = doc["components"]["schemas"]["CustomerCreate"]["discriminator"]["mapping"]
    schema = doc["components"]["schemas"][cases["individual"].rsplit("/", 1)[-1]]
    required = {"account_type", "email", "country_code", "service_user_id", "full_name"}
    assert set(schema["required"]) == required
    assert schema["properties"]["country_code"]["pattern"] == r"^[A-Z]{2}$(?!\n)"
    assert any(p["name"] == "Idempotency-Key" and p["required"] for p in post["parameters"])
