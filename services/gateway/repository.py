"""Gateway SQL: read-only lookups of the identity schema (owned by admin)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from common.tables import AnyRow
from gateway.models import api_keys, tenants


async def key_by_hash(session: AsyncSession, key_hash: str) -> AnyRow | None:
    k = api_keys.c
    q = select(k.id, k.tenant_id, k.mode, k.scopes, k.revoked_at).where(k.key_hash == key_hash)
    return (await session.execute(q)).first()


async def tenant_by_id(session: AsyncSession, tenant_id: str) -> AnyRow | None:
    """The tenant's row as the gateway sees it (its read-only view), None for a malformed id."""
    try:
        tid = uuid.UUID(tenant_id)
    except ValueError:
        return None
    return (await session.execute(select(tenants).where(tenants.c.id == tid))).first()
