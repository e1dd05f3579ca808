"""The operator console: authentication, tenants, keys, tokens and the audit trail."""

from __future__ import annotations

import hashlib
import uuid

import httpx
import jwt
import pytest

from common.auth import verify_access_token
from tests.conftest import ADMIN_TOKEN, SECOND_ADMIN_TOKEN, Stack, make_tenant
from tests.support.admin import admin_error, admin_ok, control_events, db

pytestmark = pytest.mark.inprocess

BRAND = {
    "enabled": True,
    "app_name": "Acme Pay",
    "logo_url": "https://cdn.example.com/logo.png",
    "primary_color": "#1A2B3C",
    "accent_color": "#FFAA00",
    "support_email": "help@acme.example",
    "background_image_url": "https://cdn.example.com/bg.jpg",
    "custom_domain": "pay.acme.example",
}


def _name() -> str:
    return f"adm-{uuid.uuid4().hex[:12]}"


def _audit(stack: Stack, request_id: str) -> dict:
    rows = db(stack, "SELECT * FROM identity.audit_log WHERE request_id = $1", request_id)
    assert len(rows) == 1, rows
    return rows[0]


# ---- authentication ----


@pytest.mark.parametrize(
    "auth",
    [None, "Bearer", "Bearer wrong-token", f"Basic {ADMIN_TOKEN}", f"Bearer {ADMIN_TOKEN}x"],
    ids=["none", "bearer-empty", "bearer-wrong", "basic-right-token", "bearer-token-plus-x"],
)
def test_missing_or_wrong_operator_token_is_401_and_audited(stack: Stack, auth: str | None) -> None:
    headers = {"Authorization": auth} if auth else {}
    r = httpx.post(stack.admin + "/", json={"action": "list_tenants"}, headers=headers)
    assert r.status_code == 401, r.text
    assert r.json()["error"]["code"] == "unauthorized"
    assert r.headers["www-authenticate"] == "Bearer"
    row = _audit(stack, r.headers["x-request-id"])
    assert row["actor"] == "unauthenticated"
    assert row["action"] == "unknown"  # no body is read before authentication (docs/security.md)
    assert row["outcome"] == "refused:unauthorized"
    assert ADMIN_TOKEN not in str(row)


def test_partner_api_key_is_never_accepted(stack: Stack) -> None:
    t = make_tenant(stack)
    assert t.get("/v1/health").status_code == 200  # the key works on the gateway...
    r = httpx.post(
        stack.admin + "/",
        json={"action": "get_tenant", "tenant_id": t.tenant_id},
        headers={"Authorization": f"Bearer {t.key}"},
    )
    assert r.status_code == 401  # ...and never on the admin endpoint
    assert r.json()["error"]["code"] == "unauthorized"
    assert t.key not in str(_audit(stack, r.headers["x-request-id"]))


def test_audit_names_the_operator_who_acted(stack: Stack) -> None:
    first = stack.admin_call("upsert_tenant", tenant_name=_name())
    second = stack.admin_call("list_tenants", token=SECOND_ADMIN_TOKEN, limit=1)
    assert first.status_code == 200 and second.status_code == 200
    a, b = _audit(stack, first.headers["x-request-id"]), _audit(stack, second.headers["x-request-id"])
    assert (a["actor"], a["action"], a["outcome"]) == ("ops", "upsert_tenant", "ok")
    assert a["target"] == first.json()["data"]["tenant_id"]
    assert (b["actor"], b["action"], b["outcome"]) == ("auditor", "list_tenants", "ok")
    assert a["at"] <= b["at"]


def test_audit_log_is_append_only(stack: Stack) -> None:
    r = stack.admin_call("list_tenants", limit=1)
    rid = r.headers["x-request-id"]
    with pytest.raises(Exception, match="append-only"):
        db(stack, "UPDATE identity.audit_log SET outcome = 'ok' WHERE request_id = $1", rid)
    with pytest.raises(Exception, match="append-only"):
        db(stack, "DELETE FROM identity.audit_log WHERE request_id = $1", rid)
    assert _audit(stack, rid)["outcome"] == "ok"


# ---- request shape ----


