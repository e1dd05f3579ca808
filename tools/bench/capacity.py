"""Capacity of the suite and of its two baselines (the minimal monolith, the same-contract
baseline: docs/performance/index.md, "Two baselines"), measured the same way (docs/performance/index.md,
yardstick 1): the open-loop steps :mod:`tools.bench.capacity_search` decides, each at least ``BENCH_STEP_S``
(10) seconds, until it has the highest rate with p99 <= 500 ms and at most 1 % not 2xx.

Transfers: the overload part's six tenants (:data:`tools.bench.overload.part.SHARES`, 20 wallets
each) against the suite, the same shape over the monolith's seeded wallets and over six tenants
provisioned through the same-contract baseline, through the overload driver (its own process,
which reports its lag behind the schedule). Customers: the open-loop generator
(tools.bench.load) against all three. The judged ratios are over the same-contract baseline;
the minimal monolith's go to ``Results.minimal``, printed beside them. Between steps
``between`` runs (the wait for a quiet stack: tools.bench.quiesce).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools.bench.answers import Answer, failed_by_reason, open_loop
from tools.bench.capacity_search import MIN_STEP_S, Search, Step, capacity, gave_up, line, next_rate, step_of
from tools.bench.driver import drive_once
from tools.bench.measure import baseline_process, not_2xx, run_load
from tools.bench.overload.part import provision_tenants, same_shape
from tools.bench.targets import Results

STEP_S = max(MIN_STEP_S, float(os.environ.get("BENCH_STEP_S", "10")))
HALF_S = float(os.environ.get("BENCH_DURATION_S", "10"))  # the half-load run


def search(
    name: str, run_step: Callable[[float], Step], start: float, between: Callable[[], None] | None = None
) -> tuple[float, str | None]:
    """Run the steps; print each and the result. (capacity, why there is none or None)."""
    s = Search(start=max(1.0, start))
    steps: list[Step] = []
    while (rate := next_rate(s, steps)) is not None:
        if steps and between is not None:
            between()
        steps.append(run_step(rate))
        st = steps[-1]
        print(
            f"capacity {name} step {len(steps)}: {rate:.0f}/s {'pass' if st.passes else 'fail'}"
            f"{'' if st.valid else ' (invalid)'}, admitted p99 {st.p99_ms:.0f} ms, {st.not_ok} of "
            f"{st.offered} not 2xx, driver lag p99 {st.driver_lag_p99_ms:.1f} ms",
            flush=True,
        )
    print(line(name, steps), flush=True)
    why = gave_up(s, steps)
    return (0.0 if why else capacity(steps)), why


def transfers_step(url: str, tenants: list[dict[str, Any]]) -> Callable[[float], Step]:
    """One open-loop step of ``POST /v1/transfers`` from ``tenants`` at a rate."""

    def run(rate: float) -> Step:
        res = drive_once({"url": url, "tenants": tenants, "phases": [["step", rate, STEP_S]]}, STEP_S)
        answers = [(int(r["status"]), r.get("reason"), float(r["s"])) for r in res["requests"]]
        return step_of(rate, STEP_S, answers, float(res["generator"]["schedule_lag_p99_ms"]))

    return run


def half_load(url: str, tenants: list[dict[str, Any]], rate: float, seconds: float) -> list[dict[str, Any]]:
    """Every record of an open-loop run at ``rate`` (half the capacity) from ``tenants``."""
    return list(
        drive_once({"url": url, "tenants": tenants, "phases": [["half", rate, seconds]]}, seconds)["requests"]
    )


def customers_step(url: str, headers: list[str], body: str) -> Callable[[float], Step]:
    """One open-loop step of ``POST /v1/customers`` (a fresh Idempotency-Key each) at a rate."""

    def run(rate: float) -> Step:
        args = [
            "--body",
            body,
            "--duration",
            str(STEP_S),
            "--rate",
            str(rate),
            "--unique",
            "--connections",
            "64",
        ]
        res = run_load(url, *args, headers=headers)
        return Step(
            rate=rate,
            seconds=STEP_S,
            offered=int(res["requests"]),
            not_ok=int(res["errors"]),
            p99_ms=float(res["admitted_p99_ms"]),
            driver_lag_p99_ms=float(res["schedule_lag_p99_ms"]),
        )

    return run


@dataclass(frozen=True)
class SameContract:
    """The same-contract baseline (tools.bench.samecontract) to measure beside the minimal
    monolith: the suite's environment it runs with, and for transfers the six tenants'
    shape provisioned through it (tools.bench.overload.part.provision_tenants)."""

    env: dict[str, str]
    tenants: list[dict[str, Any]] = field(default_factory=list)


def provision_same(same: SameContract, dsn: str, admin: str, token: str) -> list[dict[str, Any]]:
    """The six tenants' shape provisioned through the same-contract baseline: each tenant and
    key through admin, its wallets funded through the baseline's own API (the services' code)."""
    with baseline_process("samecontract", dsn, same.env) as (_, base):
        return provision_tenants(base, admin, token)


def _ratios(results: Results, part: str, suite: float, mono: float, same: float) -> tuple[str, str]:
    """The judged ratio (over the same-contract baseline) and the minimal monolith's, beside."""
    judged = suite / same if suite > 0 and same > 0 else None
    setattr(results, f"{part}_ratio", judged)
    if suite > 0 and mono > 0:
        results.minimal[f"{part} ratio"] = suite / mono
    return (f"{judged:.2f}" if judged is not None else "-"), (
        f"{suite / mono:.2f}" if suite > 0 and mono > 0 else "-"
    )


