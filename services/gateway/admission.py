"""Admission control (contract 13.1): overload answered at the door.

A gateway instance admits at most ``SLUICE_MAX_IN_FLIGHT`` commands waiting for their result
at once, and one tenant at most ``SLUICE_TENANT_MAX_IN_FLIGHT`` of them. A command beyond
either bound is answered at once ``503 provider_unavailable`` with ``Retry-After`` and
``details.reason`` = ``overloaded``: it is refused before its idempotency key is claimed and
before anything is published, so nothing is dispatched and nothing is stored as the key's
answer, and a retry with the same key runs normally. Reads (no command), health, ``/metrics``
and ``/readyz`` never reach this.

The bounds are sized by Little's law (in flight = throughput x latency): see the README's
Performance section for the measured capacity. A fixed bound, not an adaptive one: it is
shown to hold by ``make bench``'s overload part; what an adaptive limit (TCP Vegas, Netflix's
concurrency-limits) would add is written there too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter as PromCounter
from prometheus_client import Gauge

from common.errors import ErrorCode, ServiceError

ADMITTED = PromCounter("sluice_admission_admitted_total", "Commands admitted by the gateway")
SHED = PromCounter(
    "sluice_admission_shed_total",
    "Commands refused at the door (503 overloaded), by the bound that refused them",
    # No tenant label (contract 14.3): tenant ids would be disclosed and the series unbounded.
    ["reason"],
)
IN_FLIGHT = Gauge("sluice_admission_in_flight", "Commands of this gateway waiting for their result")
LIMIT = Gauge("sluice_admission_limit", "The bound on commands in flight", ["scope"])


class Admission:
    """Counts the commands in flight of this gateway instance, per tenant too."""

    def __init__(self, max_in_flight: int, tenant_max_in_flight: int, retry_after_s: int = 1) -> None:
        self.max_in_flight = max(1, max_in_flight)
        self.tenant_max = max(1, min(tenant_max_in_flight, self.max_in_flight))
        self.retry_after_s = retry_after_s
        self.in_flight = 0
        self.per_tenant: Counter[str] = Counter()
        LIMIT.labels("instance").set(self.max_in_flight)
        LIMIT.labels("tenant").set(self.tenant_max)

    def _refuse(self, bound: str) -> ServiceError:
        SHED.labels(bound).inc()
        return ServiceError(
            ErrorCode.PROVIDER_UNAVAILABLE,
            "the gateway is at capacity; nothing was done: retry with the same Idempotency-Key",
            details={"reason": "overloaded", "bound": bound},
            headers={"Retry-After": str(self.retry_after_s)},
        )

    @contextmanager
    def slot(self, tenant: str) -> Iterator[None]:
        """Hold one place for ``tenant`` while its command is in flight, or refuse at once."""
        if self.in_flight >= self.max_in_flight:
            raise self._refuse("instance")
        if self.per_tenant[tenant] >= self.tenant_max:
            raise self._refuse("tenant")
        self.in_flight += 1
        self.per_tenant[tenant] += 1
        ADMITTED.inc()
        IN_FLIGHT.set(self.in_flight)
        try:
            yield
        finally:
            self.in_flight -= 1
            self.per_tenant[tenant] -= 1
            if not self.per_tenant[tenant]:
                del self.per_tenant[tenant]
            IN_FLIGHT.set(self.in_flight)
