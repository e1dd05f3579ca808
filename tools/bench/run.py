"""``make bench``: end-to-end throughput and latency of POST /v1/customers and of
POST /v1/transfers (tools.bench.transfers) beside two baselines each, measured in the same
run on the same machine, on a fresh embedded stack. ``BENCH_PARTS`` (customers, transfers,
overload, sizing) picks the parts; ``BENCH_IDLE_S=0`` skips the idle measurement. ``sizing``
(tools.bench.sizing) measures what one transfer and one customer cost, the inputs
of docs/operations/sizing.md, and judges the transfer's counts (WAL, row writes, Kafka bytes,
offset commits, CPU at 100/s).

1. bare: a Litestar endpoint that answers at once; 2. monolith: Litestar doing a fraction of the
work synchronously with asyncpg (the floor, tools.bench.baselines); 3. samecontract: the
services' own code in one process, one transaction per request (tools.bench.samecontract), the
baseline the ratios are judged against; 4. e2e: the suite (gateway -> compliance -> ledger -> gateway over
Kafka), one process per service. Load comes from separate processes (tools.bench.load, wrk, the
overload driver). One capacity (tools.bench.capacity; docs/performance/index.md): the highest
open-loop rate with p99 <= 500 ms and at most 1 % not 2xx, searched the same way for both
baselines and the suite; the ratios are capacity over capacity (judged over the same-contract
baseline's, the minimal monolith's printed beside them), and the half load, 2x and 4x
are multiples of the suite's. After the capacities, the CPU sweep (tools.bench.sweep): CPU per
transfer of the suite and of the same-contract baseline at ``BENCH_SWEEP_RATES`` (100, 200,
350, 500/s) and at each one's capacity, a ``sweep:`` line per point; the 350/s pair is the
judged fixed-rate CPU multiple. The last lines are the verdict (tools.bench.targets): a ``MISSED:``
line per missed target, an ``ERROR:`` line per part not measured; either exits 1.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tools.bench import capacity as bench_capacity
from tools.bench import plot, quiesce
from tools.bench import sizing as bench_sizing
from tools.bench import sweep as bench_sweep
from tools.bench import transfers as bench_transfers
from tools.bench.measure import (
    baseline_process,
    cpu_report,
    cpu_seconds,
    cpu_times,
    peak_rss_mb,
    run_load,
    steal_pct,
)
from tools.bench.overload import part as bench_overload
from tools.bench.profile import idle_shares, shares_line
from tools.bench.stack import bench_stack, pg_settings
from tools.bench.targets import IDLE_STACK_MAX, Results, exit_code, verdict
from tools.bench.transfers import CONNECTIONS, DURATION
from tools.stack.suite import Proc

BODY = json.dumps(
    {
        "account_type": "individual",
        "email": "ada@example.com",
        "country_code": "US",
        "service_user_id": "u-1",
        "full_name": "Ada Lovelace",
    }
)


def load(
    url: str, headers: list[str], *, duration: float = DURATION, rate: float = 0, unique: bool = False
) -> dict[str, float]:
    args = ["--body", BODY, "--duration", str(duration), "--rate", str(rate)]
    args += ["--connections", str(CONNECTIONS), *(["--unique"] if unique else [])]
    return run_load(url, *args, headers=headers)


def settle(url: str, headers: list[str], timeout: float = 90.0) -> bool:
    """Wait until the pipeline answers one request quickly twice in a row: /readyz is up
    before every consumer group has its partitions (a first join takes seconds), and a
    measurement started earlier would count that wait as latency."""
    hs = dict(h.split(": ", 1) for h in headers)
    deadline, quick = time.monotonic() + timeout, 0
    while quick < 2 and time.monotonic() < deadline:
        t0 = time.monotonic()
        r = httpx.post(
            url,
            content=BODY,
            headers={**hs, "Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex},
            timeout=30,
        )
        quick = quick + 1 if r.status_code == 201 and time.monotonic() - t0 < 0.5 else 0
    return quick >= 2


def baseline(kind: str, dsn: str) -> dict[str, float]:
    with baseline_process(kind, dsn) as (p, base):
        url = base + "/v1/customers"
        load(url, [], duration=2)
        res = load(url, [])
        res["peak_rss_mb"] = peak_rss_mb(p.pid)
        return res


QUIET_TIMEOUT_S = float(os.environ.get("BENCH_QUIET_TIMEOUT_S", "300"))  # the wait between turns
PARTS = set(os.environ.get("BENCH_PARTS", "sizing,customers,transfers,overload").split(","))


def customers_e2e(
    procs: dict[str, Proc],
    token: str,
    pids: dict[str, int],
    mono: dict[str, float],
    results: Results,
    dsn: str,
    between: Callable[[], None],
    same: bench_capacity.SameContract,
) -> str:
    admin = procs["admin"].url
    auth = {"Authorization": f"Bearer {token}"}
    t = httpx.post(
        admin + "/",
        headers=auth,
        json={"action": "upsert_tenant", "tenant_name": "bench", "rate_limit_per_minute": 1_000_000},
    )
    t.raise_for_status()
    k = httpx.post(
        admin + "/",
        headers=auth,
        json={
            "action": "create_api_key",
            "tenant_id": t.json()["data"]["tenant_id"],
            "key_label": "bench",
            "scopes": ["customers:write"],
        },
    )
    k.raise_for_status()
    headers = [f"Authorization: Bearer {k.json()['data']['api_key']}"]
    url = procs["gateway"].url + "/v1/customers"
    if not settle(url, headers):
        print("pipeline NOT SETTLED: single customer creates did not answer quickly within 90 s", flush=True)
        results.errors.append("customers: the pipeline did not settle (single creates not quick within 90 s)")
        return "bench: NOT SETTLED"
    load(url, headers, duration=3, unique=True)  # warm-up: pools, caches, batch sizes
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    e2e = load(url, headers, unique=True)
    plot.record("customers", "suite e2e (closed loop)", e2e)
    print(
        f"e2e:      {e2e['ok_rps']:.0f} req/s answered 2xx ({e2e['rps']:.0f} answered) "
        f"p50 {e2e['p50_ms']:.1f} ms p99 {e2e['p99_ms']:.1f} ms "
        f"errors {e2e['errors']:.0f} (closed loop, {CONNECTIONS} connections)",
        flush=True,
    )
    served = e2e["requests"] - e2e["errors"]  # answered 2xx: a refusal is no customer created
    print("cpu per 2xx answer (closed loop): " + cpu_report(pids, cpu_before, served), flush=True)
    hints = {"suite": e2e["ok_rps"], "monolith": mono["ok_rps"]}  # where the searches start
    suite = bench_capacity.customers(procs["gateway"].url, dsn, headers, BODY, hints, results, between, same)
    ratio = f"{results.customers_ratio:.2f}" if results.customers_ratio is not None else "-"
    floor = results.minimal.get("customers ratio")
    closed = f"e2e {e2e['ok_rps']:.0f}, monolith {mono['ok_rps']:.0f}, bare {mono['bare_rps']:.0f} req/s"
    return (
        f"bench: customers capacity {suite:.0f} req/s, ratio over the same-contract baseline's {ratio} "
        f"(over the minimal monolith's {'-' if floor is None else f'{floor:.2f}'}); closed {closed}"
    )


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="sluice-bench-"))
    started = cpu_times()
    results = Results(frozenset(PARTS | ({"idle"} if os.environ.get("BENCH_IDLE_S", "30") != "0" else set())))
    extra = bench_sizing.STACK_ENV if "sizing" in PARTS else None
    with bench_stack(work, extra_env=extra) as stack:
        stores, procs, pids, token = stack.stores, stack.procs, stack.pids, stack.token
        print(
            f"stores: pg {stores.database_url.split('@')[-1]}, redis {stores.redis_url.split('@')[-1]}, "
            f"kafka {stores.kafka_bootstrap} ({stores.kafka_kind})",
            flush=True,
        )
        if "idle" in results.parts:
            idle_s = float(os.environ.get("BENCH_IDLE_S", "30"))
            results.idle = idle_shares(pids, idle_s)  # a target: an idle stack <= 5 % of one core
            idle = shares_line(results.idle)
            print(f"idle stack, share of one core over {idle_s:.0f} s with no request: {idle}", flush=True)
        dsn = stack.asyncpg_dsn
        settings = pg_settings(dsn)
        print("postgresql: " + ", ".join(f"{k}={v}" for k, v in settings.items()), flush=True)
        mono: dict[str, float] = {}
        if "customers" in PARTS:
            bare = baseline("bare", dsn)
            plot.record("customers", "bare (baseline)", bare)
            print(
                f"bare:     {bare['rps']:.0f} req/s p50 {bare['p50_ms']:.1f} ms "
                f"p99 {bare['p99_ms']:.1f} ms errors {bare['errors']:.0f}",
                flush=True,
            )
            mono = baseline("monolith", dsn)
            plot.record("customers", "monolith (baseline)", mono)
            mono["bare_rps"] = bare["rps"]
            print(
                f"monolith: {mono['rps']:.0f} req/s p50 {mono['p50_ms']:.1f} ms "
                f"p99 {mono['p99_ms']:.1f} ms errors {mono['errors']:.0f}",
                flush=True,
            )
        transfer_base = bench_transfers.baselines(dsn, pids) if "transfers" in PARTS else {}
        lines = []

        idle_total = sum(results.idle.values()) if results.idle is not None else IDLE_STACK_MAX
        metrics_urls = [proc.metrics_url for proc in procs.values()]
        turns = 0

        def between() -> None:
            """A turn starts when the last one has finished (yardstick 6): consumer lag 0,
            outboxes empty, the stack's CPU back at idle; printed, and an error if not."""
            nonlocal turns
            turns += 1
            ok, text = quiesce.wait(pids, metrics_urls, dsn, idle_total, QUIET_TIMEOUT_S)
            print(f"before turn {turns}: {text}", flush=True)
            if not ok:
                results.errors.append(f"turn {turns} started before the stack was quiet: {text}")

        if "sizing" in PARTS:  # before the other parts drive the suite: costs on a fresh one
            lines.append(bench_sizing.run(stack, between, results))
        same = bench_capacity.SameContract(stack.suite.env)  # the same-contract baseline's
        if "customers" in PARTS:
            lines.append(customers_e2e(procs, token, pids, mono, results, dsn, between, same))
        capacity = 0.0
        gw, admin = procs["gateway"], procs["admin"].url
        tenants: list[dict[str, Any]] | None = None
        if "transfers" in PARTS:
            line, hints = bench_transfers.e2e(gw.url, admin, token, pids, transfer_base, results, between)
            lines.append(line)
            if hints:  # one capacity (yardstick 1): ratio, half load, 2x and 4x use it
                tenants = bench_overload.provision_tenants(gw.url, admin, token)
                same.tenants.extend(bench_capacity.provision_same(same, dsn, admin, token))
                capacity = bench_capacity.transfers(
                    gw.url, tenants, dsn, transfer_base["seeded"], hints, results, between, same
                )
            if capacity > 0 and tenants is not None:
                lines += bench_transfers.cpu_abab(
                    gw.url,
                    tenants,
                    bench_overload.same_shape(transfer_base["seeded"]),
                    dsn,
                    pids,
                    procs["ledger"].url,
                    stack.uncounted,
                    results,
                    between,
                    same,
                )
                # CPU per transfer at fixed rates and at each capacity (the 350/s point judged)
                lines += bench_sweep.run(gw.url, tenants, pids, dsn, results, between, same)
        if "transfers" not in PARTS:
            # Tuning the door: the overload part alone, at a capacity measured before
            # by a full run. The figures that count come from a run that measured it itself.
            capacity = float(os.environ.get("BENCH_OVERLOAD_CAPACITY", "0"))
        if "overload" in PARTS and capacity <= 0:
            results.errors.append(
                "overload: no capacity to load against (the transfers part did not measure one, or "
                "BENCH_PARTS=overload without BENCH_OVERLOAD_CAPACITY)"
            )
        elif "overload" in PARTS:
            text, results.overload = bench_overload.run(
                gw.url, admin, token, pids, dsn, capacity, gw.metrics_url, tenants, between
            )
            lines.append(text)
        for name, proc in procs.items():
            print(f"peak RSS {name:<10} {peak_rss_mb(proc.popen.pid):6.1f} MB", flush=True)
        print(
            f"cpu steal during the run: {steal_pct(started, cpu_times()):.0f}%; "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        for line in lines:
            print(line, flush=True)
        data, png = plot.write(Path(os.environ.get("BENCH_OUT", ".sluice/bench")))
        print(f"results: {data}" + (f", plot: {png}" if png else " (no matplotlib: no plot)"), flush=True)
        # Every missed target on a MISSED: line, every part asked for but not measured on an
        # ERROR: line; either fails the run (tools.bench.targets).
        for line in verdict(results):
            print(line, flush=True)
        return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
