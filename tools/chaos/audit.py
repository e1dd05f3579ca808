"""The chaos run's audit (checks that can fail), as pure functions over what the run
read, so that each check is shown to fail on doctored data (tests/unit/test_chaos_audit.py).

- **Refusals apart**: a definitive 4xx is decided, not done; each one must carry a reason the
  load allows (random amounts between funded wallets: only ``insufficient_funds``), others are
  ``refused_unexpected``.
- **Effects, not rows**: a unique constraint makes a second transfer *row* per key impossible,
  so duplicates are counted where they could happen: journal entries of one kind per transfer
  (postings applied twice), ``transfer.created`` events with distinct ids per transfer (a second
  event, not a redelivery of the same one).
- **Ledger invariants**: every journal entry balances per currency; every wallet account's
  balance equals the sum of its postings and is not negative.
- **Dead letters** are read once the suite is idle (the caller waits until their count is
  stable), and the longest decision is compared with a bound below the clients' deadline.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

ALLOWED_REFUSALS = frozenset({"insufficient_funds"})

UNBALANCED_SQL = (
    "SELECT p.entry_id, p.currency, sum(p.amount) AS total FROM ledger.postings p"
    " JOIN ledger.journal_entries e ON e.id = p.entry_id WHERE e.tenant_id = $1"
    " GROUP BY p.entry_id, p.currency HAVING sum(p.amount) <> 0"
)
BALANCE_SQL = (
    "SELECT a.id, a.balance, coalesce(sum(p.amount), 0) AS posted FROM ledger.accounts a"
    " LEFT JOIN ledger.postings p ON p.account_id = a.id WHERE a.wallet_id IS NOT NULL"
    " AND a.tenant_id = $1 GROUP BY a.id, a.balance"
    " HAVING a.balance <> coalesce(sum(p.amount), 0) OR a.balance < 0"
)
ENTRIES_SQL = (
    "SELECT transfer_id, kind, count(*) AS n FROM ledger.journal_entries"
    " WHERE tenant_id = $1 AND transfer_id IS NOT NULL GROUP BY transfer_id, kind"
)


class Booked(Protocol):
    key: str
    source: str
    destination: str
    amount: Decimal
    status: int | None
    transfer_id: str | None
    error: str
    decided_after_s: float


@dataclass
class Findings:
    transfers: int = 0
    ok: int = 0
    refused: Counter[str] = field(default_factory=Counter)  # allowed reason -> count
    refused_unexpected: list[str] = field(default_factory=list)
    undecided: int = 0
    lost: int = 0
    duplicated_rows: int = 0
    duplicated_effects: int = 0  # journal entries beyond one per transfer and kind
    duplicated_events: int = 0  # transfer.created events beyond one distinct id per transfer
    drift: Decimal = Decimal(0)
    invariant_violations: int = 0
    missing_webhooks: int = 0
    dead_letters: int = 0
    longest_s: float = 0.0
    slow: int = 0  # decided, but later than the bound
    reconcile_discrepancies: int = 0  # admin's reconcile (docs/operations/backups.md) listed; -1: it failed
    faults_missed: int = 0  # faults of the plan that never fired (the load ended first)
    journal_chain_broken: int = 0  # verify_journal (docs/security.md) not ok, or not every entry
    restarts_not_ready: int = 0  # restarted services that exited or never answered /readyz

    @property
    def duplicated(self) -> int:
        return self.duplicated_rows + self.duplicated_effects + self.duplicated_events

    @property
    def clean(self) -> bool:
        return not (
            self.lost
            or self.duplicated
            or self.undecided
            or self.drift
            or self.missing_webhooks
            or self.dead_letters
            or self.refused_unexpected
            or self.invariant_violations
            or self.slow
            or self.reconcile_discrepancies
            or self.faults_missed
            or self.journal_chain_broken
            or self.restarts_not_ready
        )

    def lines(self) -> list[str]:
        refused = sum(self.refused.values())
        reasons = " ".join(f"{k} {v}" for k, v in sorted(self.refused.items())) or "none"
        return [
            f"chaos: transfers {self.transfers} lost {self.lost} duplicated {self.duplicated} undecided "
            f"{self.undecided} balance_drift {self.drift} webhooks_missing {self.missing_webhooks} "
            f"longest_decision_s {self.longest_s:.1f}",
            f"chaos: refused {refused} ({reasons}) refused_unexpected {len(self.refused_unexpected)} "
            f"duplicated_rows {self.duplicated_rows} duplicated_effects {self.duplicated_effects} "
            f"duplicated_events {self.duplicated_events} invariant_violations "
            f"{self.invariant_violations} slow {self.slow}",
            f"chaos: dead_letters {self.dead_letters} reconcile_discrepancies {self.reconcile_discrepancies}"
            f" journal_chain_broken {self.journal_chain_broken} faults_missed {self.faults_missed}"
            f" restarts_not_ready {self.restarts_not_ready}",
        ]


def restart_outcome(ready: bool, exit_code: int | None, waited_s: float, limit_s: float) -> bool | None:
    """A restarted service's fate: True once it answers /readyz, False once it has exited or
    ``limit_s`` has passed without an answer (a failure of the run, not a line to read past),
    None while it may still come up."""
    if ready:
        return True
    if exit_code is not None or waited_s > limit_s:
        return False
    return None


def refusal_reason(error: str) -> str:
    """The ``details.reason`` (else the code) of a refusal's error object."""
    try:
        err = json.loads(error) if error else {}
    except ValueError:
        return "unreadable"
    if not isinstance(err, dict):
        return "unreadable"
    raw = err.get("details")
    details = raw if isinstance(raw, dict) else {}
    return str(details.get("reason") or err.get("code") or "none")


