"""Endpoint counts read before a batch's transaction (the pre-vetting of ``webhooks.vetting``)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from webhooks.models import endpoints

__all__ = ["endpoint_counts"]


async def endpoint_counts(
    session: AsyncSession, owners: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    """How many endpoints each (tenant, mode) has now, one query (a hint: the transaction
    counts again under its lock before it creates anything)."""
    wanted = sorted(set(owners))
    if not wanted:
        return {}
    e = endpoints.c
    stmt = (
        select(e.tenant_id, e.mode, func.count())
        .where(tuple_(e.tenant_id, e.mode).in_(wanted))
        .group_by(e.tenant_id, e.mode)
    )
    found = {(str(t), str(m)): int(n) for t, m, n in (await session.execute(stmt)).all()}
    return {owner: found.get(owner, 0) for owner in wanted}
