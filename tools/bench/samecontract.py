"""The same-contract baseline of ``make bench``: the suite's own code in ONE process, one
PostgreSQL transaction per batch of the requests that arrived while the last one ran (group
commit), no Kafka (docs/performance/index.md, "Two baselines").

The minimal monolith (tools.bench.baselines) does a fraction of the contract; this one answers
``POST /v1/transfers``, ``POST /v1/customers`` and the other partner commands compliance decides
(wallets, virtual accounts, sandbox deposits, payouts: what a tenant is provisioned through)
with the gateway's request and answer shapes, by calling the services' modules, for the
commands that arrived meanwhile together (group commit, as the suite's consumers batch):

- the gateway's pipeline itself (gateway.pipeline.Pipeline, through gateway.transport.direct):
  the API key authenticated, the rate limit counted and the Idempotency-Key taken in the key
  lookup's one Valkey round trip (gateway.auth, gateway.ratelimit, gateway.idempotency), the
  body validated by the endpoint's builder, the answer recorded for replays; only its
  ``rpc`` is replaced, by :class:`InProcess`, which does in one transaction what the Kafka
  hops do in three:
- compliance's decision (compliance.service.decide_batch and write, as its consumer calls
  them): screening, jurisdiction, the caps and their daily usage, the decision row, and the
  approved command signed with compliance's Ed25519 key;
- the ledger's batch for that one command (ledger.handlers.LedgerConsumer.apply_batch, the
  body of its consumer's batch): the signed authority verified (ledger.authority), the
  inbox, the journal entry and its postings, the hash chain, the state changes, the
  result, the events signed with the ledger's key;
- the events stored as the webhooks service stores them (webhooks.service.fan_out, as its
  events consumer calls it, after the same signature check): the event rows and a delivery
  per matching endpoint;
- a transfer the ledger refused after compliance approved it gives its daily allowance back
  through compliance.usage.release_given (its releases consumer's call), after the commit as
  in the suite.

What it leaves out, because one process has no hop to carry: the outbox rows of the hops
(compliance's forward to the ledger, the ledger's reply and its events record: here they are
handed to the next step in the same transaction, never written to an outbox table, where the
suite's ledger relay would publish them), the reply topics, and the gateway's door (admission
control, tools.bench measures below it). Nothing is copied from the services: no SQL, no rule.

``python -m tools.bench.baselines samecontract PORT`` serves it (tools.bench.measure's
``baseline_process`` with the suite's environment: its database, Valkey and secrets).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from faststream.kafka import KafkaBroker
from litestar import Litestar, get
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common import authority
from common.authority import EVENT_SIGNERS, RELEASE_SIGNERS
from common.contracts import Command, Result
from common.contracts.commands import LEDGER_COMMANDS
from common.contracts.events import EVENT_RECORDS, unbatched
from common.db import create_engine, sessionmaker
from common.http import request_id_middleware
from common.outbox import Outbox, OutMessage
from common.service import connect_redis
from common.settings import Settings
from common.topics import Topic, Topics
from compliance import service as compliance
from compliance import usage
from compliance.handlers import RELEASES
from compliance.snapshot import Snapshot
from gateway import revocations
from gateway.app import ENDPOINTS, _direct_handlers, credentials
from gateway.pipeline import Pipeline
from gateway.ratelimit import RateLimiter
from ledger import authority as ledger_authority
from ledger.handlers import LedgerConsumer
from ledger.journal import Journal
from webhooks import service as webhooks
from webhooks.sender import Policy

HANDED = "samecontract_handed"  # session.info: the messages a step hands to the next
REPLIES = "samecontract"  # this process's reply address (common.replies: one a responder may use)


class Handed(Outbox):
    """An outbox that writes nothing: what a service stages for the next hop is kept on the
    session, for this process to hand to the next step in the same transaction."""

    def add(self, session: AsyncSession, msg: OutMessage) -> None:
        session.info.setdefault(HANDED, []).append(msg)

    @staticmethod
    def take(session: AsyncSession) -> list[OutMessage]:
        return list(session.info.pop(HANDED, []))


#: The most commands one transaction takes, as a consumer's poll (SLUICE_KAFKA_MAX_RECORDS).
MAX_BATCH = 200


class InProcess:
    """What the gateway's ``RpcClient`` does over Kafka (compliance, then the ledger, then the
    webhooks' store), done by their modules in one transaction of this process.

    Group commit, as the suite's consumers batch what arrived while they worked: the commands
    that come in while a transaction runs go together in the next one. One transaction per
    request held the tenant's rows that every request takes (webhooks' ``event_sequences``,
    the ledger's chain head, compliance's cap usage) from their statement to the commit, in
    an event loop busy with the others: 39 customer creates a second with 40 clients, its
    backends waiting on that row lock (docs/performance/history.md, session 63)."""

    def __init__(
        self,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        on_results: Callable[[list[Result]], Awaitable[None]] | None = None,
    ) -> None:
        self.settings, self.sessions, self.on_results = settings, sessions, on_results
        self.topics = Topics(settings.topic_prefix)
        self.reply_topic = self.topics.replies(REPLIES) + ".0"
        broker = KafkaBroker()  # never started: Handed publishes nothing
        self.handed = Handed("ledger", broker)
        self.ledger = LedgerConsumer(settings, broker, sessions, self.handed, self.topics)
        self.sign = settings.signing_key("compliance").sign
        keys = settings.verify_keys
        self.admit_ledger = ledger_authority.admission(keys)
        self.admit_event = authority.admit("webhooks", keys, lambda _r: EVENT_SIGNERS)
        self.admit_release = authority.admit("compliance", keys, lambda _c: RELEASE_SIGNERS)
        self.max_attempts = Policy.from_settings(settings).max_attempts
        self.waiting: list[tuple[Command, asyncio.Future[Result]]] = []
        self.worker: asyncio.Task[None] | None = None

    async def call(self, topic: str, cmd: Command, key: str | None = None) -> Result:
        """``cmd`` decided, booked and its events stored in the next batch's transaction; its
        result."""
        done: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self.waiting.append((cmd, done))
        if self.worker is None or self.worker.done():
            self.worker = asyncio.create_task(self._drain())
        return await done

    async def _drain(self) -> None:
        """Batch after batch while commands wait. A failed batch runs each of its commands
        alone, as the suite's consumers do (common.consume.BatchProcessor): one command's
        failure is its own."""
        while self.waiting:
            batch, self.waiting = self.waiting[:MAX_BATCH], self.waiting[MAX_BATCH:]
            try:
                results = await self._batch([cmd for cmd, _ in batch])
            except Exception as exc:  # noqa: BLE001 - handed to each waiting request
                if len(batch) == 1:
                    batch[0][1].set_exception(exc)
                    continue
                for cmd, done in batch:
                    try:
                        done.set_result((await self._batch([cmd]))[0])
                    except Exception as alone:  # noqa: BLE001 - this request's own failure
                        done.set_exception(alone)
                continue
            for (_, done), result in zip(batch, results, strict=True):
                done.set_result(result)

    async def _batch(self, cmds: list[Command]) -> list[Result]:
        """``cmds`` decided, booked and their events stored in one transaction; their results,
        in order, recorded for replays in one call."""
        async with self.sessions() as session, session.begin():
            outs = await self._decide(session, cmds)
            forwarded = [o for o in outs if o.topic == self.topics.ledger_commands]
            if forwarded:
                outs += await self._book(session, forwarded)
            await self._store_events(session, [o for o in outs if o.topic == self.topics.events])
        await self._release([o for o in outs if o.topic == self.topics.compliance_releases])
        answers: dict[str, Result] = {}
        for out in outs:  # the last answer to a request is its result (the ledger's, if booked)
            if out.topic == self.reply_topic:
                result = msgspec.json.decode(out.payload, type=Result)
                answers[result.request_id] = result
        results = [answers[cmd.ctx.request_id] for cmd in cmds]
        if self.on_results is not None:  # the gateway records them for replays (Valkey)
            await self.on_results(results)
        return results

    async def _decide(self, session: AsyncSession, cmds: list[Command]) -> list[OutMessage]:
        """Compliance's batch: its decisions written, what it would publish returned."""
        snap = Snapshot(self.settings.sandbox_default_cap)
        outs, writes = await compliance.decide_batch(session, snap, self.topics, cmds, self.sign)
        await compliance.write(session, writes, [], self.handed)
        return outs

    async def _book(self, session: AsyncSession, forwarded: Sequence[OutMessage]) -> list[OutMessage]:
        """The ledger's batch, on the commands compliance signed (each verified first)."""
        cmds = [LEDGER_COMMANDS.decode(m.payload) for m in forwarded]
        for cmd in cmds:
            self.admit_ledger(cmd)
        await self.ledger.apply_batch(session, Journal.begin(session), cmds)
        return Handed.take(session)

    async def _store_events(self, session: AsyncSession, msgs: Sequence[OutMessage]) -> None:
        records = [EVENT_RECORDS.decode(m.payload) for m in msgs]
        for record in records:
            self.admit_event(record)
        if records:
            await webhooks.fan_out(session, unbatched(records), self.max_attempts)

    async def _release(self, msgs: Sequence[OutMessage]) -> None:
        releases = [RELEASES.decode(m.payload) for m in msgs]
        for release in releases:
            self.admit_release(release)
        if releases:
            failed = [(c.transfer_id, c.failed_command_id, c.ctx.tenant_id) for c in releases]
            await usage.release_given(self.sessions, failed)


