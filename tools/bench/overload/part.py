"""The overload part of ``make bench`` (docs/performance/overload.md): offered a multiple
of the suite's capacity (``BENCH_OVERLOAD_FACTORS``, 2 and 4; the capacity searched open loop,
tools.bench.capacity), open loop, for ``BENCH_OVERLOAD_S`` (30) seconds, from six tenants
(tools.bench.overload.plan.shares: one sends half the load, a quiet one 2 %, one exactly its fair
share of the capacity, three split the rest); then at half the capacity again to see how fast
latency recovers; then every request that did not get a 2xx is retried with its key until it
does (or counted undecided), and the database is audited: a 2xx whose transfer has no row is
lost, more than one row or journal entry per key is duplicated. ``BENCH_OVERLOAD_HOG`` (a share
of one core, e.g. 0.5) runs the 2x load once more with a busy process beside the stack, started
a third into the overload phase at the stack's priority; the door's limit must come down by a
quarter within 5 s of it (sampled every 0.25 s), and the admitted p99 stay within 1 s. Every
judged run has the gateway, the driver and the hog at nice 0 (tools.bench.overload.plan);
``BENCH_OVERLOAD_RENICE=-5,-10`` adds reniced runs afterwards, labelled and judged on nothing.

The driver runs in its own process (tools.bench.driver) with raw keep-alive connections,
opened as the offered rate needs them, so the suite, not the client, is the queue: latency
counts from each request's intended send time, and the generator's own lag is printed. Every
offered request is accounted for: answered (a 5xx by its reason), without an answer (and why),
or still running at the end (``tools.bench.overload.report``). A missed target is named after
``MISSED:`` and the run exits non-zero.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from tools.bench.answers import Outcome
from tools.bench.driver import QUIET_S, raw_request, run_driver
from tools.bench.overload.plan import Run, parse_renice, plan, shares
from tools.bench.overload.report import (
    Audit,
    Phases,
    generator_line,
    kind,
    limit_down_s,
    line,
    missed,
    seconds_line,
    summarize,
)
from tools.stack.provision import provision

OVERLOAD_S = float(os.environ.get("BENCH_OVERLOAD_S", "30"))
FACTORS = [float(f) for f in os.environ.get("BENCH_OVERLOAD_FACTORS", "2,4").split(",") if f.strip()]
HOG = float(os.environ.get("BENCH_OVERLOAD_HOG", "0.5"))  # share of one core (yardstick 7); 0: none
# Every judged run has the gateway and the driver at the stack's priority (nice 0): the capacity
# they are measured against was. BENCH_OVERLOAD_RENICE=GATEWAY,DRIVER (e.g. -5,-10: what a CPU
# request is in a deployment) adds those runs again afterwards, labelled, judged on nothing
# (tools.bench.overload.plan).
RENICE = parse_renice(os.environ.get("BENCH_OVERLOAD_RENICE", ""))
# Tenant 0 heavy (half the load); tenant 1 quiet (2 % of it: 0 refused); tenant 2 at exactly
# its fair share of the capacity, a sixth (at most 1 % refused); three others split the rest
# (tools.bench.overload.plan.shares). The capacity is searched with the shares at 1x.
SHARES = shares(1.0)
WALLETS_PER_TENANT = 20


def provision_tenants(gateway: str, admin: str, token: str) -> list[dict[str, Any]]:
    """The six tenants of :data:`SHARES`, ``WALLETS_PER_TENANT`` funded wallets each."""
    tenants = []
    for share in SHARES:
        key, wallets = asyncio.run(provision(gateway, admin, token, WALLETS_PER_TENANT, funding="1000.00"))
        tenants.append({"key": key, "wallets": wallets, "share": share})
    return tenants


def same_shape(wallets: list[str], key: str = "none") -> list[dict[str, Any]]:
    """The six tenants' shape over other wallets (the monolith's seeded ones): the same shares,
    ``WALLETS_PER_TENANT`` wallets each, so both systems get the same load."""
    need = len(SHARES) * WALLETS_PER_TENANT
    if len(wallets) < need:
        raise ValueError(f"{need} wallets needed for the six tenants, {len(wallets)} given")
    return [
        {
            "key": key,
            "wallets": wallets[i * WALLETS_PER_TENANT : (i + 1) * WALLETS_PER_TENANT],
            "share": share,
        }
        for i, share in enumerate(SHARES)
    ]


def _rss(pids: dict[str, int]) -> dict[str, float]:
    """Resident memory of each process now, in MB."""
    out = {}
    for name, pid in pids.items():
        try:
            for text in Path(f"/proc/{pid}/status").read_text().splitlines():
                if text.startswith("VmRSS:"):
                    out[name] = int(text.split()[1]) / 1024
        except OSError:
            pass
    return out


def _rss_sampler(pids: dict[str, int], stop: threading.Event, peaks: dict[str, float]) -> None:
    while not stop.is_set():
        for name, mb in _rss(pids).items():
            peaks[name] = max(peaks.get(name, 0.0), mb)
        stop.wait(0.5)


async def _retry_refused(url: str, tenants: list[dict[str, Any]], refused: list[dict[str, Any]]) -> int:
    """Every request without a 2xx again, same key, until a 2xx (what a client does), at most
    30 times, honouring Retry-After: returns how many ended 2xx. The others stay undecided."""
    sem = asyncio.Semaphore(16)
    done = 0

    async def again(r: dict[str, Any], c: httpx.AsyncClient) -> None:
        nonlocal done
        t = tenants[r["tenant"]]
        async with sem:
            for _ in range(30):
                raw = raw_request(url, t["key"], t["wallets"], r["key"]).split(b"\r\n\r\n", 1)[1]
                try:
                    res = await c.post(
                        url,
                        content=raw,
                        headers={
                            "Authorization": f"Bearer {t['key']}",
                            "Idempotency-Key": r["key"],
                            "Content-Type": "application/json",
                        },
                    )
                except httpx.HTTPError:
                    await asyncio.sleep(1.0)
                    continue
                if res.status_code < 300:
                    r["retried_ok"] = True
                    done += 1
                    return
                await asyncio.sleep(min(5.0, float(res.headers.get("retry-after", "0.5") or 0.5)))

    async with httpx.AsyncClient(timeout=30) as c:
        await asyncio.gather(*(again(r, c) for r in refused))
    return done


async def _audit(dsn: str, answered: list[str], undecided: list[str]) -> Audit:
    """Lost: ``answered`` keys (a 2xx) without a transfer row. Duplicated: more than one row
    per key, or more than one journal entry of one kind for one transfer, over every key.
    Undecided: ``undecided`` keys, and how many of them the database holds anyway."""
    keys = answered + undecided
    db = await asyncpg.connect(dsn)
    try:
        rows = await db.fetch(
            "SELECT idempotency_key, count(*) AS n FROM ledger.transfers"
            " WHERE idempotency_key = ANY($1::text[]) GROUP BY idempotency_key",
            keys,
        )
        twice = await db.fetchval(
            "SELECT count(*) FROM (SELECT e.transfer_id, e.kind FROM ledger.journal_entries e"
            " JOIN ledger.transfers t ON t.id = e.transfer_id WHERE t.idempotency_key = ANY($1::text[])"
            " GROUP BY e.transfer_id, e.kind HAVING count(*) > 1) x",
            keys,
        )
    finally:
        await db.close()
    found = {r["idempotency_key"]: r["n"] for r in rows}
    return Audit(
        lost=sum(1 for k in answered if k not in found),
        duplicated=sum(n - 1 for n in found.values() if n > 1) + int(twice),
        undecided=len(undecided),
        undecided_done=sum(1 for k in undecided if k in found),
    )


def _door(metrics_url: str | None) -> dict[str, float]:
    """The gateway door's adaptive command limit and its refusals by bound, now."""
    if not metrics_url:
        return {}
    try:
        text = httpx.get(metrics_url + "/metrics", timeout=5).text
    except httpx.HTTPError:
        return {}
    found = re.findall(
        r'^sluice_admission_(limit\{scope="instance"\}|shed_total\{reason="\w+"\}) ([0-9.e+]+)$', text, re.M
    )
    return {name: float(value) for name, value in found}


