"""The supervisor's backoff counts consecutive quick crashes only (common.tasks)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from tenacity import RetryCallState, wait_exponential_jitter

from common import tasks
from common.health import Readiness
from common.tasks import Supervisor

pytestmark = pytest.mark.unit


async def test_a_crash_after_a_healthy_run_restarts_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three quick crashes back off 0.2, 0.4, 0.8 s (+ up to 0.2 s jitter); a run that lasted
    ``healthy_s`` resets the count, so the next crash restarts after 0.2 s, not 1.6 s.

    The backoff the supervisor chose for each restart is recorded (tenacity's wait, wrapped)
    and checked against its streak; the wall clock is only checked to have waited at least
    that long, which holds however loaded the machine is (an upper bound would not)."""
    chosen: list[float] = []

    def recording(**kwargs: Any) -> Any:
        wait = wait_exponential_jitter(**kwargs)

        def record(state: RetryCallState) -> float:
            chosen.append(wait(state))
            return chosen[-1]

        return record

    monkeypatch.setattr(tasks, "wait_exponential_jitter", recording)
    healthy_s = 1.0  # quick runs last microseconds: a full second of margin below it
    runs = iter([0.0, 0.0, 0.0, healthy_s, 0.0])
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

    sup = Supervisor(Readiness(), max_backoff_s=5.0, healthy_s=healthy_s)
    sup.start("t", task)
    await asyncio.wait_for(done.wait(), 60)  # a deadline for a hang, not a speed bound
    await sup.stop()
    assert sup.restarts["t"] == 5
    # Streak 1, 2, 3; the healthy run resets it to 1; then 2 again. Each: 0.2 x 2^(streak-1)
    # plus a jitter of at most 0.2 s (the supervisor's multiplier and jitter).
    streaks = [1, 2, 3, 1, 2]
    assert len(chosen) == 5, chosen
    for streak, backoff in zip(streaks, chosen, strict=True):
        low = 0.2 * 2 ** (streak - 1)
        assert low <= backoff <= low + 0.2, (streaks, chosen)
    runs_took = [0.0, 0.0, 0.0, healthy_s, 0.0]
    gaps = [b - a - took for a, b, took in zip(starts, starts[1:], runs_took, strict=False)]
    assert all(gap >= backoff - 0.01 for gap, backoff in zip(gaps, chosen, strict=True)), (gaps, chosen)
