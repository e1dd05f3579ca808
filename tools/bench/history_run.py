"""``make bench-history``: does the suite's cost stay flat with a history of
``BENCH_HISTORY_TRANSFERS`` (1,000,000) transfers in its database (docs/performance/index.md,
"A long history")?

One stack (tools.bench.stack). The six tenants of the capacity steps (tools.bench.overload.part)
and ``BENCH_HISTORY_TENANTS`` (14) more with ``BENCH_HISTORY_WALLETS`` (50) funded wallets
each, all through the API. On the empty database: the suite's transfer capacity
(tools.bench.capacity.search over transfers_step, as ``make bench``) and its CPU per transfer
(tools.bench.abab.open_turn, ``BENCH_PAIRS`` turns at 0.8 of that capacity, every process of
the stack counted). Then the history (tools.bench.seed) over all twenty tenants, the wait
until the ledger has anchored it and the stack is quiet, ``VACUUM ANALYZE`` (what autovacuum
would have done over the days such a history takes), and the same two figures again, the CPU
at the same rate as on the empty database. Last, the ledger's verify_journal and reconcile
(tools.bench.history_audit), timed; their findings are the proof the history is the suite's.
The verdict (tools.bench.history_targets) ends the run: ``MISSED:`` and ``ERROR:`` lines
exit 1.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg

from tools.bench import abab, history_audit, quiesce, seed
from tools.bench.capacity import search, transfers_step
from tools.bench.history_targets import Figures, History, exit_code, per_100k, ratio, verdict
from tools.bench.overload.part import provision_tenants
from tools.bench.profile import idle_shares
from tools.bench.stack import BenchStack, bench_stack, pg_settings
from tools.stack.provision import provision

TRANSFERS = int(os.environ.get("BENCH_HISTORY_TRANSFERS", "1000000"))
TENANTS = int(os.environ.get("BENCH_HISTORY_TENANTS", "14"))  # beside the six measured
WALLETS = int(os.environ.get("BENCH_HISTORY_WALLETS", "50"))
WORKERS = int(os.environ.get("BENCH_HISTORY_WORKERS", "2"))
START = float(os.environ.get("BENCH_HISTORY_START", "150"))  # where the first capacity search starts
SETTLE_S = float(os.environ.get("BENCH_HISTORY_SETTLE_S", "1800"))  # the ledger anchoring the history
QUIET_TIMEOUT_S = float(os.environ.get("BENCH_QUIET_TIMEOUT_S", "300"))
CPU_SHARE = 0.8  # of the empty database's capacity: both CPU figures at this one rate


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f}"


def measure(
    label: str,
    url: str,
    tenants: list[dict[str, Any]],
    pids: dict[str, int],
    start: float,
    cpu_rate: float | None,
    between: Callable[[], None],
) -> Figures:
    """The suite's capacity (searched from ``start``) and its CPU per transfer in
    ``abab.PAIRS`` open-loop turns at ``cpu_rate`` (None: 0.8 of the capacity just found),
    the median turn; printed with the load average."""
    capacity, why = search(f"suite transfers ({label})", transfers_step(url, tenants), start, between)
    fig = Figures(capacity=capacity if not why else None)
    rate = cpu_rate if cpu_rate is not None else CPU_SHARE * capacity
    if rate <= 0:
        return fig
    per_turn = []
    for i in range(abab.PAIRS):
        between()
        rps, used, ok, bad = abab.open_turn(url, tenants, rate, pids)
        per_turn.append(abab.cpu_ms(used, ok))
        print(
            f"history cpu ({label}) turn {i + 1}: open loop at {rate:.0f}/s, {rps:.0f} 2xx/s, {bad} not 2xx,"
            f" {per_turn[-1]:.2f} ms CPU per transfer [{load()}]",
            flush=True,
        )
    fig.cpu_ms = statistics.median(per_turn)
    print(
        f"bench-history ({label}): capacity {capacity:.0f}/s{f' ({why})' if why else ''}; CPU per transfer"
        f" {abab.spread(per_turn)} ms at {rate:.0f}/s [{load()}]",
        flush=True,
    )
    return fig


async def _vacuum(dsn: str) -> float:
    """VACUUM ANALYZE the whole database: what autovacuum would have done over the days a real
    history takes (the seeder writes it in minutes)."""
    started = time.monotonic()
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()
    return time.monotonic() - started


def _more_tenants(stack: BenchStack) -> None:
    gw, admin = stack.procs["gateway"].url, stack.procs["admin"].url
    t0 = time.monotonic()
    for _ in range(TENANTS):
        asyncio.run(provision(gw, admin, stack.token, WALLETS, funding="1000.00"))
    print(
        f"history tenants: {TENANTS} more, {WALLETS} funded wallets each, in {time.monotonic() - t0:.0f} s",
        flush=True,
    )


def seed_history(stack: BenchStack, h: History, quiet: Callable[[float], tuple[bool, str]]) -> None:
    """The history, the wait for the ledger to anchor it (and the stack to be quiet), VACUUM
    ANALYZE; each printed with its time."""
    seeded = seed.seed(stack.asyncpg_dsn, stack.suite.env, TRANSFERS, WORKERS)
    h.seeded = seeded.transfers
    t0 = time.monotonic()
    ok, text = quiet(SETTLE_S)
    print(f"history settled (the ledger anchoring it) in {time.monotonic() - t0:.0f} s: {text}", flush=True)
    if not ok:
        h.errors.append(f"the stack was not quiet {SETTLE_S:.0f} s after seeding: {text}")
    print(
        f"VACUUM ANALYZE after seeding: {asyncio.run(_vacuum(stack.asyncpg_dsn)):.0f} s [{load()}]",
        flush=True,
    )


def audit(stack: BenchStack, h: History) -> None:
    a = history_audit.audit(stack.suite.env)
    h.entries, h.verify_s, h.reconcile_s, h.findings = a.entries, a.verify_s, a.reconcile_s, a.findings()
    print(
        f"bench-history audit: verify_journal {'ok' if a.journal.get('ok') else 'NOT OK'} over {a.entries}"
        f" entries in {a.verify_s:.0f} s ({per_100k(a.verify_s, a.entries) or 0:.1f} s per 100,000, anchored"
        f" chains {a.journal.get('anchored', '-')}); reconcile of {len(a.reconciled)} tenants"
        f" {'ok' if all(r.get('ok') for r in a.reconciled.values()) else 'NOT OK'} in {a.reconcile_s:.0f} s"
        f" ({per_100k(a.reconcile_s, a.entries) or 0:.1f} s per 100,000) [{load()}]",
        flush=True,
    )
    for finding in h.findings:
        print(f"finding: {finding}", flush=True)


def run(stack: BenchStack, h: History) -> None:
    pids, procs, dsn = stack.pids, stack.procs, stack.asyncpg_dsn
    print("postgresql: " + ", ".join(f"{k}={v}" for k, v in pg_settings(dsn).items()), flush=True)
    idle_total = sum(idle_shares(pids, 10).values())
    metrics = [p.metrics_url for p in procs.values()]

    def quiet(timeout_s: float) -> tuple[bool, str]:
        return quiesce.wait(pids, metrics, dsn, idle_total, timeout_s)

    def between() -> None:
        ok, text = quiet(QUIET_TIMEOUT_S)
        print(f"before turn: {text}", flush=True)
        if not ok:
            h.errors.append(f"a turn started before the stack was quiet: {text}")

    url = procs["gateway"].url + "/v1/transfers"
    tenants = provision_tenants(procs["gateway"].url, procs["admin"].url, stack.token)
    _more_tenants(stack)
    between()
    h.empty = measure("empty database", url, tenants, pids, START, None, between)
    seed_history(stack, h, quiet)  # even without the first figures: the checks' times still count
    rate = CPU_SHARE * h.empty.capacity if h.empty.capacity else None  # None: the full side's own
    h.full = measure(f"{h.seeded} transfers", url, tenants, pids, h.empty.capacity or START, rate, between)
    audit(stack, h)


def main() -> int:
    h = History(asked=TRANSFERS)
    work = Path(tempfile.mkdtemp(prefix="sluice-bench-history-"))
    try:
        with bench_stack(work) as stack:
            try:
                run(stack, h)
            except Exception as exc:  # noqa: BLE001  # a part that broke is an ERROR: line; the verdict prints
                traceback.print_exc()
                h.errors.append(f"the run stopped: {exc!r}")
    finally:
        shutil.rmtree(work, ignore_errors=True)  # a million transfers' database: gigabytes
    cap, cpu = ratio(h.full.capacity, h.empty.capacity), ratio(h.full.cpu_ms, h.empty.cpu_ms)
    print(
        f"bench-history: {h.seeded} transfers, capacity ratio {'-' if cap is None else f'{cap:.2f}'},"
        f" CPU per transfer ratio {'-' if cpu is None else f'{cpu:.2f}'};"
        f" verify_journal {per_100k(h.verify_s, h.entries) or 0:.1f} s and reconcile"
        f" {per_100k(h.reconcile_s, h.entries) or 0:.1f} s per 100,000 entries [{load()}]",
        flush=True,
    )
    for line in verdict(h):
        print(line, flush=True)
    return exit_code(h)


if __name__ == "__main__":
    sys.exit(main())
