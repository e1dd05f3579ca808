"""Prometheus metrics of webhook delivery (docs/operations.md, "Metrics"), in the default
registry: the shared bootstrap serves them on ``/metrics``.

Counters move as outcomes are recorded (this process). ``sluice_webhook_deliveries{state,
endpoint}`` (pending, in flight across all workers, dead) is a gauge read from the database
by :class:`MetricsRefresher` every ``interval_s``: one grouped count over the pending and dead
rows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.consume import wait_out_transient
from common.health import Readiness
from webhooks import repository as repo
from webhooks.repository import Finished

log = logging.getLogger(__name__)

DELIVERIES = Gauge(
    "sluice_webhook_deliveries",
    "Deliveries per endpoint now, by state: pending (waiting to be sent), in_flight (leased by a "
    "worker of any process) and dead (dead-lettered, replayable)",
    ["state", "endpoint"],
)
IN_FLIGHT = Gauge("sluice_webhook_process_in_flight", "Attempts in progress in this process")
ATTEMPTS = Counter(
    "sluice_webhook_attempts",
    "Attempts sent, per endpoint and outcome (succeeded, failed, dead)",
    ["endpoint", "outcome"],
)
SUCCEEDED = Counter(
    "sluice_webhook_deliveries_succeeded", "Deliveries that succeeded, per endpoint", ["endpoint"]
)
LATENCY = Histogram(
    "sluice_webhook_attempt_seconds",
    "Duration of one attempt (resolution, connection, answer)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30),
)
BATCH = Histogram(
    "sluice_webhook_record_batch_size",
    "Outcomes written per transaction",
    buckets=(1, 2, 5, 10, 25, 50, 100, 250, 500),
)
TURN = Histogram(
    "sluice_webhook_turn_seconds",
    "Duration of one delivery-worker turn (record the finished outcomes, claim what is due: one"
    " transaction); a delivery's lease is held from one turn to the next",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1),
)


def observe_batch(batch: Sequence[Finished]) -> None:
    BATCH.observe(len(batch))
    for f in batch:
        outcome = "succeeded" if f.ok else ("dead" if f.retry_in_s is None else "failed")
        ATTEMPTS.labels(f.webhook_id, outcome).inc()
        if f.ok:
            SUCCEEDED.labels(f.webhook_id).inc()
        LATENCY.observe(f.latency_ms / 1000)


@dataclass
class MetricsRefresher:
    """Refreshes the per-endpoint gauges from the database."""

    sessions: async_sessionmaker[AsyncSession]
    interval_s: float = 15.0

    async def refresh(self) -> int:
        async with self.sessions() as session, session.begin():
            counts = await repo.delivery_counts(session)
        DELIVERIES.clear()
        for c in counts:
            DELIVERIES.labels("pending", c.webhook_id).set(c.pending)
            DELIVERIES.labels("in_flight", c.webhook_id).set(c.leased)
            DELIVERIES.labels("dead", c.webhook_id).set(c.dead)
        return len(counts)

    async def run(self, readiness: Readiness | None = None) -> None:
        """Refresh every ``interval_s``; transient faults are waited out, anything else goes
        to the Supervisor (see :class:`common.tasks.Supervisor`)."""
        while True:
            await wait_out_transient(self.refresh, readiness=readiness, component="task webhook-metrics")
            await asyncio.sleep(self.interval_s)
