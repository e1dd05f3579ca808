"""All SQL of onboarding: authorizations (schema ``gateway``) and the approved branding.

Branding is read from ``identity.tenants`` (owned by admin; read-only here, like the rest of
the gateway's identity lookups, :func:`gateway.repository.tenant_by_id`). Statements are
built from ``gateway.models``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from common.tables import AnyRow
from gateway.models import onboarding_authorizations as auths

_a = auths.c


async def insert_authorization(session: AsyncSession, row: dict[str, Any]) -> AnyRow | None:
    """Insert; with an Idempotency-Key already used by this tenant and mode, the earlier row."""
    stmt = (
        pg_insert(auths)
        .values(**row)
        .on_conflict_do_nothing(index_elements=[_a.tenant_id, _a.mode, _a.idempotency_key])
        .returning(*auths.c)
    )
    created = (await session.execute(stmt)).first()
    if created is not None:
        return created
    earlier = select(auths).where(
        _a.tenant_id == row["tenant_id"], _a.mode == row["mode"], _a.idempotency_key == row["idempotency_key"]
    )
    return (await session.execute(earlier)).first()


async def get_authorization(session: AsyncSession, authorization_id: str) -> AnyRow | None:
    return (await session.execute(select(auths).where(_a.id == authorization_id))).first()


async def mark_pending(session: AsyncSession, authorization_id: str, command: bytes) -> bool:
    """Claim the link for one signup attempt (fails if used or another attempt is in flight)."""
    stmt = (
        update(auths)
        .where(
            _a.id == authorization_id,
            _a.used_at.is_(None),
            _a.pending_command.is_(None),
            _a.expires_at > func.now(),
        )
        .values(pending_command=command, pending_at=func.now())
        .returning(_a.id)
    )
    return (await session.execute(stmt)).first() is not None


async def retake_pending(
    session: AsyncSession, authorization_id: str, command: bytes, stale_s: float
) -> bool:
    """Take over an attempt whose answer never came (older than ``stale_s``); one taker wins."""
    stmt = (
        update(auths)
        .where(
            _a.id == authorization_id,
            _a.pending_command == command,
            _a.used_at.is_(None),
            _a.pending_at < func.now() - timedelta(seconds=stale_s),
        )
        .values(pending_at=func.now())
        .returning(_a.id)
    )
    return (await session.execute(stmt)).first() is not None


async def clear_pending(session: AsyncSession, authorization_id: str, command: bytes) -> None:
    """Release the claim of a refused attempt (the link stays usable)."""
    await session.execute(
        update(auths)
        .where(_a.id == authorization_id, _a.pending_command == command)
        .values(pending_command=None, pending_at=None)
    )


async def consume(session: AsyncSession, authorization_id: str, customer_id: str) -> bool:
    """The first completed signup uses the link up; True only for that one."""
    stmt = (
        update(auths)
        .where(_a.id == authorization_id, _a.used_at.is_(None))
        .values(used_at=func.now(), customer_id=customer_id, pending_command=None)
        .returning(_a.id)
    )
    return (await session.execute(stmt)).first() is not None
