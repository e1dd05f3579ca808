"""The door's adaptive limit and queue-delay override (docs/performance/overload.md), fed
numbers instead of load: the limit grows while latency holds, shrinks when latency rises
(queueing) or passes the target, stays put when the work never reached it, and stays within its
floor and ceiling; the loop-lag override trips only after the lag held for the whole interval."""

from __future__ import annotations

import asyncio
import time

import pytest

from gateway.door.concurrency_limit import ExpAvg, Gradient2, QueueDelay, Windowed

pytestmark = pytest.mark.unit


def limit(initial: int = 20, min_limit: int = 4, max_limit: int = 200, **kw: float | None) -> Gradient2:
    return Gradient2(initial=initial, min_limit=min_limit, max_limit=max_limit, **kw)  # type: ignore[arg-type]


def test_the_average_warms_up_as_a_mean_then_decays_exponentially() -> None:
    avg = ExpAvg(window=9, warmup=2)  # factor 0.2
    assert avg.add(1.0) == 1.0
    assert avg.add(3.0) == 2.0  # mean of the warm-up
    assert avg.add(7.0) == pytest.approx(2.0 * 0.8 + 7.0 * 0.2)


def test_steady_latency_at_the_limit_grows_it_by_the_smoothed_queue() -> None:
    g = limit()
    assert g.update(0.05, in_flight=20) == 20  # 20 * 0.8 + (20 + 4) * 0.2 = 20.8
    assert g.estimate == pytest.approx(20.8)
    for _ in range(50):
        g.update(0.05, in_flight=g.limit)
    assert g.limit > 45


def test_work_below_half_the_limit_teaches_nothing() -> None:
    g = limit()
    for _ in range(50):
        assert g.update(0.05, in_flight=9) == 20
    assert g.estimate == 20.0


def test_latency_rising_past_the_tolerance_shrinks_the_limit() -> None:
    g = limit(initial=100)
    for _ in range(20):
        g.update(0.05, in_flight=100)
    grown = g.estimate
    # Queueing: the window's latency is 4x the long-term average: gradient at its floor 0.5.
    g.update(0.2, in_flight=g.limit)
    assert g.estimate == pytest.approx(grown * 0.8 + (grown * 0.5 + 4) * 0.2, rel=1e-9)
    for _ in range(30):
        g.update(0.4, in_flight=g.limit)
    assert g.limit < grown / 2


def test_within_the_tolerance_the_limit_still_grows() -> None:
    g = limit(initial=50)
    for _ in range(20):
        g.update(0.1, in_flight=50)
    before = g.estimate
    g.update(0.14, in_flight=g.limit)  # 1.4x the average, under 1.5: no queueing read
    assert g.estimate > before


def test_a_window_over_the_target_shrinks_the_limit_even_once_the_average_caught_up() -> None:
    g = limit(initial=100, target_s=0.5)
    for _ in range(200):  # a long overload: the long-term average is 1 s as well
        g.update(1.0, in_flight=g.limit)
    # Every window was twice the target: the gradient held at 0.5, down to where halving and
    # the queue allowance meet (0.5 L + 4 = L).
    assert g.limit == 8
    free = limit(initial=100)
    for _ in range(200):
        free.update(1.0, in_flight=free.limit)
    assert free.limit == 200  # without a target Gradient2 takes a steady 1 s as normal


def test_the_limit_stays_between_its_floor_and_ceiling() -> None:
    assert limit(initial=500).limit == 200
    assert limit(initial=1).limit == 4
    assert limit(min_limit=50, max_limit=10).min_limit == 10
    g = limit(initial=100, min_limit=6, queue_size=0)
    for _ in range(10):
        g.update(0.1, in_flight=g.limit)
    for _ in range(100):  # latency ten times the long average: halved (smoothed) every time
        g.update(1.0, in_flight=g.limit)
    assert g.limit == 6
    assert g.update(0.0, in_flight=6) == 6  # no latency, no sample


