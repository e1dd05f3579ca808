"""The journal's hash chains (ledger.core.chain): the heads and pages ``verify_journal`` walks (the
batch that writes entries locks and moves the heads: ``batch``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Mode
from ledger.core.chain import TRANSFER_FIELDS
from ledger.models import journal_chains, journal_entries, postings, transfers
from ledger.repository.base import scope

__all__ = ["chain_heads", "chain_page", "entry_hash_at", "headless_chains"]

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
) -> list[tuple[Any, list[tuple[str, str, Decimal]]]]:
    """Up to ``limit`` entries of one chain after ``after_seq``, in chain order, each with its
    postings (account id, currency, amount) and its transfer's terms as columns ``t_<name>``
    of ``chain.TRANSFER_FIELDS`` (None when the entry names no transfer, or one not found)."""
    terms = [transfers.c[name].label(f"t_{name}") for name in TRANSFER_FIELDS]
    entries = (
        await session.execute(
            select(journal_entries, *terms)
            .select_from(
                journal_entries.outerjoin(transfers, transfers.c.id == journal_entries.c.transfer_id)
            )
            .where(scope(journal_entries, tenant_id, mode), journal_entries.c.seq > after_seq)
            .order_by(journal_entries.c.seq)
            .limit(limit)
        )
    ).all()
    found: dict[str, list[tuple[str, str, Decimal]]] = {e.id: [] for e in entries}
    if found:
        stmt = select(
            postings.c.entry_id, postings.c.account_id, postings.c.currency, postings.c.amount
        ).where(postings.c.entry_id.in_(list(found)))
        for entry_id, account_id, currency, amount in await session.execute(stmt):
            found[entry_id].append((account_id, currency, amount))
    return [(e, found[e.id]) for e in entries]


async def headless_chains(session: AsyncSession, tenant_id: str | None, mode: str | None) -> list[ChainKey]:
    """Chains that have entries but no head row (a deleted head would otherwise take its
    chain out of verification)."""
    stmt = select(journal_entries.c.tenant_id, journal_entries.c.mode).distinct()
    if tenant_id:
        stmt = stmt.where(journal_entries.c.tenant_id == tenant_id)
    if mode:
        stmt = stmt.where(journal_entries.c.mode == mode)
    heads = select(journal_chains.c.tenant_id, journal_chains.c.mode)
    return [(t, m) for t, m in await session.execute(stmt.except_(heads))]


async def entry_hash_at(session: AsyncSession, tenant_id: str, mode: Mode, seq: int) -> str | None:
    """The stored hash of a chain's entry ``seq`` (None: no such entry)."""
    stmt = select(journal_entries.c.hash).where(
        scope(journal_entries, tenant_id, mode), journal_entries.c.seq == seq
    )
    found: str | None = (await session.execute(stmt)).scalar_one_or_none()
    return found
