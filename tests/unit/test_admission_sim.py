"""The door's lane against a simulated service (the door's overload targets, in miniature and in
simulated time, so it asserts behaviour and never speed): a service of capacity ``mu`` whose
latency grows with the work in flight (50 ms plus the queue ahead, ``in_flight / mu``), fed an
open-loop overload from six tenants (one sends half, five a tenth each). The limit must find
the capacity by itself: it grows under load, settles lower when the service is halved (the
CPU hog of the bench's hog run) and higher again when it is restored; admitted latency stays within the
target; the noisy tenant is refused far more often than any light one."""

from __future__ import annotations

import heapq
import itertools
import random
from collections import Counter
from dataclasses import dataclass, field

import pytest

from gateway.door.admission import Admission

pytestmark = pytest.mark.unit

SHARES = (0.5, 0.1, 0.1, 0.1, 0.1, 0.1)
BASE_S = 0.05


@dataclass
class Phase:
    mu: float  # requests/s the service completes when saturated
    rate: float  # offered requests/s
    secs: float
    admitted: int = 0
    refused: Counter[int] = field(default_factory=Counter)
    sent: Counter[int] = field(default_factory=Counter)
    late_latencies: list[float] = field(default_factory=list)  # the phase's second half
    limit: int = 0


def run(phases: list[Phase], seed: int = 7) -> Admission:
    rnd = random.Random(seed)
    lane = Admission(128, 64, initial=20, min_limit=8, target_s=0.4, tolerance=2.0, queue_size=8)
    pending: list[tuple[float, int, str, float, int]] = []
    order = itertools.count()
    t0 = 0.0
    for p in phases:
        for i in range(int(p.rate * p.secs)):
            now = t0 + i / p.rate
            while pending and pending[0][0] <= now:
                done, _, key, rtt, in_flight = heapq.heappop(pending)
                lane.release(key, True, rtt, in_flight, done)
                if done > t0 + p.secs / 2:
                    p.late_latencies.append(rtt)
            tenant = rnd.choices(range(len(SHARES)), SHARES)[0]
            p.sent[tenant] += 1
            if lane.admit(f"t{tenant}", True) is None:
                p.admitted += 1
                rtt = BASE_S + lane.in_flight / p.mu
                heapq.heappush(pending, (now + rtt, next(order), f"t{tenant}", rtt, lane.in_flight))
            else:
                p.refused[tenant] += 1
        p.limit = lane.limit
        t0 += p.secs
    return lane


def p99(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[int(len(xs) * 0.99)]


def test_the_limit_finds_the_capacity_and_follows_it_down_and_up() -> None:
    quiet, normal, hog, restored = (
        Phase(200, 100, 8),
        Phase(200, 400, 40),
        Phase(100, 400, 40),
        Phase(200, 400, 40),
    )
    run([quiet, normal, hog, restored])
    assert quiet.refused.total() == 0  # half the capacity: nothing refused
    assert normal.limit > 35  # grown under load
    assert hog.limit < normal.limit * 0.8  # half the capacity: it settled lower by itself
    assert restored.limit > hog.limit * 1.2  # and came back up
    for p in (normal, hog, restored):
        assert p99(p.late_latencies) <= 0.6, (p.mu, p99(p.late_latencies))  # target 0.4 s, averaged
        assert p.admitted / p.secs >= 0.75 * p.mu, (p.mu, p.admitted / p.secs)


def test_the_noisy_tenant_is_shed_first() -> None:
    phase = Phase(200, 400, 40)
    run([Phase(200, 100, 8), phase])
    noisy_refused = phase.refused[0] / phase.sent[0]
    for light in range(1, len(SHARES)):
        assert phase.refused[light] / phase.sent[light] < noisy_refused / 2, (phase.refused, phase.sent)
