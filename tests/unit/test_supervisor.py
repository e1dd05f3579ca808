"""The supervisor's backoff counts consecutive quick crashes only (common.tasks)."""

from __future__ import annotations

import asyncio
import time

import pytest

from common.health import Readiness
from common.tasks import Supervisor

pytestmark = pytest.mark.unit


async def test_a_crash_after_a_healthy_run_restarts_at_once() -> None:
    """Three quick crashes back off 0.2, 0.4, 0.8 s (+ up to 0.2 s jitter); a run that lasted
    ``healthy_s`` resets the count, so the next crash restarts after about 0.2 s, not 1.6 s."""
    runs = iter([0.0, 0.0, 0.0, 0.5, 0.0])
    starts: list[float] = []
    done = asyncio.Event()

    async def task() -> None:
        starts.append(time.monotonic())
        lasts = next(runs, None)
        if lasts is None:
            done.set()
            await asyncio.sleep(3600)
        await asyncio.sleep(lasts or 0)
        raise RuntimeError("crash")

    sup = Supervisor(Readiness(), max_backoff_s=5.0, healthy_s=0.4)
    sup.start("t", task)
    await asyncio.wait_for(done.wait(), 10)
    await sup.stop()
    runs_took = [0.0, 0.0, 0.0, 0.5, 0.0]
    gaps = [b - a - took for a, b, took in zip(starts, starts[1:], runs_took, strict=False)]
    assert sup.restarts["t"] == 5
    assert 0.75 <= gaps[2] <= 1.2, gaps  # third quick crash: 0.8 s
    assert gaps[3] <= 0.5, gaps  # after the healthy run: the first step again
    assert gaps[4] >= 0.35, gaps  # and the streak grows again
