"""``verify_journal`` (docs/security.md, "The tamper-evident journal"): recompute the hash
chains of the journal, compare each with its anchors outside the database (``ledger.anchors``),
and name the first entry that no longer matches. Read-only; walks each chain in pages of
``PAGE`` entries.

A broken chain is answered with ``ok: false``, ``problem`` (a sentence) and ``reason`` (a code):

- ``entries_missing``: a gap in the chain's seq (an entry deleted); names the entry after it;
- ``entry_mismatch``: an entry's stored content (postings, currency, its transfer's terms) or
  hash does not match its chain (``ledger.core.chain``, version 2, or 1 before the chain's first v2);
- ``head_mismatch``: the head row names another seq or hash than the journal's last entry;
- ``truncated_tail``: the chain ends before the entry its newest anchor names (the head row
  moved back with it), every anchor of an entry it still has agreeing with it: the journal is a
  prefix of the anchored history, which is what a point-in-time restore leaves
  (docs/operations/backups.md). ``anchored_through`` names the newest anchor the chain still
  reaches (None: none), so the answer says up to where the anchors vouch for it;
- ``anchor_mismatch``: the entry at an anchored seq has another hash than that anchor (every
  anchor of the chain is compared, whichever ledger instance signed it): the chain was rewritten
  up to there and its hashes recomputed, or its head moved in place;
- ``missing_head``: an anchor, or entries, for a chain whose head row is gone;
- ``anchors_missing``: the anchors topic is gone or lost records (it no longer starts at offset
  0), or a chain whose first entry is older than ``LedgerConfig.anchor_grace_s`` (three
  anchoring intervals, 30 s at least) has no anchor;
- ``anchor_chain_broken``: a chain's anchors do not form an unbroken chain (``prev``): a gap
  (anchors taken out, or the stream started over), a rewritten anchor, or a fork whose anchors
  name one entry with two hashes (``broken_anchors``);
- ``anchor_signature_invalid``: a record of the anchors topic is not an anchor signed by a key
  of ``SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS`` (never trusted; listed in ``untrusted_anchors``), the
  journal being otherwise intact.

With anchors configured the answer also says how many chains were compared with one
(``anchored``), and how many honest forks the anchors hold (``anchor_forks``, when any: two
instances that anchored a chain at the same instant; each anchor is compared with the journal).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from aiokafka.errors import KafkaError
from sqlalchemy.ext.asyncio import AsyncSession

from common.contracts.anchors import JournalAnchor
from common.contracts.commands import VerifyJournal
from common.errors import ErrorCode, ServiceError
from common.times import iso
from ledger import repository as repo
from ledger.anchor_stream import ChainAnchors, Found
from ledger.config import LedgerConfig
from ledger.core import chain
from ledger.core.effects import Effects

log = logging.getLogger(__name__)
PAGE = 2000
SHOWN = 10  # untrusted anchor records listed in an answer


async def verify_journal(session: AsyncSession, cmd: VerifyJournal, ledger_config: LedgerConfig) -> Effects:
    tenant_id, mode = cmd.target_tenant_id, cmd.mode
    # Anchors first: each names a head committed before the database is read below.
    found = await _anchors(ledger_config)
    chains = {k: c for k, c in (found.chains if found else {}).items() if _in(k, tenant_id, mode)}
    newest = {k: c.newest for k, c in chains.items() if c.newest is not None}
    entries, head_hash, anchored, unanchored = 0, chain.GENESIS, 0, []
    heads = await repo.chain_heads(session, tenant_id, mode)
    cutoff = datetime.now(UTC) - timedelta(seconds=ledger_config.anchor_grace_s)
    for head in heads:
        anchors = chains.get((head.tenant_id, head.mode))
        checked = await _verify_chain(session, head, anchors)
        entries += checked["entries"]
        head_hash = head.head_hash
        anchored += anchors is not None and anchors.newest is not None
        if not checked["ok"]:
            return Effects(
                200, {**checked, "entries": entries, "tenant_id": head.tenant_id, "mode": head.mode}
            )
        first = checked.get("first_at")
        if found is not None and (head.tenant_id, head.mode) not in newest and first and first < cutoff:
            unanchored.append({"tenant_id": head.tenant_id, "mode": head.mode, "since": iso(first)})
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
        forks = sum(c.forks for c in chains.values())
        if forks:
            data["anchor_forks"] = forks
        data.update(_stream_findings(found, unanchored, tenant_id, mode))
    return Effects(200, data)


def _stream_findings(
    found: Found, unanchored: list[dict[str, Any]], tenant_id: str | None, mode: str | None
) -> dict[str, Any]:
    """What the anchors stream itself says, in order of weight (the chains being intact)."""
    if found.lost:
        problem = "the journal's anchors topic lost records: " + "; ".join(found.lost)
        return {"ok": False, "reason": "anchors_missing", "problem": problem, "anchors_lost": found.lost}
    if unanchored:
        problem = f"{len(unanchored)} chains with entries older than three anchoring intervals have no anchor"
        return _finding("anchors_missing", problem, "unanchored_chain", unanchored)
    broken = [b for b in found.broken if _in((b.get("tenant_id"), b.get("mode")), tenant_id, mode)]
    if broken:
        problem = f"{len(broken)} anchors do not extend their chain's anchors (a gap, fork or rewrite)"
        return _finding("anchor_chain_broken", problem, "broken_anchor", broken)
    untrusted = [u for u in found.untrusted if _in((u.get("tenant_id"), u.get("mode")), tenant_id, mode)]
    if untrusted:
        problem = f"{len(untrusted)} records of the anchors topic are not validly signed anchors"
        return _finding("anchor_signature_invalid", problem, "untrusted_anchor", untrusted)
    return {}


async def _anchors(ledger_config: LedgerConfig) -> Found | None:
    """What the anchors topic holds (None: anchoring is off). Unreadable (Kafka down, the topic
    gone): 503, never an answer that would pass a chain unanchored."""
    if ledger_config.read_anchors is None:
        return None
    try:
        return await ledger_config.read_anchors()
    except (KafkaError, OSError, RuntimeError) as exc:  # TimeoutError is an OSError
        log.warning("journal anchors unreadable: %r", exc)
        raise ServiceError(
            ErrorCode.PROVIDER_UNAVAILABLE,
            "the journal's anchors could not be read; verify_journal did not run",
            details={"reason": "anchors_unreadable"},
        ) from None


def _finding(reason: str, problem: str, name: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """A finding of the anchors stream: the first :data:`SHOWN` of ``items`` as ``<name>s``,
    and their count as ``<name>_count``."""
    return {
        "ok": False,
        "reason": reason,
        "problem": problem,
        f"{name}s": items[:SHOWN],
        f"{name}_count": len(items),
    }


def _in(key: tuple[str | None, str | None], tenant_id: str | None, mode: str | None) -> bool:
    """Whether a chain (or an untrusted record naming one, or none) is in the narrowed scope."""
    t, m = key
    return (not tenant_id or t in (None, tenant_id)) and (not mode or m in (None, mode))


async def _verify_chain(session: AsyncSession, head: Any, anchors: ChainAnchors | None) -> dict[str, Any]:
    """One chain from its first entry to its head: every seq in turn, every hash recomputed
    from the previous one and the entry's stored content; then its anchors, every one."""
    seq, previous, checked, v2_seen = 0, chain.GENESIS, 0, False
    anchor = anchors.newest if anchors is not None else None
    at_seq = anchors.heads if anchors is not None else {}
    # The first anchored entry whose hash differs from an anchor: (entry id, seq, anchor hash, when).
    # A head anchored at 0 (a head row a refused command made, no entry yet) names the genesis,
    # which every chain extends (CI, the full suite: reported as a truncated tail once).
    mismatch = _differs(None, 0, chain.GENESIS, at_seq)
    first_at = None
    while True:
        page = await repo.chain_page(session, head.tenant_id, head.mode, seq, PAGE)
        for e, postings in page:
            if e.seq != seq + 1:
                problem = f"entries {seq + 1} to {e.seq - 1} of the chain are missing"
                return _bad(e.id, checked, head, "entries_missing", problem)
            version = chain.entry_version(e, postings, previous, v2_seen)
            if version is None:
                problem = "its stored content or hash does not match its chain"
                return _bad(e.id, checked, head, "entry_mismatch", problem)
            v2_seen = v2_seen or version == "v2"
            first_at = first_at or e.created_at
            mismatch = mismatch or _differs(e.id, e.seq, e.hash, at_seq)
            seq, previous, checked = e.seq, e.hash, checked + 1
        if len(page) < PAGE:
            break
    if (seq, previous) != (head.seq, head.head_hash):
        problem = f"the chain's head names entry {head.seq}, the journal ends at {seq}"
        return _bad(None, checked, head, "head_mismatch", problem)
    if anchor is None:  # the caller answers with the head's hash
        return {"ok": True, "entries": checked, "first_at": first_at}
    # A rewrite first: a chain both shortened and rewritten is a rewritten one, and a truncated
    # tail then means what a restore to an earlier time leaves, a prefix of the anchored history.
    if mismatch is not None:
        entry_id, at, anchored_hash, when = mismatch
        problem = f"entry {at} differs from its anchor of {when}: the chain was rewritten"
        shown = {"seq": at, "head_hash": anchored_hash, "anchored_at": when}
        return {**_bad(entry_id, checked, head, "anchor_mismatch", problem), "anchor": shown}
    if anchor.seq > seq:
        problem = (
            f"the chain ends at entry {seq}, its anchor of {anchor.anchored_at} names entry {anchor.seq}"
        )
        bad = _bad(None, checked, head, "truncated_tail", problem)
        return {**bad, "anchor": _shown(anchor), "anchored_through": _reached(at_seq, seq)}
    return {"ok": True, "entries": checked, "first_at": first_at}


def _reached(at_seq: dict[int, dict[str, str]], end: int) -> dict[str, Any] | None:
    """The newest anchor of an entry a chain ending at ``end`` still has (its hashes agree:
    the caller found no mismatch), None when every anchor names a later entry."""
    reached = [s for s in at_seq if s <= end]
    if not reached:
        return None
    seq = max(reached)
    when, hash_ = min((w, h) for h, w in at_seq[seq].items())
    return {"seq": seq, "head_hash": hash_, "anchored_at": when}


def _differs(
    entry_id: str | None, seq: int, hash_: str, at_seq: dict[int, dict[str, str]]
) -> tuple[str | None, int, str, str] | None:
    """The first anchor (by time) of entry ``seq`` that names another hash, if any."""
    others = sorted((when, h) for h, when in at_seq.get(seq, {}).items() if h != hash_)
    return (entry_id, seq, others[0][1], others[0][0]) if others else None


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