def _door_line(before: dict[str, float], after: dict[str, float]) -> str:
    limit = 'limit{scope="instance"}'
    shed = {
        k.split('"')[1]: after[k] - before.get(k, 0.0) for k in sorted(after) if k.startswith("shed_total")
    }
    return (
        f"command limit {before.get(limit, float('nan')):.0f} before, {after.get(limit, float('nan')):.0f} "
        f"after the load; shed by bound {', '.join(f'{k} {v:.0f}' for k, v in shed.items()) or 'none'}"
    )


HOG_AT = 1 / 3  # the hog starts this far into the overload phase, the door having settled


class HogWatch:
    """Samples the door's command limit every 0.25 s and starts the hog at ``start_at``
    (time.monotonic()), at the stack's priority; :meth:`stop` ends it."""

    def __init__(self, metrics_url: str | None, share: float, start_at: float, done: threading.Event) -> None:
        self.metrics_url, self.share, self.start_at, self.done = metrics_url, share, start_at, done
        self.limits: list[tuple[float, float]] = []  # (time.monotonic(), limit)
        self.started = 0.0
        self.proc: subprocess.Popen[bytes] | None = None

    def watch(self) -> None:
        while not self.done.is_set():
            now = time.monotonic()
            limit = _door(self.metrics_url).get('limit{scope="instance"}')
            if limit is not None:
                self.limits.append((now, limit))
            if self.proc is None and now >= self.start_at:
                self.proc, self.started = _hog(self.share), time.monotonic()
            self.done.wait(0.25)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def line(self) -> str:
        after = [f"{t - self.started:+.1f}s {v:.0f}" for t, v in self.limits if t >= self.started - 1.0]
        return ", ".join(after[:40]) or "no sample"


