"""The CPU sweep of ``make bench`` (docs/performance/index.md, "The CPU sweep"): the CPU per
transfer of the suite and of the same-contract baseline at fixed rates (``BENCH_SWEEP_RATES``,
100, 200, 350 and 500/s) and at each system's own capacity, open loop on the capacity steps'
six-tenant load through the overload driver, each point on a quiet stack (``between``).

A point is one window of ``BENCH_SWEEP_S`` (20) seconds. Its CPU per transfer is the CPU of
every process of that system (the suite's services, broker, Valkey and PostgreSQL; the
baseline's process, its PostgreSQL and Valkey: tools.bench.abab.monolith_processes) over its
2xx answers. It is a CPU figure only if the system is within its capacity there: the rate at
most the capacity the search found, and the window itself passing the capacity's criteria
(admitted p99 <= 500 ms, at most 1 % not 2xx). Above its capacity a system queues or refuses
what it cannot do, and CPU over the 2xx answers prices the backlog, not a transfer: such a
rate is printed as above the capacity and not run (it would only load the stack for the next
point); a window that fails the criteria is printed with its figures and no CPU.

The 350/s point judges the target "CPU per transfer <= 2x the same-contract baseline's at
350/s" (``Results.cpu_multiple_fixed``). If either system cannot reach 350/s here, the verdict
has an ``ERROR:`` line saying which and with what capacity: there is no figure to judge.

:func:`plan`, :func:`line` and :func:`fixed_multiple` are pure (tests/unit/test_bench_sweep.py);
:func:`sweep` drives the points (tests/integration/test_bench_samecontract.py runs a tiny one),
:func:`run` is the bench's call.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tools.bench import plot
from tools.bench.abab import STORES_OF_THE_SAME_CONTRACT, monolith_processes
from tools.bench.answers import Answer, Outcome, open_loop, outcome
from tools.bench.capacity import SameContract
from tools.bench.capacity_search import P99_MS, REFUSED_MAX
from tools.bench.driver import drive_once
from tools.bench.measure import baseline_process, cpu_seconds, cpu_used
from tools.bench.targets import FIXED_RATE, Results

_RATES = os.environ.get("BENCH_SWEEP_RATES", "100,200,350,500")
RATES = tuple(float(r) for r in _RATES.split(",") if r.strip())
SECONDS = float(os.environ.get("BENCH_SWEEP_S", "20"))
SYSTEMS = ("samecontract", "suite")  # at each rate the baseline first, then the suite
CAPACITY_OF = {"suite": "suite transfers", "samecontract": "samecontract transfers"}  # Results.capacities


@dataclass(frozen=True, slots=True)
class Point:
    """One point of the sweep: planned (``ran`` False) or measured."""

    system: str  # "suite" or "samecontract"
    rate: float  # offered transfers per second
    capacity: float  # the system's capacity (0: its search found none)
    at_capacity: bool = False  # the point at the system's own capacity
    ran: bool = False
    offered: int = 0
    ok: int = 0  # 2xx answers: the transfers done
    refused: int = 0  # 503 overloaded: shed at the door
    p99_ms: float = 0.0  # over every admitted request (as a capacity step's)
    cpu_s: float = 0.0  # CPU seconds of every process of the system over the window
    load: float = 0.0  # the machine's 1-minute load average at the window's end

    @property
    def above(self) -> bool:
        """Above the system's capacity (or no capacity known): no CPU figure, not run."""
        return self.capacity <= 0 or self.rate > self.capacity

    @property
    def not_ok(self) -> int:
        return self.offered - self.ok

    @property
    def within(self) -> bool:
        """The window passed the capacity's criteria: within the system's capacity here."""
        return (
            self.ran
            and self.offered > 0
            and self.p99_ms <= P99_MS
            and self.not_ok <= REFUSED_MAX * self.offered
        )

    @property
    def cpu_ms(self) -> float | None:
        """CPU milliseconds per transfer done, or None where that is no CPU figure."""
        if self.above or not self.within or self.ok == 0:
            return None
        return 1000 * self.cpu_s / self.ok


def plan(rates: tuple[float, ...], capacities: dict[str, float]) -> list[Point]:
    """Every point, in the order run: each rate ascending (the baseline, then the suite), then
    each system at its own capacity. ``capacities``: system -> its capacity (0: none)."""
    points = [
        Point(system, rate, capacities.get(system, 0.0)) for rate in sorted(set(rates)) for system in SYSTEMS
    ]
    points += [
        Point(system, capacities[system], capacities[system], at_capacity=True)
        for system in SYSTEMS
        if capacities.get(system, 0.0) > 0
    ]
    return points


def line(p: Point) -> str:
    """The point as the bench prints it."""
    where = f"at its capacity {p.rate:.0f}/s" if p.at_capacity else f"{p.rate:.0f}/s"
    head = f"sweep: {p.system} {where}"
    if p.above:
        cap = f"its capacity {p.capacity:.0f}/s" if p.capacity > 0 else "no capacity measured"
        return f"{head} above {cap}: not run, no CPU figure"
    cpu = p.cpu_ms
    answers = f"not-2xx {p.not_ok} of {p.offered} (refused {p.refused})"
    figures = f"p99 {p.p99_ms:.0f} ms {answers} load {p.load:.1f}"
    if cpu is None:
        return (
            f"{head} cpu_ms - {figures}: over its capacity in this window "
            f"(p99 > {P99_MS:.0f} ms or > {REFUSED_MAX:.0%} not 2xx), no CPU figure"
        )
    return f"{head} cpu_ms {cpu:.2f} {figures}"


