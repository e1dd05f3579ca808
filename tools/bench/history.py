"""The history seeder of ``make bench-history`` (docs/performance/index.md, "A long history"): fills a
running suite's database with N book transfers between the funded wallets it already holds, as
fast as COPY takes them, each leaving what an API transfer leaves.

Every row is computed by the services' own code, never by a copy of it:

- the ledger's: :func:`ledger.core.transfers.plan_transfers` plans each transfer (its row in its
  final state, its two state changes, its ``transfer.created`` event, its movement: the hold
  and the settlement), the transaction's :class:`ledger.journal.Journal` checks the funds and
  links the entries into the tenant's hash chain from the head it reads locked (the core's
  ``entries.check_funds`` and ``entries.chain_rows``), :func:`ledger.core.transfers.settle_transfers`
  answers each command, and the inbox keeps :func:`ledger.service.result_of` encoded, as the
  ledger's consumer does;
- compliance's: the decision row (its inputs, the signed command it published) from
  ``compliance.service._record`` with the suite's signing key, and the cap hold and the day's
  usage the allowance keeps;
- webhooks': the event as stored, :func:`webhooks.service.envelope` numbered from the tenant's
  ``event_sequences`` row.

The gateway keeps nothing per transfer in PostgreSQL (its idempotency records live in Valkey
and expire), so nothing of it is seeded. A chunk of one tenant is one transaction: the tenant's
chain head, wallet accounts and event sequence are read locked (``FOR UPDATE``) at its start,
so the seeder extends whatever the chain holds, API entries included; its rows go in by COPY
(``asyncpg`` ``copy_records_to_table``), the balances, head and sequence by one update each.
Tenants are split between ``workers`` processes (the chains are independent). A transfer the
funds check refuses is left out, as the API leaves it out (no row; counted).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from multiprocessing import get_context
from typing import Any

import asyncpg
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
from ledger.core.chain import GENESIS
from ledger.core.transfers import Planned, movements, plan_transfers, settle_transfers
from ledger.journal import Journal
from ledger.models import Wallet
from ledger.repository.base import read_only
from ledger.service import result_of
from webhooks.service import envelope

CHUNK = int(os.environ.get("BENCH_HISTORY_CHUNK", "4000"))  # transfers per transaction
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


async def tenants(
    conn: asyncpg.Connection, default_cap: Decimal, only: Sequence[str] | None = None
) -> list[Tenant]:
    """The tenants with at least two USDC wallets in sandbox (``only``: of these), their
    wallets, owners and cap (``default_cap`` where the tenant set none, as compliance's
    snapshot gives it in sandbox)."""
    rows = await conn.fetch(
        "SELECT w.*, c.country_code FROM ledger.wallets w JOIN ledger.customers c ON c.id = w.customer_id"
        " WHERE w.mode = $1 AND w.symbol = $2 ORDER BY w.tenant_id, w.id",
        MODE,
        CURRENCY,
    )
    caps = {
        r["tenant_id"]: r for r in await conn.fetch("SELECT * FROM compliance.caps WHERE mode = $1", MODE)
    }
    found: dict[str, Tenant] = {}
    for r in rows:
        tid = r["tenant_id"]
        if only is not None and tid not in only:
            continue
        if tid not in found:
            c = caps.get(tid)
            cap = (
                rules.Cap(default_cap, default_cap, None, "sandbox_default")
                if c is None
                else rules.Cap(c["per_transfer"], c["daily"], c["review_threshold"], "tenant")
            )
            found[tid] = Tenant(tid, [], {}, cap)
        values = {k: v for k, v in dict(r).items() if k != "country_code"}
        found[tid].wallets.append(read_only(Wallet, values))
        found[tid].owners[r["id"]] = (r["customer_id"], r["country_code"])
    return [t for t in found.values() if len(t.wallets) >= 2]


def split(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` spread over ``weights`` (largest remainders: the parts sum to ``total``)."""
    s = sum(weights) or 1.0
    exact = [total * w / s for w in weights]
    parts = [int(x) for x in exact]
    for i in sorted(range(len(exact)), key=lambda i: parts[i] - exact[i])[: total - sum(parts)]:
        parts[i] += 1
    return parts


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
    "compliance.cap_holds": ["transfer_id", "tenant_id", "mode", "currency", "day", "amount", "command_id"],
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
    """What compliance and webhooks keep of the accepted transfers: the decision rows, the cap
    holds and the day's usage; each ``transfer.created`` event as webhooks stores it, numbered
    after ``sequence``."""
    for p in accepted:
        v = p.values
        out.put("compliance.decisions", COLUMNS["compliance.decisions"], decisions[v["id"]])
        hold = {**v, "transfer_id": v["id"], "day": day, "command_id": p.cmd.command_id}
        out.put("compliance.cap_holds", COLUMNS["compliance.cap_holds"], hold)
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


