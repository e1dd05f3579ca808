"""The journal's hash chains (contract 13.5): the heads and pages ``verify_journal`` walks (the
batch that writes entries locks and moves the heads: ``batch``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Mode
from ledger.models import journal_chains, journal_entries, postings
from ledger.repository.base import scope

__all__ = ["chain_heads", "chain_page"]

ChainKey = tuple[str, str]  # (tenant_id, mode)


async def chain_heads(session: AsyncSession, tenant_id: str | None, mode: str | None) -> list[Any]:
    """The chains to verify: (tenant_id, mode, seq, head_hash), narrowed when given."""
    stmt = select(journal_chains).order_by(journal_chains.c.tenant_id, journal_chains.c.mode)
    if tenant_id:
        stmt = stmt.where(journal_chains.c.tenant_id == tenant_id)
    if mode:
        stmt = stmt.where(journal_chains.c.mode == mode)
    return list((await session.execute(stmt)).all())


async def chain_page(
    session: AsyncSession, tenant_id: str, mode: Mode, after_seq: int, limit: int
) -> list[tuple[Any, list[tuple[str, Decimal]]]]:
    """Up to ``limit`` entries of one chain after ``after_seq``, in chain order, each with its
    postings (account id, amount)."""
    entries = (
        await session.execute(
            select(journal_entries)
            .where(scope(journal_entries, tenant_id, mode), journal_entries.c.seq > after_seq)
            .order_by(journal_entries.c.seq)
            .limit(limit)
        )
    ).all()
    found: dict[str, list[tuple[str, Decimal]]] = {e.id: [] for e in entries}
    if found:
        stmt = select(postings.c.entry_id, postings.c.account_id, postings.c.amount).where(
            postings.c.entry_id.in_(list(found))
        )
        for entry_id, account_id, amount in await session.execute(stmt):
            found[entry_id].append((account_id, amount))
    return [(e, found[e.id]) for e in entries]
