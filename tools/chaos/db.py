"""What the chaos run reads from PostgreSQL, through the superuser's URL: with a cluster
(tools.chaos.pg_cluster) every node, ``target_session_attrs=read-write``, so the reads come from
the node that is primary now, found as the services find it (docs/operations/failover.md,
"What to give the services")."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from decimal import Decimal

import asyncpg

from common.db import asyncpg_kwargs
from tools.chaos import audit as chaos_audit


async def connect(url: str) -> asyncpg.Connection:
    return await asyncpg.connect(**asyncpg_kwargs(url))


async def tenant_of(url: str, wallet_id: str) -> str:
    conn = await connect(url)
    try:
        return str(await conn.fetchval("SELECT tenant_id FROM ledger.wallets WHERE id = $1", wallet_id))
    finally:
        await conn.close()


async def balances(url: str, tenant_id: str) -> dict[str, Decimal]:
    conn = await connect(url)
    try:
        rows = await conn.fetch(
            "SELECT wallet_id, sum(balance) AS total FROM ledger.accounts WHERE tenant_id = $1"
            " AND wallet_id IS NOT NULL GROUP BY wallet_id",
            tenant_id,
        )
        return {r["wallet_id"]: Decimal(r["total"]) for r in rows}
    finally:
        await conn.close()


async def journal_entries(url: str) -> int:
    conn = await connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM ledger.journal_entries"))
    finally:
        await conn.close()


async def dead_letters_when_idle(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    """The dead letters once their count has stopped changing for 5 s (at most 60 s): read
    right after the load, a letter still on its way would be missed."""
    sql = "SELECT service, topic, error FROM identity.dead_letters"
    dead, stable_since, started = await conn.fetch(sql), time.monotonic(), time.monotonic()
    while time.monotonic() - stable_since < 5 and time.monotonic() - started < 60:
        await asyncio.sleep(1)
        now = await conn.fetch(sql)
        if len(now) != len(dead):
            dead, stable_since = now, time.monotonic()
    return list(dead)


@dataclass
class Readout:
    rows: list[asyncpg.Record]  # the tenant's transfers: id, idempotency_key, state
    entries: list[asyncpg.Record]  # journal entries per transfer and kind
    broken: list[asyncpg.Record]  # ledger invariants broken (unbalanced entries, balances)
    dead: list[asyncpg.Record]  # dead letters, once idle
    port: int  # the node the reads came from


async def read(url: str, tenant_id: str) -> Readout:
    conn = await connect(url)
    try:
        rows = await conn.fetch(
            "SELECT id, idempotency_key, state FROM ledger.transfers WHERE tenant_id = $1", tenant_id
        )
        entries = await conn.fetch(chaos_audit.ENTRIES_SQL, tenant_id)
        broken = await conn.fetch(chaos_audit.UNBALANCED_SQL, tenant_id)
        broken += await conn.fetch(chaos_audit.BALANCE_SQL, tenant_id)
        # Transient faults are never dead-lettered (docs/failure-model.md, "Two kinds of failure"):
        # admin keeps every one.
        dead = await dead_letters_when_idle(conn)
        port = int(await conn.fetchval("SELECT inet_server_port()"))
        return Readout(list(rows), list(entries), list(broken), dead, port)
    finally:
        await conn.close()