async def _locked(conn: asyncpg.Connection, t: Tenant, day: date) -> tuple[repo.Locked, int, Decimal]:
    """Inside the chunk's transaction, in the ledger's lock order: the tenant's wallet accounts
    (id order), then its chain head (created at the genesis if missing), then its events'
    sequence (webhooks') and its day's cap usage (compliance's). What the journal checks and
    chains from, the last event number and what the day has used."""
    rows = await conn.fetch(
        "SELECT id, balance FROM ledger.accounts WHERE tenant_id = $1 AND mode = $2"
        " AND wallet_id IS NOT NULL ORDER BY id FOR UPDATE",
        t.tenant_id,
        MODE,
    )
    head = await conn.fetchrow(
        "INSERT INTO ledger.journal_chains (tenant_id, mode, seq, head_hash) VALUES ($1, $2, 0, $3)"
        " ON CONFLICT (tenant_id, mode) DO UPDATE SET seq = journal_chains.seq RETURNING seq, head_hash",
        t.tenant_id,
        MODE,
        GENESIS,
    )
    sequence = await conn.fetchval(
        "SELECT last_sequence FROM webhooks.event_sequences WHERE tenant_id = $1 AND mode = $2 FOR UPDATE",
        t.tenant_id,
        MODE,
    )
    used = await conn.fetchval(
        "SELECT used FROM compliance.cap_usage WHERE tenant_id = $1 AND mode = $2 AND currency = $3"
        " AND day = $4 FOR UPDATE",
        t.tenant_id,
        MODE,
        CURRENCY,
        day,
    )
    balances = {r["id"]: r["balance"] for r in rows}
    heads: dict[tuple[str, str], tuple[int, str]] = {(t.tenant_id, MODE): (head["seq"], head["head_hash"])}
    return repo.Locked(set(), balances, heads), sequence or 0, used or Decimal(0)


async def _write(conn: asyncpg.Connection, t: Tenant, day: date, out: Chunk) -> None:
    """The chunk's rows by COPY; the balances moved, the chain's head, the day's cap usage and
    the events' sequence by one statement each."""
    for name in COLUMNS:  # in foreign-key order: a transfer before its state changes
        records = out.rows.get(name)
        if not records:
            continue
        schema, table = name.split(".")
        await conn.copy_records_to_table(table, schema_name=schema, columns=COLUMNS[name], records=records)
    deltas = sorted((a, d) for a, d in out.deltas.items() if d)
    await conn.execute(
        "UPDATE ledger.accounts a SET balance = a.balance + d.delta"
        " FROM unnest($1::text[], $2::numeric[]) AS d(id, delta) WHERE a.id = d.id",
        [a for a, _ in deltas],
        [d for _, d in deltas],
    )
    if out.head is not None:
        await conn.execute(
            "UPDATE ledger.journal_chains SET seq = $3, head_hash = $4 WHERE tenant_id = $1 AND mode = $2",
            t.tenant_id,
            MODE,
            *out.head,
        )
    await conn.execute(
        "INSERT INTO compliance.cap_usage (tenant_id, mode, currency, day, used) VALUES ($1, $2, $3, $4, $5)"
        " ON CONFLICT (tenant_id, mode, currency, day) DO UPDATE SET used = cap_usage.used + EXCLUDED.used",
        t.tenant_id,
        MODE,
        CURRENCY,
        day,
        out.cap_used,
    )
    await conn.execute(
        "INSERT INTO webhooks.event_sequences (tenant_id, mode, last_sequence) VALUES ($1, $2, $3)"
        " ON CONFLICT (tenant_id, mode) DO UPDATE SET last_sequence = EXCLUDED.last_sequence",
        t.tenant_id,
        MODE,
        out.last_sequence,
    )


