"""Credential actions: create_api_key, revoke_api_key, issue_access_token, revoke_access_token.

A key or token is returned once and never stored or logged in clear: the database holds the
SHA-256 of a key, the audit log holds its id and prefix only.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from admin import repository as repo
from admin import schemas
from admin.context import ActionContext
from common.auth import (
    generate_api_key,
    hash_api_key,
    key_cache_name,
    new_jti,
    token_cache_name,
)
from common.auth import (
    issue_access_token as sign_access_token,
)
from common.errors import Reason, forbidden, not_found
from common.ids import new_id
from common.times import iso, iso_from_epoch
from common.validation import decode_body


def _not_live() -> Exception:
    return forbidden(
        Reason.TENANT_NOT_LIVE, "production credentials need a live-enabled tenant (see enable_live)"
    )


async def create_api_key(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.CreateApiKey)
    tenant = await ctx.target_tenant(p.tenant_id)
    mode = p.mode or tenant.default_mode
    scopes: list[str] = list(dict.fromkeys(p.scopes))
    ctx.details = {"mode": mode, "key_label": p.key_label, "scopes": scopes}
    if mode == "production" and not tenant.live_enabled:
        raise _not_live()
    key = generate_api_key(mode)
    key_id = new_id("key")
    await repo.insert_api_key(
        ctx.session, key_id, str(tenant.id), hash_api_key(key), key[:12], p.key_label, scopes, mode
    )
    ctx.details.update(key_id=key_id, key_prefix=key[:12])
    return {
        "key_id": key_id,
        "api_key": key,
        "tenant_id": str(tenant.id),
        "key_label": p.key_label,
        "scopes": scopes,
        "mode": mode,
    }


async def revoke_api_key(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.RevokeApiKey)
    row = await repo.revoke_api_key(ctx.session, p.key_id)
    if row is None:
        raise not_found("api key")
    ctx.target = p.key_id
    ctx.details = {"tenant_id": str(row.tenant_id)}
    # Takes effect on the next request: the gateway's cache entry goes right after commit.
    ctx.invalidate(key_cache_name(row.key_hash))
    ctx.control("api_key.revoked", tenant_id=str(row.tenant_id), key_hash=row.key_hash)
    return {
        "key_id": row.id,
        "tenant_id": str(row.tenant_id),
        "revoked_at": iso(row.revoked_at),
    }


async def issue_access_token(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.IssueAccessToken)
    tenant = await ctx.target_tenant(p.tenant_id)
    tid = str(tenant.id)
    scopes: list[str] = list(dict.fromkeys(p.scopes))
    ctx.details = {"mode": p.mode, "scopes": scopes, "ttl_seconds": p.ttl_seconds}
    if p.mode == "production" and not tenant.live_enabled:
        raise _not_live()
    jti = new_jti()
    token, exp = sign_access_token(
        ctx.settings.jwt_key, ctx.settings.jwt_issuer, tid, p.mode, scopes, p.ttl_seconds, jti=jti
    )
    # Recorded by jti (never the token), so revoke_access_token can name it.
    await repo.insert_access_token(ctx.session, jti, tid, p.mode, datetime.fromtimestamp(exp, UTC))
    expires_at = iso_from_epoch(exp)
    ctx.details.update(expires_at=expires_at, jti=jti)
    return {
        "access_token": token,
        "jti": jti,
        "token_type": "Bearer",  # the token type  # nosec B105
        "expires_at": expires_at,
        "tenant_id": tid,
        "mode": p.mode,
        "scopes": scopes,
    }


async def revoke_access_token(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    """Refuse the access token ``jti`` from the next request on (docs/security.md, "Round 4"):
    the same path as a revoked API key (the gateways' cache entry evicted after commit, and a
    control event every gateway reads, so the revocation holds even if Redis missed the
    eviction)."""
    p = decode_body(raw, schemas.RevokeAccessToken)
    ctx.target = p.jti
    row = await repo.revoke_access_token(ctx.session, p.jti, ctx.actor)
    if row is None:
        raise not_found("access token")
    tid = str(row.tenant_id)
    ctx.details = {"tenant_id": tid, "mode": row.mode}
    ctx.invalidate(token_cache_name(p.jti))
    ctx.control("access_token.revoked", tenant_id=tid, jti=p.jti)
    return {"jti": row.jti, "tenant_id": tid, "mode": row.mode, "revoked_at": iso(row.revoked_at)}