def test_the_long_average_drops_fast_once_latency_is_back_to_normal() -> None:
    g = limit()
    for _ in range(20):
        g.update(1.0, in_flight=g.limit)
    g.update(0.1, in_flight=g.limit)
    after_one = g.long.value
    expected_without = 1.0 * (1 - g.long.factor) + 0.1 * g.long.factor
    assert after_one == pytest.approx(expected_without * 0.95)


def test_the_window_averages_its_samples_and_passes_the_most_in_flight() -> None:
    seen: list[tuple[float, int]] = []

    class Spy(Gradient2):
        def update(self, short_rtt: float, in_flight: int) -> int:
            seen.append((short_rtt, in_flight))
            return super().update(short_rtt, in_flight)

    w = Windowed(Spy(initial=20, min_limit=4, max_limit=100), min_window_s=0.25, min_samples=4)
    for i, rtt in enumerate((0.1, 0.2, 0.3)):
        w.sample(rtt, in_flight=10 + i, now=0.01 * i)
    assert seen == []  # the window is still open
    w.sample(0.00001, in_flight=99, now=0.3)  # under the RTT floor: not a sample
    w.sample(0.4, in_flight=11, now=0.3)
    assert seen == [(pytest.approx(0.25), 12)]
    # The next window lasts at least min_window_s, at least twice its shortest RTT.
    for i in range(4):
        w.sample(0.2, in_flight=20, now=0.31 + 0.01 * i)
    assert len(seen) == 1
    w.sample(0.2, in_flight=20, now=0.56)
    assert len(seen) == 2


def test_a_window_with_too_few_samples_is_dropped_after_the_longest_wait() -> None:
    g = Gradient2(initial=20, min_limit=4, max_limit=100)
    w = Windowed(g, min_window_s=0.25, max_window_s=1.0, min_samples=10)
    w.sample(5.0, in_flight=20, now=0.0)
    w.sample(5.0, in_flight=20, now=0.5)  # past the window, too few: keep gathering
    assert w.window.count == 2
    w.sample(5.0, in_flight=20, now=1.3)  # past the longest wait: dropped, nothing learnt
    assert w.window.count == 0 and g.long.count == 0
    assert w.limit == 20


def test_the_lag_override_trips_after_the_interval_and_clears_at_once() -> None:
    q = QueueDelay(target_s=0.005, interval_s=0.1)
    assert not q.observe(0.02, now=1.0)
    assert not q.observe(0.02, now=1.05)
    assert not q.observe(0.004, now=1.07)  # back under the target: the clock restarts
    assert not q.observe(0.02, now=1.08)
    assert not q.observe(0.02, now=1.17)
    assert q.observe(0.02, now=1.19) and q.delayed
    assert q.observe(0.03, now=1.3)
    assert not q.observe(0.005, now=1.32) and not q.delayed  # at the target is not above


async def test_the_watcher_measures_a_blocked_loop() -> None:
    q = QueueDelay(target_s=0.005, interval_s=0.1)
    task = asyncio.create_task(q.watch(period_s=0.005))
    try:
        while q.above_since is None:
            await asyncio.sleep(0)
            time.sleep(0.03)  # noqa: ASYNC251 - the point: the loop is held, the watcher wakes late
        assert q.last_lag > 0.005
    finally:
        task.cancel()


# ---- the edges mutation testing found unpinned ----


def test_an_average_without_warm_up_starts_from_zero() -> None:
    avg = ExpAvg(window=3, warmup=0)  # factor 0.5
    assert avg.add(2.0) == 1.0


def test_the_long_average_warms_up_over_ten_samples_then_moves_by_two_over_601() -> None:
    g = limit()
    for _ in range(10):
        g.update(1.0, in_flight=0)
    assert (g.long.count, g.long.value) == (10, 1.0)
    g.update(2.0, in_flight=0)
    assert g.long.value == pytest.approx(1.0 + 2 / 601)
    assert g.last_short == 2.0


def test_the_floor_is_at_least_one_and_a_fresh_limit_has_seen_nothing() -> None:
    g = limit(initial=1, min_limit=0, max_limit=10)
    assert (g.min_limit, g.limit, g.last_short) == (1, 1, 0.0)