def fixed_multiple(points: list[Point], rate: float = FIXED_RATE) -> tuple[float | None, str | None]:
    """The suite's CPU per transfer over the same-contract baseline's at ``rate``: (multiple,
    None), or (None, why there is no figure)."""
    at = {p.system: p for p in points if p.rate == rate and not p.at_capacity}
    head = f"CPU per transfer over the same-contract baseline at {rate:.0f}/s"
    if len(at) < len(SYSTEMS):
        return None, f"{head}: the sweep has no {rate:.0f}/s point (BENCH_SWEEP_RATES)"
    why = []
    for system, who in (("samecontract", "the same-contract baseline"), ("suite", "the suite")):
        p = at[system]
        if p.capacity <= 0:
            why.append(f"{who}'s capacity was not measured")
        elif p.above:
            why.append(f"{who} cannot reach {rate:.0f}/s on this machine (its capacity {p.capacity:.0f}/s)")
        elif p.cpu_ms is None:
            why.append(
                f"{who} was over its capacity in the {rate:.0f}/s window "
                f"(p99 {p.p99_ms:.0f} ms, {p.not_ok} of {p.offered} not 2xx)"
            )
    suite, same = at["suite"].cpu_ms, at["samecontract"].cpu_ms
    if why or suite is None or same is None:
        return None, f"{head}: " + "; ".join(why)
    return suite / same, None


Where = dict[str, tuple[str, list[dict[str, Any]], dict[str, int]]]  # system -> URL, tenants, counted


def measure(
    p: Point, url: str, tenants: list[dict[str, Any]], counted: dict[str, int], seconds: float = SECONDS
) -> Point:
    """One window of ``seconds`` at ``p.rate``: its answers and the CPU of the ``counted``
    processes."""
    before = {name: cpu_seconds(pid) for name, pid in counted.items()}
    res = drive_once({"url": url, "tenants": tenants, "phases": [["sweep", p.rate, seconds]]}, seconds)
    used = cpu_used(counted, before)
    answers = [Answer(int(r["status"]), r.get("reason"), float(r["s"])) for r in res["requests"]]
    fig = open_loop(answers, seconds)
    done = replace(
        p,
        ran=True,
        offered=len(answers),
        ok=int(fig["ok"]),
        refused=sum(1 for a in answers if outcome(a.status, a.reason) is Outcome.SHED),
        p99_ms=fig["admitted_p99_ms"],
        cpu_s=sum(used.values()),
        load=os.getloadavg()[0],
    )
    label = "at capacity" if p.at_capacity else f"{p.rate:.0f}/s"
    cpu = None if done.cpu_ms is None else round(done.cpu_ms, 2)
    plot.record("sweep", f"{p.system} {label}", fig, {"cpu_ms": cpu, "capacity": round(p.capacity, 1)})
    return done


def sweep(
    points: list[Point], where: Where, between: Callable[[], None], seconds: float = SECONDS
) -> list[Point]:
    """Every point of ``points`` within its system's capacity measured (``between`` first),
    the others kept as planned; each point's line printed."""
    done: list[Point] = []
    for p in points:
        if not p.above:
            between()
            p = measure(p, *where[p.system], seconds)
        done.append(p)
        print(line(p), flush=True)
    return done


def run(
    gateway: str,
    tenants: list[dict[str, Any]],
    pids: dict[str, int],
    dsn: str,
    results: Results,
    between: Callable[[], None],
    same: SameContract,
) -> list[str]:
    """The sweep after the capacity search (``results.capacities``): prints each point's line,
    fills ``results.cpu_multiple_fixed`` (or names why not in ``results.errors``); returns the
    summary line."""
    caps = {s: results.capacities.get(CAPACITY_OF[s], 0.0) for s in SYSTEMS}
    with baseline_process("samecontract", dsn, same.env) as (proc, base):
        counted = monolith_processes(pids, proc.pid, STORES_OF_THE_SAME_CONTRACT)
        where = {
            "samecontract": (base + "/v1/transfers", same.tenants, counted),
            "suite": (gateway + "/v1/transfers", tenants, pids),
        }
        done = sweep(plan(RATES, caps), where, between)
    multiple, why = fixed_multiple(done)
    results.cpu_multiple_fixed = multiple
    if why is not None:
        results.errors.append(why)
    return [summary(done, multiple, why)]


def summary(points: list[Point], multiple: float | None, why: str | None) -> str:
    """The sweep in one line: each system's CPU per transfer by rate, and the judged multiple."""
    parts = []
    for system in SYSTEMS:
        shown = [
            f"{'cap ' if p.at_capacity else ''}{p.rate:.0f}/s "
            + ("above" if p.above else "-" if p.cpu_ms is None else f"{p.cpu_ms:.2f}")
            for p in points
            if p.system == system
        ]
        parts.append(f"{system} " + ", ".join(shown))
    verdict = f"{multiple:.2f}x at {FIXED_RATE}/s" if multiple is not None else f"no figure at {FIXED_RATE}/s"
    return f"bench-sweep (cpu ms per transfer): {'; '.join(parts)}; suite over baseline {verdict}" + (
        "" if why is None else f" ({why})"
    )
