"""Failed authentications are counted atomically per address, an IPv6 client by its /64,
against the real Redis (docs/security.md, "Failed-authentication limiter")."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.asyncio import Redis

from common.authfail import FailureLimiter, counted_as
from common.errors import ServiceError
from tests.conftest import Stack

pytestmark = pytest.mark.inprocess


@pytest.mark.unit
@pytest.mark.parametrize(
    ("address", "unit"),
    [
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("192.0.2.7", "192.0.2.7"),
        (None, "unknown"),
    ],
)
def test_the_unit_a_failure_counts_against(address: str | None, unit: str) -> None:
    assert counted_as(address) == unit


def _limiter(stack: Stack, limit: int) -> tuple[FailureLimiter, Redis]:
    redis = Redis.from_url(stack.stores.redis_url)
    return FailureLimiter(redis, "test-" + uuid.uuid4().hex[:8], limit), redis


async def _record(limiter: FailureLimiter, address: str) -> int:
    try:
        await limiter.record(address)
        return 401
    except ServiceError as err:
        assert err.status == 429 and err.details["reason"] == "authentication_failures"
        return 429


def test_concurrent_failures_never_exceed_the_limit(stack: Stack) -> None:
    async def run() -> list[int]:
        limiter, redis = _limiter(stack, 5)
        try:
            return await asyncio.gather(*(_record(limiter, "198.51.100.23") for _ in range(40)))
        finally:
            await redis.aclose()

    statuses = asyncio.run(run())
    assert statuses.count(401) == 5 and statuses.count(429) == 35, statuses


def test_one_ipv6_64_shares_one_budget(stack: Stack) -> None:
    async def run() -> tuple[list[int], int, int]:
        limiter, redis = _limiter(stack, 3)
        try:
            same = [await _record(limiter, f"2001:db8:7:7::{i:x}") for i in range(1, 6)]
            other = await _record(limiter, "2001:db8:7:8::1")  # the next /64: its own budget
            try:
                await limiter.check("2001:db8:7:7:ffff::9")
                checked = 200
            except ServiceError as err:
                checked = err.status
            return same, other, checked
        finally:
            await redis.aclose()

    same, other, checked = asyncio.run(run())
    assert same == [401, 401, 401, 429, 429], same
    assert other == 401 and checked == 429
