"""``make chaos`` scaling scenario: instances added and removed under load.

The suite starts with one instance of each service. During the transfers, the plan grows the
ledger and compliance from 1 to 3 instances (each new consumer joins its group: a rebalance),
adds a gateway (the clients' list of gateways gains it once it is ready, as a load balancer
would), then shrinks ledger and compliance back to 1 (SIGTERM to every removed instance at
once: graceful leaves, another rebalance) and removes the added gateway (taken out of the
clients' list first, then stopped). A grown service is ready before the next change. The audit
is the chaos audit; a decision slower than 30 s counts as slow. The longest pause is the
longest time, during the load, in which transfers waited and none was decided.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tools.chaos.clients import Booking
from tools.stack.processes import free_port
from tools.stack.suite import Proc, Suite, answers_ready

SCALED = ("ledger", "compliance")
SLOW_S = 30.0


class Scaler:
    def __init__(
        self, suite: Suite, procs: dict[str, list[Proc]], gateways: list[str], log: Callable[[str], None]
    ) -> None:
        self.suite, self.procs, self.gateways, self.log = suite, procs, gateways, log
        self.changes: list[tuple[str, float]] = []

    def plan(self) -> list[tuple[str, Any]]:
        steps: list[tuple[str, Any]] = [(f"scale {n} to 3", lambda n=n: self.scale(n, 3)) for n in SCALED]
        steps.append(("add a gateway", self.add_gateway))
        steps += [(f"scale {n} to 1", lambda n=n: self.scale(n, 1)) for n in SCALED]
        steps.append(("remove a gateway", self.remove_gateway))
        return steps

    def scale(self, name: str, n: int) -> None:
        """Grow: start the instances and wait until each is ready (its consumers joined their
        groups), as a deployment rolls out before anyone scales it again; stopping an instance
        still joining restarted the rebalance, and a transfer waited 35 s on CI. Shrink: SIGTERM
        every removed instance at once, as Kubernetes does, so their leaves share rebalances."""
        procs = self.procs[name]
        self.log(f"change: {name} from {len(procs)} to {n} instances")
        self.changes.append((f"{name} {len(procs)}->{n}", time.monotonic()))
        started = [self.suite.start(name, free_port(), instance=f"{name}-{i}") for i in range(len(procs), n)]
        procs += started
        removed, procs[n:] = procs[n:], []
        with ThreadPoolExecutor(max(1, len(removed))) as pool:
            list(pool.map(self.suite.stop_proc, removed))  # SIGTERM: each member leaves its group
        if started:
            self.suite.wait_ready(started, timeout=120)
            self.log(f"ready: {name} has {n} instances")

    def add_gateway(self) -> None:
        self.changes.append(("gateway +1", time.monotonic()))
        proc = self.suite.start("gateway", free_port(), instance=f"gateway-{len(self.procs['gateway'])}")
        self.procs["gateway"].append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if answers_ready(proc):
                    break
            time.sleep(0.2)
        self.gateways.append(proc.url)  # the load balancer sends it traffic once it is ready
        self.log(f"change: gateway added ({len(self.gateways)} behind the clients)")

    def remove_gateway(self) -> None:
        self.changes.append(("gateway -1", time.monotonic()))
        proc = self.procs["gateway"].pop()
        self.gateways.remove(proc.url)  # out of the load balancer first, then stopped
        self.suite.stop_proc(proc, signal.SIGTERM)
        self.log(f"change: gateway removed ({len(self.gateways)} behind the clients)")


def _stalls(bookings: list[Booking]) -> list[tuple[float, float]]:
    """Each stretch without a decision while a transfer waited for one: between two consecutive
    decisions ``a`` and ``b``, from ``a`` or the earliest start of a transfer still waiting,
    whichever is later, to ``b``. A stretch with nothing in flight (the clients held at the
    fault gate) is the load's gap, not the suite's pause."""
    spans = sorted((b.started, b.started + b.decided_after_s) for b in bookings if b.status is not None)
    done = sorted(end for _, end in spans)
    out = []
    for a, b in itertools.pairwise(done):
        waiting = min((start for start, end in spans if end >= b and start < b), default=b)
        out.append((max(a, waiting), b))
    return out


def longest_pause(bookings: list[Booking]) -> tuple[float, float]:
    """The longest stall (see ``_stalls``) during the load, and when it began
    (``time.monotonic()``)."""
    return max(((b - a, a) for a, b in _stalls(bookings)), default=(0.0, 0.0))


def pauses_by_change(bookings: list[Booking], changes: list[tuple[str, float]]) -> list[str]:
    """For each change, the longest stall that ended after it began and began before the next."""
    stalls = _stalls(bookings)
    out = []
    for (label, at), (_, until) in itertools.pairwise([*changes, ("end", float("inf"))]):
        worst = max((b - a for a, b in stalls if at <= b and a < until), default=0.0)
        out.append(f"{label}: longest pause {worst:.1f} s")
    return out


def line(transfers: int, lost: int, duplicated: int, undecided: int, pause_s: float) -> str:
    return (
        f"chaos-scale: transfers {transfers} lost {lost} duplicated {duplicated} undecided {undecided}"
        f" longest_rebalance_pause_s {pause_s:.1f}"
    )
