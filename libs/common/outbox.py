"""Transactional outbox.

Messages are written to ``<schema>.outbox`` in the same transaction as the state they
describe. After commit the boundary publishes them at once (low latency) and deletes the
rows; a relay loop publishes whatever a crash left behind (rows older than ``grace_s``).
Delivery is at least once; consumers dedupe (inbox, event ids).

With ``lazy_delete`` (the ledger's hot path) published rows are not deleted in a transaction
of their own: their ids are remembered and deleted by the next :meth:`write`, in the same
statement as its insert, or by the relay's next pass (every second), whichever comes first.
That saves three round trips per batch; a crash in between only means the relay publishes
those rows again after ``grace_s``, which at-least-once delivery allows.

A message its input recreates needs no row (``OutMessage.recreated``): the ledger's reply is
its command's result in the inbox, compliance's output its stored decision, and either is
published again when the command is redelivered; a command is redelivered until its batch
returns (offsets are committed only for batches that returned). Such a message is published
after commit with the rest and written as a row only when that publish fails (a transaction
of its own, then the relay's); a crash between commit and publish leaves the command
unacknowledged, and its redelivery publishes it again. Two row writes and their WAL less per
message (docs/performance/history.md).

Why not faststream-outbox: it drives its own polling worker and table layout around
FastStream publishers, whereas we need the rows inside the ledger's own batch transaction
(raw SQL on the same AsyncSession), immediate post-commit dispatch for latency, and
SKIP LOCKED sweeping shared by several instances; that is ~100 lines here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from faststream.kafka import KafkaBroker
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.db import driver
from common.failpoints import failpoint
from common.metrics import OUTBOX_BACKLOG
from common.tracing import publish

log = logging.getLogger(__name__)

PENDING_KEY = "outbox_pending"
PRUNED_KEY = "outbox_pruned"
DIRECT_KEY = "outbox_direct"  # messages a redelivery recreates: no row unless their publish fails


@dataclass(slots=True)
class OutMessage:
    topic: str
    payload: bytes
    key: bytes | None = None
    partition: int | None = None
    id: int | None = None
    request_id: str | None = None  # carried in the headers, and the trace followed (common.tracing)
    # A redelivery of the command it answers publishes it again (the ledger's inbox result,
    # compliance's stored decision): written as a row only if its publish fails.
    recreated: bool = False


class Outbox:
    def __init__(
        self,
        schema: str,
        broker: KafkaBroker,
        *,
        grace_s: float = 5.0,
        lazy_delete: bool = False,
        answers_from_inbox: bool = False,
    ) -> None:
        self.schema = schema
        self.broker = broker
        self.grace_s = grace_s
        self.lazy_delete = lazy_delete
        # Rows of an earlier ledger release may name their payload in the inbox
        # (common.tables.outbox_table, ``payload_of``): the relay reads it from there.
        self.payload_sql = (
            f"coalesce(o.payload, (SELECT i.result FROM {schema}.inbox i WHERE i.command_id = o.payload_of))"
            if answers_from_inbox
            else "o.payload"
        )
        self._published: set[int] = set()  # lazy_delete: published, not yet deleted
        self._failpoint = f"outbox.{schema}.publish"  # tests: a broker refusing, a death here

    def add(self, session: AsyncSession, msg: OutMessage) -> None:
        """Stage a message; :meth:`write` persists all staged messages of the session but the
        ``recreated`` ones, which are only published after commit (:meth:`dispatch`)."""
        key = DIRECT_KEY if msg.recreated else PENDING_KEY
        session.info.setdefault(key, []).append(msg)

    async def write(self, session: AsyncSession) -> list[OutMessage]:
        """Insert the staged messages in the session's transaction (call before commit), and
        delete rows published earlier (lazy_delete) in the same statement."""
        msgs, gone = self.staged(session)
        if not msgs:
            return list(session.info.pop(DIRECT_KEY, []))
        ids = await self._insert(session, msgs, gone)
        return self.written(session, msgs, ids, gone)

    async def _insert(self, session: AsyncSession, msgs: list[OutMessage], gone: list[int]) -> list[int]:
        """Insert ``msgs`` as rows and delete the rows ``gone``, in one statement of the
        session's transaction (one round trip whatever their number); the new rows' ids."""
        conn = await driver(session)
        rows = await conn.fetch(
            f"WITH gone AS (DELETE FROM {self.schema}.outbox WHERE id = ANY($5::bigint[])) "
            f"INSERT INTO {self.schema}.outbox (topic, key, partition, payload) "
            "SELECT * FROM unnest($1::text[], $2::bytea[], $3::int[], $4::bytea[]) RETURNING id",
            [m.topic for m in msgs],
            [m.key for m in msgs],
            [m.partition for m in msgs],
            [m.payload for m in msgs],
            gone,
        )
        return [r["id"] for r in rows]

    def staged(self, session: AsyncSession) -> tuple[list[OutMessage], list[int]]:
        """The session's staged messages and the published rows to delete, for a boundary that
        inserts them in a statement of its own (then :meth:`written`)."""
        return list(session.info.get(PENDING_KEY, [])), list(self._published)

    def written(
        self, session: AsyncSession, msgs: list[OutMessage], ids: list[int], gone: list[int]
    ) -> list[OutMessage]:
        """Record that ``msgs`` were inserted as rows ``ids`` (in order) and ``gone`` deleted,
        in the session's transaction: what :meth:`dispatch` publishes after commit (with the
        answers staged that need no row)."""
        for m, row_id in zip(msgs, ids, strict=True):
            m.id = row_id
        session.info[PENDING_KEY] = []
        session.info[PRUNED_KEY] = gone
        return msgs + session.info.pop(DIRECT_KEY, [])

    async def dispatch(
        self,
        sessions: async_sessionmaker[AsyncSession],
        msgs: list[OutMessage],
        pruned: list[int] | None = None,
    ) -> None:
        """After commit: publish, then delete what was published (or remember it, with
        lazy_delete). ``pruned``: ids the committed write deleted. Failures stay for the relay.

        The wait is bounded by the relay's grace period: rows older than that are the relay's
        to publish anyway. Unbounded, a publish the broker kept refusing (Tansu answered
        NOT_LEADER for 15 s during a rebalance) held the handler, and a stopping consumer
        could not leave its group: the surviving members waited out the whole rebalance."""
        self._published.difference_update(pruned or [])
        if not msgs:
            return
        try:
            bound = self.grace_s or None  # a grace of 0 (the simulation): no bound
            await asyncio.wait_for(asyncio.gather(*(self._publish(m) for m in msgs)), bound)
        except Exception:  # noqa: BLE001 - the relay publishes them later
            log.warning("outbox dispatch failed; the relay will retry", exc_info=True)
            await self._keep(sessions, [m for m in msgs if m.recreated])
            return
        ids = [m.id for m in msgs if m.id is not None]
        if self.lazy_delete:
            self._published.update(ids)
            return
        async with sessions() as session, session.begin():
            await self._delete(session, ids)

    @asynccontextmanager
    async def transaction(self, sessions: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
        """The boundary's transaction: what the body stages with :meth:`add` is written in it
        and published after commit (:meth:`dispatch`; the relay publishes what that could
        not). Compliance and webhooks run each batch in one; the ledger calls the same steps
        itself, to time its batch and fire its failpoint between commit and publish."""
        async with sessions() as session:
            async with session.begin():
                yield session
                msgs = await self.write(session)
            await self.dispatch(sessions, msgs, self.pruned(session))

    @staticmethod
    def pruned(session: AsyncSession) -> list[int]:
        """The ids the session's :meth:`write` deleted (hand them to :meth:`dispatch`)."""
        return list(session.info.get(PRUNED_KEY, []))

    async def _keep(self, sessions: async_sessionmaker[AsyncSession], msgs: list[OutMessage]) -> None:
        """Recreated messages that had no row and could not be published: written now, with
        their payload, for the relay. If this fails too, it raises: the batch has not
        returned, so its commands are read again and publish them again."""
        if not msgs:
            return
        async with sessions() as session, session.begin():
            await self._insert(session, msgs, [])

    async def _delete(self, session: AsyncSession, ids: list[int]) -> None:
        await session.execute(text(f"DELETE FROM {self.schema}.outbox WHERE id = ANY(:ids)"), {"ids": ids})

    async def _publish(self, m: OutMessage) -> None:
        await failpoint(self._failpoint)
        await publish(
            self.broker, m.payload, topic=m.topic, key=m.key, partition=m.partition, request_id=m.request_id
        )

    async def relay_once(self, sessions: async_sessionmaker[AsyncSession], limit: int = 500) -> int:
        """Publish rows older than the grace period (left by a crash). Safe with many relays.

        First deletes the rows this instance published but has not deleted yet (lazy_delete).
        """
        if self._published:
            async with sessions() as session, session.begin():
                # SKIP LOCKED: rows a batch is deleting right now are left to that batch.
                gone = await session.execute(
                    text(
                        f"DELETE FROM {self.schema}.outbox WHERE id IN (SELECT id FROM"
                        f" {self.schema}.outbox WHERE id = ANY(:ids) FOR UPDATE SKIP LOCKED) RETURNING id"
                    ),
                    {"ids": list(self._published)},
                )
                deleted = [r.id for r in gone]
            self._published.difference_update(deleted)
        async with sessions() as session, session.begin():
            rows = (
                await session.execute(
                    text(
                        f"SELECT o.id, o.topic, o.key, o.partition, {self.payload_sql} AS payload"
                        f" FROM {self.schema}.outbox o"
                        " WHERE o.created_at < now() - make_interval(secs => :grace)"
                        " ORDER BY o.id LIMIT :limit FOR UPDATE OF o SKIP LOCKED"
                    ),
                    {"grace": self.grace_s, "limit": limit},
                )
            ).all()
            OUTBOX_BACKLOG.labels(self.schema).set(len(rows))
            if not rows:
                return 0
            msgs = [
                OutMessage(r.topic, bytes(r.payload), r.key and bytes(r.key), r.partition, r.id) for r in rows
            ]
            for m in msgs:  # in id order, so one key's messages keep their order
                await self._publish(m)
            await self._delete(session, [m.id for m in msgs if m.id is not None])
            log.info("outbox relay published %d left-over messages", len(msgs))
            return len(msgs)

    async def relay_forever(
        self, sessions: async_sessionmaker[AsyncSession], interval_s: float = 1.0
    ) -> None:
        """Relay every ``interval_s``. A failed pass raises: run it under
        :class:`common.tasks.Supervisor`, which restarts it with backoff and reports it."""
        while True:
            await self.relay_once(sessions)
            await asyncio.sleep(interval_s)