def test_unknown_action_and_bad_fields_are_400_with_the_field(stack: Stack) -> None:
    err = admin_error(stack, "launch_rockets", 400)
    assert err["code"] == "invalid_request"
    assert err["details"]["field"] == "action"
    assert "upsert_tenant" in err["details"]["allowed"]
    err = admin_error(stack, "create_api_key", 400, tenant_id="x", key_label="k", scopes=["root"])
    assert err["details"]["field"] == "scopes.0"
    err = admin_error(stack, "create_api_key", 400, key_label="k", scopes=[])
    assert err["details"]["field"] == "tenant_id"
    err = admin_error(stack, "revoke_api_key", 400, key_id="k", surprise=1)
    assert err["details"]["field"] == "surprise"
    r = httpx.post(
        stack.admin + "/",
        content=b"{not json",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"},
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
    row = _audit(stack, r.headers["x-request-id"])
    assert (row["actor"], row["action"], row["outcome"]) == ("ops", "unknown", "refused:invalid_request")


# ---- tenants ----


def test_upsert_tenant_creates_then_updates_only_given_fields(stack: Stack) -> None:
    name = _name()
    created = admin_ok(
        stack,
        "upsert_tenant",
        tenant_name=name,
        rate_limit_per_minute=120,
        metadata={"allowed_ips": ["10.0.0.0/8"]},
    )
    assert created["tenant_name"] == name and created["default_mode"] == "sandbox"
    assert created["live_enabled"] is False and created["rate_limit_per_minute"] == 120
    same = admin_ok(stack, "upsert_tenant", tenant_name=name, default_mode="production")
    assert same["tenant_id"] == created["tenant_id"]
    assert same["default_mode"] == "production" and same["rate_limit_per_minute"] == 120
    assert same["metadata"] == {"allowed_ips": ["10.0.0.0/8"]}
    renamed = admin_ok(stack, "upsert_tenant", tenant_id=created["tenant_id"], tenant_name=name + "-b")
    assert renamed["tenant_name"] == name + "-b" and renamed["default_mode"] == "production"
    other = admin_ok(stack, "upsert_tenant", tenant_name=_name())
    err = admin_error(stack, "upsert_tenant", 400, tenant_id=other["tenant_id"], tenant_name=name + "-b")
    assert err["details"]["field"] == "tenant_name"
    assert admin_error(stack, "upsert_tenant", 404, tenant_id=str(uuid.uuid4()))["code"] == "not_found"
    assert admin_error(stack, "upsert_tenant", 400)["details"]["field"] == "tenant_name"
    err = admin_error(
        stack,
        "upsert_tenant",
        400,
        tenant_name=_name(),
        metadata={"allowed_ips": ["10.0.0.0/8", "not-an-ip"]},
    )
    assert err["details"]["field"] == "metadata.allowed_ips.1"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"enabled": False}, "metadata.white_label.enabled"),
        ({"app_name": "x" * 81}, "metadata.white_label.app_name"),
        ({"logo_url": "http://cdn.example.com/logo.png"}, "metadata.white_label.logo_url"),
        ({"primary_color": "#1a2b3c"}, "metadata.white_label.primary_color"),
        ({"accent_color": "#FFF"}, "metadata.white_label.accent_color"),
        ({"support_email": "not-an-email"}, "metadata.white_label.support_email"),
        ({"background_image_url": "javascript:alert(1)"}, "metadata.white_label.background_image_url"),
        ({"custom_domain": "bad domain"}, "metadata.white_label.custom_domain"),
        ({"script": "<b>"}, "metadata.white_label.script"),
    ],
)
def test_white_label_is_validated_exactly(stack: Stack, change: dict, field: str) -> None:
    err = admin_error(
        stack, "upsert_tenant", 400, tenant_name=_name(), metadata={"white_label": {**BRAND, **change}}
    )
    assert err["code"] == "invalid_request"
    assert err["details"]["field"] == field


