"""``verify_journal`` (contract 13.4/13.5): recompute the hash chains of the journal and name
the first entry that no longer matches, whether a posting was changed, an entry deleted or a
hash rewritten. Read-only; walks each chain in pages of ``PAGE`` entries."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.commands import VerifyJournal
from ledger import chain
from ledger import repository as repo
from ledger.effects import Effects, LedgerConfig

PAGE = 2000


async def verify_journal(session: AsyncSession, cmd: VerifyJournal, cfg: LedgerConfig) -> Effects:
    entries, head_hash = 0, chain.GENESIS
    for head in await repo.chain_heads(session, cmd.target_tenant_id, cmd.mode):
        found = await _verify_chain(session, head)
        entries += found["entries"]
        head_hash = head.head_hash
        if not found["ok"]:
            return Effects(200, {**found, "entries": entries, "tenant_id": head.tenant_id, "mode": head.mode})
    return Effects(200, {"ok": True, "entries": entries, "head_hash": head_hash})


async def _verify_chain(session: AsyncSession, head: Any) -> dict[str, Any]:
    """One chain from its first entry to its head: every seq in turn, every hash recomputed
    from the previous one and the entry's stored content."""
    seq, previous, checked = 0, chain.GENESIS, 0
    while True:
        page = await repo.chain_page(session, head.tenant_id, head.mode, seq, PAGE)
        for e, postings in page:
            text = chain.canonical(
                e.id, e.tenant_id, e.mode, e.kind, e.transfer_id, e.deposit_id, e.created_at, postings
            )
            expected = chain.link(previous, text)
            if e.seq != seq + 1:
                return _bad(e.id, checked, head, f"entries {seq + 1} to {e.seq - 1} of the chain are missing")
            if e.hash != expected:
                return _bad(e.id, checked, head, "its stored content or hash does not match its chain")
            seq, previous, checked = e.seq, e.hash, checked + 1
        if len(page) < PAGE:
            break
    if (seq, previous) != (head.seq, head.head_hash):
        return _bad(
            None, checked, head, f"the chain's head names entry {head.seq}, the journal ends at {seq}"
        )
    return {"ok": True, "entries": checked}  # the caller answers with the head's hash


def _bad(entry_id: str | None, checked: int, head: Any, problem: str) -> dict[str, Any]:
    return {
        "ok": False,
        "entries": checked,
        "head_hash": head.head_hash,
        "first_bad_entry_id": entry_id,
        "problem": problem,
    }
