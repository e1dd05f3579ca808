"""Admission control (contract 13.1) on a real gateway process with a bound of one command in
flight, whose commands are held 1.5 s after their publish (failpoint ``rpc.after_send``): a
second command meanwhile is 503 overloaded at once, with Retry-After, and dispatches nothing;
its retry with the same key then succeeds once; reads are never shed."""

from __future__ import annotations

import asyncio
import time
import uuid

import asyncpg
import httpx
import pytest

from devstack.stores import free_port
from tests.conftest import Stack, make_tenant
from tests.support.db import pg_kwargs
from tests.support.flows import book, funded

pytestmark = pytest.mark.integration


async def _rows_for(stack: Stack, key: str) -> int:
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    try:
        return int(await db.fetchval("SELECT count(*) FROM ledger.transfers WHERE idempotency_key = $1", key))
    finally:
        await db.close()


def test_beyond_the_bound_is_503_overloaded_dispatches_nothing_and_the_retry_succeeds(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=100000)
    src, dst = funded(t, "100.00")["wallet_id"], funded(t, "1.00")["wallet_id"]
    assert stack.suite is not None
    gw = stack.suite.start(
        "gateway",
        free_port(),
        extra={
            "SLUICE_MAX_IN_FLIGHT": "1",
            "SLUICE_TENANT_MAX_IN_FLIGHT": "1",
            "SLUICE_FAILPOINTS": "rpc.after_send=sleep(1.5)",
        },
        instance="gateway-admission",
    )
    try:
        stack.suite.wait_ready([gw], timeout=120)
        headers = {"Authorization": f"Bearer {t.key}"}

        async def scenario() -> tuple[httpx.Response, httpx.Response, httpx.Response, float, float]:
            async with httpx.AsyncClient(base_url=gw.url, headers=headers, timeout=30) as c:
                k1, k2 = uuid.uuid4().hex, uuid.uuid4().hex
                first = asyncio.create_task(
                    c.post("/v1/transfers", json=book(src, dst, "1.00", k1), headers={"Idempotency-Key": k1})
                )
                await asyncio.sleep(0.5)  # the first is in flight (held after its publish)
                t0 = time.monotonic()
                shed = await c.post(
                    "/v1/transfers", json=book(src, dst, "2.00", k2), headers={"Idempotency-Key": k2}
                )
                shed_s = time.monotonic() - t0
                t0 = time.monotonic()
                read = await c.get(f"/v1/wallets/{src}")  # a read is never shed
                read_s = time.monotonic() - t0
                return await first, shed, read, shed_s, read_s

        first, shed, read, shed_s, read_s = asyncio.run(scenario())
        assert first.status_code == 201, first.text
        assert shed.status_code == 503, shed.text
        err = shed.json()["error"]
        assert err["code"] == "provider_unavailable" and err["details"]["reason"] == "overloaded", err
        assert shed.headers.get("retry-after") == "1"
        assert shed_s < 1.0, shed_s  # answered at the door, not after the first's 1.5 s
        assert read.status_code == 200, read.text  # the bound was full: reads are not counted
        assert read_s >= 1.4, read_s  # it also went through the held RPC (the bound was full)
        k2 = shed.request.headers["idempotency-key"]
        time.sleep(2.0)
        assert asyncio.run(_rows_for(stack, k2)) == 0  # the refused command was never dispatched

        retry = httpx.post(
            gw.url + "/v1/transfers",
            json=book(src, dst, "2.00", k2),
            headers={**headers, "Idempotency-Key": k2},
            timeout=30,
        )
        assert retry.status_code == 201, retry.text  # not a stored 503: it runs normally
        assert retry.headers.get("x-idempotent-replay") != "true"
        again = httpx.post(
            gw.url + "/v1/transfers",
            json=book(src, dst, "2.00", k2),
            headers={**headers, "Idempotency-Key": k2},
            timeout=30,
        )
        assert again.status_code == 201 and again.headers.get("x-idempotent-replay") == "true"
        assert again.json()["data"]["transfer_id"] == retry.json()["data"]["transfer_id"]
        assert asyncio.run(_rows_for(stack, k2)) == 1

        metrics = httpx.get(gw.metrics_url + "/metrics", timeout=10).text
        assert 'sluice_admission_shed_total{reason="instance"}' in metrics, metrics[-2000:]
    finally:
        stack.suite.stop_proc(gw)