def long_at(value: float, g: Gradient2) -> Gradient2:
    """``g`` whose long average is ``value``, weighing each new sample by half."""
    g.long = ExpAvg(window=3, warmup=0)
    g.long.value = value
    return g


def test_the_long_average_drops_faster_only_past_twice_the_short_one() -> None:
    at_two = long_at(3.0, limit())
    at_two.update(1.0, in_flight=0)  # the long average becomes 2.0: exactly twice, not past it
    assert at_two.long.value == 2.0
    past = long_at(4.0, limit())
    past.update(1.0, in_flight=0)  # 2.5 times
    assert past.long.value == 2.5 * 0.95


def test_work_at_half_the_limit_teaches_it() -> None:
    g = limit()
    g.update(0.05, in_flight=10)
    assert g.estimate == pytest.approx(20.8)


def test_over_the_target_the_gradient_is_target_over_latency() -> None:
    g = long_at(0.5, limit(target_s=0.4, queue_size=0.0))
    g.update(0.5, in_flight=20)  # gradient 0.4 / 0.5 = 0.8: 20 * 0.8 + 16 * 0.2
    assert g.estimate == pytest.approx(19.2)


def test_a_window_has_ten_samples_by_default() -> None:
    seen: list[int] = []

    class Spy(Gradient2):
        def update(self, short_rtt: float, in_flight: int) -> int:
            seen.append(in_flight)
            return super().update(short_rtt, in_flight)

    w = Windowed(Spy(initial=20, min_limit=4, max_limit=100))
    for n in range(10):
        w.sample(0.05, in_flight=n, now=0.3 * (n > 0))
    assert seen == [9]


def test_the_window_bounds_are_inclusive() -> None:
    g = limit()
    w = Windowed(g, min_window_s=0.25, max_window_s=1.0, min_samples=1, min_rtt_s=0.0001)
    w.sample(0.0001, in_flight=20, now=10.0)  # at the RTT floor: a sample
    assert w.window.count == 1 and w.next_update == 10.25  # the first window ends later
    w.sample(0.05, in_flight=20, now=10.25)  # at its end: the window closes
    assert g.long.count == 1 and w.window.count == 0
    few = Windowed(limit(), min_window_s=0.25, max_window_s=1.0, min_samples=10)
    few.sample(0.05, in_flight=20, now=0.0)
    few.sample(0.05, in_flight=20, now=1.25)  # the longest wait past the window: dropped
    assert few.window.count == 0 and few.next_update == 1.5


def test_the_override_defaults_to_5_ms_over_100_ms_and_trips_at_the_interval() -> None:
    q = QueueDelay()
    assert (q.delayed, q.last_lag) == (False, 0.0)
    assert not q.observe(0.006, now=1.0)
    assert q.observe(0.006, now=1.1) and q.last_lag == 0.006
    exact = QueueDelay(target_s=0.005, interval_s=0.25)
    exact.observe(0.02, now=1.0)
    assert exact.observe(0.02, now=1.25)


async def test_the_watcher_takes_the_lag_as_how_late_a_sleep_woke(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from gateway.door import concurrency_limit as module

    clock = iter([1.0, 1.05, 2.0, 2.01, 3.0])
    periods: list[float] = []

    async def sleep(period: float) -> None:
        periods.append(period)
        if len(periods) > 2:
            raise asyncio.CancelledError

    loop = SimpleNamespace(time=lambda: next(clock))
    monkeypatch.setattr(module, "asyncio", SimpleNamespace(get_running_loop=lambda: loop, sleep=sleep))
    q = QueueDelay(target_s=0.005, interval_s=0.1)
    seen: list[tuple[float, float]] = []
    observe = q.observe
    monkeypatch.setattr(q, "observe", lambda lag, now: seen.append((lag, now)) or observe(lag, now))
    with pytest.raises(asyncio.CancelledError):
        await q.watch()
    assert periods == [0.02] * 3
    assert seen == [(pytest.approx(0.03), 1.05), (0.0, 2.01)]  # early: no lag, never negative