def transfers(
    gateway: str,
    tenants: list[dict[str, Any]],
    dsn: str,
    seeded: list[str],
    hints: dict[str, float],
    results: Results,
    between: Callable[[], None],
    same: SameContract,
) -> float:
    """The minimal monolith's, the same-contract baseline's and the suite's transfer capacity
    on the same six-tenant load, the ratios, and the suite at half its capacity; returns the
    suite's capacity (0: none)."""
    with baseline_process("monolith", dsn) as (_, base):
        mono_step = transfers_step(base + "/v1/transfers", same_shape(seeded))
        mono, why_mono = search("monolith transfers", mono_step, hints.get("monolith", 100.0), between)
    between()
    with baseline_process("samecontract", dsn, same.env) as (_, base):
        same_step = transfers_step(base + "/v1/transfers", same.tenants)
        own, why_same = search(
            "samecontract transfers", same_step, hints.get("samecontract", mono / 3 or 100.0), between
        )
    between()
    url = gateway + "/v1/transfers"
    suite, why_suite = search(
        "suite transfers", transfers_step(url, tenants), hints.get("suite", 100.0), between
    )
    for who, why in (("monolith", why_mono), ("same-contract baseline", why_same), ("suite", why_suite)):
        if why:
            results.errors.append(f"transfers capacity of the {who}: {why}")
    results.capacities.update(
        {"suite transfers": suite, "monolith transfers": mono, "samecontract transfers": own}
    )
    judged, floor = _ratios(results, "transfers", suite, mono, own)
    print(
        f"bench-capacity: transfers suite {suite:.0f}/s, same-contract {own:.0f}/s, ratio {judged} (judged); "
        f"minimal monolith {mono:.0f}/s, ratio {floor} (not judged)",
        flush=True,
    )
    if suite > 0:
        between()
        records = half_load(url, tenants, suite / 2, HALF_S)
        answers = [Answer(int(r["status"]), r.get("reason"), float(r["s"])) for r in records]
        fig: dict[str, Any] = {**open_loop(answers, HALF_S), "failed_by_reason": failed_by_reason(answers)}
        results.half_load["transfers"] = fig
        print(
            f"transfers at half the suite's capacity ({suite / 2:.0f}/s, open loop, six tenants): "
            f"{fig['ok_rps']:.0f}/s 2xx, p50 {fig['p50_ms']:.1f} ms p99 {fig['p99_ms']:.1f} ms over the 2xx "
            f"answers; {not_2xx(fig)}",
            flush=True,
        )
    return suite


def customers(
    gateway: str,
    dsn: str,
    headers: list[str],
    body: str,
    hints: dict[str, float],
    results: Results,
    between: Callable[[], None],
    same: SameContract,
) -> float:
    """The minimal monolith's, the same-contract baseline's (with the suite's API key: both
    read the same tenants) and the suite's customer capacity, the ratios, and the suite at half
    its capacity; returns the suite's capacity (0: none)."""
    with baseline_process("monolith", dsn) as (_, base):
        mono_step = customers_step(base + "/v1/customers", [], body)
        mono, why_mono = search("monolith customers", mono_step, hints.get("monolith", 100.0), between)
    between()
    with baseline_process("samecontract", dsn, same.env) as (_, base):
        same_step = customers_step(base + "/v1/customers", headers, body)
        own, why_same = search(
            "samecontract customers", same_step, hints.get("samecontract", mono / 3 or 100.0), between
        )
    between()
    url = gateway + "/v1/customers"
    suite, why_suite = search(
        "suite customers", customers_step(url, headers, body), hints.get("suite", 100.0), between
    )
    for who, why in (("monolith", why_mono), ("same-contract baseline", why_same), ("suite", why_suite)):
        if why:
            results.errors.append(f"customers capacity of the {who}: {why}")
    judged, floor = _ratios(results, "customers", suite, mono, own)
    print(
        f"bench-capacity: customers suite {suite:.0f}/s, same-contract {own:.0f}/s, ratio {judged} (judged); "
        f"minimal monolith {mono:.0f}/s, ratio {floor} (not judged)",
        flush=True,
    )
    if suite > 0:
        between()
        args = ["--body", body, "--duration", str(HALF_S), "--rate", str(suite / 2), "--unique"]
        fig = run_load(url, *args, "--connections", "64", headers=headers)
        results.half_load["customers"] = fig
        figures = f"p50 {fig['p50_ms']:.1f} ms p99 {fig['p99_ms']:.1f} ms over the 2xx answers"
        print(
            f"customers at half the suite's capacity ({suite / 2:.0f}/s, open loop): "
            f"{fig['ok_rps']:.0f}/s 2xx, {figures}; {not_2xx(fig)}",
            flush=True,
        )
    return suite
