"""Gateway SQL: read-only lookups of the identity schema (owned by admin)."""

from __future__ import annotations

import uuid

from sqlalchemy import Text, cast, func, literal, select, union_all
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


async def access_token(session: AsyncSession, jti: str) -> AnyRow | None:
    """The row admin recorded when it issued the access token ``jti`` (tenant, mode, expiry,
    revocation), None if it never issued one: such a token is refused."""
    a = access_tokens.c
    q = select(a.tenant_id, a.mode, a.expires_at, a.revoked_at).where(a.jti == jti)
    return (await session.execute(q)).first()


async def recent_revocations(session: AsyncSession, window_s: int) -> tuple[list[str], list[str], list[str]]:
    """Key hashes and jtis revoked, and tenants disabled, within the last ``window_s`` by the
    database's clock (one round trip; each arm uses its partial index)."""
    k, a, t = api_keys.c, access_tokens.c, tenants.c
    since = func.now() - func.make_interval(0, 0, 0, 0, 0, 0, window_s)
    q = union_all(
        select(literal("k").label("kind"), k.key_hash.label("name")).where(k.revoked_at > since),
        select(literal("j"), a.jti).where(a.revoked_at > since),
        select(literal("t"), cast(t.id, Text)).where(t.disabled_at > since),
    )
    rows = (await session.execute(q)).all()
    by_kind: dict[str, list[str]] = {"k": [], "j": [], "t": []}
    for kind, name in rows:
        by_kind[kind].append(name)
    return by_kind["k"], by_kind["j"], by_kind["t"]
