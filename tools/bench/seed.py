"""The history seeder of ``make bench-history`` (docs/performance/index.md, "A long history"):
fills a running suite's database with N book transfers between the funded wallets it already
holds, as fast as COPY takes them, each leaving what an API transfer leaves
(tools.bench.history computes every row with the services' own code).

A chunk of one tenant is one transaction: the tenant's wallet accounts, chain head, events'
sequence and day's cap usage are read locked (``FOR UPDATE``, in the ledger's lock order) at
its start, so the seeder extends whatever the chain holds, API entries included; its rows go in
by COPY (``asyncpg`` ``copy_records_to_table``), the balances, head, cap usage and sequence by
one statement each. Tenants are split between ``workers`` processes (the chains are
independent). A transfer refused (by the funds check, a rule or the day's cap) is left out, as
the API leaves it out, and made up by another.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, date, datetime
from decimal import Decimal
from multiprocessing import get_context

import asyncpg

from compliance import rules
from ledger import repository as repo
from ledger.core.chain import GENESIS
from ledger.models import Wallet
from ledger.repository.base import read_only
from tools.bench.history import (
    COLUMNS,
    CURRENCY,
    MODE,
    Chunk,
    Seeded,
    Suite,
    Tenant,
    booked,
    commands,
    decided,
    delivered,
    plan_workers,
    split,
    weights,
)

CHUNK = int(os.environ.get("BENCH_HISTORY_CHUNK", "4000"))  # transfers per transaction


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
    """``python -m tools.bench.seed DSN TRANSFERS [WORKERS]``: seed the database the suite
    whose settings are in the environment (``SLUICE_*``) runs on."""
    if len(argv) not in (2, 3):
        print(main.__doc__)
        return 2
    seed(argv[0], dict(os.environ), int(argv[1]), int(argv[2]) if len(argv) == 3 else 2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
