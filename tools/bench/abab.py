"""The suite against the monolith in alternating pairs: a bench that can see
a 10 % change.

Neighbouring runs of the same code differed by 15 %, and the monolith baseline by 2x across
days, so a ratio of one suite run to one monolith run taken minutes apart said little. Here the
monolith (one process, the same transfer in one transaction) and the suite take turns, A B A B
A B, each for ``BENCH_DURATION_S`` on the same stack and wallets; each pair gives a ratio of
throughputs and a ratio of CPU per transfer (every process of the suite, the broker and
PostgreSQL included, over the monolith's, its PostgreSQL included: docs/performance/index.md,
yardstick 5). The medians of the pairs are printed with their min-max. CPU is divided by
answered 2xx (a refusal moves no money); a store the bench cannot see (given by URL) is named
as not counted.

The judged CPU figure comes from :func:`run_open`: each system open loop at the same share of
its own capacity, on the same six-tenant shape as the capacity steps: the cost of a transfer
where each would run. (The suite batches: at the same absolute rate, 0.8 of its capacity and a
quarter of the monolith's, it paid 5.5 ms a transfer on 2026-11-26 against 3.3 ms in a closed
loop at its ceiling, while the monolith's cost barely moves with its rate.)
A closed loop of 64 connections that never back off meets the suite's door
(tens of thousands of refusals in ten seconds) but not the monolith, which has none, so
dividing its CPU by the 2xx answers charged the suite for the loop's refusals (2026-11-26:
39,000-71,000 refusals per 10 s turn, the gateway at 1.5 ms per transfer).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools.bench import wrk
from tools.bench.driver import drive_once
from tools.bench.measure import baseline_process, cpu_seconds, cpu_used, per_request

PAIRS = int(os.environ.get("BENCH_PAIRS", "3"))
BROKERS = ("kafka", "tansu")  # how tools.stack.stores names a broker process


STORES_OF_THE_MONOLITH = ("postgres",)  # the stack's processes that do the monolith's work too
# The same-contract baseline (tools.bench.samecontract) also keeps the gateway's keys, limits
# and idempotency records in the stack's Valkey.
STORES_OF_THE_SAME_CONTRACT = ("postgres", "valkey", "redis")


def monolith_processes(
    stack: dict[str, int], monolith_pid: int, stores: tuple[str, ...] = STORES_OF_THE_MONOLITH
) -> dict[str, int]:
    """What a baseline's CPU per transfer counts (yardstick 5): its own process and the stores
    it uses, its PostgreSQL (the postmaster and every process under it: its backends, the WAL
    writer, the checkpointer, autovacuum) and for the same-contract baseline the Valkey, as the
    suite's figure counts them. A baseline uses the stack's stores; the suite's services idle
    during its turn and are not counted."""
    return {"monolith": monolith_pid, **{k: v for k, v in stack.items() if k.split("-")[0] in stores}}


def cpu_ms(used: dict[str, float], done: float) -> float:
    """CPU milliseconds per transfer done, summed over ``used`` (CPU seconds per process)."""
    return 1000 * sum(used.values()) / max(1.0, done)


@dataclass
class Pair:
    mono_rps: float
    mono_cpu_ms: float  # the monolith's CPU per 2xx transfer, its PostgreSQL included
    suite_rps: float
    suite_cpu_ms: float  # every measured process's CPU per 2xx transfer
    by_process: dict[str, float] = field(default_factory=dict)  # ms per transfer
    used: dict[str, float] = field(default_factory=dict)  # CPU seconds of each process
    run: dict[str, float] = field(default_factory=dict)  # the suite run's wrk figures

    @property
    def ratio(self) -> float:
        return self.suite_rps / self.mono_rps if self.mono_rps else 0.0

    @property
    def cpu_multiple(self) -> float:
        return self.suite_cpu_ms / self.mono_cpu_ms if self.mono_cpu_ms else 0.0

    @property
    def broker_share(self) -> float:
        broker = sum(v for k, v in self.by_process.items() if k.split("-")[0] in BROKERS)
        return broker / self.suite_cpu_ms if self.suite_cpu_ms else 0.0


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """``median (min-max)``."""
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{fmt.format(med)} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def summary(pairs: list[Pair]) -> str:
    n = len(pairs)
    return (
        f"ABAB x{n}: ratio e2e/monolith {spread([p.ratio for p in pairs])}; "
        f"CPU per transfer {spread([p.suite_cpu_ms for p in pairs])} ms = "
        f"{spread([p.cpu_multiple for p in pairs], '{:.1f}')}x the monolith's "
        f"{spread([p.mono_cpu_ms for p in pairs])} ms; broker share "
        f"{spread([100 * p.broker_share for p in pairs], '{:.1f}')} %"
    )


def run(
    url: str,
    auth: str,
    wallets: list[str],
    pids: dict[str, int],
    dsn: str,
    seeded: list[str],
    uncounted: list[str],
    between: Callable[[], None] = lambda: time.sleep(2),
) -> list[Pair]:
    """``PAIRS`` alternating runs, monolith first; prints one line per run and the summary.
    ``between`` runs before each turn (the wait for a quiet stack, tools.bench.quiesce)."""
    if uncounted:
        print(f"CPU not counted (stores given by URL, not visible here): {', '.join(uncounted)}", flush=True)
    pairs: list[Pair] = []
    with baseline_process("monolith", dsn) as (mono, base):
        mono_url = base + "/v1/transfers"
        wrk.run(mono_url, wallets=seeded, duration=2, connections=wrk_connections())  # warm-up
        mono_pids = monolith_processes(pids, mono.pid)
        if "postgres" not in mono_pids:
            print("monolith CPU: its PostgreSQL is not visible here, so neither side counts it", flush=True)
        for i in range(1, PAIRS + 1):
            mono_before = {name: cpu_seconds(pid) for name, pid in mono_pids.items()}
            m = wrk.run(mono_url, wallets=seeded, duration=duration(), connections=wrk_connections())
            mono_used = cpu_used(mono_pids, mono_before)
            mono_cpu_ms = cpu_ms(mono_used, wrk.answered(m))
            between()  # what wrk abandoned at its end finishes, and the stack is quiet again
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            s = wrk.run(url, wallets=wallets, auth=auth, duration=duration(), connections=wrk_connections())
            used = cpu_used(pids, before)
            done = max(1.0, wrk.answered(s))
            pair = Pair(
                m["ok_rps"],
                mono_cpu_ms,
                s["ok_rps"],
                cpu_ms(used, done),
                {k: 1000 * v / done for k, v in used.items()},
                used,
                s,
            )
            pairs.append(pair)
            load = os.getloadavg()[0]
            print(
                f"pair {i}: monolith {m['ok_rps']:.0f} transfers/s ({mono_cpu_ms:.2f} ms CPU each: "
                f"{per_request(mono_used, wrk.answered(m))}) | suite "
                f"{s['ok_rps']:.0f}/s p99 {s['p99_ms']:.0f} ms errors {s['errors']:.0f} non-2xx "
                f"{s['non2xx']:.0f} ({pair.suite_cpu_ms:.2f} ms CPU each = {pair.cpu_multiple:.1f}x; "
                f"{per_request(used, done)}) -> ratio {pair.ratio:.2f} [load avg {load:.1f}]",
                flush=True,
            )
            between()
    print(summary(pairs), flush=True)
    return pairs


def open_turn(
    url: str, tenants: list[dict[str, Any]], rate: float, counted: dict[str, int]
) -> tuple[float, dict[str, float], int, int]:
    """One open-loop turn at ``rate`` for ``duration()`` s: (2xx per second, CPU seconds of each
    ``counted`` process, 2xx answers, other answers)."""
    before = {name: cpu_seconds(pid) for name, pid in counted.items()}
    records = drive_once(
        {"url": url, "tenants": tenants, "phases": [["abab", rate, duration()]]}, duration()
    )["requests"]
    used = cpu_used(counted, before)
    ok = sum(1 for r in records if 200 <= int(r["status"]) < 300)
    return ok / duration(), used, ok, len(records) - ok


def run_open(
    url: str,
    tenants: list[dict[str, Any]],
    mono_tenants: list[dict[str, Any]],
    rates: tuple[float, float],
    pids: dict[str, int],
    dsn: str,
    between: Callable[[], None],
    kind: str = "monolith",
    env: dict[str, str] | None = None,
) -> list[Pair]:
    """``PAIRS`` alternating open-loop turns, the baseline first (``kind``: the minimal
    ``monolith``, or ``samecontract`` run with the suite's ``env``), at ``rates`` (the
    baseline's, the suite's): the CPU per transfer of each (its stores included) and their
    multiple. Prints a line per pair."""
    mono_rate, rate = rates
    pairs: list[Pair] = []
    stores = STORES_OF_THE_SAME_CONTRACT if kind == "samecontract" else STORES_OF_THE_MONOLITH
    with baseline_process(kind, dsn, env) as (mono, base):
        mono_url = base + "/v1/transfers"
        mono_pids = monolith_processes(pids, mono.pid, stores)
        for i in range(1, PAIRS + 1):
            between()
            m_rps, m_used, m_ok, m_bad = open_turn(mono_url, mono_tenants, mono_rate, mono_pids)
            between()
            s_rps, used, ok, bad = open_turn(url, tenants, rate, pids)
            done = max(1, ok)
            pair = Pair(
                m_rps,
                cpu_ms(m_used, m_ok),
                s_rps,
                cpu_ms(used, done),
                {k: 1000 * v / done for k, v in used.items()},
                used,
                {"requests": float(ok + bad), "non2xx": float(bad)},
            )
            pairs.append(pair)
            print(
                f"open pair {i}: {kind} at {mono_rate:.0f}/s {m_rps:.0f} 2xx/s, {m_bad} not 2xx "
                f"({pair.mono_cpu_ms:.2f} ms CPU each: {per_request(m_used, m_ok)}) | suite at {rate:.0f}/s "
                f"{s_rps:.0f} 2xx/s, {bad} not 2xx ({pair.suite_cpu_ms:.2f} ms CPU each = "
                f"{pair.cpu_multiple:.1f}x; "
                f"{per_request(used, done)}) [load avg {os.getloadavg()[0]:.1f}]",
                flush=True,
            )
    return pairs


def open_summary(pairs: list[Pair], share: float, kind: str = "monolith") -> str:
    return (
        f"ABAB x{len(pairs)} open loop, each at {share:.0%} of its capacity: CPU per transfer "
        f"{spread([p.suite_cpu_ms for p in pairs])} ms = "
        f"{spread([p.cpu_multiple for p in pairs], '{:.2f}')}x "
        f"the {kind}'s {spread([p.mono_cpu_ms for p in pairs])} ms; broker share "
        f"{spread([100 * p.broker_share for p in pairs], '{:.1f}')} %"
    )


def duration() -> float:
    return float(os.environ.get("BENCH_DURATION_S", "10"))


def wrk_connections() -> int:
    return int(os.environ.get("BENCH_CONNECTIONS", "64"))
