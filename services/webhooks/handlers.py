"""The Kafka boundary of webhooks: commands under the inbox, events fanned out, then commit.

Commands: one transaction per batch; each mutating command claims its id in the inbox and
records its result there (sealed, since creation and rotation answer a secret), so a
redelivered command changes nothing and answers the same. Results leave through the outbox:
written in the batch's transaction, published after commit, and by the relay if a crash
came in between (a redelivered command stages its stored result again).

Events: one transaction per batch stores each new event and one delivery per matching
endpoint; then the delivery worker is woken. Offsets are committed after that (common.broker.subscribe).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from faststream.kafka import KafkaBroker
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from common import authority, replies
from common.authority import EVENT_SIGNERS
from common.broker import dead_letter
from common.consume import BatchProcessor, Failure
from common.contracts import Result, WebhooksCommand, decode, encode
from common.contracts.commands import WEBHOOKS_COMMANDS
from common.contracts.events import EVENT_RECORDS, EventRecord, unbatched
from common.errors import ServiceError
from common.health import Readiness
from common.inbox import Inbox
from common.logging import request_id_var
from common.outbox import Outbox, OutMessage
from common.settings import Settings
from common.topics import Topics
from webhooks import service
from webhooks.repository.limits import endpoint_counts, owned_endpoints
from webhooks.vetting import Verdicts, vet_endpoint_urls

log = logging.getLogger(__name__)


_LEGACY_PREFIX = "sealed:"


def recorded_before_sealed(result: Result) -> Result:
    """An inbox answer recorded before ``Result.sealed`` existed held its new signing secret
    in ``data`` as ``sealed:<base64>``: this service wrote that field itself (never partner
    text), so it moves to ``sealed`` under the same name, where the gateway opens it."""
    data = result.data
    secret = data.get("signing_secret") if isinstance(data, dict) and result.sealed is None else None
    if not (isinstance(secret, str) and secret.startswith(_LEGACY_PREFIX)):
        return result
    rest = {k: v for k, v in data.items() if k != "signing_secret"}
    sealed = {"signing_secret": base64.b64decode(secret[len(_LEGACY_PREFIX) :])}
    return msgspec.structs.replace(result, data=rest, sealed=sealed)


@dataclass
class WebhooksConsumer:
    settings: Settings
    broker: KafkaBroker
    sessions: async_sessionmaker[AsyncSession]
    topics: Topics
    env: service.Env
    on_new_deliveries: Callable[[], None]
    outbox: Outbox
    inbox: Inbox = field(default_factory=lambda: Inbox("webhooks"))
    vet_per_tenant: int = 2  # endpoint URLs of one tenant resolved at once (webhooks.vetting)
    commands_handled: int = 0
    deliveries_created: int = 0

    async def run_one(
        self, session: AsyncSession, cmd: WebhooksCommand, vetted: Verdicts | None = None
    ) -> Result:
        request_id_var.set(cmd.ctx.request_id)
        mutating = not isinstance(cmd, service.READ_ONLY)
        if mutating:
            fresh, previous = await self.inbox.claim(session, cmd.command_id)
            if not fresh and previous is not None:
                earlier = decode(self.env.box.open(previous, "inbox:" + cmd.command_id), Result)
                return recorded_before_sealed(earlier)
        try:
            async with session.begin_nested():
                result = await service.execute(session, self.env, cmd, vetted)
        except ServiceError as exc:
            log.info("refused %s: %s %s", type(cmd).__name__, exc.code, exc.details)
            result = service.error_result(cmd, exc)
        if mutating:
            sealed = self.env.box.seal(encode(result), "inbox:" + cmd.command_id)
            await self.inbox.record(session, cmd.command_id, sealed)
        return result

    async def _endpoint_counts(self, owners: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        async with self.sessions() as session:
            return await endpoint_counts(session, owners)

    async def _owned_endpoints(self, wanted: Iterable[tuple[str, str, str]]) -> set[str]:
        async with self.sessions() as session:
            return await owned_endpoints(session, wanted)

    async def run_commands(self, cmds: Sequence[WebhooksCommand]) -> None:
        # Endpoint URLs are resolved first, bounded, with no transaction open (webhooks.vetting).
        vetted = await vet_endpoint_urls(
            cmds,
            self.env.allow_private,
            self._endpoint_counts,
            per_tenant=self.vet_per_tenant,
            owned=self._owned_endpoints,
        )
        async with self.outbox.transaction(self.sessions) as session:
            for cmd in cmds:
                result = await self.run_one(session, cmd, vetted)
                if cmd.ctx.reply_to and (
                    to := replies.address("webhooks", self.topics.prefix, cmd.ctx.reply_to)
                ):
                    answer = OutMessage(to, encode(result), partition=0, request_id=result.request_id)
                    self.outbox.add(session, answer)
        self.commands_handled += len(cmds)

    async def run_events(self, records: Sequence[EventRecord]) -> None:
        """A fetched batch of records, each one event or one fact's events (``EventBatch``)."""
        events = unbatched(records)
        async with self.sessions() as session, session.begin():
            created = await service.fan_out(session, events, self.env.max_attempts)
        self.deliveries_created += len(created)
        if created:
            self.on_new_deliveries()

    def _processor(
        self,
        name: str,
        decoder: msgspec.json.Decoder[Any],
        batch: Any,
        readiness: Readiness | None,
        admit: Callable[[Any], None] | None = None,
    ) -> BatchProcessor[Any]:
        async def give_up(failure: Failure) -> None:
            await dead_letter(self.broker, self.settings, "webhooks", failure)

        return BatchProcessor(
            name=name,
            decode=decoder.decode,
            handle_batch=batch,
            dead_letter=give_up,
            admit=admit,
            readiness=readiness,
            attempts=self.settings.consumer_max_attempts,
        )

    def command_processor(self, readiness: Readiness | None = None) -> BatchProcessor[Any]:
        """Commands answered on their reply topic, and only there (``common.replies``)."""
        admit = replies.admit("webhooks", self.topics.prefix)
        return self._processor("webhooks-commands", WEBHOOKS_COMMANDS, self.run_commands, readiness, admit)

    def event_processor(self, readiness: Readiness | None = None) -> BatchProcessor[Any]:
        """Events stored and delivered only on their publisher's signature (the ledger's, or
        admin's for its own): a forged one is dead-lettered ``authority_invalid``, counted, and
        never stored, listed or delivered (docs/security.md, "Who writes each topic")."""
        admit = authority.admit("webhooks", self.settings.verify_keys, lambda _r: EVENT_SIGNERS)
        return self._processor("webhooks-events", EVENT_RECORDS, self.run_events, readiness, admit)
