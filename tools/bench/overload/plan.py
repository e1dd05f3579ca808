"""Which runs the overload part of ``make bench`` makes, in which order (docs/performance/index.md,
yardsticks 2 and 7): pure, unit-tested.

Every run a target is judged on has the gateway and the hog at the priority of the rest of the
stack (nice 0): a reniced gateway (a CPU request in a deployment) is a different machine from
the one whose capacity was measured. The load driver is the instrument, not the system: it runs
at ``DRIVER_NICE`` (-10, ``BENCH_DRIVER_NICE``) in every run, the capacity steps of the
monolith and of the suite included, so that it keeps its schedule (a step whose driver lags
by more than 5 ms at p99 is not a measurement, tools.bench.capacity_search) while it shares the two
cores with what it measures. Its priority takes nothing from one system that it gives to
another: it only makes the driver wake on time, at the stack's expense if anything. A reniced variant
(``BENCH_OVERLOAD_RENICE=GATEWAY,DRIVER``, e.g. ``-5,-10``) is run after every judged run,
labelled as such, and judged on nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

HEAVY, QUIET, FAIR = 0, 1, 2  # tenant indices: the one sending half, the two watched
QUIET_SHARE = 0.02  # of the offered load
DRIVER_NICE = int(os.environ.get("BENCH_DRIVER_NICE", "-10"))  # the load driver, in every run


def shares(factor: float) -> tuple[float, ...]:
    """Each of the six tenants' share of the offered load at ``factor`` x the capacity
    (yardstick 8): the heavy one half; the quiet one 2 %; the fair one exactly its fair share of
    the capacity, a sixth (1 / (6 x factor) of the load); three others split the rest."""
    fair = 1 / (6 * factor)
    rest = (1 - 0.5 - QUIET_SHARE - fair) / 3
    return (0.5, QUIET_SHARE, fair, rest, rest, rest)


@dataclass(frozen=True, slots=True)
class Run:
    label: str
    factor: float  # offered load during the overload phase, as a multiple of the capacity
    hog: float = 0.0  # share of one core kept busy beside the stack (at the stack's priority)
    gateway_nice: int = 0
    driver_nice: int = DRIVER_NICE
    judged: bool = True  # its missed targets fail make bench


def label(factor: float) -> str:
    return "bench-overload" if factor == 2 else f"bench-overload-{factor:g}x"


def parse_renice(text: str) -> tuple[int, int] | None:
    """``"-5,-10"`` -> (gateway nice, driver nice); empty -> None (no reniced variant)."""
    if not text.strip():
        return None
    gateway, driver = (int(x) for x in text.split(","))
    return gateway, driver


def plan(factors: list[float], hog: float = 0.0, renice: tuple[int, int] | None = None) -> list[Run]:
    """The judged runs (each factor, then the 2x run beside the hog if ``hog``), the gateway
    and the hog at nice 0, the driver at ``DRIVER_NICE``;
    then, with ``renice``, the same factors again at those nice values, not judged."""
    runs = [Run(label(f), f) for f in factors]
    if hog > 0:
        runs.append(Run("bench-overload-hog", 2.0, hog=hog))
    if renice is not None:
        gateway, driver = renice
        tag = f" (reniced: gateway nice {gateway}, driver nice {driver}; not judged)"
        runs += [Run(label(f) + tag, f, 0.0, gateway, driver, judged=False) for f in factors]
    return runs
