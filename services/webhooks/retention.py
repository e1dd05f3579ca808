"""Retention: a periodic sweep keeps the webhooks tables from growing without bound.

Every event is stored (it dedupes redeliveries), and every finished delivery keeps its
attempts for the partner's delivery log and for replay. Past ``webhooks_retention_s`` the
sweep deletes finished deliveries with their attempts, then events left without deliveries,
in bounded batches (SKIP LOCKED, so several instances can sweep at once).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.consume import wait_out_transient
from common.health import Readiness
from webhooks import repository as repo

log = logging.getLogger(__name__)


@dataclass
class Pruner:
    sessions: async_sessionmaker[AsyncSession]
    retention_s: float
    interval_s: float
    batch: int = 1000
    deliveries_pruned: int = 0
    events_pruned: int = 0

    async def prune_once(self) -> tuple[int, int]:
        """Sweep until less than a full batch is left; returns (deliveries, events) deleted."""
        total_d = total_e = 0
        while True:
            async with self.sessions() as session, session.begin():
                d, e = await repo.prune(session, self.retention_s, self.batch)
            total_d, total_e = total_d + d, total_e + e
            if d < self.batch and e < self.batch:
                break
        self.deliveries_pruned += total_d
        self.events_pruned += total_e
        if total_d or total_e:
            log.info("retention: deleted %d deliveries and %d events", total_d, total_e)
        return total_d, total_e

    async def run(self, readiness: Readiness | None = None) -> None:
        """Sweep every ``interval_s``. A store that is away is waited out (reported in
        readiness); anything else crashes the task to its Supervisor, which restarts it."""
        while True:
            await wait_out_transient(self.prune_once, readiness=readiness, component="task retention")
            await asyncio.sleep(self.interval_s)
