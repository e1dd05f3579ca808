"""Tenant actions: upsert_tenant, get_tenant, list_tenants, enable_live, disable_tenant, enable_tenant."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import msgspec

from admin import repository as repo
from admin import schemas
from admin.context import ActionContext
from common.auth import tenant_cache_name
from common.contracts.commands import GetPolicyStatus, GetWebhookStatus
from common.errors import forbidden, invalid, not_found
from common.ids import new_id
from common.paging import page
from common.validation import decode_body


def _metadata(meta: schemas.TenantMetadata) -> dict[str, Any]:
    for i, cidr in enumerate(meta.allowed_ips or []):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            raise invalid(f"metadata.allowed_ips.{i}", f"{cidr!r} is not an IP network (CIDR)") from None
    return msgspec.to_builtins(meta)


def _merged(p: schemas.UpsertTenant, row: Any, ctx: ActionContext) -> dict[str, Any]:
    """The tenant's fields after this upsert: given fields win, the rest keep their value."""
    base = (
        {
            "name": row.name,
            "default_mode": row.default_mode,
            "rate_limit_per_minute": row.rate_limit_per_minute,
            "metadata": row.metadata or {},
        }
        if row is not None
        else {
            "name": None,
            "default_mode": "sandbox",
            "rate_limit_per_minute": ctx.settings.default_rate_limit_per_minute,
            "metadata": {},
        }
    )
    if p.tenant_name is not msgspec.UNSET:
        base["name"] = p.tenant_name
    if p.default_mode is not msgspec.UNSET:
        base["default_mode"] = p.default_mode
    if p.rate_limit_per_minute is not msgspec.UNSET:
        base["rate_limit_per_minute"] = p.rate_limit_per_minute
    if p.metadata is not msgspec.UNSET:
        base["metadata"] = _metadata(p.metadata)
    return base


async def upsert_tenant(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.UpsertTenant)
    if p.tenant_id is not None:
        row = await repo.get_tenant(ctx.session, p.tenant_id, lock=True)
        if row is None:
            raise not_found("tenant")
    elif p.tenant_name is msgspec.UNSET:
        raise invalid("tenant_name", "tenant_name is required when tenant_id is not given")
    else:
        row = await repo.tenant_by_name(ctx.session, p.tenant_name, lock=True)
    fields = _merged(p, row, ctx)
    new_brand = fields["metadata"].get("white_label")
    old_brand = (row.metadata or {}).get("white_label") if row is not None else None
    changed = new_brand != old_brand
    approved_by = ctx.actor if new_brand else None
    if row is None:
        created = await repo.insert_tenant(ctx.session, fields, approved_by)
        if created is None:  # created concurrently under the same name: update that one
            row = await repo.tenant_by_name(ctx.session, fields["name"], lock=True)
            assert row is not None, "a name conflict means the row exists"
            row = await repo.update_tenant(ctx.session, row.id, fields, approved_by, changed)
        else:
            row = created
    else:
        other = await repo.tenant_by_name(ctx.session, fields["name"])
        if other is not None and other.id != row.id:
            raise invalid("tenant_name", "another tenant already uses this tenant_name")
        row = await repo.update_tenant(ctx.session, row.id, fields, approved_by, changed)
    assert row is not None, "the tenant is locked: it cannot have gone"
    tid = str(row.id)
    ctx.target = tid
    ctx.details = {
        "tenant_name": row.name,
        "default_mode": row.default_mode,
        "rate_limit_per_minute": row.rate_limit_per_minute,
        "branding_changed": changed,
        "metadata_keys": sorted(fields["metadata"]),
    }
    ctx.invalidate(tenant_cache_name(tid))
    ctx.control("tenant.updated", tenant_id=tid)
    if changed:
        ctx.control("branding.changed", tenant_id=tid)
    return repo.tenant_dict(row)


async def get_tenant(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.TenantRef)
    row = await ctx.target_tenant(p.tenant_id)
    keys = await repo.keys_of(ctx.session, row.id)
    return {**repo.tenant_dict(row), "api_keys": [repo.key_dict(k) for k in keys]}


async def list_tenants(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.ListTenants)
    after = None
    if p.after is not None:
        after = repo.as_uuid(p.after)
        if after is None:
            raise invalid("cursor", "not a cursor returned by list_tenants")
    rows = await repo.list_tenants(ctx.session, p.limit, after)
    return page(rows, p.limit, repo.tenant_dict)


async def enable_live(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    p = decode_body(raw, schemas.TenantRef)
    row = await ctx.target_tenant(p.tenant_id)
    tid = str(row.id)
    if not row.live_enabled:
        cctx = ctx.command_ctx(tid, "production")
        policy, hooks = await asyncio.gather(
            ctx.call(ctx.topics.compliance_commands, GetPolicyStatus(command_id=new_id("cmd"), ctx=cctx)),
            ctx.call(ctx.topics.webhooks_commands, GetWebhookStatus(command_id=new_id("cmd"), ctx=cctx)),
        )
        policy, hooks = policy or {}, hooks or {}
        missing = [
            name
            for name, ok in (
                ("approved_production_route", policy.get("production_route_approved")),
                ("production_transfer_cap", policy.get("production_cap_set")),
                ("verified_webhook_endpoint", hooks.get("verified_endpoint")),
            )
            if ok is not True
        ]
        if missing:
            raise forbidden(
                "live_requirements_missing",
                "the tenant cannot go live yet: " + ", ".join(missing),
                missing=missing,
            )
        updated = await repo.set_live_enabled(ctx.session, row.id)
        if updated is None:  # gone since it was read
            raise not_found("tenant")
        row = updated
        ctx.invalidate(tenant_cache_name(tid))
        ctx.control("tenant.updated", tenant_id=tid)
    return repo.tenant_dict(row)


async def _set_disabled(ctx: ActionContext, raw: bytes, disable: bool) -> dict[str, Any]:
    """The tenant kill switch (docs/security.md, "Round 4"): the gateways refuse every API key
    and access token of a disabled tenant (403 ``tenant_disabled``), and its onboarding links,
    from the next request on, by the path a tenant change already takes (the cache entry evicted
    after commit, a ``tenant.updated`` control event for a gateway whose eviction Redis missed).
    Keys and tokens are left as they are: enable_tenant restores every one of them."""
    p = decode_body(raw, schemas.TenantRef)
    row = await ctx.target_tenant(p.tenant_id, lock=True)
    tid = str(row.id)
    updated = await repo.set_disabled(ctx.session, row.id, ctx.actor if disable else None)
    assert updated is not None, "the tenant is locked: it cannot have gone"
    ctx.details = {"was_disabled": row.disabled_at is not None}
    ctx.invalidate(tenant_cache_name(tid))
    ctx.control("tenant.updated", tenant_id=tid)
    return repo.tenant_dict(updated)


async def disable_tenant(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    return await _set_disabled(ctx, raw, disable=True)


async def enable_tenant(ctx: ActionContext, raw: bytes) -> dict[str, Any]:
    return await _set_disabled(ctx, raw, disable=False)
