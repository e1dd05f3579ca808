"""The Kafka boundary of compliance: decide a batch in one transaction, publish through the outbox.

Fail closed: nothing is forwarded unless a decision was made and committed. When the store
cannot be reached the batch waits and is retried (the consumer runtime, common.consume):
the request stays undecided, never wrongly decided, and is decided as soon as the store is
back (the gateway's caller retries with the same Idempotency-Key meanwhile). A command that
fails for any other reason, after bounded tries, is answered 502 ``provider_error`` on its
reply topic and dead-lettered. An undecodable command is answered the same way when its
reply address is legible.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
from faststream.kafka import KafkaBroker
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common import authority, replies
from common.authority import RELEASE_SIGNERS, AuthorityInvalid
from common.broker import dead_letter
from common.consume import BatchProcessor, Failure
from common.contracts import Command, ComplianceCommand, Envelope, Result
from common.contracts.base import ErrorBody
from common.contracts.commands import COMPLIANCE_COMMANDS, ReleaseAllowance
from common.errors import HTTP_STATUS, ErrorCode
from common.health import Readiness
from common.outbox import Outbox
from common.rpc import reply
from common.settings import Settings
from common.topics import Topics
from compliance import service, usage
from compliance.snapshot import Snapshot

log = logging.getLogger(__name__)
RELEASES: msgspec.json.Decoder[ReleaseAllowance] = msgspec.json.Decoder(ReleaseAllowance)


class _Addr(msgspec.Struct):
    request_id: str | None = None
    reply_to: str | None = None


class _Envelope(msgspec.Struct):
    """Just enough of any command to answer it when the rest cannot be read."""

    command_id: str | None = None
    ctx: _Addr = msgspec.field(default_factory=_Addr)


def undecided(command_id: str, request_id: str) -> Result:
    return Result(
        command_id=command_id,
        request_id=request_id,
        status=HTTP_STATUS[ErrorCode.PROVIDER_ERROR],
        error=ErrorBody(
            code=ErrorCode.PROVIDER_ERROR,
            message="compliance could not decide this request, so it was not carried out",
            details={"reason": "compliance_failure"},
        ),
    )


def operator_signed(cmd: Envelope) -> tuple[str, ...]:
    """Policy commands are admin's to give: the gateway writes this topic too, so a route, a cap
    or the screening list changes only on admin's signature. The commands compliance decides
    need none: deciding them is its job."""
    return () if type(cmd) in service.DECIDERS else ("admin",)


@dataclass
class ComplianceConsumer:
    settings: Settings
    broker: KafkaBroker
    sessions: async_sessionmaker[AsyncSession]
    topics: Topics
    outbox: Outbox
    decided: int = 0
    failed_closed: int = 0

    def __post_init__(self) -> None:
        self.signing_key = self.settings.signing_key("compliance")

    def sign(self, cmd: Command) -> Command:
        return self.signing_key.sign(cmd)

    async def run_batch(self, cmds: Sequence[ComplianceCommand]) -> None:
        snap = Snapshot(self.settings.sandbox_default_cap)
        # The decisions commit first, then their outcomes are published (a policy answer
        # through an outbox row); a command redelivered after a crash in between finds its
        # stored decision and publishes the same outcome again (common.outbox, ``recreated``).
        async with self.sessions() as session:
            async with session.begin():
                outs, writes = await service.decide_batch(session, snap, self.topics, cmds, self.sign)
                msgs = await service.write(session, writes, outs, self.outbox)
            await self.outbox.dispatch(self.sessions, msgs, Outbox.pruned(session))
        self.decided += len(cmds)

    async def answer_undecided(self, failure: Failure) -> None:
        """Tell the waiting caller, so it never waits for a command nobody will decide."""
        cmd = failure.message
        if cmd is None:
            try:
                cmd = msgspec.json.decode(failure.record.value or b"", type=_Envelope)
            except (msgspec.DecodeError, msgspec.ValidationError):
                return
        if cmd.command_id:
            result = undecided(cmd.command_id, cmd.ctx.request_id or "")
            prefix = self.topics.prefix
            await reply(self.broker, cmd.ctx.reply_to, result, service="compliance", prefix=prefix)

    def processor(self, readiness: Readiness | None = None) -> BatchProcessor[ComplianceCommand]:
        async def give_up(failure: Failure) -> None:
            await dead_letter(self.broker, self.settings, "compliance", failure)
            if isinstance(failure.error, AuthorityInvalid) and failure.message is not None:
                if failure.error.why == replies.WHY:  # its address is the forgery: no answer
                    return
                refused = authority.refusal(failure.message, failure.error, "compliance")
                to = failure.message.ctx.reply_to
                await reply(self.broker, to, refused, service="compliance", prefix=self.topics.prefix)
                return
            self.failed_closed += 1
            await self.answer_undecided(failure)

        return BatchProcessor(
            name="compliance-commands",
            decode=COMPLIANCE_COMMANDS.decode,
            handle_batch=self.run_batch,
            dead_letter=give_up,
            admit=replies.both(
                replies.admit("compliance", self.topics.prefix),
                authority.admit("compliance", self.settings.verify_keys, operator_signed),
            ),
            readiness=readiness,
            attempts=self.settings.consumer_max_attempts,
        )

    def releases_processor(self, readiness: Readiness | None = None) -> BatchProcessor[ReleaseAllowance]:
        """Allowance the ledger gives back (``compliance.releases``, written by the ledger alone:
        on the commands topic the gateway could have forged it), each signed by the ledger: an
        unsigned or wrongly signed one is dead-lettered ``authority_invalid`` and counted."""

        async def give_up(failure: Failure) -> None:
            await dead_letter(self.broker, self.settings, "compliance", failure)

        async def release(cmds: Sequence[ReleaseAllowance]) -> None:
            failed = [(c.transfer_id, c.failed_command_id, c.ctx.tenant_id) for c in cmds]
            await usage.release_given(self.sessions, failed)

        return BatchProcessor(
            name="compliance-releases",
            decode=RELEASES.decode,
            handle_batch=release,
            dead_letter=give_up,
            # the ledger's signature, not the topic, says a release is the ledger's
            admit=authority.admit("compliance", self.settings.verify_keys, lambda _c: RELEASE_SIGNERS),
            readiness=readiness,
            attempts=self.settings.consumer_max_attempts,
        )

    def usage_processor(self, readiness: Readiness | None = None) -> BatchProcessor[usage.Signal]:
        """Cap given back for failed or rejected transfers (events topic, own group), on the
        ledger's signature alone (``usage.admission``)."""

        async def give_up(failure: Failure) -> None:
            await dead_letter(self.broker, self.settings, "compliance", failure)

        async def release(signals: Sequence[usage.Signal]) -> None:
            await usage.release_batch(self.sessions, signals)

        return BatchProcessor(
            name="compliance-usage",
            decode=usage.Signal.read,
            handle_batch=release,
            dead_letter=give_up,
            admit=usage.admission(self.settings.verify_keys),
            readiness=readiness,
            attempts=self.settings.consumer_max_attempts,
        )