async def chunk(conn: asyncpg.Connection, t: Tenant, n: int, suite: Suite, rng: random.Random) -> Seeded:
    """``n`` transfers of tenant ``t`` in one transaction."""
    now = datetime.now(UTC)
    day = now.date()
    out = Chunk()
    cmds = commands(t, n, rng)
    async with conn.transaction():
        locked, sequence, used = await _locked(conn, t, day)
        stamped, decisions = decided(t, cmds, suite, day, t.cap.daily - used, out)
        accepted = booked(t, stamped, locked, suite, now, out)
        delivered(accepted, decisions, day, sequence, out)
        await _write(conn, t, day, out)
    entries = len(out.rows.get("ledger.journal_entries", []))
    return Seeded(len(accepted), out.refused, entries, by_table={k: len(v) for k, v in out.rows.items()})


async def _seed_tenants(dsn: str, env: dict[str, str], quotas: list[tuple[str, int]], seed: int) -> Seeded:
    """One worker: its tenants' quotas, a chunk of each tenant in turn (so that every tenant's
    history grows together), on one connection."""
    suite, rng, done = Suite.of(env), random.Random(seed), Seeded()
    started = time.monotonic()
    conn = await asyncpg.connect(dsn)
    try:
        found = {
            t.tenant_id: t
            for t in await tenants(conn, suite.settings.sandbox_default_cap, [tid for tid, _ in quotas])
        }
        left = {tid: n for tid, n in quotas if tid in found}
        while left:
            for tid in list(left):
                part = await chunk(conn, found[tid], min(CHUNK, left[tid]), suite, rng)
                done.add(part)
                left[tid] -= part.transfers  # a refused transfer is made up by another
                if left[tid] <= 0 or not part.transfers:  # none accepted: the tenant is spent
                    del left[tid]
            print(
                f"history seed (worker {seed}): {done.transfers} transfers, {done.entries} journal entries,"
                f" {done.transfers / max(1e-9, time.monotonic() - started):.0f} transfers/s",
                flush=True,
            )
    finally:
        await conn.close()
    done.seconds = time.monotonic() - started
    return done


def _worker(dsn: str, env: dict[str, str], quotas: list[tuple[str, int]], seed: int) -> Seeded:
    return asyncio.run(_seed_tenants(dsn, env, quotas, seed))


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


def seed(
    dsn: str, env: dict[str, str], transfers: int, workers: int = 2, only: Sequence[str] | None = None
) -> Seeded:
    """Seed ``transfers`` book transfers over the tenants the database holds (``only``: these),
    spread by :func:`weights`, in ``workers`` processes; prints and returns what was written."""

    dsn = dsn.replace("postgresql+asyncpg://", "postgresql://", 1)  # SQLAlchemy's URL, or asyncpg's

    async def found() -> list[Tenant]:
        conn = await asyncpg.connect(dsn)
        try:
            return await tenants(conn, Suite.of(env).settings.sandbox_default_cap, only)
        finally:
            await conn.close()

    ts = asyncio.run(found())
    if not ts:
        raise LookupError("no tenant with two funded USDC wallets in sandbox to seed a history for")
    quotas = [(t.tenant_id, n) for t, n in zip(ts, split(transfers, weights(len(ts))), strict=True) if n]
    started, total = time.monotonic(), Seeded()
    groups = plan_workers(quotas, workers)
    if len(groups) == 1:  # in this process (a test's in-process stack, a small history)
        total.add(_worker(dsn, env, groups[0], 0))
    else:  # spawned, not forked: the caller may run threads (the services of a test stack)
        with ProcessPoolExecutor(len(groups), mp_context=get_context("spawn")) as pool:
            for part in pool.map(
                _worker, *zip(*[(dsn, env, g, i) for i, g in enumerate(groups)], strict=True)
            ):
                total.add(part)
    total.seconds = time.monotonic() - started
    print(
        f"history seeded: {total.transfers} transfers ({total.refused} refused) over {len(quotas)} tenants,"
        f" {total.entries} journal entries in {total.seconds:.0f} s ({total.rate:.0f} transfers/s); rows "
        + ", ".join(f"{k} {v}" for k, v in sorted(total.by_table.items())),
        flush=True,
    )
    return total


def main(argv: Sequence[str]) -> int:
    """``python -m tools.bench.history DSN TRANSFERS [WORKERS]``: seed the database the suite
    whose settings are in the environment (``SLUICE_*``) runs on."""
    if len(argv) not in (2, 3):
        print(main.__doc__)
        return 2
    seed(argv[0], dict(os.environ), int(argv[1]), int(argv[2]) if len(argv) == 3 else 2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
