"""What every operator action gets: the session, its operator, and after-commit effects.

Changes reach the other services on their next request: cache entries to drop and control
events to publish are staged here and applied by the boundary only after the commit (so a
gateway can never re-cache the old state in between). Control events go through the
identity outbox, so a crash after commit still publishes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from admin import repository as repo
from common.authority import SigningKey
from common.contracts import Ctx, Envelope, Result, encode
from common.contracts.base import as_mode
from common.contracts.events import ControlEvent
from common.errors import ErrorCode, ServiceError, not_found
from common.outbox import Outbox, OutMessage
from common.rpc import RpcClient
from common.settings import Settings
from common.tables import AnyRow
from common.topics import Topics


@dataclass
class ActionContext:
    session: AsyncSession
    redis: Redis
    settings: Settings
    rpc: RpcClient
    outbox: Outbox
    actor: str
    request_id: str
    target: str | None = None  # what the action touched, for the audit log
    details: dict[str, Any] = field(default_factory=dict)  # audit details (never secrets)
    stale_cache: list[str] = field(default_factory=list)
    signing: SigningKey | None = None  # admin's key: every command it sends is signed
    status: int = 200  # 202 for a proposal waiting for a second approver (admin.operators.four_eyes)

    @property
    def topics(self) -> Topics:
        return Topics(self.settings.topic_prefix)

    async def target_tenant(self, tenant_id: str, *, lock: bool = False) -> AnyRow:
        """The tenant the action is about (404 when there is none), noted for the audit log."""
        row = await repo.get_tenant(self.session, tenant_id, lock=lock)
        if row is None:
            raise not_found("tenant")
        self.target = str(row.id)
        return row

    def invalidate(self, *names: str) -> None:
        self.stale_cache.extend(names)

    def control(
        self, kind: str, tenant_id: str | None = None, key_hash: str | None = None, jti: str | None = None
    ) -> None:
        ev = ControlEvent(
            kind=kind, tenant_id=tenant_id, key_hash=key_hash, jti=jti, request_id=self.request_id
        )
        self.outbox.add(
            self.session,
            OutMessage(
                self.topics.control_events,
                encode(ev),
                key=(tenant_id or "").encode() or None,
                request_id=self.request_id,
            ),
        )

    def command_ctx(self, tenant_id: str | None, mode: str | None) -> Ctx:
        return Ctx(
            request_id=self.request_id,
            tenant_id=tenant_id or "",
            mode=as_mode(mode or "production"),
            actor=self.actor,
            reply_to=self.rpc.reply_topic,
        )

    async def call(self, topic: str, command: Envelope) -> Any:
        """Send a command, signed by admin (the owner acts only on a verified signature), to the
        service owning the data and pass its answer through."""
        if self.signing is None:
            raise ServiceError(ErrorCode.INTERNAL_ERROR, "admin has no signing key")
        command = self.signing.sign(command)
        try:
            result = await self.rpc.call(topic, command, key=command.ctx.tenant_id or None)
        except TimeoutError:
            # The command was sent: the owner may still carry it out. The audit says "unknown"
            # (never "refused"), and the retry (same action, its own audit row) tells.
            raise ServiceError(
                ErrorCode.PROVIDER_UNAVAILABLE,
                "the owning service did not answer in time; the action may still be carried out:"
                " read its state, or retry",
                headers={"Retry-After": "1"},
                details={"service": topic.rsplit(".", 2)[-2], "outcome": UNKNOWN},
            ) from None
        return unwrap(result)


UNKNOWN = "unknown"  # the outcome of a relayed command whose answer never came


def unwrap(result: Result) -> Any:
    if result.error is None:
        return result.data
    try:
        code = ErrorCode(result.error.code)
    except ValueError:
        code = ErrorCode.PROVIDER_ERROR
    details = {k: v for k, v in result.error.details.items() if k != "request_id"}
    raise ServiceError(code, result.error.message, status=result.status, details=details)