def _hog(share: float) -> subprocess.Popen[bytes]:
    """A process that keeps ``share`` of one core busy (busy, then asleep, every 100 ms)."""
    code = (
        "import time\nwhile True:\n t=time.perf_counter()\n"
        f" while time.perf_counter()-t<{0.1 * share}: pass\n time.sleep({0.1 * (1 - share)})\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])  # nosec B603 - our own busy loop


def _one_run(
    url: str,
    tenants: list[dict[str, Any]],
    pids: dict[str, int],
    dsn: str,
    capacity: float,
    run: Run,
    metrics_url: str | None,
) -> tuple[str, list[str]]:
    factor, label = run.factor, run.label
    tenants = [{**t, "share": share} for t, share in zip(tenants, shares(factor), strict=True)]
    spec = {
        "url": url,
        "tenants": tenants,
        "capacity": capacity,
        "factor": factor,
        "overload_s": OVERLOAD_S,
    }
    door_before = _door(metrics_url)
    with tempfile.TemporaryDirectory(prefix="sluice-overload-") as tmp:
        pfile, ofile = Path(tmp) / "plan.json", Path(tmp) / "out.json"
        pfile.write_text(json.dumps(spec))
        quiet_rss = _rss(pids)
        peaks: dict[str, float] = {}
        stop = threading.Event()
        sampler = threading.Thread(target=_rss_sampler, args=(pids, stop, peaks), daemon=True)
        sampler.start()
        hog = HogWatch(metrics_url, run.hog, time.monotonic() + QUIET_S + OVERLOAD_S * HOG_AT, stop)
        watcher = threading.Thread(target=hog.watch, daemon=True)
        if run.hog > 0:
            watcher.start()
        try:
            run_driver(pfile, ofile, OVERLOAD_S + 2 * QUIET_S, run.driver_nice)
        finally:
            stop.set()
            if run.hog > 0:
                watcher.join()
            hog.stop()
        res = json.loads(ofile.read_text())
        if os.environ.get("BENCH_OVERLOAD_KEEP"):  # every request's record, for a closer look
            Path(os.environ["BENCH_OVERLOAD_KEEP"] + f".{label}.json").write_text(ofile.read_text())
    door_after = _door(metrics_url)
    reqs = res["requests"]
    refused = [r for r in reqs if not 200 <= r["status"] < 300]
    asyncio.run(_retry_refused(url, tenants, refused))
    answered = [r["key"] for r in reqs if 200 <= r["status"] < 300 or r.get("retried_ok")]
    undecided = [r["key"] for r in refused if not r.get("retried_ok")]
    audit = asyncio.run(_audit(dsn, answered, undecided))
    timing = Phases(res["overload_start"], res["overload_s"], QUIET_S, capacity, factor)
    summary = summarize(reqs, timing, audit)
    if run.hog > 0:
        summary.limit_down_s = limit_down_s(hog.limits, hog.started) if hog.started else math.inf
        print(f"{label}: door limit every 0.25 s from the hog's start: {hog.line()}", flush=True)
    summary.missed = missed(summary, factor, hog=run.hog > 0)
    for name in pids:
        print(
            f"{label} RSS {name:<10} quiet {quiet_rss.get(name, 0):6.1f} MB "
            f"peak {peaks.get(name, 0):6.1f} MB",
            flush=True,
        )
    over = [r for r in reqs if r["phase"] == "overload"]
    others = sorted({r["status"] for r in over} - {201})
    print(
        f"{label}: heavy tenant {sum(1 for r in over if r['tenant'] == 0)} sent, "
        f"{sum(1 for r in over if r['tenant'] == 0 and kind(r) is Outcome.SHED)} shed; answers "
        f"{ {st: sum(1 for r in over if r['status'] == st) for st in others} } (0: no answer, -1: still "
        f"running); {_door_line(door_before, door_after)} "
        f"[load avg {os.getloadavg()[0]:.1f}]",
        flush=True,
    )
    print(generator_line(res["generator"]).replace("overload generator", f"{label} generator"), flush=True)
    end = timing.overload_start + timing.overload_s
    print(f"{label} recovery, second by second: {seconds_line(reqs, end, QUIET_S)}", flush=True)
    return line(summary, label), summary.missed


def run(
    gateway: str,
    admin: str,
    token: str,
    pids: dict[str, int],
    dsn: str,
    capacity: float,
    metrics_url: str | None = None,
    tenants: list[dict[str, Any]] | None = None,
    between: Callable[[], None] | None = None,
) -> tuple[str, dict[str, list[str]]]:
    """Every factor of ``BENCH_OVERLOAD_FACTORS``, then the 2x run beside a CPU hog if
    ``BENCH_OVERLOAD_HOG``: one summary line each (newline-separated), and each run's missed
    targets by its label."""
    tenants = tenants or provision_tenants(gateway, admin, token)
    url = gateway + "/v1/transfers"
    lines: list[str] = []
    missed_by_run: dict[str, list[str]] = {}
    for run in plan(FACTORS, HOG, RENICE):
        if between is not None:  # the last run's retries and audit done, the stack quiet again
            between()
        print(
            f"{run.label}: {run.factor:g}x the capacity; gateway at nice {run.gateway_nice}, driver at nice "
            f"{run.driver_nice}{f', a hog of {run.hog:.0%} of one core at nice 0' if run.hog else ''}",
            flush=True,
        )
        os.setpriority(os.PRIO_PROCESS, pids["gateway"], run.gateway_nice)
        try:
            text, missed = _one_run(url, tenants, pids, dsn, capacity, run, metrics_url)
        finally:
            os.setpriority(os.PRIO_PROCESS, pids["gateway"], 0)
        lines.append(text)
        if run.judged:
            missed_by_run[run.label] = missed
    return "\n".join(lines), missed_by_run
