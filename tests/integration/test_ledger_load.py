"""Load: 1,500 book transfers per mix (``SLUICE_LEDGER_LOAD_TRANSFERS``) among 20
wallets through the gateway, from 24 concurrent clients, over the two gateways and the two
ledger instances of the test stack; once uniform, once with half of them from one hot wallet.

Correctness at scale, not speed (speed is ``make bench``'s, printed against its targets): every
transfer completes, no cent is created or lost, the ledger's invariants hold, PostgreSQL counts
no deadlock (``pg_stat_database.deadlocks``), the ledger logs hold no ``deadlock detected``,
and no batch fell back to one by one: ``sluice_batch_splits_total`` of every ledger instance,
read from its ``/metrics``, did not move (the counter the runtime increments when it does,
see tests/unit/test_consume_splits.py). The measured figures are printed and written to
``tests/artifacts/ledger_load.json``; no throughput floor is asserted, which a slow CI machine
could trip or a fast one hide behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import statistics
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import Stack, make_tenant
from tests.support.db import pg_kwargs
from tests.support.flows import funded
from tests.support.ledger import deadlocks, ledger_invariants
from tests.support.load import drive

pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.timeout(1200)]

TRANSFERS = int(os.environ.get("SLUICE_LEDGER_LOAD_TRANSFERS", "1500"))  # per mix
WALLETS = 20
CLIENTS = 24
ARTIFACT = Path(__file__).resolve().parents[1] / "artifacts" / "ledger_load.json"


def cpu_seconds(stack: Stack) -> dict[str, float]:
    """CPU time used so far by each service (instances summed), the broker, this test
    process (the load generator) and the PostgreSQL backends serving the test database."""
    out: dict[str, float] = {}

    def add(name: str, pid: int | None = None, p: psutil.Process | None = None) -> None:
        with contextlib.suppress(psutil.Error):  # a process another test stopped is skipped
            t = (p or psutil.Process(pid)).cpu_times()
            out[name] = out.get(name, 0.0) + t.user + t.system

    for proc in stack.suite.procs:
        add(proc.name, proc.popen.pid)
    for broker in stack.stores.processes():
        add("broker+redis", broker.pid)
    add("load generator", p=psutil.Process())
    db = make_url(stack.stores.database_url).database or ""
    for p in psutil.process_iter(["name", "cmdline"]):
        if (p.info["name"] or "").startswith("postgres") and db in " ".join(p.info["cmdline"] or []):
            add("postgresql", p=p)
    return out


def batch_splits(stack: Stack) -> float:
    """``sluice_batch_splits_total`` summed over the ledger instances (their ``/metrics``)."""
    total = 0.0
    for proc in stack.ledgers:
        for line in httpx.get(proc.url + "/metrics", timeout=10).text.splitlines():
            if line.startswith("sluice_batch_splits_total{"):
                total += float(line.rsplit(" ", 1)[1])
    return total


def ledger_logs(stack: Stack) -> str:
    return "".join(p.log.read_text(errors="replace") for p in stack.ledgers)


def percentile(xs: list[float], p: float) -> float:
    return statistics.quantiles(xs, n=1000, method="inclusive")[int(p * 10) - 1]


async def run_mix(stack: Stack, mix: str) -> dict[str, Any]:
    t = make_tenant(stack, rate_limit=1_000_000)
    ws = [funded(t, "10000.00" if i == 0 else "1000.00")["wallet_id"] for i in range(WALLETS)]
    rng = random.Random(f"{mix}-11")
    plan = []
    for n in range(TRANSFERS):
        src = ws[0] if mix == "hot" and n % 2 == 0 else rng.choice(ws)
        dst = rng.choice([w for w in ws if w != src])
        plan.append((src, dst, f"{rng.randint(1, 100) / 100:.2f}"))
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    try:
        total = "SELECT sum(balance) FROM ledger.accounts WHERE wallet_id = ANY($1::text[])"
        before, dl_before = await db.fetchval(total, ws), await deadlocks(db)
        logs_before = len(ledger_logs(stack))
        splits_before = batch_splits(stack)
        cpu_before = cpu_seconds(stack)
        elapsed, latencies, answers, retried = await drive(t, plan, CLIENTS)
        cpu_after = cpu_seconds(stack)
        bad = [a for a in answers if a[0] != 201 or a[1]["data"]["state"] != "completed"]
        assert not bad, bad[:5]
        assert await db.fetchval(total, ws) == before
        moved = await db.fetchval(
            "SELECT count(*) FROM ledger.transfers WHERE tenant_id = $1 AND state = 'completed'", t.tenant_id
        )
        assert moved == TRANSFERS
        await ledger_invariants(db, t.tenant_id)
        assert await deadlocks(db) == dl_before, "PostgreSQL detected a deadlock"
    finally:
        await db.close()
    new_logs = ledger_logs(stack)[logs_before:]
    assert "deadlock detected" not in new_logs
    assert batch_splits(stack) == splits_before, "a batch failed and ran one by one"
    answered = {a[1]["data"]["transfer_id"] for a in answers}
    figures = {
        "mix": mix,
        "transfers": len(answered),  # distinct transfers answered: each request got its own
        "wallets": WALLETS,
        "clients": CLIENTS,
        "seconds": round(elapsed, 2),
        "transfers_per_s": round(TRANSFERS / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1),
        "retried_requests": retried,
        "sum_checked": str(Decimal(before)),
        # CPU milliseconds per transfer, by process (PostgreSQL: this database's backends).
        "cpu_ms_per_transfer": {
            k: round(1000 * (cpu_after.get(k, 0.0) - v) / TRANSFERS, 2) for k, v in sorted(cpu_before.items())
        },
        "machine_load_avg_1m": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
    }
    print(f"\nledger-load {json.dumps(figures)}")
    return figures


def test_transfers_at_speed_through_two_gateways_and_two_ledgers(stack: Stack) -> None:
    results = [asyncio.run(run_mix(stack, mix)) for mix in ("uniform", "hot")]
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(json.dumps({"run": uuid.uuid4().hex[:8], "results": results}, indent=2))
    # Measured, not the constant asked for: as many distinct transfers answered as requests
    # sent (two requests answered with one transfer would be a reply given to the wrong
    # caller), and a CPU figure for every process the load went through (a process that
    # could not be read is left out of cpu_seconds, which would hide its share).
    assert [r["transfers"] for r in results] == [TRANSFERS, TRANSFERS], results
    for r in results:
        cpu = r["cpu_ms_per_transfer"]
        missing = {"gateway", "compliance", "ledger", "postgresql", "load generator"} - {
            k for k, v in cpu.items() if v > 0
        }
        assert not missing, (r["mix"], cpu)
