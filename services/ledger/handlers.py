"""The Kafka boundary of the ledger: decode, run the batch under the inbox, commit, dispatch.

A batch is one transaction (the group commit that makes throughput): the inbox is read for
all writes by its first statement and written once, each row with its result, by its last
(``repository.batch``), and the writes are executed together by
``service.execute_writes`` (queued customers in one statement, the transfers of the batch
applied the TigerBeetle way: every wallet account locked once in id order, funds checked in
memory, everything written in bulk; see ``journal``). Writes stage their result and events
in the outbox of that transaction; reads change nothing, so they run after the writes of the
batch and skip the inbox (a redelivered read is simply answered again), but their answers
leave through the same outbox: every consumer publishes one way (docs/architecture.md, "One
publish scheme: inbox + outbox").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from faststream.kafka import KafkaBroker
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common import authority as common_authority
from common import replies
from common.authority import AuthorityInvalid, VerifyKeys
from common.broker import dead_letter
from common.consume import BatchProcessor, Failure
from common.contracts import LedgerCommand, Result, encode
from common.contracts.base import ErrorBody
from common.contracts.commands import LEDGER_COMMANDS, LEDGER_READS
from common.errors import ErrorCode, Reason, ServiceError
from common.failpoints import failpoint
from common.health import Readiness
from common.logging import request_id_var
from common.metrics import TRANSFER_IDS_REUSED
from common.outbox import Outbox, OutMessage
from common.rpc import reply
from common.settings import Settings
from common.topics import Topics
from common.tracing import publish
from ledger import authority, service
from ledger.config import LedgerConfig
from ledger.core.effects import Effects
from ledger.journal import Journal

log = logging.getLogger(__name__)


@dataclass
class BatchStats:
    """Where the ledger's time goes, logged every ``every_s`` seconds of activity: batches,
    commands, time inside batch transactions, and time waiting for account locks."""

    every_s: float = 10.0
    batches: int = 0
    commands: int = 0
    busy_s: float = 0.0
    lock_wait_s: float = 0.0
    since: float = field(default_factory=time.monotonic)

    def add(self, commands: int, busy_s: float, lock_wait_s: float) -> None:
        self.batches += 1
        self.commands += commands
        self.busy_s += busy_s
        self.lock_wait_s += lock_wait_s
        elapsed = time.monotonic() - self.since
        if elapsed >= self.every_s:
            log.info(
                "batches: %d in %.1f s, %.1f commands each; in transaction %.0f%% of the time,"
                " %.1f ms per batch of which %.1f ms waiting for account locks",
                self.batches,
                elapsed,
                self.commands / self.batches,
                100 * self.busy_s / elapsed,
                1000 * self.busy_s / self.batches,
                1000 * self.lock_wait_s / self.batches,
            )
            self.batches = self.commands = 0
            self.busy_s = self.lock_wait_s = 0.0
            self.since = time.monotonic()


@dataclass
class LedgerConsumer:
    settings: Settings
    broker: KafkaBroker
    sessions: async_sessionmaker[AsyncSession]
    outbox: Outbox
    topics: Topics
    ledger_config: LedgerConfig = field(default_factory=LedgerConfig)
    processed: int = 0
    stats: BatchStats = field(default_factory=lambda: BatchStats())

    def __post_init__(self) -> None:
        # What the ledger publishes that others act on (releases, events) carries its signature.
        self.signing_key = self.settings.signing_key("ledger")

    async def _read(self, session: AsyncSession, cmd: LedgerCommand) -> bytes:
        try:
            async with session.begin_nested():
                effects = await service.execute(session, cmd, self.ledger_config)
            err = None
        except ServiceError as exc:
            effects, err = None, exc
        return self._settle(session, cmd, effects, err)

    def _settle(
        self, session: AsyncSession, cmd: LedgerCommand, effects: Effects | None, err: ServiceError | None
    ) -> bytes:
        """Encode the result and stage the events of one executed command."""
        if err is not None:
            log.info("refused %s: %s %s", type(cmd).__name__, err.code, err.details)
            if err.details.get("reason") == Reason.TRANSFER_ID_REUSED:
                TRANSFER_IDS_REUSED.labels("ledger").inc()
        result = encode(service.result_of(cmd, effects, err))
        if effects is not None and effects.events:
            service.stage_fact(session, self.outbox, self.topics, effects.events, self.signing_key)
        if err is not None and (
            release := service.allowance_release(cmd, self.topics, self.signing_key, err)
        ):
            self.outbox.add(session, release)
        return result

    async def run_batch(self, cmds: Sequence[LedgerCommand]) -> None:
        """One transaction for the batch (:meth:`apply_batch`); commit, dispatch the outbox."""
        started = time.perf_counter()
        async with self.sessions() as session:
            async with session.begin():
                journal = Journal.begin(session)
                msgs = await self.apply_batch(session, journal, cmds)
            self.stats.add(len(cmds), time.perf_counter() - started, journal.lock_wait_s)
            if msgs:
                await failpoint("ledger.after_commit")
            await self.outbox.dispatch(self.sessions, msgs, Outbox.pruned(session))
        self.processed += len(cmds)

    async def apply_batch(
        self, session: AsyncSession, journal: Journal, cmds: Sequence[LedgerCommand]
    ) -> list[OutMessage]:
        """A batch in the caller's transaction, three statements for its writes (claim and
        read, lock, write: ``repository.batch``), then the reads; returns the outbox messages
        written, for dispatch after commit. (The boundary owns the transaction: the Kafka
        consumer's :meth:`run_batch`, or an in-process caller such as tools.bench.samecontract.)"""
        writes = list({c.command_id: c for c in cmds if not service.is_read(c)}.values())
        claimed = await service.claim(session, writes) if writes else None
        await failpoint("ledger.after_claim")  # its command ids held, the inbox read
        todo = [c for c in writes if claimed is not None and c.command_id in claimed.fresh]
        if todo:
            request_id_var.set(todo[0].ctx.request_id)
        results: dict[str, bytes] = {}
        if claimed is not None:
            outcomes = await service.execute_writes(session, journal, todo, self.ledger_config, claimed)
            for cmd, (effects, err) in zip(todo, outcomes, strict=True):
                request_id_var.set(cmd.ctx.request_id)
                results[cmd.command_id] = self._settle(session, cmd, effects, err)
            # Replies in batch order; a redelivered command answers its stored result again.
            # Each is its command's result in the inbox: published after commit with no
            # outbox row, since a redelivery answers it again (common.outbox, ``recreated``).
            for cmd in cmds:
                stored = results.get(cmd.command_id) or claimed.previous.get(cmd.command_id)
                if stored is not None and not service.is_read(cmd) and (to := self._reply_to(cmd)):
                    answer = OutMessage(
                        to, stored, partition=0, request_id=cmd.ctx.request_id, recreated=True
                    )
                    self.outbox.add(session, answer)
            msgs = await service.write(session, journal, results, self.outbox)
        else:
            msgs = []
        for cmd in cmds:
            if service.is_read(cmd):
                request_id_var.set(cmd.ctx.request_id)
                answer_ = await self._read(session, cmd)
                if to := self._reply_to(cmd):
                    read = OutMessage(to, answer_, partition=0, request_id=cmd.ctx.request_id)
                    self.outbox.add(session, read)
        return msgs + await self.outbox.write(session)

    def _reply_to(self, cmd: LedgerCommand) -> str | None:
        """Where ``cmd``'s answer may go (``common.replies``): None for none, or for an address
        that is not a reply topic (counted)."""
        return replies.address("ledger", self.topics.prefix, cmd.ctx.reply_to)

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
        await reply(self.broker, cmd.ctx.reply_to, result, service="ledger", prefix=self.topics.prefix)
        if (release := service.allowance_release(cmd, self.topics, self.signing_key)) is not None:
            await publish(
                self.broker,
                release.payload,
                topic=release.topic,
                key=release.key,
                request_id=release.request_id,
            )

    async def give_up(self, failure: Failure) -> None:
        await dead_letter(self.broker, self.settings, "ledger", failure)
        cmd = failure.message
        if cmd is None:
            return
        if isinstance(failure.error, AuthorityInvalid):  # a forgery: answered, nothing given back
            if failure.error.why == replies.WHY:  # its address is the forgery: no answer
                return
            refused = common_authority.refusal(cmd, failure.error, "the ledger")
            await reply(self.broker, cmd.ctx.reply_to, refused, service="ledger", prefix=self.topics.prefix)
        else:
            await self.answer_failure(cmd)

    def processor(
        self, readiness: Readiness | None = None, keys: VerifyKeys | None = None
    ) -> BatchProcessor[LedgerCommand]:
        """The consumer of ``ledger.commands``: every command's authority verified first."""
        return BatchProcessor(
            name="ledger-commands",
            decode=LEDGER_COMMANDS.decode,
            handle_batch=self.run_batch,
            handle_one=self.run_single,
            dead_letter=self.give_up,
            admit=replies.both(
                replies.admit("ledger", self.topics.prefix),
                authority.admission(keys or self.settings.verify_keys),
            ),
            readiness=readiness,
            attempts=self.settings.consumer_max_attempts,
        )

    def reads_processor(self, readiness: Readiness | None = None) -> BatchProcessor[LedgerCommand]:
        """The consumer of ``ledger.reads``: the gateway's reads, decoded as reads only (a write
        there cannot be decoded: poison, dead-lettered)."""
        return BatchProcessor(
            name="ledger-reads",
            decode=LEDGER_READS.decode,
            handle_batch=self.run_batch,
            handle_one=self.run_single,
            dead_letter=self.give_up,
            admit=replies.admit("ledger", self.topics.prefix),
            readiness=readiness,
            attempts=self.settings.consumer_max_attempts,
        )
