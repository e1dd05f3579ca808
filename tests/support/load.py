"""Driving book transfers through the gateways from many concurrent clients (load tests)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx

from tests.conftest import Tenant
from tests.support.flows import book

ATTEMPTS = 40  # with Retry-After (1 s) and jitter: a client keeps at it for a minute or more


def backoff(r: httpx.Response, attempt: int) -> float:
    """How long a client waits before retrying a 503: at least the gateway's Retry-After, plus
    full jitter on an exponential step (so refused clients do not come back together)."""
    after = float(r.headers.get("Retry-After", "0") or 0)
    return after + random.uniform(0, min(2.0, 0.05 * 2**attempt))  # noqa: S311 - jitter, not secrecy


async def drive(
    t: Tenant, plan: list[tuple[str, str, str]], concurrency: int
) -> tuple[float, list[float], list[Any], int]:
    """Send the plan of book transfers (source, destination, amount) from ``concurrency``
    clients, alternating the stack's gateways, retrying as a client must (the same key on 503
    or a dropped connection); (seconds, latencies, answers in plan order, retried requests)."""
    queue: asyncio.Queue[tuple[int, tuple[str, str, str]]] = asyncio.Queue()
    for item in enumerate(plan):
        queue.put_nowait(item)
    latencies: list[float] = []
    retries: list[int] = []
    answers: list[Any] = [None] * len(plan)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    clients = [httpx.AsyncClient(base_url=g.url, limits=limits, timeout=60) for g in t.stack.gateways]

    async def client(n: int) -> None:
        http = clients[n % len(clients)]
        while not queue.empty():
            i, (src, dst, amount) = queue.get_nowait()
            body = book(src, dst, amount)
            start = time.perf_counter()
            for attempt in range(ATTEMPTS):  # as a client must: retry with the same key when told to
                try:
                    r = await http.post(
                        "/v1/transfers", json=body, headers=t.headers(body["idempotency_key"])
                    )
                except httpx.TransportError:  # a dropped keep-alive connection
                    if attempt == ATTEMPTS - 1:
                        raise
                    retries.append(i)
                    continue
                if r.status_code != 503 or attempt == ATTEMPTS - 1:
                    break
                retries.append(i)  # 503 provider_unavailable: "retry with the same Idempotency-Key"
                await asyncio.sleep(backoff(r, attempt))
            latencies.append(time.perf_counter() - start)
            answers[i] = (r.status_code, r.json())

    try:
        start = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(concurrency)))
        elapsed = time.perf_counter() - start
    finally:
        for c in clients:
            await c.aclose()
    return elapsed, latencies, answers, len(retries)
