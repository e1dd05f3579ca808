"""Readiness and what takes a process out of service: a store check failing past its grace, a
part that reports a problem; never a cache (Valkey), never a blip shorter than the grace."""

from __future__ import annotations

import asyncio

import pytest

from common.health import Blips, Readiness, readiness_report

pytestmark = pytest.mark.unit


def _checks(failing: set[str]) -> dict[str, object]:
    def check(name: str) -> object:
        async def run() -> None:
            if name in failing:
                raise ConnectionError(name)

        return run

    return {n: check(n) for n in ("database", "kafka", "redis")}


def test_a_blip_shorter_than_the_grace_leaves_the_process_in_service() -> None:
    blips = Blips(grace_s=10)
    assert blips.lasting({"database"}, now=100.0) == set()
    assert blips.lasting({"database"}, now=109.9) == set()
    assert blips.lasting({"database"}, now=110.0) == {"database"}
    assert blips.lasting(set(), now=111.0) == set()  # it passed: the next failure starts over
    assert blips.lasting({"database"}, now=112.0) == set()


async def test_the_report_says_degraded_within_the_grace_and_unavailable_after() -> None:
    blips = Blips(grace_s=0.2)
    code, body = await readiness_report("gateway", _checks({"database"}), Readiness(), blips)  # type: ignore[arg-type]
    assert (code, body["status"]) == (200, "degraded")
    assert body["checks"]["database"].startswith("unavailable")
    await asyncio.sleep(0.25)
    code, body = await readiness_report("gateway", _checks({"database"}), Readiness(), blips)  # type: ignore[arg-type]
    assert (code, body["status"]) == (503, "unavailable")


async def test_a_cache_never_takes_the_process_out_and_a_reported_problem_does_at_once() -> None:
    blips = Blips(grace_s=0)
    code, body = await readiness_report("gateway", _checks({"redis"}), Readiness(), blips)  # type: ignore[arg-type]
    assert (code, body["status"]) == (200, "degraded") and body["checks"]["redis"].startswith("unavailable")
    parts = Readiness()
    parts.fail("consumer ledger", "transient: waiting")
    code, body = await readiness_report("ledger", _checks(set()), parts, Blips(grace_s=60))  # type: ignore[arg-type]
    assert (code, body["status"]) == (503, "unavailable")
    code, body = await readiness_report("ledger", _checks(set()), Readiness(), blips)  # type: ignore[arg-type]
    assert (code, body["status"]) == (200, "ready")