def audit(
    bookings: Sequence[Booked],
    rows: Iterable[Mapping[str, Any]],
    entries: Iterable[Mapping[str, Any]],
    before: Mapping[str, Decimal],
    after: Mapping[str, Decimal],
    created_ids: Mapping[str, set[str]],
    invariant_rows: int,
    dead_letters: int,
    slow_after_s: float,
) -> Findings:
    """Every check of the run, from the clients' answers and what the database holds."""
    rows = list(rows)
    f = Findings(transfers=len(bookings), invariant_violations=invariant_rows, dead_letters=dead_letters)
    ids = {r["id"] for r in rows}
    ok = [b for b in bookings if b.status is not None and 200 <= b.status < 300]
    f.ok = len(ok)
    for b in bookings:
        if b.status is None:
            f.undecided += 1
        elif b.status >= 300:
            reason = refusal_reason(b.error)
            if reason in ALLOWED_REFUSALS:
                f.refused[reason] += 1
            else:
                f.refused_unexpected.append(f"{b.status} {reason}")
    f.lost = sum(1 for b in ok if b.transfer_id not in ids)
    f.duplicated_rows = sum(n - 1 for n in Counter(r["idempotency_key"] for r in rows).values() if n > 1)
    refused_keys = {b.key for b in bookings if b.status is not None and b.status >= 300}
    # a refused transfer with a completed row was in fact carried out: lost for its caller
    f.lost += sum(1 for r in rows if r["idempotency_key"] in refused_keys and r["state"] == "completed")
    f.duplicated_effects = sum(int(e["n"]) - 1 for e in entries if int(e["n"]) > 1)
    f.duplicated_events = sum(len(v) - 1 for v in created_ids.values() if len(v) > 1)
    expected = dict(before)
    for b in ok:
        expected[b.source] = expected.get(b.source, Decimal(0)) - b.amount
        expected[b.destination] = expected.get(b.destination, Decimal(0)) + b.amount
    f.drift = sum(
        (abs(expected.get(w, Decimal(0)) - after.get(w, Decimal(0))) for w in expected.keys() | after.keys()),
        Decimal(0),
    )
    want = ids | {b.transfer_id for b in ok if b.transfer_id}
    f.missing_webhooks = len(want - set(created_ids))
    decided = [b.decided_after_s for b in bookings if b.status is not None]
    f.longest_s = max(decided, default=0.0)
    f.slow = sum(1 for s in decided if s > slow_after_s)
    return f


