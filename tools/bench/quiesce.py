"""A turn starts when the last one has finished (docs/performance/index.md, yardstick 6).

ABAB turns and capacity steps were separated by a 2 s sleep: what the last turn left (consumer
lag, outbox rows not yet published, the stack still busy) was measured in the next. Here the
next turn waits until every consumer's lag is 0, every outbox is empty and the stack's CPU is
back at its idle share (within a margin), and the reading is printed. :func:`quiet` is the pure
decision; :func:`wait` reads the stack (each service's ``/metrics``, PostgreSQL, /proc).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass

import asyncpg
import httpx

from tools.bench.measure import cpu_seconds

OUTBOXES = ("ledger", "compliance", "webhooks", "identity")  # the schemas with an outbox (admin: identity)
CPU_MARGIN = 0.05  # a quiet stack uses at most its idle share plus this much of one core
SAMPLE_S = 1.0
_LAG = re.compile(r"^sluice_consumer_lag\{([^}]*)\} ([0-9.e+]+)$", re.M)


@dataclass(frozen=True, slots=True)
class Reading:
    lag: dict[str, float]  # consumer -> messages behind, over its partitions
    outbox: dict[str, int]  # schema -> rows not yet published
    cpu: float  # the stack's share of one core over the last sample
    unreadable: tuple[str, ...] = ()  # /metrics that did not answer: their lag is unknown


def quiet(r: Reading, idle_cpu: float, margin: float = CPU_MARGIN) -> bool:
    """Every consumer caught up (and every lag known), every outbox empty, the stack's CPU back
    at idle."""
    caught_up = not r.unreadable and not any(r.lag.values())
    return caught_up and not any(r.outbox.values()) and r.cpu <= idle_cpu + margin


def line(r: Reading, idle_cpu: float, waited_s: float) -> str:
    lag = sum(r.lag.values())
    behind = ", ".join(f"{k} {v:.0f}" for k, v in sorted(r.lag.items()) if v) or "none"
    pending = ", ".join(f"{k} {v}" for k, v in sorted(r.outbox.items()) if v) or "none"
    state = "quiet" if quiet(r, idle_cpu) else "NOT QUIET"
    return (
        f"{state} after {waited_s:.0f} s: consumer lag {lag:.0f} (behind: {behind}), outbox rows "
        f"{sum(r.outbox.values())} (pending: {pending}), stack CPU {r.cpu:.1%} of one core "
        f"(idle {idle_cpu:.1%})" + (f"; lag unknown: {', '.join(r.unreadable)}" if r.unreadable else "")
    )


def parse_lag(metrics: str) -> dict[str, float]:
    """Each consumer's lag over its partitions, from a ``/metrics`` text."""
    out: dict[str, float] = {}
    for labels, value in _LAG.findall(metrics):
        found = re.search(r'consumer="([^"]*)"', labels)
        name = found.group(1) if found else "?"
        out[name] = out.get(name, 0.0) + float(value)
    return out


def _lag(metrics_urls: list[str]) -> tuple[dict[str, float], tuple[str, ...]]:
    out: dict[str, float] = {}
    unreadable = []
    for url in metrics_urls:
        try:
            r = httpx.get(url + "/metrics", timeout=5)
        except httpx.HTTPError:
            r = None
        if r is None or r.status_code != 200:
            unreadable.append(url)
            continue
        for name, value in parse_lag(r.text).items():
            out[name] = out.get(name, 0.0) + value
    return out, tuple(unreadable)


async def _outboxes(dsn: str) -> dict[str, int]:
    db = await asyncpg.connect(dsn)
    try:
        return {
            schema: int(await db.fetchval(f"SELECT count(*) FROM {schema}.outbox")) for schema in OUTBOXES
        }  # nosec B608 - our schema names
    finally:
        await db.close()


def read(pids: dict[str, int], metrics_urls: list[str], dsn: str) -> Reading:
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    time.sleep(SAMPLE_S)
    cpu = sum(cpu_seconds(pid) - before[name] for name, pid in pids.items()) / SAMPLE_S
    lag, unreadable = _lag(metrics_urls)
    return Reading(lag, asyncio.run(_outboxes(dsn)), cpu, unreadable)


def wait(
    pids: dict[str, int], metrics_urls: list[str], dsn: str, idle_cpu: float, timeout_s: float = 120.0
) -> tuple[bool, str]:
    """Until the stack is quiet (or ``timeout_s``): (quiet?, the printed line)."""
    t0 = time.monotonic()
    while True:
        r = read(pids, metrics_urls, dsn)
        waited = time.monotonic() - t0
        if quiet(r, idle_cpu) or waited >= timeout_s:
            return quiet(r, idle_cpu), line(r, idle_cpu, waited)
