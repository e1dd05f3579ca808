"""``verify_journal`` (contract 13.4/13.5/14.3): recompute the hash chains of the journal, compare
each with its newest anchor outside the database (``ledger.anchors``), and name the first
entry that no longer matches. Read-only; walks each chain in pages of ``PAGE`` entries.

A broken chain is answered with ``ok: false``, ``problem`` (a sentence) and ``reason`` (a code):

- ``entries_missing``: a gap in the chain's seq (an entry deleted); names the entry after it;
- ``entry_mismatch``: an entry's stored content (postings, currency, its transfer's terms) or
  hash does not match its chain (``ledger.chain``, version 2, or 1 before the chain's first v2);
- ``head_mismatch``: the head row names another seq or hash than the journal's last entry;
- ``truncated_tail``: the chain ends before the entry its anchor names (the head row moved
  back with it);
- ``anchor_mismatch``: the entry at the anchored seq has another hash than the anchor: the
  chain was rewritten up to there and its hashes recomputed, or its head moved in place;
- ``missing_head``: an anchor, or entries, for a chain whose head row is gone;
- ``anchor_signature_invalid``: a record of the anchors topic is not an anchor signed with
  ``SLUICE_JOURNAL_ANCHOR_KEY`` (never trusted; listed in ``untrusted_anchors``), the journal
  being otherwise intact.

With anchors configured the answer also says how many chains were compared with one
(``anchored``)."""

from __future__ import annotations

import logging
from typing import Any

from aiokafka.errors import KafkaError
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.anchors import JournalAnchor
from common.contracts.commands import VerifyJournal
from common.errors import ErrorCode, ServiceError
from ledger import chain
from ledger import repository as repo
from ledger.anchors import Found
from ledger.effects import Effects, LedgerConfig

log = logging.getLogger(__name__)
PAGE = 2000
SHOWN = 10  # untrusted anchor records listed in an answer


async def verify_journal(session: AsyncSession, cmd: VerifyJournal, cfg: LedgerConfig) -> Effects:
    tenant_id, mode = cmd.target_tenant_id, cmd.mode
    # Anchors first: each names a head committed before the database is read below.
    found = await _anchors(cfg)
    newest = {k: a for k, a in (found.newest if found else {}).items() if _in(k, tenant_id, mode)}
    entries, head_hash, anchored = 0, chain.GENESIS, 0
    heads = await repo.chain_heads(session, tenant_id, mode)
    for head in heads:
        anchor = newest.get((head.tenant_id, head.mode))
        checked = await _verify_chain(session, head, anchor)
        entries += checked["entries"]
        head_hash = head.head_hash
        anchored += anchor is not None
        if not checked["ok"]:
            return Effects(
                200, {**checked, "entries": entries, "tenant_id": head.tenant_id, "mode": head.mode}
            )
    have = {(h.tenant_id, h.mode) for h in heads}
    headless = set(await repo.headless_chains(session, tenant_id, mode)) | (newest.keys() - have)
    if headless:
        t, m = min(headless)
        return Effects(
            200, {**_missing_head(newest.get((t, m))), "entries": entries, "tenant_id": t, "mode": m}
        )
    data: dict[str, Any] = {"ok": True, "entries": entries, "head_hash": head_hash}
    if found is not None:
        data["anchored"] = anchored
        untrusted = [u for u in found.untrusted if _in((u.get("tenant_id"), u.get("mode")), tenant_id, mode)]
        if untrusted:
            data.update(
                ok=False,
                reason="anchor_signature_invalid",
                problem=f"{len(untrusted)} records of the anchors topic are not validly signed anchors",
                untrusted_anchors=untrusted[:SHOWN],
                untrusted_anchor_count=len(untrusted),
            )
    return Effects(200, data)


async def _anchors(cfg: LedgerConfig) -> Found | None:
    """What the anchors topic holds (None: anchoring is off). Unreadable (Kafka down, the topic
    gone): 503, never an answer that would pass a chain unanchored."""
    if cfg.read_anchors is None:
        return None
    try:
        return await cfg.read_anchors()
    except (KafkaError, OSError, RuntimeError) as exc:  # TimeoutError is an OSError
        log.warning("journal anchors unreadable: %r", exc)
        raise ServiceError(
            ErrorCode.PROVIDER_UNAVAILABLE,
            "the journal's anchors could not be read; verify_journal did not run",
            details={"reason": "anchors_unreadable"},
        ) from None


