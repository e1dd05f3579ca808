"""What a transfer leaves behind, computed by the services' own code: the rows the history
seeder of ``make bench-history`` writes (tools.bench.seed; docs/performance/index.md, "A long
history"). Nothing here reads or writes a database.

- the ledger's: :func:`ledger.core.transfers.plan_transfers` plans each transfer (its row in its
  final state, its two state changes, its ``transfer.created`` event, its movement: the hold
  and the settlement), the transaction's :class:`ledger.journal.Journal` checks the funds and
  links the entries into the tenant's hash chain from the head the seeder read locked (the
  core's ``entries.check_funds`` and ``entries.chain_rows``),
  :func:`ledger.core.transfers.settle_transfers` answers each command, and the inbox keeps
  :func:`ledger.service.result_of` encoded, as the ledger's consumer does;
- compliance's: its rules decide each transfer (:func:`compliance.rules.check_transfer`), the
  decision row (its inputs, the signed command it published) comes from
  ``compliance.service._record`` with the suite's signing key, and the cap hold and the day's
  usage are what the allowance keeps;
- webhooks': the event as stored, :func:`webhooks.service.envelope` numbered from the tenant's
  ``event_sequences`` row.

The gateway keeps nothing per transfer in PostgreSQL (its idempotency records live in Valkey
and expire), so nothing of it is here.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import msgspec

from common.contracts import encode
from common.contracts.base import Ctx, Decision, Mode
from common.contracts.commands import CreateTransfer, Party
from common.ids import new_id
from common.settings import Settings
from common.tables import table_of
from common.topics import Topics
from compliance import rules
from compliance.models import ComplianceDecision
from compliance.service import _record as compliance_record
from ledger import repository as repo
from ledger.core.transfers import Planned, movements, plan_transfers, settle_transfers
from ledger.journal import Journal
from ledger.service import result_of
from webhooks.service import envelope

MODE: Mode = "sandbox"
CURRENCY = "USDC"
AMOUNTS = (1, 200)  # cents: 0.01 to 2.00 USDC, small beside the wallets' funding
RAIL = "provider_wallet"


@dataclass
class Tenant:
    """One tenant's funded wallets, who owns each (customer id, country code: what compliance's
    party registry says) and its transfer cap."""

    tenant_id: str
    wallets: list[Any]  # ledger.models.Wallet rows, read only
    owners: dict[str, tuple[str, str | None]]
    cap: rules.Cap


@dataclass
class Seeded:
    """What a seeding did: transfers written, refused (by the funds check or a rule), journal
    entries, rows per table, seconds."""

    transfers: int = 0
    refused: int = 0
    entries: int = 0
    seconds: float = 0.0
    by_table: dict[str, int] = field(default_factory=dict)

    def add(self, other: Seeded) -> None:
        self.transfers += other.transfers
        self.refused += other.refused
        self.entries += other.entries
        for k, v in other.by_table.items():
            self.by_table[k] = self.by_table.get(k, 0) + v

    @property
    def rate(self) -> float:
        return self.transfers / self.seconds if self.seconds else 0.0


def split(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` spread over ``weights`` (largest remainders: the parts sum to ``total``)."""
    s = sum(weights) or 1.0
    exact = [total * w / s for w in weights]
    parts = [int(x) for x in exact]
    for i in sorted(range(len(exact)), key=lambda i: parts[i] - exact[i])[: total - sum(parts)]:
        parts[i] += 1
    return parts


def weights(n: int, skew: float = 0.8) -> list[float]:
    """How a history is spread over ``n`` tenants: the i-th busiest has 1/i^skew of the
    busiest's transfers (a few large tenants, a long tail)."""
    return [1 / (i + 1) ** skew for i in range(n)]


def plan_workers(quotas: list[tuple[str, int]], workers: int) -> list[list[tuple[str, int]]]:
    """The tenants' quotas dealt to ``workers`` processes, the largest first to the least loaded."""
    groups: list[list[tuple[str, int]]] = [[] for _ in range(max(1, workers))]
    loads = [0] * len(groups)
    for tid, n in sorted(quotas, key=lambda q: -q[1]):
        i = loads.index(min(loads))
        groups[i].append((tid, n))
        loads[i] += n
    return [g for g in groups if g]


