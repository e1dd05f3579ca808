"""The Kafka boundary of the ledger: decode, run each command under the inbox, commit, dispatch.

A batch is one transaction with a savepoint per command (the group commit that makes
throughput). Writes claim their command id in the inbox and stage their result and events
in the outbox of that transaction; reads change nothing, so their answers skip both and are
published straight after commit (a redelivered read is simply answered again).
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field

from faststream.kafka import KafkaBroker
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.broker import dead_letter
from common.consume import BatchProcessor
from common.contracts import LedgerCommand, Result, decode, encode
from common.contracts.base import ErrorBody
from common.errors import ErrorCode, ServiceError
from common.inbox import Inbox
from common.logging import request_id_var
from common.outbox import Outbox, OutMessage
from common.rpc import reply
from common.settings import Settings
from common.topics import Topics
from ledger import service
from ledger.effects import LedgerConfig

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
    crash_after_commit: bool = False  # test-only: SIGKILL between commit and dispatch
    processed: int = 0

    async def _execute(self, session: AsyncSession, cmd: LedgerCommand) -> bytes:
        try:
            async with session.begin_nested():
                fx = await service.execute(session, cmd, self.cfg)
            err = None
        except ServiceError as exc:
            fx, err = None, exc
            log.info("refused %s: %s %s", type(cmd).__name__, exc.code, exc.details)
        result = encode(service.result_of(cmd, fx, err))
        if fx is not None and fx.events:
            service.stage_events(session, self.outbox, self.topics, fx.events)
        return result

    async def run_one(self, session: AsyncSession, cmd: LedgerCommand, direct: list[OutMessage]) -> None:
        request_id_var.set(cmd.ctx.request_id)
        if service.is_read(cmd):
            result = await self._execute(session, cmd)
            if cmd.ctx.reply_to:
                direct.append(OutMessage(cmd.ctx.reply_to, result, partition=0))
            return
        fresh, previous = await self.inbox.claim(session, cmd.command_id)
        if not fresh:
            # Redelivered: change nothing, answer the same result again.
            if previous is not None and cmd.ctx.reply_to:
                self.outbox.add(session, OutMessage(cmd.ctx.reply_to, previous, partition=0))
            return
        result = await self._execute(session, cmd)
        await self.inbox.record(session, cmd.command_id, result)
        if cmd.ctx.reply_to:
            self.outbox.add(session, OutMessage(cmd.ctx.reply_to, result, partition=0))

    async def run_batch(self, cmds: Sequence[LedgerCommand]) -> None:
        direct: list[OutMessage] = []
        async with self.sm() as session:
            async with session.begin():
                for cmd in cmds:
                    await self.run_one(session, cmd, direct)
                msgs = await self.outbox.write(session)
            if self.crash_after_commit and msgs:
                log.error("crash_after_commit: killing this process before dispatch")
                os.kill(os.getpid(), signal.SIGKILL)
            await self.outbox.dispatch(self.sm, msgs)
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
        try:
            await reply(self.broker, cmd.ctx.reply_to, result)
        except Exception:
            log.warning("could not answer a dead-lettered command", exc_info=True)

    def processor(self) -> BatchProcessor[LedgerCommand]:
        async def dlq(raw: bytes, exc: BaseException, attempts: int, cmd: LedgerCommand | None) -> None:
            await dead_letter(
                self.broker,
                self.settings,
                service="ledger",
                topic=self.topics.ledger_commands,
                raw=raw,
                error=exc,
                attempts=attempts,
                request_id=cmd.ctx.request_id if cmd else None,
            )
            if cmd is not None:
                await self.answer_failure(cmd)

        return BatchProcessor(
            decode=lambda raw: decode(raw, LedgerCommand),  # type: ignore[arg-type]
            handle_batch=self.run_batch,
            handle_one=self.run_single,
            dead_letter=dlq,
            attempts=self.settings.consumer_max_attempts,
        )