def _in(key: tuple[str | None, str | None], tenant_id: str | None, mode: str | None) -> bool:
    """Whether a chain (or an untrusted record naming one, or none) is in the narrowed scope."""
    t, m = key
    return (not tenant_id or t in (None, tenant_id)) and (not mode or m in (None, mode))


async def _verify_chain(session: AsyncSession, head: Any, anchor: JournalAnchor | None) -> dict[str, Any]:
    """One chain from its first entry to its head: every seq in turn, every hash recomputed
    from the previous one and the entry's stored content; then its anchor."""
    seq, previous, checked, v2_seen = 0, chain.GENESIS, 0, False
    # (entry id, hash) at the anchored seq. A head anchored at 0 (a chain whose head row a
    # refused command made, with no entry yet) is the genesis, which every chain extends: it
    # was reported as a truncated tail (CI, the full suite).
    at_anchor: tuple[str | None, str] | None = (
        (None, chain.GENESIS) if anchor is not None and anchor.seq == 0 else None
    )
    while True:
        page = await repo.chain_page(session, head.tenant_id, head.mode, seq, PAGE)
        for e, postings in page:
            if e.seq != seq + 1:
                problem = f"entries {seq + 1} to {e.seq - 1} of the chain are missing"
                return _bad(e.id, checked, head, "entries_missing", problem)
            version = _version(e, postings, previous, v2_seen)
            if version is None:
                problem = "its stored content or hash does not match its chain"
                return _bad(e.id, checked, head, "entry_mismatch", problem)
            v2_seen = v2_seen or version == "v2"
            if anchor is not None and e.seq == anchor.seq:
                at_anchor = (e.id, e.hash)
            seq, previous, checked = e.seq, e.hash, checked + 1
        if len(page) < PAGE:
            break
    if (seq, previous) != (head.seq, head.head_hash):
        problem = f"the chain's head names entry {head.seq}, the journal ends at {seq}"
        return _bad(None, checked, head, "head_mismatch", problem)
    if anchor is None:
        return {"ok": True, "entries": checked}  # the caller answers with the head's hash
    if at_anchor is None:
        problem = (
            f"the chain ends at entry {seq}, its anchor of {anchor.anchored_at} names entry {anchor.seq}"
        )
        return {**_bad(None, checked, head, "truncated_tail", problem), "anchor": _shown(anchor)}
    if at_anchor[1] != anchor.head_hash:
        problem = (
            f"entry {anchor.seq} differs from its anchor of {anchor.anchored_at}: the chain was rewritten"
        )
        return {**_bad(at_anchor[0], checked, head, "anchor_mismatch", problem), "anchor": _shown(anchor)}
    return {"ok": True, "entries": checked}


def _version(e: Any, postings: list[Any], previous: str, v2_seen: bool) -> str | None:
    """The canonical version whose hash the entry carries (v1 only before the chain's first
    v2 entry), or None."""
    transfer = None
    if e.transfer_id and e.t_kind is not None:
        transfer = chain.transfer_text({name: getattr(e, f"t_{name}") for name in chain.TRANSFER_FIELDS})
    fields = (e.id, e.tenant_id, e.mode, e.kind, e.transfer_id, e.deposit_id, e.created_at)
    if e.hash == chain.link(previous, chain.canonical_v2(*fields, postings, transfer)):
        return "v2"
    if not v2_seen and e.hash == chain.link(
        previous, chain.canonical(*fields, [(a, x) for a, _, x in postings])
    ):
        return "v1"
    return None


def _shown(anchor: JournalAnchor) -> dict[str, Any]:
    return {"seq": anchor.seq, "head_hash": anchor.head_hash, "anchored_at": anchor.anchored_at}


def _missing_head(anchor: JournalAnchor | None) -> dict[str, Any]:
    if anchor is None:
        problem = "the chain has entries but no head row"
    else:
        problem = f"the chain's head row is gone; its anchor of {anchor.anchored_at} names entry {anchor.seq}"
    out = {
        "ok": False,
        "head_hash": None,
        "first_bad_entry_id": None,
        "problem": problem,
        "reason": "missing_head",
    }
    return {**out, "anchor": _shown(anchor)} if anchor is not None else out


def _bad(entry_id: str | None, checked: int, head: Any, reason: str, problem: str) -> dict[str, Any]:
    return {
        "ok": False,
        "entries": checked,
        "head_hash": head.head_hash,
        "first_bad_entry_id": entry_id,
        "problem": problem,
        "reason": reason,
    }
