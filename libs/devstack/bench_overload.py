"""The overload part of ``make bench`` (issue 23, contract 13.1): offered twice the capacity the
transfers part just measured, open loop, for ``BENCH_OVERLOAD_S`` (30) seconds, from six
tenants (one sends half the load, a quiet one a tenth, four share the rest); then at half the
capacity again to see how fast latency recovers; then every refused request is retried with
its key until it is done, and the database is audited: a 2xx whose transfer has no row is
lost, more than one row or journal entry per key is duplicated.

The driver runs in its own process (``python -m devstack.bench_overload drive``) with raw
keep-alive connections (devstack.load.Conn), so the suite, not the client, is measured. Last
line: ``bench-overload: offered N/s admitted N/s shed N/s admitted p99 N ms shed p99 N ms
quiet-tenant p99 N ms goodput R recovered_s N lost N duplicated N``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess  # devstack starts local processes  # nosec B404
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg

from devstack.bench_transfers import provision
from devstack.load import Conn, transfer_body
from devstack.suite import ROOT, python_env

OVERLOAD_S = float(os.environ.get("BENCH_OVERLOAD_S", "30"))
QUIET_S = 8.0
SHARES = (0.5, 0.1, 0.1, 0.1, 0.1, 0.1)  # tenant 0 heavy, tenant 1 the quiet one we watch
WALLETS_PER_TENANT = 20


def _request(url: str, key: str, wallets: list[str], idem: str) -> bytes:
    body = transfer_body(wallets, 0.0, idem)
    parts = urlsplit(url)
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: keep-alive\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\nIdempotency-Key: {idem}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def drive(plan: dict[str, Any]) -> dict[str, Any]:
    """Open loop: phase ``quiet`` (half capacity), ``overload`` (2x), ``after`` (half again)."""
    url, tenants = plan["url"], plan["tenants"]
    parts = urlsplit(url)
    free: asyncio.Queue[Conn] = asyncio.Queue()
    for _ in range(plan["connections"]):
        free.put_nowait(Conn(parts.hostname or "127.0.0.1", parts.port or 80))
    out: list[dict[str, Any]] = []
    tasks: list[asyncio.Task[None]] = []
    weights = [t["share"] for t in tenants]

    async def one(phase: str, t: int, at: float) -> None:
        idem = uuid.uuid4().hex
        raw = _request(url, tenants[t]["key"], tenants[t]["wallets"], idem)
        c = await free.get()
        try:
            status = await c.request(raw)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            status, c.writer = 0, None
        finally:
            free.put_nowait(c)
        out.append(
            {
                "phase": phase,
                "tenant": t,
                "key": idem,
                "status": status,
                "at": at,
                "s": time.perf_counter() - at,
            }
        )

    start = time.perf_counter()
    t0 = start
    for phase, rate, secs in (
        ("quiet", plan["capacity"] / 2, QUIET_S),
        ("overload", plan["capacity"] * 2, plan["overload_s"]),
        ("after", plan["capacity"] / 2, QUIET_S),
    ):
        n = int(rate * secs)
        for i in range(n):
            at = t0 + i / rate
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            t = random.choices(range(len(tenants)), weights)[0]
            tasks.append(asyncio.create_task(one(phase, t, at)))
        t0 += secs
    await asyncio.wait(tasks, timeout=60)
    return {
        "requests": out,
        "started": start,
        "overload_start": start + QUIET_S,
        "overload_s": plan["overload_s"],
    }


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(len(xs) * p))] if xs else 0.0


def _rss(pids: dict[str, int]) -> dict[str, float]:
    """Resident memory of each process now, in MB."""
    out = {}
    for name, pid in pids.items():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out[name] = int(line.split()[1]) / 1024
        except OSError:
            pass
    return out


def _rss_sampler(pids: dict[str, int], stop: threading.Event, peaks: dict[str, float]) -> None:
    while not stop.is_set():
        for name, mb in _rss(pids).items():
            peaks[name] = max(peaks.get(name, 0.0), mb)
        stop.wait(0.5)


async def _retry_refused(url: str, tenants: list[dict[str, Any]], refused: list[dict[str, Any]]) -> int:
    """Every refused request again, same key, until a 2xx (what a client does): returns how
    many ended 2xx."""
    import httpx

    sem = asyncio.Semaphore(16)
    done = 0

    async def again(r: dict[str, Any], c: httpx.AsyncClient) -> None:
        nonlocal done
        t = tenants[r["tenant"]]
        async with sem:
            for _ in range(30):
                raw = _request(url, t["key"], t["wallets"], r["key"]).split(b"\r\n\r\n", 1)[1]
                res = await c.post(
                    url,
                    content=raw,
                    headers={
                        "Authorization": f"Bearer {t['key']}",
                        "Idempotency-Key": r["key"],
                        "Content-Type": "application/json",
                    },
                )
                if res.status_code < 300:
                    r["retried_ok"] = True
                    done += 1
                    return
                await asyncio.sleep(0.5)

    async with httpx.AsyncClient(timeout=30) as c:
        await asyncio.gather(*(again(r, c) for r in refused))
    return done


async def _audit(dsn: str, keys: list[str]) -> tuple[int, int]:
    """(2xx keys without a transfer row, duplicated effects) over ``keys``: more than one row
    per key, or more than one journal entry of one kind for one transfer."""
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
    lost = sum(1 for k in keys if k not in found)
    return lost, sum(n - 1 for n in found.values() if n > 1) + int(twice)


def run(gateway: str, admin: str, token: str, pids: dict[str, int], dsn: str, capacity: float) -> str:
    tenants = []
    for share in SHARES:
        key, wallets = asyncio.run(provision(gateway, admin, token, WALLETS_PER_TENANT, funding="1000.00"))
        tenants.append({"key": key, "wallets": wallets, "share": share})
    url = gateway + "/v1/transfers"
    plan = {
        "url": url,
        "tenants": tenants,
        "capacity": capacity,
        "overload_s": OVERLOAD_S,
        "connections": 1024,
    }
    with tempfile.TemporaryDirectory(prefix="sluice-overload-") as tmp:
        pfile, ofile = Path(tmp) / "plan.json", Path(tmp) / "out.json"
        pfile.write_text(json.dumps(plan))
        quiet_rss = _rss(pids)
        peaks: dict[str, float] = {}
        stop = threading.Event()
        sampler = threading.Thread(target=_rss_sampler, args=(pids, stop, peaks), daemon=True)
        sampler.start()
        subprocess.run(  # nosec B603 - our own driver, argv list
            [sys.executable, "-m", "devstack.bench_overload", "drive", str(pfile), str(ofile)],
            env=python_env({}),
            cwd=ROOT,
            check=True,
            timeout=OVERLOAD_S + 4 * QUIET_S + 180,
        )
        stop.set()
        res = json.loads(ofile.read_text())
    reqs = res["requests"]
    over = [r for r in reqs if r["phase"] == "overload"]
    ok = [r for r in over if 200 <= r["status"] < 300]
    shed = [r for r in over if r["status"] == 503]
    secs = res["overload_s"]
    quiet = [r["s"] for r in reqs if r["phase"] == "quiet" and 200 <= r["status"] < 300]
    quiet_p99 = _pct(quiet, 0.99)
    after = sorted((r for r in reqs if r["phase"] == "after"), key=lambda r: r["at"])
    end = res["overload_start"] + secs
    recovered = float(QUIET_S)
    for second in range(int(QUIET_S)):
        window = [r["s"] for r in after if end + second <= r["at"] < end + second + 1 and r["status"] < 300]
        if window and _pct(window, 0.99) <= 2 * max(quiet_p99, 1.0):
            recovered = float(second)
            break
    refused = [r for r in reqs if not (200 <= r["status"] < 300)]
    asyncio.run(_retry_refused(url, tenants, refused))
    keys = [r["key"] for r in reqs if 200 <= r["status"] < 300 or r.get("retried_ok")]
    lost, dup = asyncio.run(_audit(dsn, keys))
    quiet_tenant = [r["s"] for r in over if r["tenant"] == 1 and 200 <= r["status"] < 300]
    for name in pids:
        print(
            f"overload RSS {name:<10} quiet {quiet_rss.get(name, 0):6.1f} MB "
            f"peak {peaks.get(name, 0):6.1f} MB",
            flush=True,
        )
    print(
        f"overload: quiet p99 {quiet_p99:.0f} ms; heavy tenant "
        f"{sum(1 for r in over if r['tenant'] == 0)} sent, "
        f"{sum(1 for r in shed if r['tenant'] == 0)} shed; quiet tenant {len(quiet_tenant)} admitted, "
        f"{sum(1 for r in shed if r['tenant'] == 1)} shed; other answers "
        f"{dict(Counter(r['status'] for r in over if r['status'] not in (201, 503)))} "
        f"(0: no answer) [load avg {os.getloadavg()[0]:.1f}]",
        flush=True,
    )
    return (
        f"bench-overload: offered {len(over) / secs:.0f}/s admitted {len(ok) / secs:.0f}/s "
        f"shed {len(shed) / secs:.0f}/s admitted p99 {_pct([r['s'] for r in ok], 0.99):.0f} ms "
        f"shed p99 {_pct([r['s'] for r in shed], 0.99):.0f} ms "
        f"quiet-tenant p99 {_pct(quiet_tenant, 0.99):.0f} ms goodput {len(ok) / secs / max(capacity, 1):.2f} "
        f"recovered_s {recovered:.0f} lost {lost} duplicated {dup}"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["drive"]:
        plan = json.loads(Path(sys.argv[2]).read_text())
        Path(sys.argv[3]).write_text(json.dumps(asyncio.run(drive(plan))))
