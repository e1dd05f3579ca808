"""The Kafka boundary of the ledger: decode, run each command under the inbox, commit, dispatch.

A batch is one transaction (the group commit that makes throughput): the inbox is claimed
and recorded for all writes in one statement each, queued customers are inserted in one
statement (a failure there fails the batch, which is then retried command by command), and
every other command runs under its own savepoint, in order. Writes stage their result and
events in the outbox of that transaction; reads change nothing, so their answers skip both
and are published straight after commit (a redelivered read is simply answered again).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from faststream.kafka import KafkaBroker
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.broker import dead_letter
from common.consume import BatchProcessor, Failure
from common.contracts import LedgerCommand, Result, decode, encode
from common.contracts.base import ErrorBody
from common.contracts.commands import CreateCustomer
from common.errors import ErrorCode, ServiceError
from common.failpoints import failpoint
from common.health import Readiness
from common.inbox import Inbox
from common.logging import request_id_var
from common.outbox import Outbox, OutMessage
from common.rpc import reply
from common.settings import Settings
from common.topics import Topics
from ledger import customers, service
from ledger.effects import Effects, LedgerConfig

log = logging.getLogger(__name__)


@dataclass
class LedgerRuntime:
    settings: Settings
    broker: KafkaBroker
    sm: async_sessionmaker[AsyncSession]
    outbox: Outbox
    inbox: Inbox
    topics: Topics
    cfg: LedgerConfig = field(default_factory=LedgerConfig)
    processed: int = 0

    async def _execute(self, session: AsyncSession, cmd: LedgerCommand) -> bytes:
        try:
            async with session.begin_nested():
                fx = await service.execute(session, cmd, self.cfg)
            err = None
        except ServiceError as exc:
            fx, err = None, exc
            log.info("refused %s: %s %s", type(cmd).__name__, exc.code, exc.details)
        return self._settle(session, cmd, fx, err)

    def _settle(
        self, session: AsyncSession, cmd: LedgerCommand, fx: Effects | None, err: ServiceError | None
    ) -> bytes:
        """Encode the result and stage the events of one executed command."""
        result = encode(service.result_of(cmd, fx, err))
        if fx is not None and fx.events:
            service.stage_events(session, self.outbox, self.topics, fx.events)
        if err is not None and (release := service.allowance_release(cmd, self.topics)) is not None:
            self.outbox.add(session, release)
        return result

    async def _execute_customers(self, session: AsyncSession, cmds: list[CreateCustomer]) -> list[bytes]:
        """Queued customers in one statement. No savepoint (two round trips saved): an insert
        that fails aborts the batch, and the processor then runs each command alone, where
        ``_execute`` isolates it."""
        if len(cmds) == 1:
            return [await self._execute(session, cmds[0])]
        effects = await customers.create_customers(session, cmds)
        return [self._settle(session, c, fx, None) for c, fx in zip(cmds, effects, strict=True)]

    async def run_batch(self, cmds: Sequence[LedgerCommand]) -> None:
        """One transaction for the batch: the inbox claimed and recorded in one statement each,
        queued customers inserted together, every other command under its own savepoint, in
        order; then commit, dispatch the outbox, and answer the reads."""
        direct: list[OutMessage] = []
        async with self.sm() as session:
            async with session.begin():
                writes = list({c.command_id: c for c in cmds if not service.is_read(c)})
                fresh, previous = await self.inbox.claim_many(session, writes)
                results: dict[str, bytes] = {}
                queued: list[CreateCustomer] = []

                async def flush() -> None:
                    if queued:
                        done = await self._execute_customers(session, queued)
                        results.update(zip((c.command_id for c in queued), done, strict=True))
                        queued.clear()

                for cmd in cmds:
                    request_id_var.set(cmd.ctx.request_id)
                    if service.is_read(cmd):
                        await flush()
                        answer = await self._execute(session, cmd)
                        if cmd.ctx.reply_to:
                            direct.append(OutMessage(cmd.ctx.reply_to, answer, partition=0))
                    elif cmd.command_id in fresh:
                        fresh.discard(cmd.command_id)
                        if isinstance(cmd, CreateCustomer):
                            queued.append(cmd)
                        else:
                            await flush()
                            results[cmd.command_id] = await self._execute(session, cmd)
                await flush()
                await self.inbox.record_many(session, results)
                # Replies in batch order; a redelivered command answers its stored result again.
                for cmd in cmds:
                    stored = results.get(cmd.command_id) or previous.get(cmd.command_id)
                    if stored is not None and cmd.ctx.reply_to and not service.is_read(cmd):
                        self.outbox.add(session, OutMessage(cmd.ctx.reply_to, stored, partition=0))
                msgs = await self.outbox.write(session)
            if msgs:
                await failpoint("ledger.after_commit")
            await self.outbox.dispatch(self.sm, msgs, Outbox.pruned(session))
        for m in direct:
            await self.broker.publish(m.payload, topic=m.topic, partition=m.partition)
        self.processed += len(cmds)

    async def run_single(self, cmd: LedgerCommand) -> None:
        await self.run_batch([cmd])

    async def answer_failure(self, cmd: LedgerCommand) -> None:
        """A command that finally failed still gets an answer, so no caller waits for a timeout."""
        result = Result(
            command_id=cmd.command_id,
            request_id=cmd.ctx.request_id,
            status=502,
            error=ErrorBody(
                code=ErrorCode.PROVIDER_ERROR,
                message="the ledger could not process the command",
                details={"reason": "ledger_failure"},
            ),
        )
        await reply(self.broker, cmd.ctx.reply_to, result)
        if (release := service.allowance_release(cmd, self.topics)) is not None:
            await self.broker.publish(release.payload, topic=release.topic, key=release.key)

    def processor(self, readiness: Readiness | None = None) -> BatchProcessor[LedgerCommand]:
        async def give_up(failure: Failure) -> None:
            await dead_letter(self.broker, self.settings, "ledger", failure)
            if failure.message is not None:
                await self.answer_failure(failure.message)

        return BatchProcessor(
            name="ledger-commands",
            decode=lambda raw: decode(raw, LedgerCommand),  # type: ignore[arg-type]
            handle_batch=self.run_batch,
            handle_one=self.run_single,
            dead_letter=give_up,
            readiness=readiness,
            attempts=self.settings.consumer_max_attempts,
        )
