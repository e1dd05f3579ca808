"""The journal's hash chains (contract 13.5): heads locked and moved by the batch that writes
entries, and the pages ``verify_journal`` walks."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.base import Mode
from ledger.chain import GENESIS
from ledger.models import journal_chains, journal_entries, postings
from ledger.repository.base import scope

__all__ = ["chain_heads", "chain_page", "lock_chains", "save_chains"]

ChainKey = tuple[str, str]  # (tenant_id, mode)


async def lock_chains(session: AsyncSession, keys: Sequence[ChainKey]) -> dict[ChainKey, tuple[int, str]]:
    """Create the missing heads and lock every head of ``keys``, in key order, in one
    statement (an upsert that changes nothing locks the row it meets): (seq, head hash)."""
    if not keys:
        return {}
    rows = [{"tenant_id": t, "mode": m, "seq": 0, "head_hash": GENESIS} for t, m in sorted(keys)]
    upsert = pg_insert(journal_chains).values(rows)
    stmt = upsert.on_conflict_do_update(
        index_elements=[journal_chains.c.tenant_id, journal_chains.c.mode],
        set_={"seq": journal_chains.c.seq},
    ).returning(
        journal_chains.c.tenant_id, journal_chains.c.mode, journal_chains.c.seq, journal_chains.c.head_hash
    )
    return {(r.tenant_id, r.mode): (r.seq, r.head_hash) for r in await session.execute(stmt)}


async def save_chains(session: AsyncSession, heads: dict[ChainKey, tuple[int, str]]) -> None:
    """Move each (locked) head to its new last entry, in one pipelined round trip."""
    rows = [{"t": t, "m": m, "s": s, "h": h} for (t, m), (s, h) in sorted(heads.items())]
    if rows:
        stmt = (
            update(journal_chains)
            .where(journal_chains.c.tenant_id == bindparam("t"), journal_chains.c.mode == bindparam("m"))
            .values(seq=bindparam("s"), head_hash=bindparam("h"))
        )
        conn = await session.connection()
        await conn.execute(stmt, rows)


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
