"""Admission control (contracts 13.1 and 14.2) on a real gateway process whose commands are held
``HOLD_S`` after their publish (failpoint ``rpc.after_send``), with room for two commands in
flight and one per tenant:

- a noisy tenant's second command is 503 overloaded at once with bound ``tenant`` while the
  instance still has room; a quiet tenant's command meanwhile is admitted and succeeds;
- with both places taken, a third tenant is refused with bound ``instance``;
- each refusal is answered while the held commands are still in flight (the in-flight gauge
  and the held requests say so, not a stopwatch), dispatches nothing (the admitted counter
  moved only for the two admitted), and its retry with the same key then succeeds once;
- reads have a lane of their own: one goes through while the commands' lane is full.

Every step waits on the gateway's ``sluice_admission_in_flight`` gauge, not on a sleep.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from dataclasses import dataclass

import asyncpg
import httpx
import pytest

from tests.conftest import Stack, Tenant, customer_body, make_tenant
from tests.support.db import pg_kwargs
from tests.support.flows import book, funded
from tools.stack.processes import free_port
from tools.stack.suite import Proc

pytestmark = pytest.mark.integration

HOLD_S = 5.0  # every RPC of the admission gateway is held this long after its publish


async def _rows_for(stack: Stack, key: str) -> int:
    db = await asyncpg.connect(**pg_kwargs(stack.stores.database_url))
    try:
        return int(await db.fetchval("SELECT count(*) FROM ledger.transfers WHERE idempotency_key = $1", key))
    finally:
        await db.close()


def _metric(text: str, name: str) -> float:
    """A sample of the gateway's /metrics by its full name with labels (0 when absent)."""
    m = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else 0.0


@dataclass
class Seen:
    """What the scenario saw: the answers, and the commands in flight when each refusal came."""

    first: httpx.Response
    quiet: httpx.Response
    tenant_shed: httpx.Response
    instance_shed: httpx.Response
    read: httpx.Response
    in_flight_after_shed: tuple[float, float]
    held_after_shed: tuple[bool, bool]
    shed_s: tuple[float, float]


