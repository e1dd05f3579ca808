"""The open-loop driver of the overload part and of the capacity steps: its
own process (``python -m tools.bench.driver PLAN OUT``), raw keep-alive connections
(tools.bench.load.Conn) opened as the offered rate needs them, so the system measured, not the
client, is the queue. A plan names the URL, the tenants (key, wallets, share) and its phases
(name, rate, seconds); every offered request is a record: its phase, tenant, key, intended send
time, status (0: no answer, with its cause; -1: still running at the end), the reason a 5xx
named, and its latency from the intended send time. The driver's own lag is reported.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import random
import resource
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tools.bench.answers import reason_of
from tools.bench.load import Conn, transfer_body
from tools.bench.overload.plan import DRIVER_NICE
from tools.bench.overload.report import pct
from tools.stack.processes import ROOT, python_env

QUIET_S = 8.0  # the phases before and after the overload, at half the capacity
CLIENT_TIMEOUT_S = 30.0  # a request with no answer by then is counted "client timeout"
DRAIN_S = 60.0  # after the schedule: requests still running then are counted as such
MAX_CONNECTIONS = 8192


def raw_request(url: str, key: str, wallets: list[str], idem: str) -> bytes:
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
    recently used is taken first (a connection idle too long reopens itself: tools.bench.load)."""

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
        raw = raw_request(url, t["key"], t["wallets"], rec["key"])
        c = await pool.get()
        rec["sent_lag"] = time.perf_counter() - rec["at"]
        try:
            rec["status"] = await asyncio.wait_for(c.request(raw), timeout)
            if rec["status"] >= 500:  # only a 503 overloaded is shed (docs/performance/index.md, yardstick 3)
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
            rec: dict[str, Any] = {
                "phase": phase,
                "tenant": t,
                "key": uuid.uuid4().hex,
                "at": at,
                "status": -1,
                "s": None,
            }
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
    argv = [sys.executable, "-m", "tools.bench.driver", str(pfile), str(ofile)]
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
        run_driver(pfile, ofile, seconds, DRIVER_NICE)
        return dict(json.loads(ofile.read_text()))


if __name__ == "__main__":
    plan = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps(asyncio.run(drive(plan))))
