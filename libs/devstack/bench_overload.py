"""The overload part of ``make bench`` (issues 23 and 37, contract 14.2): offered a multiple of
the capacity the transfers part just measured (``BENCH_OVERLOAD_FACTORS``, 2 and 4), open
loop, for ``BENCH_OVERLOAD_S`` (30) seconds, from six tenants (one sends half the load, a
quiet one 2 %, four share the rest); then at half the capacity again to see how fast
latency recovers; then every request that did not get a 2xx is retried with its key until it
does (or counted undecided), and the database is audited: a 2xx whose transfer has no row is
lost, more than one row or journal entry per key is duplicated. ``BENCH_OVERLOAD_HOG`` (a share
of one core, e.g. 0.5) runs the 2x load once more with a busy process beside the stack, started
a third into the overload phase at the stack's priority; the door's limit must come down by a
quarter within 5 s of it (sampled every 0.25 s), and the admitted p99 stay within 1 s. Every
judged run has the gateway, the driver and the hog at nice 0 (devstack.overload_plan);
``BENCH_OVERLOAD_RENICE=-5,-10`` adds reniced runs afterwards, labelled and judged on nothing.

The driver runs in its own process (``python -m devstack.bench_overload drive``) with raw
keep-alive connections (devstack.load.Conn), opened as the offered rate needs them, so the
suite, not the client, is the queue: latency counts from each request's intended send time, and
the generator's own lag is printed. Every offered request is accounted for: answered, without
an answer (and why), or still running at the end (``devstack.overload_report``). A missed
target is named after ``MISSED:`` and the run exits non-zero.
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import os
import random
import re
import resource
import subprocess  # devstack starts local processes  # nosec B404
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx

from devstack.answers import Outcome, reason_of
from devstack.bench_transfers import provision
from devstack.load import Conn, transfer_body
from devstack.overload_plan import Run, parse_renice, plan, shares
from devstack.overload_report import (
    Audit,
    Phases,
    generator_line,
    kind,
    limit_down_s,
    line,
    missed,
    pct,
    seconds_line,
    summarize,
)
from devstack.suite import ROOT, python_env

OVERLOAD_S = float(os.environ.get("BENCH_OVERLOAD_S", "30"))
FACTORS = [float(f) for f in os.environ.get("BENCH_OVERLOAD_FACTORS", "2,4").split(",") if f.strip()]
HOG = float(os.environ.get("BENCH_OVERLOAD_HOG", "0"))  # share of one core; 0: no hog run
# Every judged run has the gateway and the driver at the stack's priority (nice 0): the capacity
# they are measured against was. BENCH_OVERLOAD_RENICE=GATEWAY,DRIVER (e.g. -5,-10: what a CPU
# request is in a deployment) adds those runs again afterwards, labelled, judged on nothing
# (devstack.overload_plan).
RENICE = parse_renice(os.environ.get("BENCH_OVERLOAD_RENICE", ""))
QUIET_S = 8.0
# Tenant 0 heavy (half the load); tenant 1 quiet (2 % of it: 0 refused); tenant 2 at exactly
# its fair share of the capacity, a sixth (at most 1 % refused); three others split the rest
# (devstack.overload_plan.shares). The capacity is searched with the shares at 1x.
SHARES = shares(1.0)
WALLETS_PER_TENANT = 20
CLIENT_TIMEOUT_S = 30.0  # a request with no answer by then is counted "client timeout"
DRAIN_S = 60.0  # after the schedule: requests still running then are counted as such
MAX_CONNECTIONS = 8192


def _request(url: str, key: str, wallets: list[str], idem: str) -> bytes:
    body = transfer_body(wallets, 0.0, idem)
    parts = urlsplit(url)
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: keep-alive\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\nIdempotency-Key: {idem}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def cause(exc: BaseException) -> str:
    """Why a request got no answer, in words a reader of the bench line can act on."""
    if isinstance(exc, TimeoutError):
        return "client timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError | BrokenPipeError | asyncio.IncompleteReadError):
        return "reset"
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"os error {errno.errorcode.get(exc.errno, exc.errno)}"
    return f"bad answer {type(exc).__name__}"


def _raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Pool:
    """Keep-alive connections, a new one whenever none is free (up to ``limit``): at an open
    loop's rate the client must not queue requests behind its own connections. The most
    recently used is taken first (a connection idle too long reopens itself: devstack.load)."""

    def __init__(self, host: str, port: int, limit: int) -> None:
        self.host, self.port, self.limit = host, port, limit
        self.free: list[Conn] = []
        self.opened = 0
        self.waited = 0
        self.available = asyncio.Condition()

    def _take(self) -> Conn:
        return self.free.pop()

    async def get(self) -> Conn:
        if self.free:
            return self._take()
        if self.opened < self.limit:
            self.opened += 1
            return Conn(self.host, self.port)
        self.waited += 1
        async with self.available:
            await self.available.wait_for(lambda: bool(self.free))
            return self._take()

    async def put(self, c: Conn, broken: bool = False) -> None:
        if broken:  # reconnects on its next request
            if c.writer is not None:
                c.writer.close()
            c.writer = None
        self.free.append(c)
        async with self.available:
            self.available.notify()


def phases(plan: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(name, rate, seconds) of each phase: the plan's own ``phases`` (a capacity step is one),
    else ``quiet`` (half capacity), ``overload`` (``factor`` x), ``after`` (half)."""
    if plan.get("phases"):
        return [(str(n), float(r), float(s)) for n, r, s in plan["phases"]]
    quiet_s = plan.get("quiet_s", QUIET_S)
    return [
        ("quiet", plan["capacity"] / 2, quiet_s),
        ("overload", plan["capacity"] * plan["factor"], plan["overload_s"]),
        ("after", plan["capacity"] / 2, quiet_s),
    ]


