"""Gateway SQL: read-only lookups of the identity schema (owned by admin)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


async def key_by_hash(session: AsyncSession, key_hash: str) -> Any:
    return (
        await session.execute(
            text("SELECT id, tenant_id, mode, scopes, revoked_at FROM identity.api_keys WHERE key_hash = :h"),
            {"h": key_hash},
        )
    ).first()


async def tenant_by_id(session: AsyncSession, tenant_id: str) -> Any:
    try:
        tid = uuid.UUID(tenant_id)
    except ValueError:
        return None
    return (
        await session.execute(
            text(
                "SELECT id, name, default_mode, rate_limit_per_minute, live_enabled, metadata"
                " FROM identity.tenants WHERE id = :id"
            ),
            {"id": tid},
        )
    ).first()