class Started(Booked, Protocol):
    started: float  # time.monotonic() of the transfer's first attempt


@dataclass
class Recovery:
    """The recovery objectives of one failover (docs/operations/failover.md), from the clients' side.

    - ``rpo``: acknowledged transfers (a 2xx) that existed before the promotion started (their
      first attempt was sent before it, so the lost primary may have committed them) and are
      not in the database the run audits (the promoted primary): must be 0.
    - ``detection_s``: from the primary's loss to the promotion's start (the harness waits that
      long, as an operator or a failover manager would before deciding).
    - ``rto_s``: from the promotion's start to the first 201 answered to an attempt sent after
      it (a request that needed the new primary, not an answer already on its way): at most
      ``limit_s``; ``None`` when the suite never answered 201 again.
    """

    killed_at: float
    promoted_at: float
    rpo: int
    rto_s: float | None
    limit_s: float
    fault: str = ""  # which failover (pg failover, patroni node lost, switchover, ...)

    @property
    def detection_s(self) -> float:
        return self.promoted_at - self.killed_at

    @property
    def ok(self) -> bool:
        return self.rpo == 0 and self.rto_s is not None and self.rto_s <= self.limit_s

    def line(self) -> str:
        rto = "never" if self.rto_s is None else f"{self.rto_s:.1f}"
        which = f"{self.fault} " if self.fault else ""
        return (
            f"chaos-failover: {which}rpo {self.rpo} detection_s {self.detection_s:.1f} rto_s {rto}"
            f" rto_limit_s {self.limit_s:.0f} {'ok' if self.ok else 'FAILED'}"
        )


def recovery(
    bookings: Sequence[Started],
    committed_ids: Iterable[str],
    attempts: Iterable[tuple[float, float, str]],
    killed_at: float,
    promoted_at: float,
    limit_s: float,
    fault: str = "",
) -> Recovery:
    """RPO and RTO of the failover whose primary was lost at ``killed_at`` and whose standby's
    promotion started at ``promoted_at`` (all on one clock), from the bookings, every attempt
    ``(sent, answered, outcome)`` and the transfer ids the database holds."""
    ids = set(committed_ids)
    rpo = sum(
        1
        for b in bookings
        if b.status is not None
        and 200 <= b.status < 300
        and b.started < promoted_at
        and b.transfer_id not in ids
    )
    again = [answered for sent, answered, outcome in attempts if sent >= promoted_at and outcome == "201"]
    rto = min(again) - promoted_at if again else None
    return Recovery(killed_at, promoted_at, rpo, rto, limit_s, fault)


def explain(
    f: Findings,
    bookings: Sequence[Booked],
    rows: Iterable[Mapping[str, Any]],
    broken: Sequence[Mapping[str, Any]],
    dead: Sequence[Mapping[str, Any]],
) -> list[str]:
    """The lines a person reads before the verdict: answers and rows, and the first few of
    each kind of finding (unexpected refusals, broken invariants, undecided, dead letters)."""
    rows = list(rows)
    refused = sum(f.refused.values()) + len(f.refused_unexpected)
    states = dict(Counter(r["state"] for r in rows))
    out = [f"answers: {f.ok} 2xx, {refused} refused, {f.undecided} undecided; rows by state: {states}"]
    out += [
        f"refused for a reason the load does not allow x{n}: {why}"
        for why, n in Counter(f.refused_unexpected).most_common(5)
    ]
    out += [f"ledger invariant broken: {dict(r)}" for r in broken[:5]]
    undecided = [b for b in bookings if b.status is None]
    last = Counter(f"last answer {getattr(b, 'last_answer', '') or '-'}" for b in undecided)
    out += [f"undecided x{n}: {why}" for why, n in last.most_common(5)]
    if undecided:
        committed = {r["idempotency_key"] for r in rows}
        done = sum(b.key in committed for b in undecided)
        out.append(f"of the {len(undecided)} undecided, {done} were committed (a transfer row has the key)")
    out += [f"dead letter from {d['service']} ({d['topic']}): {str(d['error'])[:160]}" for d in dead[:5]]
    return out
