"""The stack's processes: every service answers /healthz and /readyz, and the two ledgers of
one consumer group both receive work. The walking skeleton itself (one request through gateway,
compliance and ledger) is in tests/inprocess/test_foundation.py."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from tests.conftest import Stack, customer_body, make_tenant

pytestmark = pytest.mark.integration


def test_every_service_answers_healthz_and_readyz(stack: Stack) -> None:
    for proc in stack.suite.procs:
        assert httpx.get(proc.url + "/healthz").status_code == 200, proc.name
        assert httpx.get(proc.url + "/readyz").status_code == 200, proc.name


def test_two_ledger_consumers_in_one_group_both_receive_work(stack: Stack) -> None:
    t = make_tenant(stack)

    def processed() -> list[int]:
        return [httpx.get(p.url + "/readyz").json()["stats"]["processed"] for p in stack.ledgers]

    before = processed()

    async def burst() -> list[int]:
        async with httpx.AsyncClient(timeout=30) as client:
            rs = await asyncio.gather(
                *(
                    client.post(
                        stack.gateways[i % 2].url + "/v1/customers",
                        json=customer_body(),
                        headers=t.headers(uuid.uuid4().hex),
                    )
                    for i in range(40)
                )
            )
        return [r.status_code for r in rs]

    assert asyncio.run(burst()) == [201] * 40
    after = processed()
    gained = [a - b for a, b in zip(after, before, strict=True)]
    assert sum(gained) >= 40
    assert all(g > 0 for g in gained), gained
