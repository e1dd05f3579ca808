"""Authentication and authorisation: API keys, JWTs, mode, scopes and the IP allowlist, each
failure in the envelope with its status, in both access forms."""

from __future__ import annotations

import time
import uuid

import jwt
import pytest

from tests.conftest import ALL_SCOPES, Stack, Tenant, customer_body, make_tenant
from tests.support.gateway import assert_error, call, jwt_for, routed, suite_settings

pytestmark = pytest.mark.inprocess

# endpoint -> scope it needs (reads need the resource's write scope too)
SCOPED = [
    ("POST", "/v1/customers", "customers:write"),
    ("GET", "/v1/customers", "customers:write"),
    ("GET", "/v1/customers/cus_1", "customers:write"),
    ("POST", "/v1/wallets", "wallets:write"),
    ("GET", "/v1/wallets/wal_1", "wallets:write"),
    ("POST", "/v1/virtual-accounts", "virtual_accounts:write"),
    ("GET", "/v1/virtual-accounts", "virtual_accounts:write"),
    ("POST", "/v1/sandbox/deposits", "virtual_accounts:write"),
    ("POST", "/v1/transfers", "transfers:write"),
    ("GET", "/v1/transfers/tr_1", "transfers:write"),
    ("POST", "/v1/payouts", "payouts:write"),
    ("GET", "/v1/payouts", "payouts:write"),
    ("POST", "/v1/webhooks", "webhooks:write"),
    ("GET", "/v1/webhooks", "webhooks:write"),
    ("GET", "/v1/webhooks/wh_1", "webhooks:write"),
    ("POST", "/v1/webhooks/wh_1/rotate-secret", "webhooks:write"),
]