async def _scenario(gw: Proc, noisy: Tenant, quiet: Tenant, third: Tenant, src: str, dst: str) -> Seen:
    def auth(t: Tenant, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {t.key}", **({"Idempotency-Key": key} if key else {})}

    async with (
        httpx.AsyncClient(base_url=gw.url, timeout=60) as c,
        httpx.AsyncClient(base_url=gw.metrics_url, timeout=30) as m,
    ):

        async def in_flight() -> float:
            return _metric((await m.get("/metrics")).text, "sluice_admission_in_flight")

        async def until_in_flight(n: int, sent: asyncio.Task[httpx.Response], timeout_s: float = 60) -> None:
            """Until ``n`` commands are in flight; fails at once if ``sent`` was answered first."""
            deadline = time.monotonic() + timeout_s
            while (seen := await in_flight()) != n:
                if sent.done():
                    answer = sent.result()
                    raise AssertionError(
                        f"answered {answer.status_code} before {n} were in flight: {answer.text}"
                    )
                assert time.monotonic() < deadline, f"{seen} commands in flight, waited for {n}"
                await asyncio.sleep(0.02)

        # The door knows a credential's tenant once it has authenticated on this gateway.
        for t in (noisy, quiet, third):
            assert (await c.get("/v1/health", headers=auth(t))).status_code == 200
        k1, k2 = uuid.uuid4().hex, uuid.uuid4().hex
        first = asyncio.create_task(
            c.post("/v1/transfers", json=book(src, dst, "1.00", k1), headers=auth(noisy, k1))
        )
        await until_in_flight(1, first)
        t0 = time.monotonic()
        tenant_shed = await c.post("/v1/transfers", json=book(src, dst, "2.00", k2), headers=auth(noisy, k2))
        tenant_shed_s = time.monotonic() - t0
        after_tenant = await in_flight(), first.done()

        kq = uuid.uuid4().hex
        quiet_task = asyncio.create_task(
            c.post("/v1/customers", json=customer_body(), headers=auth(quiet, kq))
        )
        await until_in_flight(2, quiet_task)
        kt = uuid.uuid4().hex
        t0 = time.monotonic()
        instance_shed = await c.post("/v1/customers", json=customer_body(), headers=auth(third, kt))
        instance_shed_s = time.monotonic() - t0
        after_instance = await in_flight(), first.done() or quiet_task.done()
        read = await c.get(f"/v1/wallets/{src}", headers=auth(noisy))
        return Seen(
            await first,
            await quiet_task,
            tenant_shed,
            instance_shed,
            read,
            (after_tenant[0], after_instance[0]),
            (not after_tenant[1], not after_instance[1]),
            (tenant_shed_s, instance_shed_s),
        )


def test_the_tenant_and_instance_bounds_refuse_at_once_and_a_quiet_tenant_gets_in(stack: Stack) -> None:
    noisy, quiet, third = (make_tenant(stack, rate_limit=100000) for _ in range(3))
    src, dst = funded(noisy, "100.00")["wallet_id"], funded(noisy, "1.00")["wallet_id"]
    gw = stack.suite.start(
        "gateway",
        free_port(),
        extra={
            "SLUICE_MAX_IN_FLIGHT": "2",
            "SLUICE_TENANT_MAX_IN_FLIGHT": "1",
            "SLUICE_FAILPOINTS": f"rpc.after_send=sleep({HOLD_S})",
        },
        instance="gateway-admission",
    )
    try:
        stack.suite.wait_ready([gw], timeout=120)
        seen = asyncio.run(_scenario(gw, noisy, quiet, third, src, dst))
        assert seen.first.status_code == 201, seen.first.text
        assert seen.quiet.status_code == 201, seen.quiet.text  # beside the noisy tenant at its bound
        for shed, bound in ((seen.tenant_shed, "tenant"), (seen.instance_shed, "instance")):
            assert shed.status_code == 503, shed.text
            err = shed.json()["error"]
            assert err["code"] == "provider_unavailable", err
            assert err["details"]["reason"] == "overloaded" and err["details"]["bound"] == bound, err
            assert shed.headers.get("retry-after") == "1"
        # Answered at the door: the held commands were still in flight when each refusal came
        # back (the tenant refusal with the instance half free), so nothing waited for them.
        assert seen.in_flight_after_shed == (1, 2) and seen.held_after_shed == (True, True), seen
        # And within the hold (the failpoint's setting): a refusal that queued for a place
        # would have taken at least that long.
        assert max(seen.shed_s) < HOLD_S, seen.shed_s
        assert seen.read.status_code == 200, seen.read.text  # the reads' lane was not full

        metrics = httpx.get(gw.metrics_url + "/metrics", timeout=10).text
        # Only the two admitted commands went past the door: the refused ones were never
        # dispatched (nothing is published before admission).
        assert _metric(metrics, "sluice_admission_admitted_total") == 2, metrics[-3000:]
        assert _metric(metrics, 'sluice_admission_shed_total{reason="tenant"}') == 1
        assert _metric(metrics, 'sluice_admission_shed_total{reason="instance"}') == 1
        k2 = seen.tenant_shed.request.headers["idempotency-key"]
        assert asyncio.run(_rows_for(stack, k2)) == 0

        headers = {"Authorization": f"Bearer {noisy.key}", "Idempotency-Key": k2}
        retry = httpx.post(
            gw.url + "/v1/transfers", json=book(src, dst, "2.00", k2), headers=headers, timeout=60
        )
        assert retry.status_code == 201, retry.text  # not a stored 503: it runs normally
        assert retry.headers.get("x-idempotent-replay") != "true"
        again = httpx.post(
            gw.url + "/v1/transfers", json=book(src, dst, "2.00", k2), headers=headers, timeout=60
        )
        assert again.status_code == 201 and again.headers.get("x-idempotent-replay") == "true"
        assert again.json()["data"]["transfer_id"] == retry.json()["data"]["transfer_id"]
        assert asyncio.run(_rows_for(stack, k2)) == 1
    finally:
        stack.suite.stop_proc(gw)
