"""The point-in-time restore drill's verdict (tools.chaos.pitr.drill), as a pure function of what
the drill read, so that each way to fail is shown to fail (tests/unit/test_chaos_pitr.py).

A restore to time T is clean when:

- every transfer a client saw acknowledged (a 2xx) before T is in the restored database, exactly
  once (an acknowledgement comes after the commit, so its commit is before T: restored);
- nothing of after T is there (no transfer created after T) and nothing nobody asked for
  (every restored transfer carries an Idempotency-Key a client sent);
- the money adds up: every journal entry balances, every wallet account's balance is the sum of
  its postings and not negative, and the ledger's reconcile lists no discrepancy;
- the journal agrees with its anchors up to T: ``verify_journal`` recomputes every chain and
  answers either ``ok`` (no anchor names a later entry) or ``truncated_tail`` with an
  ``anchored_through`` (a prefix of the anchored history: anchors made after T name entries the
  restore does not have, and every anchor of an entry it has agrees), covering every entry of
  the restored journal; and, read by the drill itself from the topic, every anchor made before
  T names an entry the restored journal has, with the same hash. The drill needs at least one
  such anchor and one acknowledged transfer before T, or it would prove nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PitrFacts:
    target: str  # T, ISO 8601
    acknowledged_before: int = 0  # transfers answered 2xx before T (less the margin)
    missing: int = 0  # of those, not in the restored database
    duplicated: int = 0  # keys with several rows, transfers with an entry kind twice
    past_target: int = 0  # restored transfers created after T
    unknown: int = 0  # restored transfers whose Idempotency-Key no client sent
    unbalanced: int = 0  # unbalanced entries, accounts unlike their postings or negative
    reconcile: int = 0  # the ledger's reconcile: discrepancies listed, -1 when it failed
    journal_entries: int = 0  # rows of ledger.journal_entries in the restored database
    verify: dict[str, Any] = field(default_factory=dict)  # verify_journal's answer
    anchors_before: int = 0  # anchors made before T (less the margin), read from the topic
    anchors_disagreeing: int = 0  # of those, naming an entry the restore lacks or has otherwise


def verify_verdict(f: PitrFacts) -> str:
    """``ok``, ``truncated_tail through <seq>`` (both clean when they cover every entry), or
    what is wrong."""
    v = f.verify
    if not v:
        return "no_answer"
    if v.get("entries") != f.journal_entries:
        return f"{v.get('reason', 'ok')} entries {v.get('entries')} of {f.journal_entries}"
    if v.get("ok") is True:
        return "ok"
    through = v.get("anchored_through")
    if v.get("reason") == "truncated_tail" and through:
        return f"truncated_tail through {through['seq']}"
    return str(v.get("reason") or "not_ok")


def problems(f: PitrFacts) -> list[str]:
    """Why the restore is not clean (empty: clean)."""
    found = [
        f"{n} {what}"
        for n, what in (
            (f.missing, "acknowledged transfers before T missing"),
            (f.duplicated, "duplicated"),
            (f.past_target, "transfers created after T restored"),
            (f.unknown, "transfers no client sent"),
            (f.unbalanced, "ledger invariants broken"),
            (f.anchors_disagreeing, "anchors before T disagreeing with the restored journal"),
        )
        if n
    ]
    if f.reconcile:
        found.append("reconcile failed" if f.reconcile < 0 else f"{f.reconcile} reconcile discrepancies")
    verdict = verify_verdict(f)
    if verdict != "ok" and not verdict.startswith("truncated_tail through"):
        found.append(f"verify_journal {verdict}")
    if f.acknowledged_before == 0:
        found.append("no transfer acknowledged before T")
    if f.anchors_before == 0:
        found.append("no anchor made before T")
    return found


def line(f: PitrFacts) -> str:
    reconcile = "ok" if f.reconcile == 0 else ("failed" if f.reconcile < 0 else str(f.reconcile))
    bad = problems(f)
    return (
        f"pitr: restored to {f.target} transfers_before_T {f.acknowledged_before} missing {f.missing}"
        f" duplicated {f.duplicated} past_T {f.past_target} unknown {f.unknown}"
        f" unbalanced {f.unbalanced} reconcile {reconcile} verify_journal {verify_verdict(f)}"
        f" anchors_before_T {f.anchors_before} disagreeing {f.anchors_disagreeing}"
        + (" CLEAN" if not bad else " FAILED: " + "; ".join(bad))
    )
