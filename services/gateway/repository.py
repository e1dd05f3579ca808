"""Gateway SQL: read-only lookups of the identity schema (owned by admin)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from common.tables import AnyRow
from gateway.models import access_tokens, api_keys, tenants


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


async def token_revoked(session: AsyncSession, jti: str) -> bool:
    """Whether admin revoked the access token ``jti`` (a jti it never recorded is not revoked:
    the signature is what makes a token valid, the row only what can take it back)."""
    a = access_tokens.c
    q = select(a.revoked_at).where(a.jti == jti)
    return (await session.execute(q)).scalar_one_or_none() is not None
