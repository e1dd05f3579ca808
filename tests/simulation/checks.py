"""The invariants of the simulation, each a query that lists what breaks it (nothing: it holds).

After every step: every journal entry balances; every wallet account equals its postings and is
never negative; no transfer or deposit has two entries of one kind (one effect per command);
compliance decided each command once; each day's cap usage is within the cap and equals the
holds not given back; nothing was dead-lettered (the simulation injects crashes, never
errors, so a dead letter is real code failing).

At the end, with every record delivered and every transfer settled: a cap hold is kept exactly
for the transfers that exist and did not fail (an allowance is given back on every refusal and
failure); every command was answered, every answer to one command is the same, and an answer
says created exactly when the ledger holds the transfer; every transfer has one creation event
and one event per state it reached.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import asyncpg
import msgspec

STEP = """
SELECT 'entry ' || entry_id || ' does not balance in ' || currency || ': ' || sum(amount)
  FROM ledger.postings GROUP BY entry_id, currency HAVING sum(amount) <> 0
UNION ALL
SELECT 'wallet account ' || a.id || ' holds ' || a.balance || ', its postings sum to '
       || coalesce(sum(p.amount), 0)
  FROM ledger.accounts a LEFT JOIN ledger.postings p ON p.account_id = a.id
 WHERE a.wallet_id IS NOT NULL GROUP BY a.id, a.balance
HAVING a.balance <> coalesce(sum(p.amount), 0) OR a.balance < 0
UNION ALL
SELECT count(*) || ' entries of kind ' || kind || ' for ' || coalesce(transfer_id, deposit_id)
  FROM ledger.journal_entries WHERE coalesce(transfer_id, deposit_id) IS NOT NULL
 GROUP BY kind, transfer_id, deposit_id HAVING count(*) > 1
UNION ALL
SELECT count(*) || ' decisions for command ' || command_id
  FROM compliance.decisions GROUP BY command_id HAVING count(*) > 1
UNION ALL
SELECT 'cap usage of ' || u.tenant_id || ' ' || u.currency || ' is ' || u.used
       || ' (cap ' || $1::numeric || ', holds not given back ' || coalesce(h.held, 0) || ')'
  FROM compliance.cap_usage u LEFT JOIN (
       SELECT tenant_id, mode, currency, day, sum(amount) AS held FROM compliance.holds
        WHERE released_at IS NULL GROUP BY 1, 2, 3, 4) h
       USING (tenant_id, mode, currency, day)
 WHERE u.used > $1::numeric OR u.used <> coalesce(h.held, 0)
"""

END = """
SELECT 'cap hold of ' || h.transfer_id || ' kept, the transfer is '
       || coalesce(t.state, 'not in the ledger')
  FROM compliance.holds h LEFT JOIN ledger.transfers t ON t.id = h.transfer_id
 WHERE h.released_at IS NULL AND (t.id IS NULL OR t.state IN ('failed', 'rejected'))
UNION ALL
SELECT 'cap hold of ' || h.transfer_id || ' given back, the transfer is ' || t.state
  FROM compliance.holds h JOIN ledger.transfers t ON t.id = h.transfer_id
 WHERE h.released_at IS NOT NULL AND t.state NOT IN ('failed', 'rejected')
UNION ALL
SELECT 'transfer ' || t.id || ' has no cap hold'
  FROM ledger.transfers t LEFT JOIN compliance.holds h ON h.transfer_id = t.id
 WHERE h.transfer_id IS NULL
UNION ALL
SELECT 'transfer ' || id || ' still ' || state FROM ledger.transfers
 WHERE state NOT IN ('completed', 'failed', 'rejected', 'returned')
"""


async def step_violations(db: asyncpg.Connection, cap: Decimal, dead_letters: list[bytes]) -> list[str]:
    found = [r[0] for r in await db.fetch(STEP, cap)]
    for raw in dead_letters:
        letter = msgspec.json.decode(raw)
        found.append(f"dead-lettered by {letter.get('service')}: {letter.get('error')}")
    return found


class _Result(msgspec.Struct):
    command_id: str
    status: int
    error: dict[str, Any] | None = None


class _Event(msgspec.Struct):
    event_id: str = ""
    type: str = ""
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class _Record(_Event):
    """One event, or one fact's events in one record (``EventBatch``)."""

    events: list[_Event] = msgspec.field(default_factory=list)


async def end_violations(
    db: asyncpg.Connection, issued: dict[str, Any], replies: list[bytes], events: list[bytes]
) -> list[str]:
    found = [r[0] for r in await db.fetch(END)]
    answers: dict[str, set[tuple[int, str | None]]] = {}
    for raw in replies:
        r = msgspec.json.decode(raw, type=_Result)
        answers.setdefault(r.command_id, set()).add((r.status, (r.error or {}).get("code")))
    transfers = {r["id"]: r["state"] for r in await db.fetch("SELECT id, state FROM ledger.transfers")}
    for command_id, cmd in issued.items():
        got = answers.get(command_id)
        if not got:
            found.append(f"command {command_id} never answered")
            continue
        if len(got) > 1:
            found.append(f"command {command_id} answered differently: {sorted(got, key=str)}")
        transfer_id = getattr(cmd, "transfer_id", None)
        if transfer_id is not None:
            created = any(status == 201 for status, _ in got)
            if created != (transfer_id in transfers):
                found.append(
                    f"transfer {transfer_id} answered {sorted(got, key=str)} but"
                    f" {'is' if transfer_id in transfers else 'is not'} in the ledger"
                )
    seen: dict[tuple[str, str], set[str]] = {}
    for raw in events:
        record = msgspec.json.decode(raw, type=_Record)
        for ev in record.events or [record]:
            transfer_id = ev.data.get("transfer_id")
            if isinstance(transfer_id, str) and ev.type.split(".")[0] in ("transfer", "payout"):
                label = ev.type.split(".")[1] + ":" + str(ev.data.get("state"))
                seen.setdefault((transfer_id, label), set()).add(ev.event_id)
    for (transfer_id, label), ids in seen.items():
        if len(ids) > 1:
            found.append(f"transfer {transfer_id}: {len(ids)} distinct events {label}")
    for transfer_id, state in transfers.items():
        if not any(t == transfer_id and label.startswith("created:") for t, label in seen):
            found.append(f"transfer {transfer_id} has no created event")
        if not any(t == transfer_id and label == f"updated:{state}" for t, label in seen) and not any(
            t == transfer_id and label == f"created:{state}" for t, label in seen
        ):
            found.append(f"transfer {transfer_id} reached {state} without its event")
    return found