def commands(t: Tenant, n: int, rng: random.Random) -> list[CreateTransfer]:
    """``n`` book transfers between two distinct random wallets of ``t``, as the gateway hands
    them to compliance (no decision yet)."""
    out = []
    for _ in range(n):
        src, dst = rng.sample(t.wallets, 2)
        amount = f"{Decimal(rng.randint(*AMOUNTS)) / 100:.2f}"
        idem = f"hist-{os.urandom(12).hex()}"
        ctx = Ctx(request_id=new_id("req"), tenant_id=t.tenant_id, mode=MODE, idempotency_key=idem)
        out.append(
            CreateTransfer(
                command_id=new_id("cmd"),
                ctx=ctx,
                transfer_id=new_id("tr"),
                kind="transfer",
                source=Party(payment_rail=RAIL, currency=CURRENCY, amount=amount, provider_wallet_id=src.id),
                destination=Party(payment_rail=RAIL, currency=CURRENCY, provider_wallet_id=dst.id),
                amount=amount,
                currency=CURRENCY,
                idempotency_key=idem,
            )
        )
    return out


def decide(t: Tenant, cmd: CreateTransfer, day: date) -> tuple[rules.Verdict, dict[str, Any]]:
    """Compliance's rules on a book transfer between two wallets of the tenant (the facts its
    party registry and policy give: compliance.service.decide_transfer), and the inputs its
    decision row records."""
    parties = [
        rules.PartyFacts(role, wid, *t.owners[wid])
        for role, wid in (
            ("source", cmd.source.provider_wallet_id),
            ("destination", cmd.destination.provider_wallet_id),
        )
        if wid is not None
    ]
    facts = rules.TransferFacts(
        mode=MODE,
        live_enabled=False,
        kind=cmd.kind,
        amount=Decimal(cmd.amount),
        currency=CURRENCY,
        route=(RAIL, CURRENCY),
        route_approved=True,  # sandbox
        parties=parties,
        source_customer_id=parties[0].customer_id,
        external_account_id=None,
        external_account=None,
        cap=t.cap,
    )
    inputs = {
        "kind": cmd.kind,
        "amount": str(facts.amount),
        "currency": CURRENCY,
        "route": {"rail": RAIL, "currency": CURRENCY, "approved": True},
        "live_enabled": False,
        "parties": [
            {"role": p.role, "id": p.party_id, "customer_id": p.customer_id, "country_code": p.country}
            for p in parties
        ],
        "external_account": None,
        "cap": t.cap.as_inputs(),
        "day": day.isoformat(),
    }
    return rules.check_transfer(facts), inputs


@dataclass
class Suite:
    """What the seeder signs and addresses with: the suite's settings (compliance's signing
    key, the topics' prefix, the sandbox's settlement delay)."""

    settings: Settings

    @classmethod
    def of(cls, env: dict[str, str]) -> Suite:
        """The settings the services run with, from their environment (``SLUICE_*``)."""
        return cls(
            Settings.model_validate(
                {k[len("SLUICE_") :].lower(): v for k, v in env.items() if k.startswith("SLUICE_")}
            )
        )


@dataclass
class Chunk:
    """The rows of one chunk, per table, and the updates that follow them."""

    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    deltas: dict[str, Decimal] = field(default_factory=dict)
    head: tuple[int, str] | None = None
    last_sequence: int = 0
    cap_used: Decimal = Decimal(0)
    refused: int = 0

    def put(self, table: str, columns: Sequence[str], values: dict[str, Any]) -> None:
        row = [values.get(c) for c in columns]
        for i in JSON_AT.get(table, ()):  # asyncpg's jsonb codec takes text
            if row[i] is not None:
                row[i] = json.dumps(row[i])
        self.rows.setdefault(table, []).append(tuple(row))


compliance_decisions = table_of(ComplianceDecision)
COLUMNS: dict[str, list[str]] = {
    "ledger.transfers": repo.batch.TRANSFER_COLUMNS,
    "ledger.journal_entries": repo.batch.ENTRY_COLUMNS,
    "ledger.postings": repo.batch.POSTING_COLUMNS,
    "ledger.state_changes": repo.batch.CHANGE_COLUMNS,
    "ledger.inbox": ["command_id", "result"],
    "compliance.decisions": [c.name for c in compliance_decisions.c if c.name != "created_at"],
    "webhooks.events": ["event_id", "tenant_id", "mode", "type", "body", "sequence"],
}
# The JSON objects among them (the transfer's parties and fee; the decision's inputs are text).
JSON_AT = {
    "ledger.transfers": [
        COLUMNS["ledger.transfers"].index(c) for c in ("source", "destination", "developer_fee")
    ]
}