def test_branding_is_stored_as_operator_approved_and_reaches_the_gateway(stack: Stack) -> None:
    t = make_tenant(stack)
    assert t.get("/v1/health").json()["data"]["white_label"] is None  # cached by the gateway now
    r = stack.admin_call(
        "upsert_tenant", tenant_id=t.tenant_id, metadata={"white_label": {**BRAND, "app_name": "x" * 80}}
    )
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["branding_approved_by"] == "ops" and data["branding_approved_at"]
    assert t.get("/v1/health").json()["data"]["white_label"]["app_name"] == "x" * 80
    events = control_events(stack, t.tenant_id, {"tenant.updated", "branding.changed"})
    assert {"tenant.updated", "branding.changed"} <= {e["kind"] for e in events}
    assert all(e["type"] == "control.v1" for e in events)
    assert any(e["request_id"] == r.headers["x-request-id"] for e in events)
    cleared = admin_ok(stack, "upsert_tenant", tenant_id=t.tenant_id, token=SECOND_ADMIN_TOKEN, metadata={})
    assert cleared["branding_approved_by"] is None and cleared["metadata"] == {}
    assert t.get("/v1/health").json()["data"]["white_label"] is None
    assert db(stack, "SELECT count(*) AS n FROM identity.outbox")[0]["n"] == 0  # all published


