"""Prometheus metrics of webhook delivery (issue 12), in the default registry: the shared
bootstrap serves them on ``/metrics``.

Counters move as outcomes are recorded (this process). Pending, leased (in flight across all
workers) and dead per endpoint are gauges read from the database by :class:`MetricsRefresher`
every ``interval_s``: one grouped count over the pending and dead rows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from webhooks import repository as repo
from webhooks.repository import Finished

log = logging.getLogger(__name__)

PENDING = Gauge(
    "sluice_webhook_deliveries_pending", "Deliveries waiting to be sent, per endpoint", ["webhook_id"]
)
LEASED = Gauge(
    "sluice_webhook_deliveries_in_flight",
    "Deliveries leased by a worker (all processes), per endpoint",
    ["webhook_id"],
)
DEAD = Gauge(
    "sluice_webhook_deliveries_dead", "Dead-lettered deliveries (replayable), per endpoint", ["webhook_id"]
)
IN_FLIGHT = Gauge("sluice_webhook_process_in_flight", "Attempts in progress in this process")
ATTEMPTS = Counter(
    "sluice_webhook_attempts",
    "Attempts sent, per endpoint and outcome (succeeded, failed, dead)",
    ["webhook_id", "outcome"],
)
SUCCEEDED = Counter(
    "sluice_webhook_deliveries_succeeded", "Deliveries that succeeded, per endpoint", ["webhook_id"]
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

    sm: async_sessionmaker[AsyncSession]
    interval_s: float = 15.0

    async def refresh(self) -> int:
        async with self.sm() as session, session.begin():
            counts = await repo.delivery_counts(session)
        for gauge in (PENDING, LEASED, DEAD):
            gauge.clear()
        for c in counts:
            PENDING.labels(c.webhook_id).set(c.pending)
            LEASED.labels(c.webhook_id).set(c.leased)
            DEAD.labels(c.webhook_id).set(c.dead)
        return len(counts)

    async def run(self) -> None:
        while True:
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the store may be briefly away; next time
                log.warning("refreshing webhook metrics failed", exc_info=True)
            await asyncio.sleep(self.interval_s)