def decided(
    t: Tenant, cmds: list[CreateTransfer], suite: Suite, day: date, remaining: Decimal, out: Chunk
) -> tuple[list[CreateTransfer], dict[str, dict[str, Any]]]:
    """Compliance's part: each command decided by its rules and, allowed, taken from what is
    ``remaining`` of the day's cap (refused past it, as compliance.allowance refuses); the
    allowed ones stamped with their decision as compliance signs them (``_record``), with their
    decision rows by transfer id."""
    sign = suite.settings.signing_key("compliance").sign
    topics = Topics(suite.settings.topic_prefix)
    stamped, rows = [], {}
    for cmd in cmds:
        verdict, inputs = decide(t, cmd, day)
        if verdict.outcome != "allow" or Decimal(cmd.amount) > remaining:
            out.refused += 1
            continue
        remaining -= Decimal(cmd.amount)
        _, row = compliance_record(cmd, verdict, inputs, topics, sign)
        rows[cmd.transfer_id] = row
        decision = Decision(decision_id=row["id"], outcome="allow", rule=verdict.rule)
        stamped.append(msgspec.structs.replace(cmd, decision=decision))
    return stamped, rows


def booked(
    t: Tenant,
    stamped: list[CreateTransfer],
    locked: repo.Locked,
    suite: Suite,
    now: datetime,
    out: Chunk,
) -> list[Planned]:
    """The ledger's part, as its consumer decides a batch: the core plans the transfers, the
    transaction's journal checks their funds on the balances read locked and chains their
    entries from the head read locked; the rows it would write go to ``out``. The transfers
    accepted, in order."""
    prepared = plan_transfers(stamped, [], t.wallets, suite.settings.sandbox_settle_s, now)
    journal = Journal()
    journal.movements.extend(movements(prepared))
    journal.locked = locked
    journal.check()
    settled = settle_transfers(prepared)
    written = journal.take()
    planned = [p for p in prepared if isinstance(p, Planned)]
    accepted = [p for p in planned if not p.move.refused]
    out.refused += len(prepared) - len(accepted)
    for e in written.entries:
        out.put("ledger.journal_entries", COLUMNS["ledger.journal_entries"], e)
    for posting in written.postings:
        out.put("ledger.postings", COLUMNS["ledger.postings"], posting)
    for change in settled.changes:
        out.put("ledger.state_changes", COLUMNS["ledger.state_changes"], change)
    for p, answer in zip(prepared, settled.answers, strict=True):
        if isinstance(p, Planned) and not p.move.refused:
            out.put("ledger.transfers", COLUMNS["ledger.transfers"], p.values)
            result = encode(result_of(p.cmd, answer, None))  # type: ignore[arg-type]
            out.put(
                "ledger.inbox", COLUMNS["ledger.inbox"], {"command_id": p.cmd.command_id, "result": result}
            )
    out.deltas = dict(written.deltas)
    out.head = written.heads.get((t.tenant_id, MODE))
    return accepted


def delivered(
    accepted: list[Planned], decisions: dict[str, dict[str, Any]], day: date, sequence: int, out: Chunk
) -> None:
    """What compliance and webhooks keep of the accepted transfers: the decision rows with
    their cap holds, and the day's usage; each ``transfer.created`` event as webhooks stores it, numbered
    after ``sequence``."""
    for p in accepted:
        v = p.values
        hold = {"hold_currency": v["currency"], "hold_day": day, "hold_amount": v["amount"]}
        out.put("compliance.decisions", COLUMNS["compliance.decisions"], decisions[v["id"]] | hold)
        out.cap_used += v["amount"]
        for event in p.events:
            sequence += 1
            row = {
                "event_id": event.event_id,
                "tenant_id": event.tenant_id,
                "mode": event.mode,
                "type": type(event).__struct_config__.tag,
                "body": envelope(event, sequence),  # type: ignore[arg-type]
                "sequence": sequence,
            }
            out.put("webhooks.events", COLUMNS["webhooks.events"], row)
    out.last_sequence = sequence
