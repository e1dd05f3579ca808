"""An access token is accepted only if admin recorded its jti when it issued it (docs/security.md,
"Valkey is a cache, never a root of trust"), for that tenant and mode, and it lives at most
3600 s (``exp - iat``).

Before: a JWT signed with the suite's key whose jti admin never recorded was accepted for ten
years (GET and POST /v1/customers answered 200 and 201) and revoke_access_token answered 404.
"""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

from common.auth import ALL_SCOPES, new_jti
from tests.conftest import Stack, customer_body, make_tenant
from tests.support.admin import db
from tests.support.gateway import call, record_access_token, suite_settings

pytestmark = pytest.mark.inprocess

TEN_YEARS_S = 10 * 365 * 86400


def _mint(stack: Stack, sub: str, *, iat: int, exp: int, jti: str, mode: str = "sandbox") -> str:
    s = suite_settings(stack)
    claims: dict[str, Any] = {
        "iss": s.jwt_issuer,
        "sub": sub,
        "mode": mode,
        "scopes": list(ALL_SCOPES),
        "iat": iat,
        "exp": exp,
        "jti": jti,
    }
    return jwt.encode(claims, s.jwt_key, algorithm="HS256")


def _customers(stack: Stack, tenant_id: str) -> int:
    rows = db(stack, "SELECT count(*) AS n FROM ledger.customers WHERE tenant_id = $1", tenant_id)
    return int(rows[0]["n"])


def _refused(stack: Stack, token: str, tenant_id: str) -> None:
    before = _customers(stack, tenant_id)
    for gw in (0, 1):
        r = call(stack, "GET", "/v1/customers", key=token, gateway=gw)
        assert r.status_code == 401, r.text
        assert r.json()["error"]["code"] == "unauthorized"
        body = customer_body()
        r = call(stack, "POST", "/v1/customers", key=token, body=body, idem=new_jti(), gateway=gw)
        assert r.status_code == 401, r.text
    assert _customers(stack, tenant_id) == before


def test_a_token_admin_never_recorded_is_refused_and_the_ten_year_one_too(stack: Stack) -> None:
    t = make_tenant(stack)
    now = int(time.time())
    ten_years = _mint(stack, t.tenant_id, iat=now, exp=now + TEN_YEARS_S, jti=new_jti())
    _refused(stack, ten_years, t.tenant_id)
    short = _mint(stack, t.tenant_id, iat=now, exp=now + 600, jti=new_jti())  # well-formed, unrecorded
    _refused(stack, short, t.tenant_id)


def test_a_recorded_token_living_longer_than_an_hour_is_refused(stack: Stack) -> None:
    t = make_tenant(stack)
    now = int(time.time())
    for iat, exp in ((now, now + 3601), (now - 10, now + TEN_YEARS_S), (now + 3000, now + 6600)):
        jti = new_jti()
        record_access_token(stack, jti, t.tenant_id, "sandbox", exp)
        _refused(stack, _mint(stack, t.tenant_id, iat=iat, exp=exp, jti=jti), t.tenant_id)
    jti = new_jti()  # the same recorded shape within the hour is accepted (control)
    record_access_token(stack, jti, t.tenant_id, "sandbox", now + 3600)
    ok = _mint(stack, t.tenant_id, iat=now, exp=now + 3600, jti=jti)
    assert call(stack, "GET", "/v1/customers", key=ok).status_code == 200


def test_a_token_is_held_to_what_admin_recorded(stack: Stack) -> None:
    a, b = make_tenant(stack), make_tenant(stack)
    now = int(time.time())
    jti = new_jti()
    record_access_token(stack, jti, a.tenant_id, "sandbox", now + 600)
    _refused(stack, _mint(stack, b.tenant_id, iat=now, exp=now + 600, jti=jti), b.tenant_id)  # other tenant
    _refused(stack, _mint(stack, a.tenant_id, iat=now, exp=now + 900, jti=jti), a.tenant_id)  # later expiry


def test_an_admin_issued_token_works_until_revoked(stack: Stack) -> None:
    t = make_tenant(stack)
    r = stack.admin_call(
        "issue_access_token",
        tenant_id=t.tenant_id,
        mode="sandbox",
        scopes=["customers:write"],
        ttl_seconds=3600,
    )
    assert r.status_code == 200, r.text
    d = r.json()["data"]
    claims = jwt.decode(d["access_token"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] <= 3600
    for gw in (0, 1):
        assert call(stack, "GET", "/v1/customers", key=d["access_token"], gateway=gw).status_code == 200
    assert stack.admin_call("revoke_access_token", jti=d["jti"]).status_code == 200
    _refused(stack, d["access_token"], t.tenant_id)
