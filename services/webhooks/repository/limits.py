"""Endpoint counts and owners read before a batch's transaction (the pre-vetting of
``webhooks.vetting``)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from webhooks.models import endpoints

__all__ = ["endpoint_counts", "owned_endpoints"]


async def endpoint_counts(
    session: AsyncSession, owners: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    """How many endpoints (deleted ones left out) each (tenant, mode) has now, one query (a
    hint: the transaction counts again under its lock before it creates anything)."""
    wanted = sorted(set(owners))
    if not wanted:
        return {}
    e = endpoints.c
    stmt = (
        select(e.tenant_id, e.mode, func.count())
        .where(tuple_(e.tenant_id, e.mode).in_(wanted), e.deleted_at.is_(None))
        .group_by(e.tenant_id, e.mode)
    )
    found = {(str(t), str(m)): int(n) for t, m, n in (await session.execute(stmt)).all()}
    return {owner: found.get(owner, 0) for owner in wanted}


async def owned_endpoints(session: AsyncSession, wanted: Iterable[tuple[str, str, str]]) -> set[str]:
    """Which of the (tenant, mode, webhook id) exist and are not deleted, one query: a URL
    change for an endpoint the tenant does not have is refused (404) without a lookup."""
    keys = sorted(set(wanted))
    if not keys:
        return set()
    e = endpoints.c
    stmt = select(e.id).where(tuple_(e.tenant_id, e.mode, e.id).in_(keys), e.deleted_at.is_(None))
    return {str(i) for i in (await session.scalars(stmt)).all()}