async def drive(plan: dict[str, Any]) -> dict[str, Any]:
    """Open loop through :func:`phases`; every offered request is a record."""
    _raise_fd_limit()
    url, tenants = plan["url"], plan["tenants"]
    parts = urlsplit(url)
    pool = Pool(parts.hostname or "127.0.0.1", parts.port or 80, plan.get("max_connections", MAX_CONNECTIONS))
    timeout = plan.get("client_timeout_s", CLIENT_TIMEOUT_S)
    out: list[dict[str, Any]] = []
    tasks: list[asyncio.Task[None]] = []
    schedule_lag: list[float] = []
    weights = [t["share"] for t in tenants]

    async def one(rec: dict[str, Any]) -> None:
        t = tenants[rec["tenant"]]
        raw = _request(url, t["key"], t["wallets"], rec["key"])
        c = await pool.get()
        rec["sent_lag"] = time.perf_counter() - rec["at"]
        try:
            rec["status"] = await asyncio.wait_for(c.request(raw), timeout)
            if rec["status"] >= 500:  # only a 503 overloaded is shed (contract 15.3)
                rec["reason"] = reason_of(c.body)
        except (
            OSError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
            TimeoutError,
        ) as exc:
            rec["status"], rec["cause"] = 0, cause(exc)
            await pool.put(c, broken=True)
        else:
            await pool.put(c)
        rec["s"] = time.perf_counter() - rec["at"]

    schedule = phases(plan)
    start = time.perf_counter()
    t0 = start
    for phase, rate, secs in schedule:
        n = int(rate * secs)
        for i in range(n):
            at = t0 + i / rate
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            schedule_lag.append(max(0.0, time.perf_counter() - at))
            t = random.choices(range(len(tenants)), weights)[0]
            rec = {"phase": phase, "tenant": t, "key": uuid.uuid4().hex, "at": at, "status": -1, "s": None}
            out.append(rec)
            tasks.append(asyncio.create_task(one(rec)))
        t0 += secs
    _, pending = await asyncio.wait(tasks, timeout=plan.get("drain_s", DRAIN_S))
    now = time.perf_counter()
    for task in pending:
        task.cancel()
    for rec in out:
        if rec["status"] == -1:  # still running: counted, with its wait so far
            rec["s"], rec["cause"] = now - rec["at"], "still running at the end"
    sent = [r["sent_lag"] for r in out if r.get("sent_lag") is not None]
    return {
        "requests": out,
        "started": start,
        "overload_start": start + schedule[0][2],
        "overload_s": plan.get("overload_s", 0.0),
        "generator": {
            "connections": pool.opened,
            "waited_for_connection": pool.waited,
            "schedule_lag_p99_ms": pct(schedule_lag, 0.99),
            "schedule_lag_max_ms": 1000 * max(schedule_lag, default=0.0),
            "send_lag_p99_ms": pct(sent, 0.99),
            "send_lag_max_ms": 1000 * max(sent, default=0.0),
        },
    }


def run_driver(pfile: Path, ofile: Path, seconds: float, nice: int = 0) -> None:
    """The driver in its own process, on the plan in ``pfile``; its records go to ``ofile``."""
    argv = [sys.executable, "-m", "devstack.bench_overload", "drive", str(pfile), str(ofile)]
    subprocess.run(  # nosec B603 - our own driver, argv list
        argv,
        preexec_fn=(lambda: os.nice(nice)) if nice else None,  # relative to ours (0)
        env=python_env({}),
        cwd=ROOT,
        check=True,
        timeout=seconds + DRAIN_S + CLIENT_TIMEOUT_S + 120,
    )


def drive_once(plan: dict[str, Any], seconds: float) -> dict[str, Any]:
    """:func:`drive` in its own process (the driver shares the cores, not the interpreter)."""
    with tempfile.TemporaryDirectory(prefix="sluice-driver-") as tmp:
        pfile, ofile = Path(tmp) / "plan.json", Path(tmp) / "out.json"
        pfile.write_text(json.dumps(plan))
        run_driver(pfile, ofile, seconds)
        return dict(json.loads(ofile.read_text()))


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
                raw = _request(url, t["key"], t["wallets"], r["key"]).split(b"\r\n\r\n", 1)[1]
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


if __name__ == "__main__":
    if sys.argv[1:2] == ["drive"]:
        plan = json.loads(Path(sys.argv[2]).read_text())
        Path(sys.argv[3]).write_text(json.dumps(asyncio.run(drive(plan))))