def test_get_and_list_tenants_are_cursor_paged(stack: Stack) -> None:
    made = [admin_ok(stack, "upsert_tenant", tenant_name=_name())["tenant_id"] for _ in range(3)]
    page = admin_ok(stack, "list_tenants", limit=2)
    assert [i["tenant_id"] for i in page["items"]] == made[::-1][:2]
    nxt = admin_ok(stack, "list_tenants", limit=2, cursor=page["next_cursor"])
    assert nxt["items"][0]["tenant_id"] == made[0]
    seen, cursor = [], None
    while True:
        p = admin_ok(stack, "list_tenants", limit=100, **({"cursor": cursor} if cursor else {}))
        seen += [i["tenant_id"] for i in p["items"]]
        cursor = p["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) and set(made) <= set(seen)
    assert admin_error(stack, "list_tenants", 400, limit=101)["details"]["field"] == "limit"
    assert admin_error(stack, "list_tenants", 400, cursor="zzz")["details"]["field"] == "cursor"
    t = make_tenant(stack)
    got = admin_ok(stack, "get_tenant", tenant_id=t.tenant_id)
    assert got["tenant_name"] == t.name
    assert [k["key_id"] for k in got["api_keys"]] == [t.key_id]
    assert "api_key" not in got["api_keys"][0] and "key_hash" not in got["api_keys"][0]
    assert t.key not in str(got)
    assert admin_error(stack, "get_tenant", 404, tenant_id=str(uuid.uuid4()))["code"] == "not_found"


# ---- credentials ----


def test_create_api_key_is_shown_once_and_stored_as_hash(stack: Stack) -> None:
    tid = admin_ok(stack, "upsert_tenant", tenant_name=_name())["tenant_id"]
    r = stack.admin_call("create_api_key", tenant_id=tid, key_label="server", scopes=["customers:write"])
    d = r.json()["data"]
    assert d["api_key"].startswith("sk_test_") and d["mode"] == "sandbox"
    assert d["scopes"] == ["customers:write"] and d["key_label"] == "server"
    rows = db(stack, "SELECT * FROM identity.api_keys WHERE id = $1", d["key_id"])
    assert rows[0]["key_hash"] == hashlib.sha256(d["api_key"].encode()).hexdigest()
    assert d["api_key"] not in str(rows)
    audit = _audit(stack, r.headers["x-request-id"])
    assert audit["details"]["key_id"] == d["key_id"] and d["api_key"] not in str(audit)
    err = admin_error(
        stack,
        "create_api_key",
        403,
        tenant_id=tid,
        key_label="live",
        scopes=["customers:write"],
        mode="production",
    )
    assert err["code"] == "forbidden" and err["details"]["reason"] == "tenant_not_live"
    assert (
        admin_error(stack, "create_api_key", 404, tenant_id=str(uuid.uuid4()), key_label="x", scopes=[])[
            "code"
        ]
        == "not_found"
    )


def test_revoke_api_key_takes_effect_on_the_next_request(stack: Stack) -> None:
    t = make_tenant(stack)
    assert t.get("/v1/health").status_code == 200
    assert t.get("/v1/health", gateway=1).status_code == 200
    r = stack.admin_call("revoke_api_key", token=SECOND_ADMIN_TOKEN, key_id=t.key_id)
    assert r.status_code == 200 and r.json()["data"]["revoked_at"]
    assert t.get("/v1/health").status_code == 401
    assert t.get("/v1/health", gateway=1).status_code == 401
    events = control_events(stack, t.tenant_id, {"api_key.revoked"})
    revoked = next(e for e in events if e["kind"] == "api_key.revoked")
    assert revoked["key_hash"] == hashlib.sha256(t.key.encode()).hexdigest()
    audit = _audit(stack, r.headers["x-request-id"])
    assert (audit["actor"], audit["target"]) == ("auditor", t.key_id)
    assert admin_error(stack, "revoke_api_key", 404, key_id="key_nope")["code"] == "not_found"


def test_issue_access_token_signs_a_short_lived_jwt(stack: Stack) -> None:
    tid = admin_ok(stack, "upsert_tenant", tenant_name=_name())["tenant_id"]
    r = stack.admin_call(
        "issue_access_token", tenant_id=tid, mode="sandbox", scopes=["customers:write"], ttl_seconds=600
    )
    d = r.json()["data"]
    secret = stack.env["SLUICE_JWT_SECRET"].encode()
    claims = verify_access_token(secret, "sluice", d["access_token"])
    assert claims["sub"] == tid and claims["mode"] == "sandbox"
    assert claims["scopes"] == ["customers:write"]
    assert 590 <= claims["exp"] - claims["iat"] <= 600 and claims["jti"]
    with pytest.raises(jwt.InvalidTokenError):
        verify_access_token(b"another-secret-of-at-least-32-bytes", "sluice", d["access_token"])
    assert d["access_token"] not in str(_audit(stack, r.headers["x-request-id"]))
    err = admin_error(
        stack, "issue_access_token", 400, tenant_id=tid, mode="sandbox", scopes=[], ttl_seconds=7200
    )
    assert err["details"]["field"] == "ttl_seconds"
    err = admin_error(stack, "issue_access_token", 403, tenant_id=tid, mode="production", scopes=[])
    assert err["details"]["reason"] == "tenant_not_live"


# ---- the audit trail ----


def test_list_audit_log_pages_through_successes_and_refusals(stack: Stack) -> None:
    tid = admin_ok(stack, "upsert_tenant", tenant_name=_name())["tenant_id"]
    admin_ok(stack, "get_tenant", tenant_id=tid)
    admin_error(
        stack,
        "create_api_key",
        403,
        token=SECOND_ADMIN_TOKEN,
        tenant_id=tid,
        key_label="l",
        scopes=[],
        mode="production",
    )
    page = admin_ok(stack, "list_audit_log", target=tid, limit=2)
    assert [i["action"] for i in page["items"]] == ["create_api_key", "get_tenant"]
    refused = page["items"][0]
    assert refused["actor"] == "auditor" and refused["outcome"] == "refused:forbidden"
    assert refused["details"]["error"]["reason"] == "tenant_not_live"
    assert refused["request_id"].startswith("req_") and refused["at"]
    rest = admin_ok(stack, "list_audit_log", target=tid, limit=2, cursor=page["next_cursor"])
    assert [i["action"] for i in rest["items"]] == ["upsert_tenant"] and rest["next_cursor"] is None
    mine = admin_ok(stack, "list_audit_log", actor="auditor", limit=100)
    assert mine["items"] and all(i["actor"] == "auditor" for i in mine["items"])
    filtered = admin_ok(stack, "list_audit_log", audit_action="get_tenant", target=tid)
    assert len(filtered["items"]) == 1


def test_enable_webhook_relays_to_webhooks_and_is_scoped(stack: Stack) -> None:
    t = make_tenant(stack)
    other = make_tenant(stack)
    r = t.post("/v1/webhooks", {"endpoint_url": "http://127.0.0.1:9/hook"})
    assert r.status_code == 201, r.text
    webhook_id = r.json()["data"]["webhook_id"]
    data = admin_ok(stack, "enable_webhook", webhook_id=webhook_id, tenant_id=t.tenant_id)
    assert data["webhook_id"] == webhook_id
    assert data["status"] == "enabled"
    err = admin_error(stack, "enable_webhook", 404, webhook_id=webhook_id, tenant_id=other.tenant_id)
    assert err["code"] == "not_found"
    admin_error(stack, "enable_webhook", 404, webhook_id="wh_" + uuid.uuid4().hex)
    audit = admin_ok(stack, "list_audit_log", target=webhook_id, limit=10)["items"]
    assert any(e["action"] == "enable_webhook" and e["target"] == webhook_id for e in audit)
