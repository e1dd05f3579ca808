"""Driving book transfers through the gateways from many concurrent clients (load tests).

The clients are aiohttp's, as the webhooks sender's are (services/webhooks/sender.py): httpx
spent 1.3 ms of CPU per keep-alive POST against aiohttp's 0.07 ms, and a load test's client
shares the 2 cores with the suite it loads (py-spy, 2026-11-28: the pytest process, nearly all
of it httpx and httpcore's pool, was the busiest process of the ledger's load test).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import aiohttp

from tests.conftest import Tenant
from tests.support.flows import book

ATTEMPTS = 40  # with Retry-After (1 s) and jitter: a client keeps at it for a minute or more


def backoff(retry_after: str | None, attempt: int) -> float:
    """How long a client waits before retrying a 503: at least the gateway's Retry-After, plus
    full jitter on an exponential step (so refused clients do not come back together)."""
    after = float(retry_after or "0")
    return after + random.uniform(0, min(2.0, 0.05 * 2**attempt))  # noqa: S311 - jitter, not secrecy


async def _post(http: aiohttp.ClientSession, t: Tenant, body: dict[str, Any]) -> tuple[int, Any, str | None]:
    """One attempt: (status, decoded answer, Retry-After)."""
    async with http.post(
        "/v1/transfers", data=json.dumps(body), headers=t.headers(body["idempotency_key"])
    ) as r:
        return r.status, json.loads(await r.read()), r.headers.get("Retry-After")


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
    timeout = aiohttp.ClientTimeout(total=60)
    clients = [
        aiohttp.ClientSession(g.url, connector=aiohttp.TCPConnector(limit=concurrency), timeout=timeout)
        for g in t.stack.gateways
    ]

    async def client(n: int) -> None:
        http = clients[n % len(clients)]
        while not queue.empty():
            i, (src, dst, amount) = queue.get_nowait()
            body = book(src, dst, amount)
            start = time.perf_counter()
            for attempt in range(ATTEMPTS):  # as a client must: retry with the same key when told to
                try:
                    status, answer, retry_after = await _post(http, t, body)
                except aiohttp.ClientConnectionError:  # a dropped keep-alive connection
                    if attempt == ATTEMPTS - 1:
                        raise
                    retries.append(i)
                    continue
                if status != 503 or attempt == ATTEMPTS - 1:
                    break
                retries.append(i)  # 503 provider_unavailable: "retry with the same Idempotency-Key"
                await asyncio.sleep(backoff(retry_after, attempt))
            latencies.append(time.perf_counter() - start)
            answers[i] = (status, answer)

    try:
        start = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(concurrency)))
        elapsed = time.perf_counter() - start
    finally:
        for c in clients:
            await c.close()
    return elapsed, latencies, answers, len(retries)
