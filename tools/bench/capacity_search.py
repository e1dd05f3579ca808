"""One capacity (docs/performance/index.md, yardstick 1): the highest open-loop rate a system sustains
with p99 <= 500 ms and at most 1 % refused, found by a ramp then a bisection of open-loop steps.
Pure: :func:`next_rate` decides the next step from the steps so far, :func:`capacity` reads the
answer; the bench only runs the steps (tools.bench.capacity).

A step lasts at least ``MIN_STEP_S`` and is invalid if the load driver lagged its schedule by
more than ``MAX_DRIVER_LAG_MS`` at p99 (it shares the two cores with what it measures): an
invalid step is run again, at most ``max_repeats`` times; a rate still invalid then is a ceiling
the driver sets (it cannot offer that rate on this machine beside the system) and the search
goes on below it, as below a fail: the capacity found is then at most what the driver could
measure, and the steps say so.
A step passes when the p99 of every admitted request (a failure at its
time, a request without an answer at its wait) is within ``P99_MS`` and at most ``REFUSED_MAX``
of the offered requests got no 2xx (shed, failed or unanswered).

The search ramps by ``growth`` from ``start`` while steps pass (down from ``start`` while they
fail), then bisects between the highest pass and the lowest fail above it until they are within
``tolerance`` of each other. The monolith and the suite are searched the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.bench.answers import Outcome, admitted, outcome, quantile_ms

P99_MS = 500.0
REFUSED_MAX = 0.01
MIN_STEP_S = 10.0
MAX_DRIVER_LAG_MS = 5.0


@dataclass(frozen=True, slots=True)
class Step:
    rate: float  # offered requests per second
    seconds: float  # how long the schedule ran
    offered: int
    not_ok: int  # offered requests without a 2xx: shed, failed, no answer, still running
    p99_ms: float  # over the admitted requests (everything not shed), failures included
    driver_lag_p99_ms: float  # the driver's own lag behind its schedule

    @property
    def valid(self) -> bool:
        return self.seconds >= MIN_STEP_S and self.driver_lag_p99_ms <= MAX_DRIVER_LAG_MS

    @property
    def passes(self) -> bool:
        return self.offered > 0 and self.p99_ms <= P99_MS and self.not_ok <= REFUSED_MAX * self.offered


def step_of(
    rate: float, seconds: float, answers: list[tuple[int, str | None, float]], lag_p99_ms: float
) -> Step:
    """A step from its answers: (status, reason of a 5xx, seconds from the intended send)."""
    kinds = [(outcome(st, why), s) for st, why, s in answers]
    return Step(
        rate=rate,
        seconds=seconds,
        offered=len(answers),
        not_ok=sum(1 for k, _ in kinds if k is not Outcome.OK),
        p99_ms=quantile_ms((s for k, s in kinds if admitted(k)), 0.99),
        driver_lag_p99_ms=lag_p99_ms,
    )


@dataclass(frozen=True, slots=True)
class Search:
    start: float  # the first rate tried (e.g. what a closed loop reached)
    growth: float = 1.5
    tolerance: float = 0.05  # stop when the highest pass is within this of the lowest fail
    max_steps: int = 14
    max_repeats: int = 1  # an invalid step is run again at most this many times
    min_rate: float = 1.0


def _driver_ceilings(search: Search, steps: list[Step]) -> list[float]:
    """Rates run invalid more than ``max_repeats`` times: the driver could not offer them."""
    invalid: dict[float, int] = {}
    for st in steps:
        if not st.valid:
            invalid[st.rate] = invalid.get(st.rate, 0) + 1
    return [rate for rate, n in invalid.items() if n > search.max_repeats]


def _bounds(steps: list[Step], search: Search | None = None) -> tuple[float, float | None]:
    """(highest passing rate below the lowest failing one, that lowest failing rate or None);
    a rate the driver could not offer bounds the search like a fail."""
    valid = [s for s in steps if s.valid]
    fails = [s.rate for s in valid if not s.passes] + _driver_ceilings(search or Search(start=1.0), steps)
    hi = min(fails) if fails else None
    lo = max((s.rate for s in valid if s.passes and (hi is None or s.rate < hi)), default=0.0)
    return lo, hi


def next_rate(search: Search, steps: list[Step]) -> float | None:
    """The rate of the next step, or None when the search is over (found, or given up)."""
    if steps and not steps[-1].valid:
        last = steps[-1].rate
        repeats = 0
        for s in reversed(steps):
            if s.valid or s.rate != last:
                break
            repeats += 1
        if repeats <= search.max_repeats:
            return last
    if len(steps) >= search.max_steps:
        return None
    lo, hi = _bounds(steps, search)
    if hi is None and not any(s.valid for s in steps):
        return search.start
    if hi is None:
        return lo * search.growth  # every step passed: ramp up
    if lo == 0.0:
        down = hi / search.growth  # every step failed: ramp down
        return down if down >= search.min_rate else None
    if hi - lo <= search.tolerance * lo:
        return None
    return (lo + hi) / 2


def capacity(steps: list[Step]) -> float:
    """The highest valid passing rate below the lowest valid failing one; 0: none found."""
    return _bounds(steps)[0]


def gave_up(search: Search, steps: list[Step]) -> str | None:
    """Why the search ended without a capacity it can vouch for, or None."""
    lo, hi = _bounds(steps, search)
    ceilings = _driver_ceilings(search, steps)
    driver = (
        f" (the driver could not offer {min(ceilings):.0f}/s: lag p99 above {MAX_DRIVER_LAG_MS:.0f} ms "
        f"{search.max_repeats + 1} times)"
        if ceilings
        else ""
    )
    if lo == 0.0:
        return "no step passed" + driver
    if hi is None:
        return f"every step passed up to {lo:.0f}/s: the ceiling was not found in {len(steps)} steps"
    if hi - lo > search.tolerance * lo:
        return f"not narrowed within {len(steps)} steps ({lo:.0f}-{hi:.0f}/s)" + driver
    return None


def line(name: str, steps: list[Step]) -> str:
    """The steps as the bench prints them."""
    parts = [
        f"{s.rate:.0f}/s {'pass' if s.passes else 'fail'}{'' if s.valid else ' (invalid)'} "
        f"p99 {s.p99_ms:.0f} ms not-2xx {s.not_ok}/{s.offered} lag {s.driver_lag_p99_ms:.1f} ms"
        for s in steps
    ]
    return (
        f"capacity {name}: {capacity(steps):.0f}/s (p99 <= {P99_MS:.0f} ms, <= {REFUSED_MAX:.0%} not 2xx); "
        + ("; ".join(parts))
    )
