"""Transactional outbox.

Messages are written to ``<schema>.outbox`` in the same transaction as the state they
describe. After commit the boundary publishes them at once (low latency) and deletes the
rows; a relay loop publishes whatever a crash left behind (rows older than ``grace_s``).
Delivery is at least once; consumers dedupe (inbox, event ids).

Why not faststream-outbox: it drives its own polling worker and table layout around
FastStream publishers, whereas we need the rows inside the ledger's own batch transaction
(raw SQL on the same AsyncSession), immediate post-commit dispatch for latency, and
SKIP LOCKED sweeping shared by several instances; that is ~100 lines here.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from faststream.kafka import KafkaBroker
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.db import driver

log = logging.getLogger(__name__)

PENDING_KEY = "outbox_pending"


@dataclass(slots=True)
class OutMessage:
    topic: str
    payload: bytes
    key: bytes | None = None
    partition: int | None = None
    id: int | None = None


class Outbox:
    def __init__(self, schema: str, broker: KafkaBroker, *, grace_s: float = 5.0) -> None:
        self.schema = schema
        self.broker = broker
        self.grace_s = grace_s

    def add(self, session: AsyncSession, msg: OutMessage) -> None:
        """Stage a message; :meth:`write` persists all staged messages of the session."""
        session.info.setdefault(PENDING_KEY, []).append(msg)

    async def write(self, session: AsyncSession) -> list[OutMessage]:
        """Insert the staged messages in the session's transaction (call before commit)."""
        msgs: list[OutMessage] = session.info.get(PENDING_KEY, [])
        if not msgs:
            return []
        conn = await driver(session)  # asyncpg: one round trip for the whole batch
        rows = await conn.fetch(
            f"INSERT INTO {self.schema}.outbox (topic, key, partition, payload) "
            "SELECT * FROM unnest($1::text[], $2::bytea[], $3::int[], $4::bytea[]) RETURNING id",
            [m.topic for m in msgs],
            [m.key for m in msgs],
            [m.partition for m in msgs],
            [m.payload for m in msgs],
        )
        for m, r in zip(msgs, rows, strict=True):
            m.id = r["id"]
        session.info[PENDING_KEY] = []
        return msgs

    async def dispatch(self, sm: async_sessionmaker[AsyncSession], msgs: list[OutMessage]) -> None:
        """After commit: publish, then delete what was published. Failures stay for the relay."""
        if not msgs:
            return
        try:
            await asyncio.gather(*(self._publish(m) for m in msgs))
        except Exception:  # noqa: BLE001 - the relay publishes them later
            log.warning("outbox dispatch failed; the relay will retry", exc_info=True)
            return
        async with sm() as session, session.begin():
            await session.execute(
                text(f"DELETE FROM {self.schema}.outbox WHERE id = ANY(:ids)"),
                {"ids": [m.id for m in msgs]},
            )

    async def _publish(self, m: OutMessage) -> None:
        await self.broker.publish(m.payload, topic=m.topic, key=m.key, partition=m.partition)

    async def relay_once(self, sm: async_sessionmaker[AsyncSession], limit: int = 500) -> int:
        """Publish rows older than the grace period (left by a crash). Safe with many relays."""
        async with sm() as session, session.begin():
            rows = (
                await session.execute(
                    text(
                        f"SELECT id, topic, key, partition, payload FROM {self.schema}.outbox "
                        "WHERE created_at < now() - make_interval(secs => :grace) "
                        "ORDER BY id LIMIT :limit FOR UPDATE SKIP LOCKED"
                    ),
                    {"grace": self.grace_s, "limit": limit},
                )
            ).all()
            if not rows:
                return 0
            msgs = [
                OutMessage(r.topic, bytes(r.payload), r.key and bytes(r.key), r.partition, r.id) for r in rows
            ]
            for m in msgs:  # in id order, so one key's messages keep their order
                await self._publish(m)
            await session.execute(
                text(f"DELETE FROM {self.schema}.outbox WHERE id = ANY(:ids)"),
                {"ids": [m.id for m in msgs]},
            )
            log.info("outbox relay published %d left-over messages", len(msgs))
            return len(msgs)

    async def relay_forever(self, sm: async_sessionmaker[AsyncSession], interval_s: float = 1.0) -> None:
        while True:
            try:
                await self.relay_once(sm)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep relaying; the rows stay until published
                log.warning("outbox relay pass failed", exc_info=True)
            await asyncio.sleep(interval_s)
