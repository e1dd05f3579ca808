"""The Kafka boundary of compliance: decide a batch in one transaction, then publish.

Fail closed: when the store or the policy data cannot be read, the batch rolls back and
nothing is forwarded. An unreachable store gets one more try on fresh connections, then
every command of the batch is answered 503 ``provider_unavailable`` on its reply topic and
dead-lettered at once (within seconds, not the gateway's timeout). Any other failure is
retried one command at a time, and a command that still fails is answered and dead-lettered
the same way.
An undecodable command is answered 502 ``provider_error`` when its reply address is legible.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
from faststream.kafka import KafkaBroker
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.broker import dead_letter
from common.consume import BatchProcessor
from common.contracts import ComplianceCommand, Result, decode, encode
from common.contracts.base import ErrorBody
from common.errors import HTTP_STATUS, ErrorCode
from common.rpc import reply
from common.settings import Settings
from common.topics import Topics
from compliance import service
from compliance.snapshot import Snapshot

log = logging.getLogger(__name__)


class _Addr(msgspec.Struct):
    request_id: str | None = None
    reply_to: str | None = None


class _Envelope(msgspec.Struct):
    """Just enough of any command to answer it when the rest cannot be read."""

    command_id: str | None = None
    ctx: _Addr = msgspec.field(default_factory=_Addr)


def store_unreachable(exc: BaseException) -> bool:
    """A connectivity failure (refused, severed, timed out), not a bad command."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(
            seen,
            OSError | TimeoutError | sa_exc.TimeoutError | sa_exc.OperationalError | sa_exc.InterfaceError,
        ):
            return True
        if isinstance(seen, sa_exc.DBAPIError) and seen.connection_invalidated:
            return True
        seen = seen.__cause__
    return False


def unavailable(command_id: str, request_id: str, code: ErrorCode, message: str) -> Result:
    return Result(
        command_id=command_id,
        request_id=request_id,
        status=HTTP_STATUS[code],
        error=ErrorBody(
            code=code, message=message, details={"reason": "compliance_unavailable", "retry_after": 1}
        ),
    )


@dataclass
class ComplianceRuntime:
    settings: Settings
    broker: KafkaBroker
    sm: async_sessionmaker[AsyncSession]
    topics: Topics
    decided: int = 0
    failed_closed: int = 0

    async def _decide(self, cmds: Sequence[ComplianceCommand]) -> list[service.Outcome]:
        snap = Snapshot(self.settings.sandbox_default_cap)
        async with self.sm() as session, session.begin():
            return await service.decide_batch(session, snap, self.topics, cmds)

    async def run_batch(self, cmds: Sequence[ComplianceCommand]) -> None:
        try:
            outs = await self._decide(cmds)
        except Exception as exc:
            if not store_unreachable(exc):
                raise  # a bad command: the processor retries one by one, then dead-letters
            log.warning("policy store unreachable (%r); one more try on fresh connections", exc)
            try:
                outs = await self._decide(cmds)
            except Exception as again:
                if not store_unreachable(again):
                    raise
                # Fail closed at once, well inside the caller's wait: nothing was decided.
                await asyncio.gather(*(self.fail_closed(cmd, again) for cmd in cmds))
                return
        # Published after commit, acknowledged after publish: a crash in between redelivers
        # the command, which finds its stored decision and publishes the same outcome again.
        await asyncio.gather(
            *(self.broker.publish(o.payload, topic=o.topic, key=o.key, partition=o.partition) for o in outs)
        )
        self.decided += len(cmds)

    async def run_single(self, cmd: ComplianceCommand) -> None:
        await self.run_batch([cmd])

    async def answer_undecided(self, raw: bytes, cmd: ComplianceCommand | None) -> None:
        """Tell the waiting caller, so it never waits for a command nobody will decide."""
        if cmd is not None:
            await reply(
                self.broker,
                cmd.ctx.reply_to,
                unavailable(
                    cmd.command_id,
                    cmd.ctx.request_id,
                    ErrorCode.PROVIDER_UNAVAILABLE,
                    "compliance could not check this request, so it was not carried out; retry shortly",
                ),
            )
            return
        try:
            env = msgspec.json.decode(raw, type=_Envelope)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if env.command_id:
            await reply(
                self.broker,
                env.ctx.reply_to,
                unavailable(
                    env.command_id,
                    env.ctx.request_id or "",
                    ErrorCode.PROVIDER_ERROR,
                    "compliance could not read this command, so it was not carried out",
                ),
            )

    async def fail_closed(
        self, cmd: ComplianceCommand | None, exc: BaseException, raw: bytes | None = None, attempts: int = 2
    ) -> None:
        """Answer the caller (503, or 502 if unreadable) and keep the command on the DLQ."""
        self.failed_closed += 1
        raw = raw if raw is not None else encode(cmd) if cmd is not None else b""
        try:
            await self.answer_undecided(raw, cmd)
        finally:
            await dead_letter(
                self.broker,
                self.settings,
                service="compliance",
                topic=self.topics.compliance_commands,
                raw=raw,
                error=exc,
                attempts=attempts,
                request_id=cmd.ctx.request_id if cmd else None,
            )

    def processor(self) -> BatchProcessor[ComplianceCommand]:
        async def dlq(raw: bytes, exc: BaseException, attempts: int, cmd: ComplianceCommand | None) -> None:
            await self.fail_closed(cmd, exc, raw, attempts)

        return BatchProcessor(
            decode=lambda raw: decode(raw, ComplianceCommand),  # type: ignore[arg-type]
            handle_batch=self.run_batch,
            handle_one=self.run_single,
            dead_letter=dlq,
            attempts=self.settings.consumer_max_attempts,
        )
