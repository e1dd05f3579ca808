"""Admission control (docs/performance/overload.md): how much work one lane of the door admits.

A lane (commands, or reads) holds an adaptive limit (:class:`gateway.door.concurrency_limit.Gradient2` fed by
the latency of the requests it admitted) under a ceiling (``SLUICE_MAX_IN_FLIGHT`` for
commands), and counts the requests in flight per tenant key (a tenant and mode, or the bucket
of credentials not yet seen; see :mod:`gateway.door.asgi`). :meth:`Admission.admit` decides at once,
with nothing queued:

1. The lane is *full* when its requests in flight reach the limit (sandbox requests, while
   live work is in flight, see ``sandbox_share`` of it), or when the event loop is lagging
   (``delayed``, the CoDel override of :class:`gateway.door.concurrency_limit.QueueDelay`): then the limit is
   what is in flight already, unless that is under the limit's floor.
2. A full lane still admits live work while sandbox work holds places (sandbox is shed before
   live), and, while another tenant of its class is over its fair share (the limit over the
   tenants of the class with work in flight, at least one), a tenant under its own share or
   holding less than half of what the busiest one holds: a quiet tenant is never refused
   because a noisy one took the places, and the top talker is shed first. Nothing goes past
   twice the ceiling.
   Everything else is refused, with the bound that refused it: ``queue`` (loop lag),
   ``sandbox`` (the live reserve), ``instance`` (the limit).
3. One tenant never holds more than ``tenant_ceiling`` (``SLUICE_TENANT_MAX_IN_FLIGHT``):
   refused with bound ``tenant``.

A refused request has done nothing (no key claimed, nothing published), so a retry with the
same Idempotency-Key runs normally. :meth:`release` gives the place back and feeds the limit
the request's latency; requests answered 4xx (refused by a check, replayed) teach it nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter as PromCounter
from prometheus_client import Gauge

from gateway.door.concurrency_limit import Gradient2, QueueDelay, Windowed

# No tenant label anywhere: tenant ids would be disclosed, series unbounded.
LIMIT = Gauge("sluice_admission_limit", "The bounds on work in flight at the door", ["scope"])


@dataclass(frozen=True, slots=True)
class LaneMetrics:
    admitted: PromCounter
    shed: PromCounter
    in_flight: Gauge
    scope: str  # the LIMIT label of this lane's adaptive limit


COMMANDS = LaneMetrics(
    PromCounter("sluice_admission_admitted_total", "Commands admitted by the gateway"),
    PromCounter(
        "sluice_admission_shed_total",
        "Commands refused at the door (503 overloaded), by the bound that refused them",
        ["reason"],
    ),
    Gauge("sluice_admission_in_flight", "Commands in flight at this gateway's door"),
    "instance",
)
READS = LaneMetrics(
    PromCounter("sluice_admission_read_admitted_total", "Reads admitted by the gateway"),
    PromCounter(
        "sluice_admission_read_shed_total",
        "Reads refused at the door (503 overloaded), by the bound that refused them",
        ["reason"],
    ),
    Gauge("sluice_admission_read_in_flight", "Reads in flight at this gateway's door"),
    "reads",
)


class Admission:
    """One lane of the door: its adaptive limit, and the work in flight per tenant key."""

    def __init__(
        self,
        ceiling: int,
        tenant_ceiling: int,
        *,
        initial: int = 20,
        min_limit: int = 4,
        target_s: float | None = 0.5,
        tolerance: float = 1.5,
        queue_size: float = 4.0,
        sandbox_share: float = 0.75,
        queue: QueueDelay | None = None,
        metrics: LaneMetrics = COMMANDS,
    ) -> None:
        self.ceiling = max(1, ceiling)
        self.tenant_ceiling = max(1, min(tenant_ceiling, self.ceiling))
        self.limiter = Windowed(
            Gradient2(
                initial=initial,
                min_limit=min_limit,
                max_limit=self.ceiling,
                target_s=target_s,
                tolerance=tolerance,
                queue_size=queue_size,
            )
        )
        self.sandbox_share = sandbox_share
        self.queue = queue or QueueDelay()
        self.metrics = metrics
        self.in_flight = 0
        # per class (sandbox or live): tenant key -> requests in flight (only keys with some)
        self.per_key: dict[bool, dict[str, int]] = {False: {}, True: {}}
        # credentials never seen to authenticate: counted apart, out of the fair shares
        self.unknown: dict[str, int] = {}
        LIMIT.labels(metrics.scope).set(self.limit)
        if metrics is COMMANDS:
            LIMIT.labels("tenant").set(self.tenant_ceiling)

    @property
    def limit(self) -> int:
        return self.limiter.limit

    def _cap(self, sandbox: bool) -> int:
        """The lane's limit, or for sandbox while live work is in flight ``sandbox_share`` of it."""
        limit = self.limiter.limit
        if sandbox and self.per_key[False]:
            return max(1, int(limit * self.sandbox_share))
        return limit

    def _fair(self, key: str, sandbox: bool, cap: int) -> bool:
        """Another key of the class is over its fair share of ``cap``, and ``key`` is under its
        own, or holds less than half of what the busiest key holds (the top talker is shed
        first: a light tenant whose demand is a little over an equal share still gets in)."""
        keys = self.per_key[sandbox]
        held = keys.get(key, 0)
        share = max(1.0, cap / (len(keys) + (0 if held else 1)))
        busiest = max((n for k, n in keys.items() if k != key), default=0)
        return busiest > share and (held < share or 2 * held < busiest)

    def _exempt(self, key: str, sandbox: bool, cap: int, known: bool) -> bool:
        """A full lane still admits live work while sandbox holds places (sandbox is shed
        first), and a tenant under its fair share while another is over (sandbox, while live
        work is in flight, only below the limit itself: it never eats the live reserve)."""
        if sandbox:
            if not known or (self.per_key[False] and self.in_flight >= self.limiter.limit):
                return False
            return self._fair(key, True, cap)
        return bool(self.per_key[True]) or (known and self._fair(key, False, cap))

    def admit(self, key: str, sandbox: bool = False, known: bool = True) -> str | None:
        """Take a place for ``key``, or name the bound that refuses it (nothing is taken). An
        unknown ``key`` (a credential not yet seen to authenticate) has no fair share to claim:
        junk credentials must not each borrow places."""
        cap = full = self._cap(sandbox)
        if self.queue.delayed:  # the loop is late: no more than is in flight now (to the floor)
            cap = min(full, max(self.limiter.inner.min_limit, self.in_flight))
        if self.in_flight >= cap and (
            self.in_flight >= 2 * self.ceiling or not self._exempt(key, sandbox, cap, known)
        ):
            if self.in_flight < full:
                return self._refuse("queue")
            return self._refuse("sandbox" if sandbox and self.in_flight < self.limit else "instance")
        keys = self.per_key[sandbox] if known else self.unknown
        held = keys.get(key, 0)
        if held >= self.tenant_ceiling:
            return self._refuse("tenant")
        keys[key] = held + 1
        self.in_flight += 1
        self.metrics.admitted.inc()
        self.metrics.in_flight.set(self.in_flight)
        return None

    def _refuse(self, bound: str) -> str:
        self.metrics.shed.labels(bound).inc()
        return bound

    def release(
        self, key: str, sandbox: bool, rtt_s: float | None, in_flight: int, now: float, known: bool = True
    ) -> None:
        """Give back ``key``'s place; ``rtt_s`` (None: learn nothing) feeds the limit, with
        ``in_flight`` the lane's work when the request was admitted."""
        keys = self.per_key[sandbox] if known else self.unknown
        held = keys.get(key, 0) - 1
        if held > 0:
            keys[key] = held
        else:
            keys.pop(key, None)
        self.in_flight = max(0, self.in_flight - 1)
        self.metrics.in_flight.set(self.in_flight)
        if rtt_s is not None:
            before = self.limiter.limit
            if self.limiter.sample(rtt_s, in_flight, now) != before:
                LIMIT.labels(self.metrics.scope).set(self.limiter.limit)
