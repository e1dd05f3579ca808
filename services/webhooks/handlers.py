"""The Kafka boundary of webhooks: commands under the inbox, events fanned out, then commit.

Commands: one transaction per batch; each mutating command claims its id in the inbox and
records its result there (sealed, since creation and rotation answer a secret), so a
redelivered command changes nothing and answers the same. Results are published after
commit; a crash in between redelivers the command, which republishes the stored result.

Events: one transaction per batch stores each new event and one delivery per matching
endpoint; then the delivery worker is woken. Offsets are committed after that (common.broker.subscribe).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from faststream.kafka import KafkaBroker
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common.broker import dead_letter
from common.consume import BatchProcessor, Failure
from common.contracts import AnyEvent, Result, WebhooksCommand, decode, encode
from common.errors import ServiceError
from common.health import Readiness
from common.inbox import Inbox
from common.logging import request_id_var
from common.rpc import reply
from common.settings import Settings
from common.topics import Topics
from webhooks import service

log = logging.getLogger(__name__)


@dataclass
class WebhooksRuntime:
    settings: Settings
    broker: KafkaBroker
    sm: async_sessionmaker[AsyncSession]
    topics: Topics
    env: service.Env
    on_new_deliveries: Callable[[], None]
    inbox: Inbox = field(default_factory=lambda: Inbox("webhooks"))
    commands_handled: int = 0
    deliveries_created: int = 0

    async def run_one(self, session: AsyncSession, cmd: WebhooksCommand) -> Result:
        request_id_var.set(cmd.ctx.request_id)
        mutating = not isinstance(cmd, service.READ_ONLY)
        if mutating:
            fresh, previous = await self.inbox.claim(session, cmd.command_id)
            if not fresh and previous is not None:
                return decode(self.env.box.open(previous, "inbox:" + cmd.command_id), Result)
        try:
            async with session.begin_nested():
                result = await service.execute(session, self.env, cmd)
        except ServiceError as exc:
            log.info("refused %s: %s %s", type(cmd).__name__, exc.code, exc.details)
            result = service.error_result(cmd, exc)
        if mutating:
            sealed = self.env.box.seal(encode(result), "inbox:" + cmd.command_id)
            await self.inbox.record(session, cmd.command_id, sealed)
        return result

    async def run_commands(self, cmds: Sequence[WebhooksCommand]) -> None:
        out: list[tuple[str | None, Result]] = []
        async with self.sm() as session, session.begin():
            for cmd in cmds:
                out.append((cmd.ctx.reply_to, await self.run_one(session, cmd)))
        await asyncio.gather(*(reply(self.broker, to, r) for to, r in out))
        self.commands_handled += len(cmds)

    async def run_events(self, events: Sequence[AnyEvent]) -> None:
        async with self.sm() as session, session.begin():
            created = await service.fan_out(session, list(events), self.env.max_attempts)
        self.deliveries_created += len(created)
        if created:
            self.on_new_deliveries()

    def _processor(
        self, name: str, decoder: Any, batch: Any, readiness: Readiness | None
    ) -> BatchProcessor[Any]:
        async def give_up(failure: Failure) -> None:
            await dead_letter(self.broker, self.settings, "webhooks", failure)

        return BatchProcessor(
            name=name,
            decode=decoder,
            handle_batch=batch,
            dead_letter=give_up,
            readiness=readiness,
            attempts=self.settings.consumer_max_attempts,
        )

    def command_processor(self, readiness: Readiness | None = None) -> BatchProcessor[Any]:
        return self._processor(
            "webhooks-commands",
            lambda raw: decode(raw, WebhooksCommand),  # type: ignore[arg-type]  # a union alias is not a type[T] (no TypeForm yet, PEP 747)
            self.run_commands,
            readiness,
        )

    def event_processor(self, readiness: Readiness | None = None) -> BatchProcessor[Any]:
        return self._processor(
            "webhooks-events",
            lambda raw: decode(raw, AnyEvent),  # type: ignore[arg-type]  # a union alias is not a type[T] (no TypeForm yet, PEP 747)
            self.run_events,
            readiness,
        )