SERVED = [ep for ep in ENDPOINTS if ep.topic == Topic.COMPLIANCE_COMMANDS]


def build_pipeline(settings: Settings, sessions: async_sessionmaker[AsyncSession], redis: Any) -> Pipeline:
    """The gateway's pipeline over the stack's Valkey, as gateway.app builds it, with
    :class:`InProcess` where the gateway has its Kafka ``RpcClient``."""
    auth, idem = credentials(settings, redis, sessions)
    rpc = InProcess(settings, sessions)
    pipeline = Pipeline(settings, auth, RateLimiter(redis), idem, rpc, sessions)  # type: ignore[arg-type]  # InProcess stands for RpcClient
    rpc.on_results = pipeline.on_results
    return pipeline


@get("/readyz", include_in_schema=False)
async def readyz() -> dict[str, str]:
    return {"status": "ready"}


def create(settings: Settings | None = None) -> Litestar:
    """The app: the gateway's direct handlers of :data:`SERVED` over :func:`build_pipeline`."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        engine = create_engine(
            settings.database_url,
            settings.db_pool_size,
            connect_timeout_s=settings.db_connect_timeout_s,
            command_timeout_s=settings.db_command_timeout_s,
            pool_timeout_s=settings.db_connect_timeout_s,
        )
        sessions = sessionmaker(engine)
        redis = connect_redis(settings)
        floor_poll = revocations.reader(sessions)
        pipeline = build_pipeline(settings, sessions, redis)
        poll = asyncio.create_task(
            revocations.poll_forever(
                pipeline.auth.revocations, floor_poll, settings.gateway_revocation_poll_s
            )
        )
        app.state.update(settings=settings, pipeline=pipeline)
        try:
            yield
        finally:
            poll.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poll
            await redis.aclose()
            await engine.dispose()

    app = Litestar([*_direct_handlers(SERVED), readyz], lifespan=[lifespan], logging_config=None)
    app.asgi_handler = request_id_middleware(app.asgi_handler)
    return app