@pytest.mark.parametrize("form", ["direct", "routed"])
def test_missing_and_invalid_credentials_are_401(stack: Stack, form: str) -> None:
    fn = routed if form == "routed" else call
    for key in (None, "sk_test_" + "x" * 43, "sk_live_nope", "garbage", "a.b.c"):
        r = fn(stack, "GET", "/v1/health", key=key)
        assert_error(r, 401, "unauthorized")
        assert r.headers["www-authenticate"] == "Bearer"
    r = fn(stack, "GET", "/v1/health", key=None, headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert_error(r, 401, "unauthorized")


def test_revoked_key_is_401_on_next_request_on_both_gateways(stack: Stack) -> None:
    t = make_tenant(stack)
    assert t.get("/v1/health", gateway=0).status_code == 200
    assert t.get("/v1/health", gateway=1).status_code == 200
    assert stack.admin_call("revoke_api_key", key_id=t.key_id).status_code == 200
    for gw in (0, 1):
        assert_error(t.get("/v1/health", gateway=gw), 401, "unauthorized")
        assert_error(routed(stack, "GET", "/v1/health", key=t.key, gateway=gw), 401, "unauthorized")


def test_jwt_bearer_is_a_principal(stack: Stack, tenant: Tenant) -> None:
    token = jwt_for(stack, tenant.tenant_id, scopes=["customers:write"])
    for fn in (call, routed):
        r = fn(stack, "GET", "/v1/health", key=token)
        assert r.status_code == 200, r.text
        assert r.json()["data"]["tenant_id"] == tenant.tenant_id
        assert r.json()["data"]["mode"] == "sandbox"
    bearer = tenant.with_key(token)
    r = bearer.post("/v1/customers", customer_body())
    assert r.status_code == 201, r.text
    r = bearer.post("/v1/wallets", {"customer_id": "cus_1", "symbol": "USDC", "chain": "ETH"})
    assert_error(r, 403, "forbidden")
    assert r.json()["error"]["details"]["scope"] == "wallets:write"


def test_bad_jwts_are_401(stack: Stack, tenant: Tenant) -> None:
    s = suite_settings(stack)
    expired = jwt.encode(
        {
            "iss": s.jwt_issuer,
            "sub": tenant.tenant_id,
            "mode": "sandbox",
            "scopes": [],
            "iat": int(time.time()) - 120,
            "exp": int(time.time()) - 60,
            "jti": "x",
        },
        s.jwt_key,
        algorithm="HS256",
    )
    none_alg = jwt.encode(
        {
            "iss": s.jwt_issuer,
            "sub": tenant.tenant_id,
            "mode": "sandbox",
            "scopes": ALL_SCOPES,
            "exp": int(time.time()) + 60,
            "jti": "x",
        },
        None,
        algorithm="none",
    )
    no_jti = jwt.encode(
        {
            "iss": s.jwt_issuer,
            "sub": tenant.tenant_id,
            "mode": "sandbox",
            "scopes": [],
            "exp": int(time.time()) + 60,
        },
        s.jwt_key,
        algorithm="HS256",
    )
    bad = [
        jwt_for(stack, tenant.tenant_id, secret=b"forged-secret-forged-secret-0123"),
        jwt_for(stack, tenant.tenant_id, issuer="someone-else"),
        jwt_for(stack, str(uuid.uuid4()), record=False),  # no such tenant
        jwt_for(stack, "not-a-uuid", record=False),
        jwt_for(stack, tenant.tenant_id, mode="staging"),
        expired,
        none_alg,
        no_jti,
        jwt_for(stack, tenant.tenant_id)[:-4] + "AAAA",  # tampered signature
    ]
    for token in bad:
        r = call(stack, "GET", "/v1/health", key=token)
        assert_error(r, 401, "unauthorized")
    r = call(stack, "GET", "/v1/health", key=expired)
    assert "expired" in r.json()["error"]["message"]


def test_mode_header_mismatch_is_403(stack: Stack, tenant: Tenant) -> None:
    assert (
        call(stack, "GET", "/v1/health", key=tenant.key, headers={"x-service-mode": "sandbox"}).status_code
        == 200
    )
    for fn in (call, routed):
        for mode in ("production", "live", ""):
            r = fn(stack, "GET", "/v1/health", key=tenant.key, headers={"x-service-mode": mode})
            err = assert_error(r, 403, "forbidden")
            assert err["details"]["reason"] == "mode_mismatch"
    token = jwt_for(stack, tenant.tenant_id, mode="production", scopes=ALL_SCOPES)
    r = call(stack, "GET", "/v1/health", key=token, headers={"x-service-mode": "sandbox"})
    assert_error(r, 403, "forbidden")
    r = call(stack, "GET", "/v1/health", key=token)
    assert r.status_code == 200 and r.json()["data"]["mode"] == "production"


def test_every_endpoint_needs_its_scope(stack: Stack) -> None:
    t = make_tenant(stack, scopes=["onboarding:write"])
    assert t.get("/v1/health").status_code == 200  # health: any valid credential
    for method, path, scope in SCOPED:
        for fn in (call, routed):
            r = fn(stack, method, path, key=t.key, body={}, idem=uuid.uuid4().hex)
            err = assert_error(r, 403, "forbidden")
            assert err["details"] == {
                "reason": "scope_missing",
                "scope": scope,
                "request_id": r.headers["x-request-id"],
            }, (method, path)


def test_ip_allowlist(stack: Stack) -> None:
    t = make_tenant(stack, metadata={"allowed_ips": ["10.0.0.0/8", "192.168.1.7"]})
    for fn in (call, routed):
        r = fn(stack, "GET", "/v1/health", key=t.key)
        err = assert_error(r, 403, "forbidden")
        assert err["details"]["reason"] == "ip_not_allowed"
    ok = make_tenant(stack, metadata={"allowed_ips": ["127.0.0.0/8", "::1/128"]})
    assert ok.get("/v1/health").status_code == 200
    assert ok.post("/v1/customers", customer_body()).status_code == 201
    # X-Forwarded-For counts only from a trusted proxy (SLUICE_TRUSTED_PROXIES, empty here):
    # the TCP peer decides, whatever the header claims (test_security_proxies has the proxy).
    r = t.post("/v1/customers", customer_body(), **{"X-Forwarded-For": "10.1.2.3"})
    assert assert_error(r, 403, "forbidden")["details"]["reason"] == "ip_not_allowed"
    r = call(stack, "GET", "/v1/health", key=ok.key, headers={"X-Forwarded-For": "203.0.113.9"})
    assert r.status_code == 200, r.text


def test_admin_issued_access_token_works_at_the_gateway(stack: Stack, tenant: Tenant) -> None:
    r = stack.admin_call(
        "issue_access_token",
        tenant_id=tenant.tenant_id,
        mode="sandbox",
        scopes=["customers:write"],
        ttl_seconds=300,
    )
    assert r.status_code == 200, r.text
    token = r.json()["data"]["access_token"]
    for gw in (0, 1):
        r = tenant.with_key(token).post("/v1/customers", customer_body(), gateway=gw)
        assert r.status_code == 201, r.text
    r = routed(stack, "GET", "/v1/wallets", key=token)
    assert_error(r, 403, "forbidden")
