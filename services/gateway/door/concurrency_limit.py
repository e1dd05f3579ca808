"""An adaptive concurrency limit and a queue-delay override, for the gateway's door
(docs/performance/overload.md).

:class:`Gradient2` is a port of Netflix concurrency-limits' ``Gradient2Limit``: it compares a
short-term RTT (one sample window) with a long-term exponential average of the same and
shrinks the limit when the short one rises above ``tolerance`` times the long one (queueing),
grows it by ``queue_size`` otherwise, smoothed. One addition: an optional latency ``target_s``
(the service's objective, not a measure of a machine's speed): a window whose average is above
it scales the gradient down by ``target / short``, so that a long overload, which drags the
long-term average up with it, cannot make queueing look normal.

:class:`Windowed` is ``WindowedLimit`` with an average sample window: samples are gathered for
at least ``min_window_s`` and ``min_samples`` before one update of the limit (the average RTT
and the most work in flight seen in the window).

:class:`QueueDelay` is the CoDel-style override: the event loop's lag is sampled; when it stays
above ``target_s`` for ``interval_s`` the door refuses new work until a sample is below it
again. Everything here takes its clock as an argument, so tests feed it numbers.

No maintained Python library implements these (PyPI has AIMD semaphores for clients only).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass


class ExpAvg:
    """``ExpAvgMeasurement``: a plain mean over the first ``warmup`` samples, then an
    exponential average with factor ``2 / (window + 1)``."""

    def __init__(self, window: int, warmup: int) -> None:
        self.factor = 2.0 / (window + 1)
        self.warmup = warmup
        self.count = 0
        self.value = 0.0

    def add(self, sample: float) -> float:
        if self.count < self.warmup:
            self.count += 1
            self.value += (sample - self.value) / self.count
        else:
            self.value = self.value * (1 - self.factor) + sample * self.factor
        return self.value


class Gradient2:
    """The limit: ``update(short_rtt_s, max_in_flight)`` once per sample window."""

    def __init__(
        self,
        *,
        initial: int,
        min_limit: int,
        max_limit: int,
        smoothing: float = 0.2,
        tolerance: float = 1.5,
        long_window: int = 600,
        queue_size: float = 4.0,
        target_s: float | None = None,
    ) -> None:
        self.max_limit = max(1, max_limit)
        self.min_limit = max(1, min(min_limit, self.max_limit))
        self.estimate = float(min(self.max_limit, max(self.min_limit, initial)))
        self.smoothing = smoothing
        self.tolerance = tolerance
        self.queue_size = queue_size
        self.target_s = target_s
        self.long = ExpAvg(long_window, warmup=10)
        self.last_short = 0.0

    @property
    def limit(self) -> int:
        return int(self.estimate)

    def update(self, short_rtt: float, in_flight: int) -> int:
        if short_rtt <= 0:
            return self.limit
        self.last_short = short_rtt
        long_rtt = self.long.add(short_rtt)
        # Latency back to normal after a long overload: let the long average catch up faster
        # than its smoothing would.
        if long_rtt / short_rtt > 2:
            self.long.value *= 0.95
        if in_flight < self.estimate / 2:
            return self.limit  # not limited by the limit: nothing learnt about it
        gradient = max(0.5, min(1.0, self.tolerance * long_rtt / short_rtt))
        if self.target_s is not None and short_rtt > self.target_s:
            gradient = max(0.5, min(gradient, self.target_s / short_rtt))
        grown = self.estimate * gradient + self.queue_size
        smoothed = self.estimate * (1 - self.smoothing) + grown * self.smoothing
        self.estimate = max(float(self.min_limit), min(float(self.max_limit), smoothed))
        return self.limit


@dataclass(slots=True)
class _Window:
    count: int = 0
    total: float = 0.0
    min_rtt: float = math.inf
    max_in_flight: int = 0


class Windowed:
    """Feeds ``limit`` one averaged sample per window (``WindowedLimit``)."""

    def __init__(
        self,
        limit: Gradient2,
        *,
        min_window_s: float = 0.25,
        max_window_s: float = 1.0,
        min_samples: int = 10,
        min_rtt_s: float = 0.0001,
    ) -> None:
        self.inner = limit
        self.min_window_s = min_window_s
        self.max_window_s = max_window_s
        self.min_samples = min_samples
        self.min_rtt_s = min_rtt_s
        self.window = _Window()
        self.next_update = -math.inf

    @property
    def limit(self) -> int:
        return self.inner.limit

    def sample(self, rtt_s: float, in_flight: int, now: float) -> int:
        """One finished request: its RTT and how many were in flight when it started."""
        if rtt_s < self.min_rtt_s:
            return self.inner.limit
        w = self.window
        w.count += 1
        w.total += rtt_s
        w.min_rtt = min(w.min_rtt, rtt_s)
        w.max_in_flight = max(w.max_in_flight, in_flight)
        if self.next_update == -math.inf:
            self.next_update = now + self.min_window_s
        if now < self.next_update:
            return self.inner.limit
        if w.count < self.min_samples:
            if now - self.next_update < self.max_window_s:
                return self.inner.limit  # a quiet window: keep gathering, up to the longest
            self.window, self.next_update = _Window(), now + self.min_window_s
            return self.inner.limit
        self.window = _Window()
        self.next_update = now + min(max(2 * w.min_rtt, self.min_window_s), self.max_window_s)
        return self.inner.update(w.total / w.count, w.max_in_flight)


class QueueDelay:
    """CoDel's rule on the event loop's lag: ``delayed`` once every sample for ``interval_s``
    was above ``target_s``; cleared by the first sample at or below it."""

    def __init__(self, target_s: float = 0.005, interval_s: float = 0.1) -> None:
        self.target_s = target_s
        self.interval_s = interval_s
        self.above_since: float | None = None
        self.delayed = False
        self.last_lag = 0.0

    def observe(self, lag_s: float, now: float) -> bool:
        self.last_lag = lag_s
        if lag_s <= self.target_s:
            self.above_since, self.delayed = None, False
            return False
        if self.above_since is None:
            self.above_since = now
        if now - self.above_since >= self.interval_s:
            self.delayed = True
        return self.delayed

    async def watch(self, period_s: float = 0.02) -> None:
        """Sample the running loop's lag every ``period_s`` (how late a sleep wakes), forever."""
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(period_s)
            now = loop.time()
            self.observe(max(0.0, now - start - period_s), now)
